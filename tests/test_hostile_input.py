"""Hostile input is refused before anything is created: one error line, the right exit code."""
from __future__ import annotations

import io

from wardrik_cli.cli.app import run


def _cli(root, *args, stdin=b""):
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1"}, stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


def _nested(depth: int) -> str:
    return '{"trigger": {"name": "x"}, "n": ' + "[" * depth + "]" * depth + "}"


def test_deep_data_is_refused_before_anything_is_created(tmp_path):
    root = tmp_path / "root"
    for depth in (130, 253, 600):
        code, out, err = _cli(root, "append", "a/x", "trigger.fired", "--data", _nested(depth))
        assert code == 2 and out == b"" and err.startswith("error:") and "nested" in err and err.count("\n") == 1, err
    assert not root.exists()  # before: an empty log file was left behind (and exit 1, internal error)


def test_data_at_the_depth_limit_is_kept_and_read_back(tmp_path):
    root = tmp_path / "root"
    code, out, err = _cli(root, "append", "a/x", "trigger.fired", "--data", _nested(120))
    assert code == 0, err
    for args in (("page", "a/x"), ("activity", "a/x", "-F", "json"), ("fold", "a/x", "-F", "json")):
        code, out, err = _cli(root, *args)
        assert code == 0, (args, err)


def test_deep_json_with_long_digits_is_one_error(tmp_path):
    deep = "[" * 5000 + "12345678901234567890" + "]" * 5000
    code, out, err = _cli(tmp_path, "append", "a/x", "trigger.fired", "--data", '{"trigger": {"name": "x"}, "v": ' + deep + "}")
    assert code == 2 and err.startswith("error:") and err.count("\n") == 1, err


def test_deep_config_is_a_bad_config_naming_the_file(tmp_path):
    root = tmp_path / "root"
    (root / ".wardrik").mkdir(parents=True, exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    for args in (("append", "a/x", "trigger.fired", "--data", '{"trigger": {"name": "x"}}'), ("compact",)):
        code, out, err = _cli(root, *args)
        assert code == 2 and "config.toml" in err and err.startswith("error:") and "internal" not in err, err
    assert not (root / "a").exists()


def test_a_subject_that_is_not_utf8_is_refused_and_nothing_is_made(tmp_path):
    """Bytes that are not UTF-8 arrive from argv as lone surrogates: before, the line could not
    be written (internal error, exit 1) after the root and an empty log were made."""
    root = tmp_path / "root"
    for argv, shown in (
            (["append", "acme/a", "message.received", "--subject", "runs/\udcff", "--data", '{"message":{"id":"1"}}'],
             "runs/\\xff"),
            (["audit", "record", "agent.created", "agents/\udcff", "--data", '{"agent":{"id":"1"}}', "--actor", "al"],
             "agents/\\xff")):
        code, out, err = _cli(root, *argv)
        assert (code, out, err) == (2, b"", f"error: bad subject '{shown}': it is not valid UTF-8 text\n")
        assert not root.exists()
