"""A hole in a log that a record says was dropped at its source (a copy of a shipped log, after
`compact --max-ship-lag`): readers get an `events.dropped` at its place, not a warning of
damage; a hole with no record is still a warning. The record is `store.recorded_gaps`; pull
and the mirror write it (their own tests); here it is written by hand on a local root."""
from __future__ import annotations

import orjson
import pytest

from conftest import jsonl, run_cli
from ledgergen import START, write_log
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.recorded_gaps import RecordedGap, covered, read_gaps, write_gaps

DROPPED = "wardrik.events.dropped"


def _holed(root, log_id="acme/a", n=10, hole=(4, 6), record=True, time="2026-01-01T00:00:05.000000Z"):
    """Log ``log_id`` with events 1..n but the hole's, and (``record``) a record of the hole."""
    path = root / f"{log_id}.jsonl"
    write_log(path, n, start=START, pad=20, log_id=log_id)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for i, line in enumerate(lines, 1) if not hole[0] <= i <= hole[1]))
    if record:
        write_gaps(Root(root), Log.agent(Root(root), log_id).state_key, [RecordedGap(hole[0], hole[1], time)])


def _seqs(events):
    return [e["sequence"] if e["type"] != DROPPED else ("dropped", e["data"]["count"]) for e in events]


@pytest.mark.parametrize("many", [False, True])
def test_a_recorded_gap_is_an_events_dropped_in_place(root, many):
    _holed(root)
    if many:  # the merge over several logs takes the other path
        write_log(root / "acme" / "b.jsonl", 3, start=START, pad=20, log_id="acme/b")
    p = run_cli("page", "acme/a" if not many else "acme/*", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0, p.stderr
    assert p.stderr == b""  # not a warning: the hole is accounted for
    events = [e for e in jsonl(p.stdout) if e["subject"] == "agents/acme/a"]
    assert _seqs(events) == ["000000000001", "000000000002", "000000000003", ("dropped", 3),
                             "000000000007", "000000000008", "000000000009", "000000000010"]
    notice = events[3]
    assert notice["data"] == {"log": "acme/a", "count": 3} and notice["time"] == "2026-01-01T00:00:05.000000Z"
    again = [e for e in jsonl(run_cli("page", "acme/*" if many else "acme/a", "--all", "-F", "jsonl",
                                      root=root).stdout) if e["type"] == DROPPED]
    assert again[0]["id"] == notice["id"]  # a repeat has the same id


def test_without_a_record_the_hole_is_a_warning(root):
    _holed(root, record=False)
    p = run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0
    assert DROPPED.encode() not in p.stdout
    assert b"sequences 4..6 are missing (3 events)" in p.stderr


def test_a_record_that_covers_part_of_a_hole_warns_of_the_rest(root):
    _holed(root, hole=(4, 7), record=False)
    write_gaps(Root(root), Log.agent(Root(root), "acme/a").state_key, [RecordedGap(4, 5, None)])
    p = run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root)
    events = jsonl(p.stdout)
    assert _seqs(events)[3] == ("dropped", 2)
    assert events[3]["time"] == events[4]["time"]  # no time recorded: dated by the event after it
    assert b"sequences 6..7 are missing (2 events)" in p.stderr


def test_the_notice_passes_filters_not_counted_by_limit_and_the_cursor_moves_past_it(root):
    _holed(root)
    p = run_cli("page", "acme/a", "-t", "run.started", "--all", "-F", "jsonl", root=root)
    assert _seqs(jsonl(p.stdout)) == [("dropped", 3)]  # every other event is filtered out
    p = run_cli("page", "acme/a", "--limit", "3", "-F", "json", root=root)
    doc = orjson.loads(p.stdout)
    assert _seqs(doc["events"]) == ["000000000001", "000000000002", "000000000003"]
    p = run_cli("page", "acme/a", "--limit", "1", "--after", doc["next"], "-F", "json", root=root)
    doc = orjson.loads(p.stdout)
    assert _seqs(doc["events"]) == [("dropped", 3), "000000000007"]  # the notice does not count
    p = run_cli("page", "acme/a", "--after", doc["next"], "--all", "-F", "jsonl", root=root)
    assert _seqs(jsonl(p.stdout))[0] == "000000000008"


def test_a_window_after_the_gap_gets_no_notice(root):
    _holed(root)
    p = run_cli("page", "acme/a", "--since", "2026-10-22T09:00:07Z", "--all", "-F", "jsonl", root=root)
    assert DROPPED.encode() not in p.stdout and p.stderr == b""


def test_tail_reads_the_notice_after_a_cursor(root):
    _holed(root)
    cur = orjson.loads(run_cli("page", "acme/a", "--limit", "2", "-F", "json", root=root).stdout)["next"]
    p = run_cli("tail", "acme/a", "-n", "100", "--after", cur, "-F", "jsonl", root=root)
    assert p.returncode == 0, p.stderr
    assert _seqs(jsonl(p.stdout))[:2] == ["000000000003", ("dropped", 3)]


def test_bad_records_read_as_none(root):
    r = Root(root)
    key = Log.agent(r, "acme/a").state_key
    write_gaps(r, key, [RecordedGap(4, 6, None)])
    path = r.state_path("gaps", key, "gaps.json")
    for body in (b"not json", b"[]", b'{"gaps": 3}', b'{"gaps": [{"first": "4", "last": 6}]}',
                 b'{"gaps": [{"first": 6, "last": 4}]}', b'{"gaps": [{"first": 0, "last": 4}]}'):
        path.write_bytes(body)
        assert read_gaps(r, key) == {}, body
    write_gaps(r, key, [])
    assert not path.exists()


def test_covered_splits_a_hole_into_recorded_and_unrecorded_runs():
    gaps = {4: RecordedGap(4, 5, None), 8: RecordedGap(8, 9, None), 20: RecordedGap(20, 30, None)}
    assert covered(gaps, 3, 6) == ([gaps[4]], [])
    assert covered(gaps, 3, 11) == ([gaps[4], gaps[8]], [(6, 7), (10, 10)])
    assert covered(gaps, 1, 4) == ([], [(2, 3)])
    assert covered(gaps, 19, 25) == ([], [(20, 24)])  # a record larger than the hole does not fit it


def test_many_records_that_do_not_fit_make_one_warning(root):
    """A hostile record file: 20,000 records that each overrun a hole. The hole is one warning
    (adjacent unrecorded runs merged), found by bisection, not by a scan per record."""
    path = root / "acme" / "a.jsonl"
    write_log(path, 2, start=START, pad=20, log_id="acme/a")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"sequence":"000000000002"', b'"sequence":"000001000000"')
    path.write_bytes(b"".join(lines))
    r = Root(root)
    key = Log.agent(r, "acme/a").state_key
    write_gaps(r, key, [RecordedGap(2 + i, 10**7, None) for i in range(20_000)])
    gaps = read_gaps(r, key)
    assert covered(gaps, 1, 1_000_000) == ([], [(2, 999_999)])
    p = run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0 and p.stderr.decode().count("warning:") == 1


def test_a_recorded_time_that_is_not_a_time_is_not_used(root):
    _holed(root, time="not a time \u202e")
    notice = [e for e in jsonl(run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root).stdout)
              if e["type"] == DROPPED][0]
    assert notice["time"].startswith("2026-10-22T09:00:0")  # the event after the hole's


def test_with_a_filter_the_notice_is_dated_and_placed_by_the_event_after_the_hole(root):
    """Lines a filter passes over are not handed out one by one; the one after a hole is, so
    the notice takes its time (none recorded) and its place among other logs' events."""
    _holed(root, n=12, hole=(4, 9), time=None)
    write_log(root / "acme" / "b.jsonl", 12, start=START, pad=20, log_id="acme/b")
    plain = [e for e in jsonl(run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root).stdout)]
    after_hole = plain[4]
    assert after_hole["sequence"] == "000000000010" and plain[3]["type"] == DROPPED
    p = run_cli("page", "acme/*", "-t", "run.started", "--all", "-F", "jsonl", root=root)
    [notice] = jsonl(p.stdout)  # every event is filtered out but the notice
    assert notice["time"] == after_hole["time"] and notice["id"] == plain[3]["id"]
    p = run_cli("page", "acme/*", "--where", "subject=agents/acme/a", "--all", "-F", "jsonl", root=root)
    got = jsonl(p.stdout)
    times = [e["time"] for e in got]
    assert times == sorted(times) and [e["sequence"] if e["type"] != DROPPED else "n" for e in got] == \
        ["000000000001", "000000000002", "000000000003", "n", "000000000010", "000000000011", "000000000012"]


def _covered_slowly(gaps, before, after):
    """covered() by its definition, one sequence at a time: a sequence is accounted for by the
    record that starts latest at or before it, when that record holds it and ends before
    ``after`` (its part from here on; a record reaching an event the log holds is not trusted)."""
    found, rest, at = [], [], before + 1
    while at < after:
        starts = [f for f in gaps if f <= at]
        g = gaps[max(starts)] if starts else None
        if g is not None and at <= g.last < after:
            found.append(g if g.first == at else RecordedGap(at, g.last, g.time))
            at = g.last + 1
            continue
        if rest and rest[-1][1] == at - 1:
            rest[-1] = (rest[-1][0], at)
        else:
            rest.append((at, at))
        at += 1
    return found, rest


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(spans=st.lists(st.tuples(st.integers(1, 60), st.integers(0, 12)), max_size=12),
       before=st.integers(0, 60), width=st.integers(1, 40))
def test_covered_is_its_definition(spans, before, width):
    gaps = {f: RecordedGap(f, f + n, None) for f, n in spans}
    after = before + width
    assert covered(gaps, before, after) == _covered_slowly(gaps, before, after)
    assert covered(gaps, before, after, sorted(gaps)) == _covered_slowly(gaps, before, after)


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [("page", "acme/a"), ("tail", "-n", "3", "acme/a"), ("check",),
                                  ("stats", "acme/a", "--by", "tool")])
def test_a_fifo_planted_as_a_gap_record_does_not_hang_a_reader(root, args):
    """A FIFO at the record's path is never opened for waiting: it reads as no record, so the
    hole is the usual warning (or check's error), and the command ends."""
    import os

    _holed(root, record=False)
    path = root / ".wardrik" / "gaps" / "acme" / "a@gaps.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    p = run_cli(*args, root=root, process=True, timeout=30)  # a hang is a TimeoutExpired
    assert p.returncode in (0, 1), p.stderr
    assert DROPPED.encode() not in p.stdout


def test_a_symlinked_gap_record_is_not_followed(root, tmp_path):
    _holed(root, record=False)
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(b'{"gaps":[{"first":4,"last":6,"time":null}]}')
    path = root / ".wardrik" / "gaps" / "acme" / "a@gaps.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)
    assert read_gaps(Root(root), Log.agent(Root(root), "acme/a").state_key) == {}
    p = run_cli("page", "acme/a", "--all", "-F", "jsonl", root=root)
    assert b"sequences 4..6 are missing (3 events)" in p.stderr and DROPPED.encode() not in p.stdout


def test_a_cursor_inside_a_recorded_gap_gets_the_rest_of_it_as_dropped(root):
    """A read after sequence 5 (inside the recorded gap 4..6): the one event of it still ahead
    is an events.dropped, not a warning of damage."""
    import base64

    _holed(root)
    cur = base64.urlsafe_b64encode(b'{"acme/a":5}').decode().rstrip("=")
    p = run_cli("page", "acme/a", "--after", cur, "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert _seqs(jsonl(p.stdout)) == [("dropped", 1), "000000000007", "000000000008", "000000000009",
                                      "000000000010"]


@pytest.mark.parametrize("many", [False, True])
def test_a_since_window_that_reaches_a_recorded_gap_gets_its_notice(root, many):
    """Events 1..3, then 4..6 dropped at their source (newest at :05), then 7..10: a read from
    --since :04 starts at 7, and the window reaches dropped events: the notice comes first.
    From :05.5 it does not: no notice, no warning."""
    _holed(root, time="2026-10-22T09:00:05.000000Z")
    if many:
        write_log(root / "acme" / "b.jsonl", 2, start=START, pad=20, log_id="acme/b")
    pattern = "acme/*" if many else "acme/a"
    p = run_cli("page", pattern, "--since", "2026-10-22T09:00:04Z", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    got = [e for e in jsonl(p.stdout) if e["subject"] == "agents/acme/a"]
    assert _seqs(got) == [("dropped", 3), "000000000007", "000000000008", "000000000009", "000000000010"]
    p = run_cli("page", pattern, "--since", "2026-10-22T09:00:05.5Z", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    got = [e for e in jsonl(p.stdout) if e["subject"] == "agents/acme/a"]
    assert _seqs(got) == ["000000000007", "000000000008", "000000000009", "000000000010"]


def test_a_hole_just_before_a_since_window_is_told(root):
    """No record: the hole between the last event before the window and the first in it may
    hold events of the window, so a read from --since warns of it (it said nothing before)."""
    _holed(root, record=False)
    p = run_cli("page", "acme/a", "--since", "2026-10-22T09:00:04Z", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0
    assert _seqs(jsonl(p.stdout)) == ["000000000007", "000000000008", "000000000009", "000000000010"]
    assert b"sequences 4..6 are missing (3 events)" in p.stderr


@pytest.mark.parametrize("many", [False, True])
def test_tail_shows_a_recorded_gap_between_the_events_it_shows(root, many):
    """tail -n 5 across the recorded gap 4..6: the notice in place (as page has it), no
    warning; tail -n 3 (7..10 only) shows none: the gap is before its window."""
    _holed(root)
    if many:
        write_log(root / "acme" / "b.jsonl", 2, start=START, pad=20, log_id="acme/b")
    pattern = "acme/*" if many else "acme/a"
    p = run_cli("tail", "-n", "5", pattern, "-F", "jsonl", "-t", "tool_call.completed", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    got = [e for e in jsonl(p.stdout) if e["subject"] == "agents/acme/a"]
    want = ["000000000003", ("dropped", 3), "000000000007", "000000000008", "000000000009", "000000000010"]
    assert _seqs(got) == want  # acme/b's two events are older than acme/a's last five
    p = run_cli("tail", "-n", "4", "acme/a", "-F", "jsonl", root=root)
    assert p.returncode == 0 and p.stderr == b"" and DROPPED.encode() not in p.stdout


@pytest.mark.parametrize("hole", [(4, 6), (1, 3)])
def test_compact_sweeps_a_copy_whose_dropped_part_spans_a_recorded_gap(root, hole):
    """A pulled copy lacks by record what its source dropped before shipping: its lines are
    fewer than its sequences say, and that is no line deleted (check says so too)."""
    _holed(root, hole=hole)
    p = run_cli("compact", "--retention", "1d", "-F", "json", root=root)
    assert p.returncode == 0, p.stderr
    row = next(r for r in orjson.loads(p.stdout)["logs"] if r["log"] == "acme/a")
    assert "error" not in row and row["kept"] == 0
    assert row["dropped"] == 7  # the events that went, not the sequences the record accounts for
    assert (root / "acme" / "a.jsonl").read_bytes() == b""


def test_compact_still_refuses_a_hole_no_record_covers_in_the_part_to_drop(root):
    _holed(root, hole=(4, 7))
    write_gaps(Root(root), Log.agent(Root(root), "acme/a").state_key, [RecordedGap(4, 6, None)])
    before = (root / "acme" / "a.jsonl").read_bytes()
    p = run_cli("compact", "--retention", "1d", "-F", "json", root=root)
    assert p.returncode == 1
    row = next(r for r in orjson.loads(p.stdout)["logs"] if r["log"] == "acme/a")
    assert "a line there was deleted" in row["error"] and "3 more were dropped at their source" in row["error"]
    assert (root / "acme" / "a.jsonl").read_bytes() == before
