"""head: the cursor at the end of every matched log, alone on stdout."""
from __future__ import annotations

import pytest

from contract_util import (append, assert_refused, decode_cursor, encode_cursor, fill,
                           log_path, ok, page_json, run, snapshot)


@pytest.fixture
def logs(root):
    fill(root, "a/x", 3)
    fill(root, "a/y", 1)
    fill(root, "b/z", 2)


def head(root, *patterns) -> str:
    p = ok(run("head", *patterns, root=root))
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 1, p.stdout
    assert p.stdout.decode() in (lines[0], lines[0] + "\n")
    return lines[0]


def test_head_one_log(root, logs):
    assert head(root, "a/x") == encode_cursor({"a/x": 3})


def test_head_all_logs(root, logs):
    cur = head(root, "*")
    assert cur == encode_cursor({"a/x": 3, "a/y": 1, "b/z": 2})
    assert decode_cursor(cur) == {"a/x": 3, "a/y": 1, "b/z": 2}


def test_head_several_patterns(root, logs):
    assert decode_cursor(head(root, "a/?", "b/z")) == {"a/x": 3, "a/y": 1, "b/z": 2}
    assert decode_cursor(head(root, "b/*")) == {"b/z": 2}


def test_head_then_page_reads_only_newer(root, logs):
    cur = head(root, "*")
    assert page_json(root, "*", "--after", cur)["events"] == []
    new = append(root, "a/y", "run.started", {})
    assert page_json(root, "*", "--after", cur)["events"] == [new]


def test_head_ignores_torn_tail(root, logs):
    with open(log_path(root, "a/x"), "ab") as fh:
        fh.write(b'{"specversion":"1.0"')
    assert head(root, "a/x") == encode_cursor({"a/x": 3})


def test_head_skips_wardrik_dir(root, logs):
    line = log_path(root, "a/x").read_bytes().splitlines(keepends=True)[0]
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "audit.jsonl").write_bytes(line)
    assert decode_cursor(head(root, "*")) == {"a/x": 3, "a/y": 1, "b/z": 2}


def test_head_wildcard_matching_nothing(root, logs):
    assert decode_cursor(head(root, "nothing*")) == {}


def test_head_missing_log_refused(root, logs):
    p = run("head", "a/nope", root=root)
    assert_refused(p, 2)
    assert p.stdout == b""


def test_head_does_not_write(root, logs):
    before = snapshot(root)
    head(root, "*")
    assert snapshot(root) == before


def test_head_missing_root(tmp_path):
    missing = tmp_path / "nope"
    assert_refused(run("head", "*", root=missing), None)
    assert not missing.exists()


def test_keys_sorted_by_code_point(root):
    for log in ["a0", "a/x", "a.c", "a-b", "A", "a_z"]:
        fill(root, log, 1)
    cur = head(root, "*")
    assert cur == encode_cursor({"A": 1, "a-b": 1, "a.c": 1, "a/x": 1, "a0": 1, "a_z": 1})
