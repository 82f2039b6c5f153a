"""append: stored attributes, printed bytes, data sources, traces, refusals, torn tails, corruption."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, UTC

import pytest

from contract_util import (HEX32, KEPT, TIME, TRACEPARENT, UUID7, append, assert_refused,
                           files_containing, jsonl, log_path, ok, run, seqs, snapshot)


def test_first_append_creates_folders_and_file(root):
    p = ok(run("append", "acme/triage", "run.started", "--data", "{}", root=root))
    f = root / "acme" / "triage.jsonl"
    assert f.is_file()
    assert p.stdout == f.read_bytes()


def test_stored_attributes(root):
    before = datetime.now(UTC) - timedelta(minutes=5)
    ev = append(root, "acme/triage", "run.started", {"task": "triage"})
    assert ev["specversion"] == "1.0"
    assert UUID7.match(ev["id"]), ev["id"]
    assert ev["type"] == "wardrik.run.started"
    assert ev["source"] == "wardrik://local/agents/acme/triage"
    assert ev["subject"] == "agents/acme/triage"
    assert TIME.match(ev["time"]), ev["time"]
    t = datetime.strptime(ev["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before <= t <= datetime.now(UTC) + timedelta(minutes=5)
    assert ev["sequence"] == "000000000001"
    assert TRACEPARENT.match(ev["traceparent"]), ev["traceparent"]
    assert ev["data"]["task"] == "triage"
    assert "prevhash" not in ev


def test_line_is_compact_utf8_and_newline_terminated(root):
    append(root, "a", "run.started", {"task": "caf\u00e9 \u2603", "n": [1, 2]})
    raw = log_path(root, "a").read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    line = raw[:-1]
    text = line.decode("utf-8")
    obj = json.loads(text)
    assert text == json.dumps(obj, separators=(",", ":"), ensure_ascii=False) or \
        text == json.dumps(obj, separators=(",", ":"))
    assert obj["data"]["task"] == "caf\u00e9 \u2603"


@pytest.mark.parametrize("given", ["run.started", "wardrik.run.started"])
def test_type_stored_with_prefix(root, given):
    ev = append(root, "a", given, {})
    assert ev["type"] == "wardrik.run.started"


def test_sequences_times_and_ids(root):
    evs = [append(root, "a", "message.received", {"message": {"id": f"m{i}"}}) for i in range(5)]
    assert [e["sequence"] for e in evs] == [f"{i:012d}" for i in range(1, 6)]
    times = [e["time"] for e in evs]
    assert times == sorted(times)
    assert len({e["id"] for e in evs}) == 5
    assert [e["id"] for e in evs] == sorted(e["id"] for e in evs)  # UUIDv7 are time ordered


def test_time_never_earlier_than_previous_event(root):
    append(root, "a", "run.started", {})
    f = log_path(root, "a")
    ev = json.loads(f.read_bytes())
    ev["time"] = "2099-01-01T00:00:00.123456Z"
    f.write_bytes(json.dumps(ev, separators=(",", ":")).encode() + b"\n")
    nxt = append(root, "a", "run.completed", {})
    assert nxt["time"] == "2099-01-01T00:00:00.123456Z"
    assert nxt["sequence"] == "000000000002"


def test_sequence_follows_highest_after_prefix_dropped(root):
    for _ in range(5):
        append(root, "a", "run.completed", {})
    f = log_path(root, "a")
    f.write_bytes(b"".join(f.read_bytes().splitlines(keepends=True)[2:]))
    assert append(root, "a", "run.completed", {})["sequence"] == "000000000006"


def test_type_and_batch_together_refused(root):
    p = run("append", "a", "run.started", "--batch", "-", root=root, input=b'{"type": "run.started", "data": {}}\n')
    assert p.returncode == 2
    assert b"Traceback" not in p.stderr
    assert not log_path(root, "a").exists()


def test_sequences_are_per_log(root):
    append(root, "a", "run.started")
    append(root, "a", "run.completed")
    ev = append(root, "b", "run.started")
    assert ev["sequence"] == "000000000001"


def test_append_prints_exactly_the_stored_bytes(root):
    f = log_path(root, "x/y")
    ok(run("append", "x/y", "run.started", "--data", "{}", root=root))
    size = f.stat().st_size
    p = ok(run("append", "x/y", "message.received", "--data", '{"message": {"id": "m1"}}', root=root))
    assert p.stdout == f.read_bytes()[size:]
    assert p.stdout.count(b"\n") == 1


def test_subject_as_given(root):
    ev = append(root, "a", "run.started", {}, "--subject", "runs/42")
    assert ev["subject"] == "runs/42"
    assert ev["source"] == "wardrik://local/agents/a"


def test_data_from_file(root, tmp_path):
    f = tmp_path / "d.json"
    f.write_text('{"tool": {"name": "grep", "call": {"id": "c9"}}}')
    p = ok(run("append", "a", "tool_call.started", "--data", f"@{f}", root=root))
    assert jsonl(p.stdout)[0]["data"] == {"tool": {"name": "grep", "call": {"id": "c9"}}}


def test_data_from_stdin(root):
    p = ok(run("append", "a", "trigger.fired", "--data", "-", root=root, input='{"trigger": {"name": "t"}}\n'))
    assert jsonl(p.stdout)[0]["data"] == {"trigger": {"name": "t"}}


def test_no_data_is_an_object(root):
    p = ok(run("append", "a", "run.completed", root=root))
    assert isinstance(jsonl(p.stdout)[0]["data"], dict)


def test_no_sync_still_appends(root):
    p = ok(run("append", "a", "run.started", "--data", "{}", "--no-sync", root=root))
    assert p.stdout == log_path(root, "a").read_bytes()


@pytest.mark.parametrize("type_", sorted(KEPT))
def test_every_kept_type_with_its_required_fields(root, type_):
    ev = append(root, "a", type_, KEPT[type_])
    assert ev["type"] == "wardrik." + type_
    assert TRACEPARENT.match(ev["traceparent"]), ev["traceparent"]
    assert ev["sequence"] == "000000000001"


# --- traces ---------------------------------------------------------------------------------

def trace_id(ev):
    return TRACEPARENT.match(ev["traceparent"]).group(1)


def span_id(ev):
    return TRACEPARENT.match(ev["traceparent"]).group(2)


def test_run_started_trace_id_is_run_id(root):
    rid = "0af7651916cd43dd8448eb211c80319c"
    ev = append(root, "a", "run.started", {"run": {"id": rid}})
    assert trace_id(ev) == rid
    assert ev["data"]["run"]["id"] == rid


def test_run_started_without_run_id_gets_one_equal_to_trace(root):
    ev = append(root, "a", "run.started", {})
    assert HEX32.match(ev["data"]["run"]["id"])
    assert trace_id(ev) == ev["data"]["run"]["id"]


def test_runs_open_new_traces(root):
    a = append(root, "a", "run.started", {})
    append(root, "a", "run.completed", {})
    b = append(root, "a", "run.started", {})
    assert trace_id(a) != trace_id(b)


def test_events_of_a_run_share_its_trace(root):
    start = append(root, "a", "run.started", {})
    rest = [append(root, "a", t, KEPT[t]) for t in
            ["message.started", "tool_call.started", "tool_call.completed", "message.completed",
             "run.completed"]]
    assert {trace_id(e) for e in rest} == {trace_id(start)} == {start["data"]["run"]["id"]}
    spans = [span_id(start)] + [span_id(e) for e in rest]
    assert len(set(spans)) == len(spans)


def test_trace_option_on_run_started_gives_trace_id(root):
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    ev = append(root, "a", "run.started", {}, "--trace", f"00-{tid}-00f067aa0ba902b7-01")
    assert trace_id(ev) == tid
    assert ev["data"]["run"]["id"] == tid


def test_trace_option_agreeing_with_run_id(root):
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    ev = append(root, "a", "run.started", {"run": {"id": tid}}, "--trace", f"00-{tid}-00f067aa0ba902b7-01")
    assert trace_id(ev) == tid


def test_trace_option_and_run_id_disagreeing_is_refused(root):
    p = run("append", "a", "run.started", "--data", '{"run": {"id": "0af7651916cd43dd8448eb211c80319c"}}',
            "--trace", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", root=root)
    assert_refused(p, 2)
    assert not log_path(root, "a").exists()


def test_trace_option_overrides_open_run(root):
    append(root, "a", "run.started", {})
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    ev = append(root, "a", "message.started", {"message": {"id": "m1"}},
                "--trace", f"00-{tid}-00f067aa0ba902b7-01")
    assert trace_id(ev) == tid


@pytest.mark.parametrize("rid", ["0AF7651916CD43DD8448EB211C80319C", "0af7651916cd43dd8448eb211c80319",
                                 "0af7651916cd43dd8448eb211c80319cc", "zzf7651916cd43dd8448eb211c80319c", 12])
def test_bad_run_id_refused(root, rid):
    p = run("append", "a", "run.started", "--data", json.dumps({"run": {"id": rid}}), root=root)
    assert_refused(p, 2)
    assert not log_path(root, "a").exists()


@pytest.mark.parametrize("tp", ["garbage", "00-4bf92f3577b34da6a3ce929d0e0e4736-01",
                                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"])
def test_bad_trace_option_refused(root, tp):
    p = run("append", "a", "run.started", "--data", "{}", "--trace", tp, root=root)
    assert_refused(p, 2)
    assert not log_path(root, "a").exists()


# --- refused data -----------------------------------------------------------------------------

BAD_DATA = {
    "array": b"[]",
    "string": b'"x"',
    "number": b"1",
    "null": b"null",
    "invalid-json": b"{bad",
    "trailing-junk": b"{} {}",
    "nan": b'{"a": NaN}',
    "infinity": b'{"a": Infinity}',
    "neg-infinity": b'{"a": -Infinity}',
    "lone-surrogate": b'{"a": "\\ud800"}',
    "not-utf8": b'{"a": "\xff\xfe"}',
}


@pytest.mark.parametrize("name", sorted(BAD_DATA))
def test_bad_data_refused_and_nothing_written(root, tmp_path, name):
    f = tmp_path / "data.json"
    f.write_bytes(BAD_DATA[name])
    before = snapshot(root)
    p = run("append", "acme/triage", "run.started", "--data", f"@{f}", root=root)
    assert_refused(p, 2)
    assert snapshot(root) == before


@pytest.mark.parametrize("name", sorted(BAD_DATA))
def test_bad_data_refused_on_existing_log(root, name):
    append(root, "a", "run.started", {})
    raw = log_path(root, "a").read_bytes()
    p = run("append", "a", "run.completed", "--data", "-", input=BAD_DATA[name], root=root)
    assert_refused(p, 2)
    assert log_path(root, "a").read_bytes() == raw


def test_bad_data_inline_refused(root):
    assert_refused(run("append", "a", "run.started", "--data", "[1, 2]", root=root), 2)
    assert_refused(run("append", "a", "run.started", "--data", "{nope", root=root), 2)
    assert not log_path(root, "a").exists()


def test_data_file_missing_refused(root, tmp_path):
    p = run("append", "a", "run.started", "--data", f"@{tmp_path / 'nope.json'}", root=root)
    assert p.returncode != 0
    assert_refused(p, None)
    assert not log_path(root, "a").exists()


MISSING = [
    ("run.failed", {}),
    ("run.failed", {"error": {}}),
    ("message.received", {}),
    ("message.started", {"message": {}}),
    ("message.completed", {}),
    ("reasoning.completed", {}),
    ("tool_call.started", {"tool": {"name": "grep"}}),
    ("tool_call.started", {"tool": {"call": {"id": "c1"}}}),
    ("tool_call.completed", {"tool": {}}),
    ("tool_call.failed", {}),
    ("input.requested", {}),
    ("input.received", {"request": {}}),
    ("trigger.fired", {}),
]


@pytest.mark.parametrize("type_,data", MISSING)
def test_missing_required_field_refused(root, type_, data):
    before = snapshot(root)
    p = run("append", "acme/triage", type_, "--data", json.dumps(data), root=root)
    assert_refused(p, 2)
    assert snapshot(root) == before


@pytest.mark.parametrize("type_", ["run.exploded", "wardrik.nope", "wardrik.", "", "Run.Started",
                                   "agent.created", "trigger.deleted", "events.dropped"])
def test_unknown_or_not_appendable_type_refused(root, type_):
    data = {"agent": {"id": "x"}, "trigger": {"name": "t"}, "log": "a", "count": 1}
    before = snapshot(root)
    p = run("append", "a", type_, "--data", json.dumps(data), root=root)
    assert_refused(p, 2)
    assert snapshot(root) == before


# --- live types ---------------------------------------------------------------------------------

LIVE_DATA = {"message": {"id": "m1"}, "delta": "he", "text": "he", "tool": {"call": {"id": "c1"}},
             "activity": {}, "progress": 0.5}


@pytest.mark.parametrize("type_", ["message.delta", "reasoning.delta", "tool_call.progress", "activity.changed"])
def test_live_type_not_stored(root, type_):
    append(root, "a", "run.started", {})
    raw = log_path(root, "a").read_bytes()
    p = ok(run("append", "a", type_, "--data", json.dumps(LIVE_DATA), root=root))
    printed = jsonl(p.stdout)
    assert len(printed) == 1
    assert printed[0]["type"] == "wardrik." + type_
    assert "sequence" not in printed[0]
    assert log_path(root, "a").read_bytes() == raw
    assert append(root, "a", "run.completed", {})["sequence"] == "000000000002"


def test_live_type_on_new_log_stores_nothing(root):
    ok(run("append", "new", "message.delta", "--data", json.dumps(LIVE_DATA), root=root))
    f = log_path(root, "new")
    assert not f.exists() or f.read_bytes() == b""


# --- torn tails and corruption ----------------------------------------------------------------

@pytest.mark.parametrize("torn", [b'{"specversion":"1.0","id":"0190', b"\x00" * 64, b"{"])
def test_torn_tail_is_cut_kept_and_warned(root, torn):
    append(root, "acme/triage", "run.started", {})
    append(root, "acme/triage", "run.completed", {})
    f = log_path(root, "acme/triage")
    good = f.read_bytes()
    with open(f, "ab") as fh:
        fh.write(torn)
    p = ok(run("append", "acme/triage", "run.started", "--data", "{}", root=root))
    assert p.stderr.strip(), "a torn tail is cut with a warning"
    assert b"Traceback" not in p.stderr
    after = f.read_bytes()
    assert after == good + p.stdout
    assert seqs(jsonl(after)) == [1, 2, 3]
    assert files_containing(root, torn, exclude=f), "the torn bytes are kept under the root"


def test_torn_tail_after_nothing(root):
    f = log_path(root, "a")
    f.write_bytes(b'{"specversion":"1.')
    p = ok(run("append", "a", "run.started", "--data", "{}", root=root))
    assert f.read_bytes() == p.stdout
    assert jsonl(p.stdout)[0]["sequence"] == "000000000001"
    assert files_containing(root, b'{"specversion":"1.', exclude=f)


@pytest.mark.parametrize("where", ["middle", "last"])
def test_append_refuses_after_corrupt_line(root, where):
    append(root, "a", "run.started", {})
    append(root, "a", "run.completed", {})
    f = log_path(root, "a")
    lines = f.read_bytes().splitlines(keepends=True)
    if where == "middle":
        raw = lines[0] + b"this is not json\n" + lines[1]
    else:
        raw = lines[0] + lines[1] + b"this is not json\n"
    f.write_bytes(raw)
    p = run("append", "a", "run.started", "--data", "{}", root=root)
    assert_refused(p, 1)
    assert f.read_bytes() == raw
    assert p.stdout == b""


def test_whole_event_without_newline_is_a_torn_tail(root):
    append(root, "a", "run.started", {})
    second = append(root, "a", "run.completed", {})
    f = log_path(root, "a")
    raw = f.read_bytes()
    f.write_bytes(raw[:-1])  # the last event lost its "\n": it is a torn tail
    torn = raw.splitlines(keepends=True)[1][:-1]
    assert ok(run("page", "a", "--format", "jsonl", root=root)).stdout == raw.splitlines(keepends=True)[0]
    ok(run("check", root=root))
    p = ok(run("append", "a", "run.completed", "--data", "{}", root=root))
    assert p.stderr.strip()
    now = jsonl(f.read_bytes())
    assert [e["sequence"] for e in now] == ["000000000001", "000000000002"]
    assert now[1]["id"] != second["id"]
    assert files_containing(root, torn, exclude=f)
