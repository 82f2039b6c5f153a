"""Environment tunables are validated in one place (wardrik_cli/settings.py), before any command
runs, and one in-process ``run`` never sees another's environment, settings or streams."""
from __future__ import annotations

import io
import os
import sys
import threading

import orjson
import pytest

from conftest import jsonl, run_cli

BAD = [
    ("WARDRIK_LOCK_TIMEOUT", "abc"),
    ("WARDRIK_POLL_S", "-1"),
    ("WARDRIK_WATCH_STEP_MS", "x"),
]
COMMANDS = {
    "append": ["append", "acme/a", "trigger.fired", "--data", '{"trigger": {"name": "n"}}'],
    "audit record": ["audit", "record", "agent.created", "agents/x", "--data", '{"agent": {"id": "x"}}',
                     "--actor", "user:a"],
}


def _one_error_line(p, name: str, value: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stdout == b""
    err = p.stderr.decode()
    assert err.startswith(f"error: {name}={value!r}: "), err
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name,value", BAD, ids=[n for n, _ in BAD])
def test_bad_setting_is_one_error_line_and_nothing_written(tmp_path, command, name, value):
    root = tmp_path / "new-root"  # append and audit record would create it
    p = run_cli(*COMMANDS[command], root=root, env={name: value})
    _one_error_line(p, name, value)
    assert not root.exists()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name,value", BAD, ids=[n for n, _ in BAD])
def test_bad_setting_refused_by_readers_too(root, name, value):
    assert run_cli(*COMMANDS["append"], root=root).returncode == 0
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    for args in (["page", "acme/a"], ["tail", "acme/a"], ["types"], ["check"]):
        _one_error_line(run_cli(*args, root=root, env={name: value}), name, value)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


@pytest.mark.parametrize("name,value", [("WARDRIK_LOCK_TIMEOUT", "0.5"), ("WARDRIK_POLL_S", "86400"),
                                        ("WARDRIK_WATCH_STEP_MS", "60000"), ("WARDRIK_LOCK_TIMEOUT", "")])
def test_good_and_empty_settings_are_accepted(tmp_path, name, value):
    p = run_cli(*COMMANDS["append"], root=tmp_path / "r", env={name: value})
    assert p.returncode == 0, p.stderr
    assert len(jsonl(p.stdout)) == 1 and p.stderr == b""


@pytest.mark.subprocess
def test_bad_setting_in_the_executable(tmp_path):
    """The real process refuses the same way, before it touches anything."""
    root = tmp_path / "new-root"
    p = run_cli(*COMMANDS["append"], root=root, env={"WARDRIK_LOCK_TIMEOUT": "abc"}, process=True)
    _one_error_line(p, "WARDRIK_LOCK_TIMEOUT", "abc")
    assert not root.exists()


def test_runs_in_threads_at_once_see_only_their_own(tmp_path):
    """``run`` calls at once, in three threads, each with its own root, deployment, settings,
    terminal width and stdout: none sees another's, and the process's streams are left as
    they were. (a and b differ in everything; c's settings are bad, so c is refused every
    time while a and b, at the same moment, are not.)"""
    from wardrik_cli.cli.app import run

    rounds = 15
    sides = {
        "a": {"WARDRIK_ROOT": str(tmp_path / "a"), "WARDRIK_DEPLOYMENT": "alpha", "COLUMNS": "60",
              "WARDRIK_LOCK_TIMEOUT": "5"},
        "b": {"WARDRIK_ROOT": str(tmp_path / "b"), "WARDRIK_DEPLOYMENT": "beta", "COLUMNS": "110"},
        "c": {"WARDRIK_ROOT": str(tmp_path / "c"), "WARDRIK_DEPLOYMENT": "gamma", "COLUMNS": "90",
              "WARDRIK_LOCK_TIMEOUT": "abc"},
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith("WARDRIK_")}
    results: dict[str, list] = {n: [] for n in sides}
    failures: list[BaseException] = []
    barrier = threading.Barrier(len(sides))
    process_streams = (sys.stdout, sys.stderr)

    def side(name: str) -> None:
        try:
            env = dict(base, NO_COLOR="1", **sides[name])
            barrier.wait(timeout=30)
            for i in range(rounds):
                for what, argv in (("append", ["append", f"{name}/log", "trigger.fired", "--data",
                                               orjson.dumps({"trigger": {"name": f"{name}{i}"}}).decode()]),
                                   ("page", ["page", "*/log", "--limit", "1000"]),
                                   ("help", ["append", "--help"])):
                    out, err = io.BytesIO(), io.BytesIO()
                    code = run(argv, env, stdin=io.BytesIO(), stdout=out, stderr=err)
                    results[name].append((what, code, out.getvalue(), err.getvalue()))
        except BaseException as e:  # noqa: BLE001 - reported below, in the test's thread
            failures.append(e)

    threads = [threading.Thread(target=side, args=(n,)) for n in sides]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures
    assert (sys.stdout, sys.stderr) == process_streams

    # a and b: their own root and deployment, their own events only, help at their own width
    for name, deployment, width in (("a", "alpha", 60), ("b", "beta", 110)):
        rows = results[name]
        assert all(code == 0 and err == b"" for _, code, _, err in rows), [r for r in rows if r[1] or r[3]]
        appended = [jsonl(out)[0] for what, _, out, _ in rows if what == "append"]
        assert [e["data"]["trigger"]["name"] for e in appended] == [f"{name}{i}" for i in range(rounds)]
        assert all(e["source"] == f"wardrik://{deployment}/agents/{name}/log" for e in appended)
        assert [int(e["sequence"]) for e in appended] == list(range(1, rounds + 1))
        pages = [jsonl(out) for what, _, out, _ in rows if what == "page"]
        assert [len(p) for p in pages] == list(range(1, rounds + 1))
        assert all(e["source"] == f"wardrik://{deployment}/agents/{name}/log" for p in pages for e in p)
        assert (tmp_path / name / name / "log.jsonl").read_bytes() == b"".join(
            out for what, _, out, _ in rows if what == "append")
        helps = [out.decode() for what, _, out, _ in rows if what == "help"]
        assert len(helps) == rounds and all("Append events to a log" in h for h in helps)
        widths = {max(len(line) for line in h.splitlines()) for h in helps}
        assert max(widths) <= width and (width == 60 or min(widths) > 60), (name, widths)

    # c: refused by its own bad setting every time (never by another's good one), nothing written
    for what, code, out, err in results["c"]:
        assert code == 2 and out == b"" and err.startswith(b"error: WARDRIK_LOCK_TIMEOUT='abc': "), (what, err)
        assert err.count(b"\n") == 1
    assert not (tmp_path / "c").exists()


def test_runs_one_after_another_keep_nothing(tmp_path):
    """Global options and settings of one run do not carry into the next."""
    from wardrik_cli.cli.app import run

    base = {k: v for k, v in os.environ.items() if not k.startswith("WARDRIK_")}
    out = io.BytesIO()
    code = run(["--root", str(tmp_path / "x"), "--deployment", "first", "append", "l", "run.started"],
               dict(base, WARDRIK_LOCK_TIMEOUT="2"), stdout=out, stderr=io.BytesIO())
    assert code == 0 and jsonl(out.getvalue())[0]["source"] == "wardrik://first/agents/l"
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["append", "l", "run.started"], dict(base, WARDRIK_ROOT=str(tmp_path / "y")), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert jsonl(out.getvalue())[0]["source"] == "wardrik://local/agents/l"  # no --deployment carried over
    assert (tmp_path / "y" / "l.jsonl").is_file()  # no --root carried over
    assert (tmp_path / "x" / "l.jsonl").read_bytes().count(b"\n") == 1
