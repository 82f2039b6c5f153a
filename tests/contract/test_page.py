"""page: order across logs, formats, limits, filters, cursors, patterns, corruption, read-only."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone, UTC
from pathlib import Path

import pytest

from contract_util import (append, assert_refused, decode_cursor, encode_cursor, fill, jsonl,
                           log_of, log_path, ok, page_json, run, seqs, snapshot)


@pytest.fixture
def three(root):
    """a/x: 3 events, a/y: 2, b/z: 2, appended interleaved; returns them in append order."""
    order = ["a/x", "a/y", "b/z", "a/x", "b/z", "a/y", "a/x"]
    evs = [append(root, log, "message.received", {"message": {"id": f"m{i}"}}) for i, log in enumerate(order)]
    return evs


def test_oldest_first_across_logs(root, three):
    doc = page_json(root, "*")
    got = doc["events"]
    assert [e["id"] for e in got] == [e["id"] for e in three]
    assert [(e["time"], log_of(e)) for e in got] == sorted((e["time"], log_of(e)) for e in got)


def test_each_log_in_sequence_order(root, three):
    got = page_json(root, "a/*", "b/z")["events"]
    for log in ["a/x", "a/y", "b/z"]:
        s = seqs([e for e in got if log_of(e) == log])
        assert s == list(range(1, len(s) + 1)) and s


def test_json_shape(root, three):
    doc = page_json(root, "a/x")
    assert set(doc) == {"events", "next"}
    assert doc["events"] == [e for e in three if log_of(e) == "a/x"]
    assert decode_cursor(doc["next"]) == {"a/x": 3}
    assert doc["next"] == encode_cursor({"a/x": 3})


def test_jsonl_is_the_stored_bytes(root, three):
    p = ok(run("page", "a/x", "--format", "jsonl", root=root))
    assert p.stdout == log_path(root, "a/x").read_bytes()


def test_default_format_off_terminal_is_jsonl(root, three):
    p = ok(run("page", "a/y", root=root))
    assert p.stdout == log_path(root, "a/y").read_bytes()


def test_jsonl_across_logs_prints_stored_lines(root, three):
    p = ok(run("page", "*", "--format", "jsonl", root=root))
    stored = set()
    for log in ["a/x", "a/y", "b/z"]:
        stored |= set(log_path(root, log).read_bytes().splitlines(keepends=True))
    lines = p.stdout.splitlines(keepends=True)
    assert len(lines) == 7 and set(lines) == stored
    assert [json.loads(l)["id"] for l in lines] == [e["id"] for e in three]


def test_pretty_ends_with_next(root, three):
    p = ok(run("page", "b/z", "--format", "pretty", root=root))
    last = [l.strip() for l in p.stdout.decode().splitlines() if l.strip()][-1]
    assert last == f"next: {encode_cursor({'b/z': 2})}"


def test_bad_format_refused(root, three):
    assert_refused(run("page", "a/x", "--format", "xml", root=root), 2)


def test_limit_and_paging_through(root, three):
    doc = page_json(root, "*", "--limit", "2")
    assert [e["id"] for e in doc["events"]] == [three[0]["id"], three[1]["id"]]
    cur = decode_cursor(doc["next"])
    assert cur.get("a/x") == 1 and cur.get("a/y") == 1 and cur.get("b/z", 0) == 0
    seen = doc["events"]
    nxt = doc["next"]
    for _ in range(10):
        d = page_json(root, "*", "--limit", "2", "--after", nxt)
        if not d["events"]:
            break
        assert len(d["events"]) <= 2
        seen += d["events"]
        nxt = d["next"]
    assert [e["id"] for e in seen] == [e["id"] for e in three]
    assert decode_cursor(nxt) == {"a/x": 3, "a/y": 2, "b/z": 2}


def test_limit_default_is_100(root):
    fill(root, "big", 130)
    assert len(page_json(root, "big")["events"]) == 100
    assert len(page_json(root, "big", "--limit", "120")["events"]) == 120


def test_after_reads_on(root, three):
    doc = page_json(root, "a/x", "b/z", "--after", encode_cursor({"a/x": 1}))
    got = [(log_of(e), int(e["sequence"])) for e in doc["events"]]
    assert got == [("b/z", 1), ("a/x", 2), ("b/z", 2), ("a/x", 3)]


def test_append_then_read_on(root, three):
    nxt = page_json(root, "*")["next"]
    new = append(root, "a/y", "run.started", {})
    doc = page_json(root, "*", "--after", nxt)
    assert doc["events"] == [new]


# --- filters ----------------------------------------------------------------------------------

@pytest.fixture
def mixed(root):
    evs = [append(root, "r", "run.started", {"run": {"id": "11111111111111111111111111111111"}}),
           append(root, "r", "tool_call.started", {"tool": {"name": "grep", "call": {"id": "c1"}}}),
           append(root, "r", "tool_call.completed", {"tool": {"call": {"id": "c1"}}}),
           append(root, "r", "run.completed", {}),
           append(root, "r", "run.started", {"run": {"id": "22222222222222222222222222222222"}}),
           append(root, "r", "message.started", {"message": {"id": "m1"}}),
           append(root, "r", "run.failed", {"error": {"message": "x"}})]
    return evs


@pytest.mark.parametrize("types", ["tool_call.started", "wardrik.tool_call.started"])
def test_types_filter_with_or_without_prefix(root, mixed, types):
    doc = page_json(root, "r", "--types", types)
    assert doc["events"] == [mixed[1]]


def test_types_list(root, mixed):
    doc = page_json(root, "r", "--types", "run.started,wardrik.run.failed")
    assert doc["events"] == [mixed[0], mixed[4], mixed[6]]


def test_next_moves_past_filtered_events(root, mixed):
    doc = page_json(root, "r", "--types", "tool_call.started")
    assert decode_cursor(doc["next"]) == {"r": 7}
    assert page_json(root, "r", "--types", "tool_call.started", "--after", doc["next"])["events"] == []


def test_run_filter(root, mixed):
    assert page_json(root, "r", "--run", "11111111111111111111111111111111")["events"] == mixed[:4]
    assert page_json(root, "r", "--run", "22222222222222222222222222222222")["events"] == mixed[4:]


def test_since_inclusive_until_exclusive(root, mixed):
    t = mixed[3]["time"]
    assert page_json(root, "r", "--since", t)["events"] == mixed[3:]
    assert page_json(root, "r", "--until", t)["events"] == mixed[:3]
    assert page_json(root, "r", "--since", mixed[1]["time"], "--until", mixed[3]["time"])["events"] == mixed[1:3]


def test_since_without_offset_is_utc(root, mixed):
    t = mixed[3]["time"].rstrip("Z")
    assert page_json(root, "r", "--since", t)["events"] == mixed[3:]


def test_since_with_offset(root, mixed):
    t = datetime.strptime(mixed[3]["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    local = t.astimezone(timezone(timedelta(hours=2))).isoformat()
    assert local.endswith("+02:00")
    assert page_json(root, "r", "--since", local)["events"] == mixed[3:]


def test_since_until_whole_seconds(root, mixed):
    assert page_json(root, "r", "--since", "2000-01-01T00:00:00Z")["events"] == mixed
    assert page_json(root, "r", "--since", "2999-01-01T00:00:00Z")["events"] == []
    assert page_json(root, "r", "--until", "2999-01-01T00:00:00")["events"] == mixed


@pytest.mark.parametrize("ago", ["15m", "2h", "3d"])
def test_durations(root, mixed, ago):
    assert page_json(root, "r", "--since", ago)["events"] == mixed
    assert page_json(root, "r", "--until", ago)["events"] == []


@pytest.mark.parametrize("opt,val", [("--since", "tomorow"), ("--until", "15x"), ("--since", "2026-13-45"),
                                     ("--limit", "-1"), ("--limit", "many")])
def test_bad_filter_values_refused(root, mixed, opt, val):
    p = run("page", "r", opt, val, root=root)
    assert_refused(p, 2)
    assert p.stdout == b""


# --- cursor file ------------------------------------------------------------------------------

def test_cursor_file(root, three, tmp_path):
    cf = tmp_path / "cursor"
    first = jsonl(ok(run("page", "*", "--cursor-file", cf, root=root)).stdout)
    assert [e["id"] for e in first] == [e["id"] for e in three]
    assert decode_cursor(cf.read_text().strip()) == {"a/x": 3, "a/y": 2, "b/z": 2}
    new = append(root, "b/z", "run.started", {})
    second = jsonl(ok(run("page", "*", "--cursor-file", cf, root=root)).stdout)
    assert second == [new]
    assert decode_cursor(cf.read_text().strip()) == {"a/x": 3, "a/y": 2, "b/z": 3}
    assert jsonl(ok(run("page", "*", "--cursor-file", cf, root=root)).stdout) == []


def test_cursor_file_json_next_matches(root, three, tmp_path):
    cf = tmp_path / "cursor"
    doc = page_json(root, "a/*", "--limit", "3", "--cursor-file", cf)
    assert cf.read_text().strip() == doc["next"]


def test_after_wins_over_cursor_file(root, three, tmp_path):
    cf = tmp_path / "cursor"
    cf.write_text(encode_cursor({"a/x": 3}))
    doc = page_json(root, "a/x", "--after", encode_cursor({"a/x": 1}), "--cursor-file", cf)
    assert seqs(doc["events"]) == [2, 3]
    assert decode_cursor(cf.read_text().strip()) == {"a/x": 3}


def test_cursor_file_untouched_when_reading_fails(root, three, tmp_path):
    corrupt(root, "a/x", "middle")
    cf = tmp_path / "cursor"
    assert run("page", "a/x", "--cursor-file", cf, root=root).returncode == 1
    assert not cf.exists()
    cf.write_text(encode_cursor({"a/x": 1}))
    assert run("page", "a/x", "--cursor-file", cf, root=root).returncode == 1
    assert cf.read_text() == encode_cursor({"a/x": 1})


def test_bad_cursor_file_refused(root, three, tmp_path):
    cf = tmp_path / "cursor"
    cf.write_text("!!not a cursor!!")
    p = run("page", "a/x", "--cursor-file", cf, root=root)
    assert_refused(p, 2)
    assert cf.read_text() == "!!not a cursor!!"


# --- patterns ---------------------------------------------------------------------------------

def test_question_mark_matches_one_character(root, three):
    append(root, "a/xy", "run.started", {})
    got = {log_of(e) for e in page_json(root, "a/?")["events"]}
    assert got == {"a/x", "a/y"}


def test_star_matches_nested(root, three):
    append(root, "a/deep/er", "run.started", {})
    assert {log_of(e) for e in page_json(root, "*")["events"]} == {"a/x", "a/y", "b/z", "a/deep/er"}
    assert {log_of(e) for e in page_json(root, "a/*")["events"]} == {"a/x", "a/y", "a/deep/er"}


def test_several_patterns_overlap_once(root, three):
    doc = page_json(root, "a/*", "a/x", "*")
    assert [e["id"] for e in doc["events"]] == [e["id"] for e in three]


def test_pattern_without_wildcards_naming_no_log(root, three):
    p = run("page", "a/nope", root=root)
    assert_refused(p, 2)
    assert p.stdout == b""


def test_wildcard_matching_nothing(root, three):
    given = encode_cursor({"a/x": 2})
    doc = page_json(root, "zz*", "--after", given)
    assert doc == {"events": [], "next": given}


def test_wildcard_matching_nothing_without_cursor(root, three):
    doc = page_json(root, "zz*")
    assert doc["events"] == []
    assert decode_cursor(doc["next"]) == {}


def test_wardrik_dir_never_matched(root, three):
    line = log_path(root, "a/x").read_bytes().splitlines(keepends=True)[0]
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "audit.jsonl").write_bytes(line)
    (root / ".wardrik" / "other.jsonl").write_bytes(line)
    doc = page_json(root, "*")
    assert len(doc["events"]) == 7
    assert all(not k.startswith(".") for k in decode_cursor(doc["next"]))


def test_audit_log_not_listed_by_star(root, three):
    ok(run("audit", "record", "agent.created", "agents/a/x", "--data", '{"agent": {"id": "a/x"}}',
           "--actor", "alice", root=root))
    doc = page_json(root, "*")
    assert len(doc["events"]) == 7
    assert "audit" not in decode_cursor(doc["next"])


# --- torn tails, corruption, read-only ----------------------------------------------------------

def test_torn_tail_skipped_silently(root, three):
    f = log_path(root, "a/x")
    good = f.read_bytes()
    with open(f, "ab") as fh:
        fh.write(b'{"specversion":"1.0","id":"01')
    p = ok(run("page", "a/x", "--format", "jsonl", root=root))
    assert p.stdout == good
    assert b"error:" not in p.stderr
    assert decode_cursor(page_json(root, "a/x")["next"]) == {"a/x": 3}


def test_nul_tail_skipped(root, three):
    f = log_path(root, "a/x")
    good = f.read_bytes()
    with open(f, "ab") as fh:
        fh.write(b"\x00" * 100)
    assert ok(run("page", "a/x", "--format", "jsonl", root=root)).stdout == good


def corrupt(root: Path, log: str, where: str) -> tuple[int, int]:
    """Put a complete non-JSON line into the log; returns (line number, byte offset) of it."""
    f = log_path(root, log)
    lines = f.read_bytes().splitlines(keepends=True)
    idx = 1 if where == "middle" else len(lines)
    lines.insert(idx, b"#### not json ####\n")
    f.write_bytes(b"".join(lines))
    return idx + 1, sum(len(l) for l in lines[:idx])


@pytest.mark.parametrize("where", ["middle", "last"])
def test_corrupt_line_stops_reader(root, three, where):
    line, offset = corrupt(root, "a/x", where)
    p = run("page", "a/x", root=root)
    assert_refused(p, 1)
    err = p.stderr.decode()
    assert "x.jsonl" in err
    assert str(line) in err and str(offset) in err


@pytest.mark.parametrize("where", ["middle", "last"])
def test_skip_corrupt_warns_and_goes_on(root, three, where):
    corrupt(root, "a/x", where)
    p = ok(run("page", "a/x", "--skip-corrupt", "--format", "json", root=root))
    assert seqs(json.loads(p.stdout)["events"]) == [1, 2, 3]
    assert p.stderr.strip()
    assert not any(l.startswith("error:") for l in p.stderr.decode().splitlines())


def test_readers_never_write(root, three, tmp_path):
    with open(log_path(root, "a/y"), "ab") as fh:
        fh.write(b'{"torn')
    before = snapshot(root)
    for args in (["page", "*"], ["page", "*", "--format", "json"], ["page", "a/x", "--types", "run.started"],
                 ["head", "*"], ["check"], ["page", "a/*", "--format", "pretty"]):
        run(*args, root=root)
    assert snapshot(root) == before


def test_readers_never_write_with_corruption(root, three):
    corrupt(root, "b/z", "middle")
    before = snapshot(root)
    run("page", "*", root=root)
    run("page", "*", "--skip-corrupt", root=root)
    run("head", "*", root=root)
    run("check", root=root)
    assert snapshot(root) == before


def test_missing_root_is_an_error(tmp_path):
    missing = tmp_path / "nope"
    p = run("page", "*", root=missing)
    assert_refused(p, None)
    assert not missing.exists()


def set_times(root, log, times):
    f = log_path(root, log)
    evs = [json.loads(l) for l in f.read_bytes().splitlines()]
    for e, t in zip(evs, times, strict=False):
        e["time"] = t
    f.write_bytes(b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in evs))
    return evs


def test_interleaved_by_time_not_by_writing_order(root):
    fill(root, "first", 2)
    fill(root, "second", 2)
    set_times(root, "first", ["2026-01-01T00:00:02.000000Z", "2026-01-01T00:00:04.000000Z"])
    set_times(root, "second", ["2026-01-01T00:00:01.000000Z", "2026-01-01T00:00:03.000000Z"])
    got = [(log_of(e), int(e["sequence"])) for e in page_json(root, "*")["events"]]
    assert got == [("second", 1), ("first", 1), ("second", 2), ("first", 2)]


def test_equal_times_ordered_by_log_id(root):
    fill(root, "zeta", 2)
    fill(root, "alpha", 1)
    fill(root, "mid/x", 1)
    t = "2026-01-01T00:00:00.000000Z"
    set_times(root, "zeta", [t, t])
    set_times(root, "alpha", [t])
    set_times(root, "mid/x", [t])
    got = [(log_of(e), int(e["sequence"])) for e in page_json(root, "*")["events"]]
    assert got == [("alpha", 1), ("mid/x", 1), ("zeta", 1), ("zeta", 2)]
