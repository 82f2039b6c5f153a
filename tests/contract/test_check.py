"""check: contiguous sequences pass; gaps, duplicates and corrupt lines exit 1 with
`file:line: byte offset: what` lines; a torn tail is only a warning."""
from __future__ import annotations

import json
import re

import pytest

from contract_util import assert_refused, fill, log_path, ok, run, snapshot

# `file:line: byte offset: what` -- the offset may be written as a bare number or as "byte N".
PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?:byte (?:offset )?)?(?P<offset>\d+): (?P<what>.+)$")


def problems(out: bytes) -> list[re.Match]:
    found = []
    for l in out.decode().splitlines():
        m = PROBLEM.match(l.strip())
        if m:
            found.append(m)
    return found


@pytest.fixture
def logs(root):
    fill(root, "a/x", 4)
    fill(root, "b/z", 2)
    return root


def rewrite(root, log, fn):
    f = log_path(root, log)
    lines = f.read_bytes().splitlines(keepends=True)
    new = fn(lines)
    f.write_bytes(b"".join(new))
    return new


def test_clean_logs_pass(root, logs):
    p = ok(run("check", root=root))
    assert problems(p.stdout) == []


def test_clean_with_pattern(root, logs):
    ok(run("check", "a/*", root=root))


def test_gap_exits_1(root, logs):
    lines = rewrite(root, "a/x", lambda ls: ls[:2] + ls[3:])  # sequences 1, 2, 4
    p = run("check", root=root)
    assert p.returncode == 1, p
    assert b"Traceback" not in p.stderr
    ms = problems(p.stdout)
    assert ms, p.stdout
    m = ms[0]
    assert m["file"].endswith("x.jsonl")
    assert int(m["line"]) == 3
    assert int(m["offset"]) == len(lines[0]) + len(lines[1])


def test_duplicate_sequence_exits_1(root, logs):
    rewrite(root, "a/x", lambda ls: ls[:2] + [ls[1]] + ls[2:])
    p = run("check", root=root)
    assert p.returncode == 1
    assert problems(p.stdout)


@pytest.mark.parametrize("where", ["middle", "last"])
def test_corrupt_line_exits_1(root, logs, where):
    def bad(ls):
        i = 1 if where == "middle" else len(ls)
        return ls[:i] + [b"{not json at all\n"] + ls[i:]
    lines = rewrite(root, "a/x", bad)
    p = run("check", root=root)
    assert p.returncode == 1
    assert b"Traceback" not in p.stderr
    ms = [m for m in problems(p.stdout) if m["file"].endswith("x.jsonl")]
    idx = [i for i, l in enumerate(lines) if l.startswith(b"{not json")][0]
    assert any(int(m["line"]) == idx + 1 and int(m["offset"]) == sum(map(len, lines[:idx])) for m in ms), p.stdout


def test_line_not_an_event_exits_1(root, logs):
    rewrite(root, "a/x", lambda ls: ls[:2] + [b'{"hello":"world"}\n'] + ls[2:])
    p = run("check", root=root)
    assert p.returncode == 1
    assert problems(p.stdout)


def test_torn_tail_exits_0(root, logs):
    with open(log_path(root, "a/x"), "ab") as fh:
        fh.write(b'{"specversion":"1.0","id":"01')
    ok(run("check", root=root))


def test_nul_tail_exits_0(root, logs):
    with open(log_path(root, "b/z"), "ab") as fh:
        fh.write(b"\x00" * 50)
    ok(run("check", root=root))


def test_pattern_limits_what_is_checked(root, logs):
    rewrite(root, "b/z", lambda ls: ls + [b"garbage\n"])
    ok(run("check", "a/x", root=root))
    assert run("check", "b/*", root=root).returncode == 1
    assert run("check", root=root).returncode == 1


def test_json_format(root, logs):
    rewrite(root, "a/x", lambda ls: ls[:2] + ls[3:])
    p = run("check", "--format", "json", root=root)
    assert p.returncode == 1
    text = p.stdout.decode().strip()
    try:
        json.loads(text)
    except ValueError:
        for l in text.splitlines():
            json.loads(l)


def test_check_never_writes(root, logs):
    rewrite(root, "a/x", lambda ls: ls[:2] + [b"bad\n"] + ls[2:] + [b'{"torn'])
    before = snapshot(root)
    run("check", root=root)
    run("check", "--format", "json", root=root)
    assert snapshot(root) == before


def test_check_missing_root(tmp_path):
    missing = tmp_path / "nope"
    assert_refused(run("check", root=missing), None)
    assert not missing.exists()


INVALID_EVENTS = {
    "sequence-not-12-digits": lambda e: e.update(sequence="2"),
    "time-without-microseconds": lambda e: e.update(time="2026-01-01T00:00:00Z"),
    "id-not-uuid": lambda e: e.update(id="not-a-uuid"),
    "specversion": lambda e: e.update(specversion="0.3"),
    "unknown-type": lambda e: e.update(type="wardrik.nope"),
    "live-type-stored": lambda e: e.update(type="wardrik.message.delta"),
    "data-not-object": lambda e: e.update(data=[1]),
    "no-source": lambda e: e.pop("source"),
    "missing-required-field": lambda e: e.update(type="wardrik.run.failed", data={}),
}


@pytest.mark.parametrize("name", sorted(INVALID_EVENTS))
def test_line_not_a_valid_event_exits_1(root, logs, name):
    def mutate(ls):
        e = json.loads(ls[1])
        INVALID_EVENTS[name](e)
        return [ls[0], json.dumps(e, separators=(",", ":")).encode() + b"\n"] + ls[2:]
    lines = rewrite(root, "a/x", mutate)
    p = run("check", root=root)
    assert p.returncode == 1
    ms = problems(p.stdout)
    assert any(int(m["line"]) == 2 and int(m["offset"]) == len(lines[0]) for m in ms), p.stdout
