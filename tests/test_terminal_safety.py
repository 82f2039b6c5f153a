"""Nothing raw reaches a terminal: pretty output of hostile data carries no control but Rich's colours."""
from __future__ import annotations

import io
import re
import unicodedata

import orjson
from hypothesis import HealthCheck, given, settings, strategies as st

from wardrik_cli.cli.app import run
from wardrik_cli.cli.safe_text import safe

SGR = re.compile(rb"\x1b\[[0-9;]*m")  # the renderer's own colours, and nothing else
HOSTILE = ["\x1b]0;pwned\x07", "\x1b[2J", "\x9b2J", "\x9d0;title\x9c", "\u202egnp.exe", "a\u200bb", "\r\x08\x7f",
           "[link=file:///etc/passwd]click[/link]", "[bold red]x[/]", "\u2028\u2029", "\ufeff", "\x00"]


def _cli(args, env_root, stdin=b""):
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(env_root), "--color", "always", *args], {"NO_COLOR": "", "COLUMNS": "200", "TERM": "xterm"},
               stdin=io.BytesIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _assert_clean(raw: bytes) -> None:
    rest = SGR.sub(b"", raw)
    text = rest.decode("utf-8")
    bad = [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert not bad, (bad, text[:400])
    assert b"\x1b]8;" not in raw  # no hyperlink


def _append(root, log, type_, data):
    code, out, err = _cli(["append", log, type_, "--data", orjson.dumps(data).decode()], root)
    assert code == 0, err


def test_hostile_strings_in_every_pretty_view(tmp_path):
    root = tmp_path / "root"
    for i, h in enumerate(HOSTILE):
        _append(root, "acme/t", "run.started", {"task": h, "run": {"message_ids": [h]}})
        _append(root, "acme/t", "message.started", {"message": {"id": h}, "model": h})
        _append(root, "acme/t", "tool_call.started", {"tool": {"name": h, "call": {"id": f"c{i}"}, "args": {h: h}}})
        _append(root, "acme/t", "tool_call.failed", {"tool": {"call": {"id": f"c{i}"}}, "error": {"message": h}})
        _append(root, "acme/t", "input.requested", {"request": {"id": h}})
        _append(root, "acme/t", "run.failed", {"error": {"message": h}})
    for args in (["page", "acme/t", "-F", "pretty"], ["-v", "page", "acme/t", "-F", "pretty"],
                 ["tail", "acme/t", "-n", "50", "-F", "pretty"], ["fold", "acme/t", "-F", "pretty"],
                 ["fold", "acme/t", "--view", "timeline", "-F", "pretty"], ["activity", "acme/t", "-F", "pretty"],
                 ["check", "-F", "pretty"]):
        code, out, err = _cli(args, root)
        assert code == 0, (args, err)
        _assert_clean(out)
        if "page" in args:
            assert b"pwned" in out  # shown, as text
    code, out, _ = _cli(["page", "acme/t", "-F", "jsonl"], root)
    assert b"\\u001b]0;pwned" in out  # jsonl stays the stored bytes (JSON-escaped, as stored)


def test_a_stored_time_that_does_not_parse_is_shown_escaped(tmp_path):
    root = tmp_path / "root"
    _append(root, "acme/t", "trigger.fired", {"trigger": {"name": "x"}})
    path = root / "acme" / "t.jsonl"
    ev = orjson.loads(path.read_bytes())
    ev["time"] = "\x1b]0;T\x07"
    path.write_bytes(orjson.dumps(ev) + b"\n")
    code, out, err = _cli(["page", "acme/t", "-F", "pretty"], root)
    _assert_clean(out)


def test_error_lines_are_escaped_too(tmp_path):
    code, out, err = _cli(["page", "no/such\x1b]0;x\x07"], tmp_path)
    assert code == 2
    assert b"\x1b" not in err and b"\\x1b" in err


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_safe_leaves_no_control(text):
    shown = safe(text)
    assert all(c == "\n" or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in shown)
    if text.isprintable():
        assert shown == text


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30))
def test_pretty_page_of_random_unicode_is_clean(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("r")
    _append(root, "a/b", "tool_call.started", {"tool": {"name": text, "call": {"id": text}}, "args": text})
    code, out, err = _cli(["-v", "page", "a/b", "-F", "pretty"], root)
    assert code == 0, err
    _assert_clean(out)


FAKE_ROW = "c1\n    └── 16:40:00  tool rm -rf /srv/prod c2  completed  12 ms"


def test_a_line_break_in_event_data_plants_no_row_in_a_tree_or_table(tmp_path):
    """A newline is the one control the sanitiser lets through (indented JSON keeps its lines):
    the timeline and the stats table flatten names and ids to one line, as summaries do."""
    root = tmp_path / "root"
    _append(root, "acme/a", "run.started", {"task": "deploy"})
    _append(root, "acme/a", "tool_call.started", {"tool": {"name": "l\ns", "call": {"id": FAKE_ROW}}})
    _append(root, "acme/a", "tool_call.completed", {"tool": {"name": "l\ns", "call": {"id": FAKE_ROW}}})
    code, out, err = _cli(["fold", "acme/a", "--view", "timeline", "-o", "pretty"], root)
    assert code == 0, err
    text = SGR.sub(b"", out).decode()
    assert text.count("\n") == 4 and text.count("└──") == 3, text  # header, timeline, run, one item
    code, out, err = _cli(["stats", "--by", "tool", "-o", "pretty"], root)
    assert code == 0, err
    rows = SGR.sub(b"", out).decode().splitlines()
    assert any(ln.startswith("l s ") for ln in rows) and not any(ln.split()[:1] == ["s"] for ln in rows), rows


def test_check_shows_a_line_break_in_a_path_escaped(tmp_path):
    root = tmp_path / "nl\nok: 0 problems\nroot"
    _append(root, "acme/a", "run.started", {})
    with open(root / "acme" / "a.jsonl", "ab") as f:
        f.write(b"garbage\n")
    code, out, err = _cli(["check", "-o", "pretty"], root)
    assert code == 1
    lines = SGR.sub(b"", out).decode().splitlines()
    assert lines[0].startswith("error: ") and "nl\\x0aok: 0 problems\\x0aroot" in lines[0], lines
    assert not any(ln.startswith("ok: 0 problems") for ln in lines)
