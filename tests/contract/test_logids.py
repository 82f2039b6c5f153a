"""Log ids: what is accepted, what is refused before any file is touched."""
from __future__ import annotations

import pytest

from contract_util import append, assert_refused, fill, log_path, page_json, run, snapshot

BAD_IDS = {
    "dotdot": "../x",
    "dotdot-inside": "a/../b",
    "dot-segment": "a/./b",
    "dot": ".",
    "dotdot-alone": "..",
    "absolute": "/abs",
    "absolute-tmp": "/tmp/wardrik-evil",
    "empty-segment": "a//b",
    "trailing-slash": "a/",
    "leading-dot": ".hidden",
    "leading-dot-segment": "a/.hidden",
    "wardrik-dir": ".wardrik/audit",
    "leading-dash": "-x",
    "leading-dash-segment": "a/-x",
    "leading-underscore": "_x",
    "too-long": "x" * 201,
    "too-long-segments": "/".join(["abcdefghi"] * 20) + "/x",  # 201 chars
    "jsonl": "x.jsonl",
    "jsonl-nested": "a/b.jsonl",
    "control-char": "a\x01b",
    "newline": "a\nb",
    "tab": "a\tb",
    "del": "a\x7fb",
    "backslash": "a\\b",
    "backslash-dotdot": "..\\x",
    "space": "a b",
    "star": "a*",
    "unicode": "caf\u00e9",
    "empty": "",
}


def test_too_long_fixtures_are_201():
    assert len(BAD_IDS["too-long"]) == 201 and len(BAD_IDS["too-long-segments"]) == 201


@pytest.mark.parametrize("name", sorted(BAD_IDS))
def test_append_refuses_bad_log_id(root, name):
    before = snapshot(root)
    p = run("append", "--data", "{}", "--", BAD_IDS[name], "run.started", root=root)
    assert_refused(p, 2)
    assert p.stdout == b""
    assert snapshot(root) == before


@pytest.mark.parametrize("name", ["dotdot", "absolute", "empty-segment", "leading-dot", "jsonl"])
def test_append_batch_refuses_bad_log_id(root, name):
    before = snapshot(root)
    p = run("append", "--batch", "-", "--", BAD_IDS[name], root=root,
            input=b'{"type": "run.started", "data": {}}\n')
    assert_refused(p, 2)
    assert snapshot(root) == before


def test_dash_id_without_separator_refused(root):
    before = snapshot(root)
    p = run("append", "-x", "run.started", root=root)
    assert p.returncode == 2
    assert b"Traceback" not in p.stderr
    assert snapshot(root) == before


def test_nothing_escapes_the_root(tmp_path, root):
    p = run("append", "--data", "{}", "--", "../escaped", "run.started", root=root)
    assert p.returncode == 2
    assert not (tmp_path / "escaped.jsonl").exists()


@pytest.mark.parametrize("name", ["dotdot", "absolute", "empty-segment", "leading-dot", "jsonl",
                                  "backslash", "control-char", "empty", "too-long"])
def test_readers_refuse_bad_log_id(root, name):
    fill(root, "a", 1)
    for cmd in ("page", "head"):
        p = run(cmd, "--", BAD_IDS[name], root=root)
        assert_refused(p, 2)
        assert p.stdout == b""


@pytest.mark.parametrize("log", ["a", "A1", "a/b/c", "x_y-z.v2", "0", "acme/triage", "a.b/c_d-e",
                                 "x" * 200, "/".join(["abcdefghi"] * 20)])
def test_valid_log_ids(root, log):
    assert len(log) <= 200
    ev = append(root, log, "run.started", {})
    assert ev["source"] == f"wardrik://local/agents/{log}"
    assert ev["subject"] == f"agents/{log}"
    assert log_path(root, log).is_file()
    assert [e["id"] for e in page_json(root, log)["events"]] == [ev["id"]]


def test_log_beside_folder_of_same_name(root):
    a = append(root, "a", "run.started", {})
    ax = append(root, "a/x", "run.started", {})
    assert page_json(root, "a")["events"] == [a]
    assert page_json(root, "a/x")["events"] == [ax]
    assert [e["id"] for e in page_json(root, "*")["events"]] == [a["id"], ax["id"]]
