"""Acceptance tests for the reading features "added after the first release" (CONTRACT.md):
grep, where, types/exclude, run, folder and no patterns, filters and cursors, the --limit note,
--all, tail with filters, sequence gaps, events.dropped and --since, the time forms, fold
--run/--since, and the refusals of bad input. Black-box: the real CLI (in this process) on
real logs in a temporary root; logs that need times in the past, or lines as another tool
writes them, are written by hand in the stored format (tests/review_data.py) and checked
with `wardrik check`.
"""
from __future__ import annotations

import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from review_data import (decode_cursor, encode_cursor, hex_id, lines, numbers_in, run_items, seqs, stamp,
                         utcnow, write_log)

DROPPED = "wardrik.events.dropped"
NOTE_RE = re.compile(r"^note: stopped at --limit (\d+); read on with --after (\S+)$")

RUN_A = "abcd1111" + "a" * 24
RUN_B = "abcd2222" + "b" * 24
RUN_C = "ef012345" + "c" * 24


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
# the custom view review_data:Seqs is importable in this process; a process gets this folder too
TESTS_ENV = {"PYTHONPATH": str(Path(__file__).resolve().parent)}


def ok(root: Path, *args, input=None):
    p = run_cli(*args, root=root, input=input, env=TESTS_ENV)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 0, f"wardrik {' '.join(map(str, args))} exited {p.returncode}: {err}"
    assert "Traceback" not in err, err
    return p


def events_of(root: Path, *args) -> list[dict]:
    """`wardrik ARGS --format jsonl`: the events printed."""
    p = ok(root, *args, "--format", "jsonl")
    return [orjson.loads(l) for l in p.stdout.splitlines() if l.strip()]


def page_doc(root: Path, *args) -> dict:
    return orjson.loads(ok(root, "page", *args, "--format", "json").stdout)


def kept(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] != DROPPED]


def notices(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == DROPPED]


def log_of(e: dict) -> str:
    return e["source"].split("/agents/", 1)[1]


def trace_of(e: dict) -> str:
    return e["traceparent"].split("-")[1]


def assert_checks(root: Path) -> None:
    """Hand-written logs are valid: `wardrik check` finds nothing."""
    p = run_cli("check", root=root)
    assert p.returncode == 0 and not p.stdout.strip(), (p.stdout, p.stderr)


def append(root: Path, log: str, type_: str, data: dict, *extra) -> dict:
    p = ok(root, "append", log, type_, "--data", orjson.dumps(data).decode(), *extra)
    [e] = [orjson.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return e


def record_audit(root: Path, type_: str, subject: str, data: dict, actor: str) -> dict:
    (root / ".wardrik").mkdir(exist_ok=True)
    p = ok(root, "audit", "record", type_, subject, "--data", orjson.dumps(data).decode(), "--actor", actor)
    [e] = [orjson.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return e


def assert_usage_error(p, *option_names: str) -> None:
    """Exit 2, nothing on stdout, one `error:` line naming the option (a second line may point
    to --help), no traceback."""
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, f"exit {p.returncode}, stderr: {err!r}, stdout: {p.stdout[:300]!r}"
    assert p.stdout == b"", p.stdout[:300]
    assert "Traceback" not in err, err
    ls = [l for l in err.splitlines() if l.strip()]
    assert 1 <= len(ls) <= 2, f"expected one error line (and maybe a --help hint): {err!r}"
    assert ls[0].startswith("error:"), err
    if len(ls) == 2:
        assert "--help" in ls[1], err
    assert any(name in ls[0] for name in option_names), f"error does not name {option_names}: {ls[0]!r}"


def note_lines(p) -> list[str]:
    return [l for l in p.stderr.decode(errors="replace").splitlines() if l.startswith("note:")]


def warning_lines(p) -> list[str]:
    return [l for l in p.stderr.decode(errors="replace").splitlines() if l.startswith("warning:")]


# ---------------------------------------------------------------------------------------------
# -g/--grep
# ---------------------------------------------------------------------------------------------
GREP_LOG = "acme/grep"


def _tc(cid: str, **data) -> dict:
    return {"type": "tool_call.completed", "data": {"tool": {"call": {"id": cid}}, **data}}


@pytest.fixture
def grep_log(root):
    t0 = utcnow() - timedelta(hours=1)
    items = [
        _tc("c1", output="the quick brown fox"),                                   # 1
        _tc("c2", output="quick, brown"),                                          # 2
        _tc("c3", output='he said "stop" twice\nthen left'),                       # 3 (stored: \" and \n)
        _tc("c4", output="naïve café"),                                            # 4 (raw UTF-8)
        _tc("c5", zebrafield="plain", count=12345),                                # 5 (key name, number)
        _tc("c6", deep={"list": [1, {"x": ["needle-in-list"]}]}),                  # 6 (deep, in a list)
        _tc("c7", code="12345"),                                                   # 7 (a numeric string)
        _tc("c8", output="QUICK BROWN in caps"),                                   # 8
        {**_tc("c9", output="crème brûlée"), "ascii": True},                       # 9 (written with \u escapes)
    ]
    for i, it in enumerate(items):
        it["at"] = t0 + timedelta(seconds=i)
    evs = write_log(root, GREP_LOG, items)
    raw = (root / f"{GREP_LOG}.jsonl").read_bytes().splitlines(keepends=True)
    assert b"\\u00e8" in raw[8] and b"\\u00e9" in raw[8] and "è".encode() not in raw[8]  # as another tool writes it
    assert b'\\"stop\\"' in raw[2] and b"twice\\nthen" in raw[2]
    return evs


def test_hand_written_logs_pass_check(root, grep_log):
    assert_checks(root)


@pytest.mark.parametrize("args, expected", [
    (["-g", "quick brown"], [1]),                      # a phrase with a space
    (["--grep", "quick brown"], [1]),
    (["-g", 'said "stop" twice'], [3]),                # quotes, stored escaped as \"
    (["-g", "twice\nthen"], [3]),                      # a real newline in the pattern, stored as \n
    (["-g", r"twice\nthen"], [3]),                     # the regex escape for a newline
    (["-g", "nthen"], []),                             # only in the stored escape, not in the decoded text
    (["-g", r"\\n"], []),                              # no backslash in the decoded value
    (["-g", "café"], [4]),                             # raw UTF-8
    (["-g", "crème brûlée"], [9]),                     # stored as \u00e8 ... \u00fb ... \u00e9
    (["-g", "brûl"], [9]),
    (["-g", "u00e9"], []),                             # the escape is not the text
    (["-g", "needle-in"], [6]),                        # at depth, inside a list
    (["-g", "zebrafield"], []),                        # a key name never selects
    (["-g", "2345"], [7]),                             # strings only: the number 12345 does not match
    (["-g", "agents"], []),                            # only data: not the source or subject
    (["-g", "completed"], []),                         # nor the type
    (["-g", r"qu.ck\s+br"], [1]),                      # a regex, searched
    (["-g", "^quick"], [2]),                           # anchored at each string value's start
    (["-g", "quick brown", "-i"], [1, 8]),
    (["-g", "quick brown", "--ignore-case"], [1, 8]),
    (["-g", "CAFÉ", "-i"], [4]),
    (["-g", "CAFÉ"], []),
])
def test_page_grep(root, grep_log, args, expected):
    got = events_of(root, "page", GREP_LOG, *args)
    assert seqs(got) == expected


def test_grep_prints_the_stored_lines_byte_for_byte(root, grep_log):
    raw = (root / f"{GREP_LOG}.jsonl").read_bytes().splitlines(keepends=True)
    p = ok(root, "page", GREP_LOG, "-g", "brûlée|said", "--format", "jsonl")
    assert p.stdout == raw[2] + raw[8]


@pytest.mark.parametrize("cmd", [["tail", GREP_LOG, "-n", "10"], ["tail", GREP_LOG]])
def test_tail_grep(root, grep_log, cmd):
    assert seqs(events_of(root, *cmd, "-g", "quick brown", "-i")) == [1, 8]
    assert seqs(events_of(root, *cmd, "-g", "crème brûlée")) == [9]
    assert seqs(events_of(root, *cmd, "-g", "zebrafield")) == []


# ---------------------------------------------------------------------------------------------
# --where
# ---------------------------------------------------------------------------------------------
WHERE_LOG = "acme/where"
T9 = datetime(2026, 10, 22, 9, 0, tzinfo=UTC)


@pytest.fixture
def where_log(root):
    items = [
        {"type": "tool_call.started", "data": {"tool": {"name": "grep", "call": {"id": "c1"}}, "n": 9}},
        {"type": "tool_call.started", "data": {"tool": {"name": "read_file", "call": {"id": "c2"}}, "n": 10}},
        {"type": "tool_call.completed", "data": {"tool": {"call": {"id": "c2"}}, "n": 100,
                                                 "output": "error: file not found", "ok": False}},
        {"type": "tool_call.completed", "data": {"tool": {"call": {"id": "c1"}}, "n": 10.5,
                                                 "output": "3 matches", "ok": True}},
        {"type": "message.completed", "data": {"message": {"id": "m1"}, "n": "ten", "code": "10", "v": None}},
        {"type": "run.completed", "data": {"answer": "all done"}, "subject": "custom/subject"},
    ]
    for i, it in enumerate(items):
        it["at"] = T9 + timedelta(seconds=i)
    return write_log(root, WHERE_LOG, items)


@pytest.mark.parametrize("where, expected", [
    ("data.tool.name = grep", [1]),
    ("data.tool.name != grep", [2, 3, 4, 5, 6]),           # a missing path matches !=
    ("data.tool.name ~ ^read", [2]),
    ("data.n = 10", [2]),                                  # a number as JSON writes it
    ("data.code = 10", [5]),                               # a string as it is
    ("data.n != 10", [1, 3, 4, 5, 6]),
    ("data.n > 9", [2, 3, 4]),                             # numbers; "ten" is not one
    ("data.n >= 10", [2, 3, 4]),
    ("data.n < 10", [1]),
    ("data.n <= 10", [1, 2]),
    ("data.n > 10.4", [3, 4]),
    ("data.n < 9.5", [1]),                                 # numeric: 100 is not below 9.5
    ("data.ok = true", [4]),
    ("data.ok = false", [3]),
    ("data.v = null", [5]),
    ("data.missing = null", []),                           # a missing path matches only !=
    ("data.missing != anything", [1, 2, 3, 4, 5, 6]),
    ("data.missing > 1", []),
    ("data.missing ~ .", []),
    ("data.output ~ ^error", [3]),
    ("data.output = 3 matches", [4]),                      # a value with a space
    ("data.output = error: file not found", [3]),
    ("subject = custom/subject", [6]),
    ("subject != custom/subject", [1, 2, 3, 4, 5]),
    (f"source = wardrik://local/agents/{WHERE_LOG}", [1, 2, 3, 4, 5, 6]),
    ("source ~ acme/wh", [1, 2, 3, 4, 5, 6]),
    ("time >= 2026-10-22T09:00:03.000000Z", [4, 5, 6]),
    ("time >= 2026-10-22T09:00:03Z", [4, 5, 6]),            # a time, not the text
    ("time < 2026-10-22T09:00:02Z", [1, 2]),
    ("time > 2026-10-22T09:00:04.5Z", [6]),
])
def test_page_where(root, where_log, where, expected):
    assert seqs(events_of(root, "page", WHERE_LOG, "--where", where)) == expected


def test_where_booleans_are_not_numbers(root, where_log):
    assert seqs(events_of(root, "page", WHERE_LOG, "--where", "data.ok > 0")) == []
    assert seqs(events_of(root, "page", WHERE_LOG, "--where", "data.ok < 2")) == []


def test_where_repeated_all_must_hold(root, where_log):
    got = events_of(root, "page", WHERE_LOG, "--where", "data.n >= 10", "--where", "data.tool.name = read_file")
    assert seqs(got) == [2]
    got = events_of(root, "page", WHERE_LOG, "--where", "data.n > 1", "--where", "data.ok = true")
    assert seqs(got) == [4]
    got = events_of(root, "page", WHERE_LOG, "--where", "data.n > 1", "--where", "data.ok = true",
                    "--where", "data.output ~ error")
    assert seqs(got) == []


def test_where_with_grep_and_types_combined(root, where_log):
    got = events_of(root, "page", WHERE_LOG, "-t", "tool_call.completed", "--where", "data.n > 10", "-g", "match")
    assert seqs(got) == [4]


def test_tail_where(root, where_log):
    assert seqs(events_of(root, "tail", WHERE_LOG, "-n", "2", "--where", "data.n >= 10")) == [3, 4]


# ---------------------------------------------------------------------------------------------
# -t/--types, -x/--exclude-types
# ---------------------------------------------------------------------------------------------
TYPES_LOG = "acme/types"


@pytest.fixture
def types_log(root):
    t0 = utcnow() - timedelta(minutes=30)
    items = [
        {"type": "run.started", "data": {}},
        {"type": "tool_call.started", "data": {"tool": {"name": "sh", "call": {"id": "c1"}}}},
        {"type": "tool_call.failed", "data": {"tool": {"call": {"id": "c1"}}}},
        {"type": "run.failed", "data": {"error": {"message": "boom"}}},
        {"type": "message.received", "data": {"message": {"id": "m1"}}},
    ]
    for i, it in enumerate(items):
        it["at"] = t0 + timedelta(seconds=i)
    return write_log(root, TYPES_LOG, items)


@pytest.mark.parametrize("args, expected", [
    (["-t", "tool_call.failed", "-t", "run.failed"], [3, 4]),
    (["-t", "tool_call.failed,run.failed"], [3, 4]),
    (["--types", "wardrik.run.failed", "--types", "tool_call.started"], [2, 4]),
    (["-t", "tool_call.failed,run.failed", "-t", "message.received"], [3, 4, 5]),
    (["-x", "tool_call.started,tool_call.failed"], [1, 4, 5]),
    (["-x", "tool_call.started", "-x", "run.started"], [3, 4, 5]),
    (["--exclude-types", "run.failed"], [1, 2, 3, 5]),
    (["--exclude-types", "wardrik.run.failed,message.received"], [1, 2, 3]),
    (["-t", "tool_call.started,tool_call.failed", "-x", "tool_call.failed"], [2]),
])
def test_page_types_and_exclude(root, types_log, args, expected):
    assert seqs(events_of(root, "page", TYPES_LOG, *args)) == expected


def test_tail_types_repeatable_and_exclude(root, types_log):
    assert seqs(events_of(root, "tail", TYPES_LOG, "-t", "tool_call.failed", "-t", "run.failed")) == [3, 4]
    assert seqs(events_of(root, "tail", TYPES_LOG, "-n", "2", "-x", "message.received")) == [3, 4]


# ---------------------------------------------------------------------------------------------
# --run
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def runs(root):
    t0 = utcnow() - timedelta(hours=2)
    outside = {"type": "trigger.fired", "data": {"trigger": {"name": "nightly"}}, "at": t0}
    a = run_items(RUN_A, t0 + timedelta(minutes=1), task="a", n_tools=2)
    b = run_items(RUN_B, t0 + timedelta(minutes=10), task="b")
    c = run_items(RUN_C, t0 + timedelta(minutes=20), task="c")
    evs = write_log(root, "acme/runs", [outside, *a, *b]) + write_log(root, "acme/runs2", c)
    return evs


def _traces(root, *args) -> list[str]:
    return [trace_of(e) for e in events_of(root, "page", "acme/runs", "acme/runs2", *args)]


@pytest.mark.parametrize("run_arg, runs_expected", [
    ("abcd", {RUN_A, RUN_B}),              # 4 hex digits: every run that starts so
    ("abcd1", {RUN_A}),
    ("abcd1111", {RUN_A}),                 # 8, as pretty output shows
    ("abcd2222", {RUN_B}),
    (RUN_A, {RUN_A}),                      # the full run id
    ("ef01", {RUN_C}),
])
def test_page_run_prefix(root, runs, run_arg, runs_expected):
    got = _traces(root, "--run", run_arg)
    expected = [trace_of(e) for e in runs if trace_of(e) in runs_expected]
    assert got == expected and got


def test_page_run_by_traceparent(root, runs):
    tp = next(e["traceparent"] for e in runs if trace_of(e) == RUN_B and e["type"].endswith("tool_call.started"))
    got = events_of(root, "page", "acme/runs", "acme/runs2", "--run", tp)
    assert [e["id"] for e in got] == [e["id"] for e in runs if trace_of(e) == RUN_B]


def test_page_run_prefix_matching_nothing_is_empty(root, runs):
    assert events_of(root, "page", "acme/runs", "acme/runs2", "--run", "0123") == []


def test_tail_run(root, runs):
    a_events = [e for e in runs if trace_of(e) == RUN_A]
    got = events_of(root, "tail", "acme/runs", "acme/runs2", "-n", "2", "--run", "abcd1111")
    assert [e["id"] for e in got] == [e["id"] for e in a_events[-2:]]


# ---------------------------------------------------------------------------------------------
# patterns: a folder, and no pattern at all
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def forest(root):
    t0 = utcnow() - timedelta(minutes=10)
    logs = ["acme/a", "acme/b", "acme/sub/c", "beta/x", "acmeish/y", "solo"]
    for i, log in enumerate(logs):
        items = [{"type": "trigger.fired", "data": {"trigger": {"name": f"{log}-{k}"}, "needle": "yes" if k else "no"},
                  "at": t0 + timedelta(seconds=10 * k + i)} for k in range(2)]
        write_log(root, log, items)
    record_audit(root, "agent.created", "agents/acme/a", {"agent": {"id": "acme/a"}}, "user:alice")
    return logs


def test_page_folder_means_every_log_under_it(root, forest):
    got = events_of(root, "page", "acme")
    assert sorted({log_of(e) for e in got}) == ["acme/a", "acme/b", "acme/sub/c"]
    assert len(got) == 6
    assert [e["time"] for e in got] == sorted(e["time"] for e in got)


def test_page_folder_cursor_covers_its_logs(root, forest):
    doc = page_doc(root, "acme/sub")
    assert [log_of(e) for e in doc["events"]] == ["acme/sub/c", "acme/sub/c"]
    assert decode_cursor(doc["next"]) == {"acme/sub/c": 2}


def test_tail_folder_with_filter(root, forest):
    got = events_of(root, "tail", "acme", "-n", "2", "-g", "yes")
    assert [log_of(e) for e in got] == ["acme/b", "acme/sub/c"]


def test_page_without_pattern_reads_every_agent_log(root, forest):
    got = events_of(root, "page")
    assert sorted({log_of(e) for e in got}) == sorted(forest)
    assert len(got) == 12 and all(not e["type"].startswith("wardrik.agent.") for e in got)


def test_tail_without_pattern_reads_every_agent_log(root, forest):
    got = events_of(root, "tail", "-n", "100")
    assert sorted({log_of(e) for e in got}) == sorted(forest) and len(got) == 12


def test_head_without_pattern_is_every_agent_log(root, forest):
    p = ok(root, "head")
    assert decode_cursor(p.stdout.decode()) == {log: 2 for log in forest}


def test_activity_without_pattern_is_every_agent_log(root, forest):
    doc = orjson.loads(ok(root, "activity", "--format", "json").stdout)
    assert sorted(doc) == sorted(forest)


# ---------------------------------------------------------------------------------------------
# filters and cursors
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("filt", [
    ["-g", "needle"], ["--where", "data.hit = 1"], ["-t", "tool_call.failed"], ["-x", "tool_call.completed"],
    ["--run", "abcd1111"], ["-g", "nothing-matches-this"],
])
def test_next_cursor_moves_past_every_event_read(root, filt):
    t0 = utcnow() - timedelta(minutes=5)
    items = []
    for i in range(1, 6):
        hit = i == 2
        items.append({"type": "tool_call.failed" if hit else "tool_call.completed",
                      "data": {"tool": {"call": {"id": f"c{i}"}}, "output": "a needle" if hit else "hay", "hit": int(hit)},
                      "trace": RUN_A if hit else None, "at": t0 + timedelta(seconds=i)})
    write_log(root, "acme/cur", items)
    doc = page_doc(root, "acme/cur", *filt)
    assert seqs(doc["events"]) == ([] if "nothing-matches-this" in filt else [2])
    assert decode_cursor(doc["next"]) == {"acme/cur": 5}
    # and reading on from it gives nothing more
    assert page_doc(root, "acme/cur", *filt, "--after", doc["next"])["events"] == []


def test_filtered_page_carries_cursor_keys_of_other_logs(root):
    t0 = utcnow() - timedelta(minutes=5)
    write_log(root, "acme/one", [_tc("c1", output="needle") | {"at": t0}, _tc("c2", output="hay") | {"at": t0}])
    doc = page_doc(root, "acme/one", "-g", "needle", "--after", encode_cursor({"beta/zzz": 7}))
    assert decode_cursor(doc["next"]) == {"acme/one": 2, "beta/zzz": 7}


_FILTERS = {
    "grep": ["-g", "NEE+DLE"],
    "grep-i": ["-g", "nee+dle", "-i"],
    "where": ["--where", "data.hit = 1"],
    "types": ["-t", "tool_call.failed"],
    "exclude": ["-x", "tool_call.completed"],
    "run": ["--run", "abcd1111"],
}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=24),
       limit=st.integers(1, 5), kind=st.sampled_from(sorted(_FILTERS)))
def test_paging_with_filters_never_repeats_or_skips(plan, limit, kind):
    """Page through interleaved logs with a filter and --limit, following .next: every matching
    event exactly once, in order; a page that stops at --limit with more matching to read says
    so on stderr, with the cursor that reads on."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "root"
        root.mkdir()
        logs = ["p/a", "p/b", "p/c"]
        per_log: dict[str, list[dict]] = {log: [] for log in logs}
        t0 = utcnow() - timedelta(hours=1)
        order: list[tuple[str, int]] = []
        for i, (li, hit) in enumerate(plan):
            log = logs[li]
            per_log[log].append({
                "type": "tool_call.failed" if hit else "tool_call.completed",
                "data": {"tool": {"call": {"id": f"c{i}"}}, "output": "a NEEEDLE here" if hit else "plain hay",
                         "hit": 1 if hit else 0},
                "trace": RUN_A if hit else RUN_B,
                "at": t0 + timedelta(milliseconds=i),
                "hit": hit,
            })
            order.append((log, len(per_log[log])))
        ids = {}
        for log, items in per_log.items():
            if items:
                for e, it in zip(write_log(root, log, items), items, strict=True):
                    ids[(log, int(e["sequence"]))] = (e["id"], it["hit"])
        expected = [ids[k][0] for k in order if ids[k][1]]

        got: list[str] = []
        cursor = None
        for _ in range(len(plan) + 5):
            args = ["page", "p/*", "--limit", str(limit), "--format", "json", *_FILTERS[kind]]
            if cursor:
                args += ["--after", cursor]
            p = ok(root, *args)
            doc = orjson.loads(p.stdout)
            evs = doc["events"]
            assert len(evs) <= limit
            got += [e["id"] for e in evs]
            remaining = len(expected) - len(got)
            notes = note_lines(p)
            if len(evs) == limit and remaining > 0:
                assert len(notes) == 1, p.stderr
                m = NOTE_RE.match(notes[0])
                assert m and int(m.group(1)) == limit and m.group(2) == doc["next"], notes[0]
            elif len(evs) < limit:
                assert notes == [], p.stderr
            if not evs and doc["next"] == cursor:
                break
            cursor = doc["next"]
        assert got == expected
        assert decode_cursor(cursor) == {log: len(items) for log, items in per_log.items() if items}


# ---------------------------------------------------------------------------------------------
# the --limit note, and --all
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def five(root):
    t0 = utcnow() - timedelta(minutes=5)
    items = [_tc(f"c{i}", output="needle" if i % 2 else "hay") | {"at": t0 + timedelta(seconds=i)} for i in range(1, 8)]
    return write_log(root, "acme/five", items)  # 7 events; needle at 1, 3, 5, 7


@pytest.mark.parametrize("fmt", ["jsonl", "json", "pretty"])
def test_note_when_page_stops_at_limit(root, five, fmt):
    p = ok(root, "page", "acme/five", "--limit", "2", "--format", fmt)
    notes = note_lines(p)
    assert len(notes) == 1, p.stderr
    m = NOTE_RE.match(notes[0])
    assert m, notes[0]
    assert m.group(1) == "2"
    cursor = m.group(2)
    assert decode_cursor(cursor) == {"acme/five": 2}
    if fmt == "json":
        assert orjson.loads(p.stdout)["next"] == cursor
    if fmt == "pretty":
        assert lines(p.stdout)[-1].strip() == f"next: {cursor}"
    assert b"note:" not in p.stdout
    rest = page_doc(root, "acme/five", "--after", cursor)
    assert seqs(rest["events"]) == [3, 4, 5, 6, 7]


def test_limit_zero_notes_what_is_left_and_reads_nothing(root, five):
    """--limit 0 prints no event; with events to read it says so (the note), without none."""
    p = ok(root, "page", "acme/five", "--limit", "0", "--format", "json")
    assert orjson.loads(p.stdout)["events"] == []
    [note] = note_lines(p)
    m = NOTE_RE.match(note)
    assert m and m.group(1) == "0" and decode_cursor(m.group(2)) == {"acme/five": 0}, note
    p = ok(root, "page", "acme/five", "--limit", "0", "-t", "run.failed", "--format", "json")
    assert note_lines(p) == [] and orjson.loads(p.stdout)["events"] == []
    p = ok(root, "page", "acme/five", "--limit", "0", "--after", orjson.loads(
        ok(root, "page", "acme/five", "--all", "--format", "json").stdout)["next"], "--format", "jsonl")
    assert note_lines(p) == [] and p.stdout == b""


@pytest.mark.parametrize("fmt", ["jsonl", "json", "pretty"])
def test_note_with_filter_reads_on_with_same_filter(root, five, fmt):
    p = ok(root, "page", "acme/five", "-g", "needle", "--limit", "2", "--format", fmt)
    [note] = note_lines(p)
    m = NOTE_RE.match(note)
    assert m and m.group(1) == "2", note
    rest = page_doc(root, "acme/five", "-g", "needle", "--after", m.group(2))
    assert seqs(rest["events"]) == [5, 7]


def test_note_with_a_cursor_file_says_to_run_again_and_still_ends_with_the_cursor(root, five, tmp_path):
    cur = tmp_path / "cur"
    p = ok(root, "page", "acme/five", "--limit", "2", "--cursor-file", str(cur), "-o", "jsonl")
    [note] = note_lines(p)
    assert note.startswith("note: stopped at --limit 2; run again to read on from the cursor file"), note
    assert note.split()[-1] == cur.read_text().strip()
    again = ok(root, "page", "acme/five", "--limit", "2", "--cursor-file", str(cur), "-o", "jsonl")
    assert seqs([orjson.loads(x) for x in again.stdout.splitlines()]) == [3, 4]


def test_no_note_when_everything_fits(root, five):
    for fmt in ["jsonl", "json", "pretty"]:
        p = ok(root, "page", "acme/five", "--limit", "10", "--format", fmt)
        assert note_lines(p) == [] and b"note:" not in p.stderr
        p = ok(root, "page", "acme/five", "-g", "needle", "--limit", "5", "--format", fmt)
        assert note_lines(p) == []


def test_all_reads_to_the_end_without_note(root):
    t0 = utcnow() - timedelta(hours=1)
    write_log(root, "acme/many", [_tc(f"c{i}", output="x") | {"at": t0 + timedelta(seconds=i)} for i in range(150)])
    p = ok(root, "page", "acme/many", "--all", "--format", "json")
    doc = orjson.loads(p.stdout)
    assert seqs(doc["events"]) == list(range(1, 151))
    assert decode_cursor(doc["next"]) == {"acme/many": 150}
    assert note_lines(p) == []
    # without --all the default limit (100) stops it, with a note
    p = ok(root, "page", "acme/many", "--format", "json")
    assert len(orjson.loads(p.stdout)["events"]) == 100 and len(note_lines(p)) == 1


def test_all_with_filter(root):
    t0 = utcnow() - timedelta(hours=1)
    write_log(root, "acme/many", [_tc(f"c{i}", output="needle" if i % 3 == 0 else "hay") | {"at": t0 + timedelta(seconds=i)}
                                  for i in range(330)])
    p = ok(root, "page", "acme/many", "--all", "-g", "needle", "--format", "json")
    doc = orjson.loads(p.stdout)
    assert seqs(doc["events"]) == [i + 1 for i in range(330) if i % 3 == 0]
    assert note_lines(p) == []


# ---------------------------------------------------------------------------------------------
# tail -n with filters, tail --since
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def tail_log(root):
    t0 = utcnow() - timedelta(minutes=20)
    items = []
    for i in range(1, 9):
        hit = i in (2, 4, 5)
        items.append({"type": "tool_call.failed" if hit else "tool_call.completed",
                      "data": {"tool": {"call": {"id": f"c{i}"}}, "output": "needle" if hit else "hay",
                               "hit": int(hit)},
                      "trace": RUN_A if hit else None, "at": t0 + timedelta(seconds=i)})
    return write_log(root, "acme/tailf", items)


@pytest.mark.parametrize("filt", [
    ["-g", "needle"], ["-t", "tool_call.failed"], ["--where", "data.hit = 1"], ["--run", "abcd1111"],
    ["-x", "tool_call.completed"], ["--where", "data.hit != 0", "-g", "need"],
])
def test_tail_n_with_filter_gives_last_n_matching(root, tail_log, filt):
    assert seqs(events_of(root, "tail", "acme/tailf", "-n", "2", *filt)) == [4, 5]
    assert seqs(events_of(root, "tail", "acme/tailf", "-n", "5", *filt)) == [2, 4, 5]
    assert seqs(events_of(root, "tail", "acme/tailf", "-n", "1", *filt)) == [5]


# ---------------------------------------------------------------------------------------------
# sequence gaps
# ---------------------------------------------------------------------------------------------
def _gap_log(root: Path, log: str, drop: list[int]) -> None:
    for i in range(1, 7):
        append(root, log, "trigger.fired", {"trigger": {"name": f"t{i}"}})
    path = root / f"{log}.jsonl"
    ls = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(l for k, l in enumerate(ls, start=1) if k not in drop))


def _assert_gap_warning(p, root: Path, log: str, missing: list[int]) -> None:
    ws = warning_lines(p)
    assert len(ws) == 1, p.stderr
    w = ws[0].replace(str(root), "")
    assert log in w, w
    nums = numbers_in(w)
    assert set(missing) <= nums and len(missing) in nums, w


@pytest.mark.parametrize("cmd", [["page", "--format", "jsonl"], ["page", "--format", "json"], ["tail", "-n", "10"]])
def test_gap_is_a_warning_and_read_goes_on(root, cmd):
    _gap_log(root, "acme/gap", [3, 4])
    p = run_cli(cmd[0], "acme/gap", *cmd[1:], root=root)
    assert p.returncode == 0, p.stderr
    if "json" in cmd and "jsonl" not in cmd:
        evs = orjson.loads(p.stdout)["events"]
    else:
        evs = [orjson.loads(l) for l in p.stdout.splitlines()]
    assert seqs(evs) == [1, 2, 5, 6]
    _assert_gap_warning(p, root, "acme/gap", [3, 4])


def test_single_missing_sequence_warned(root):
    _gap_log(root, "acme/gap", [5])
    p = run_cli("page", "acme/gap", "--format", "jsonl", root=root)
    assert p.returncode == 0 and seqs([orjson.loads(l) for l in p.stdout.splitlines()]) == [1, 2, 3, 4, 6]
    _assert_gap_warning(p, root, "acme/gap", [5])


def _repeat_log(root: Path, log: str, order: list[int]) -> None:
    """A log of 6 events rewritten with its lines in ``order`` (1-based; repeats allowed)."""
    for i in range(1, 7):
        append(root, log, "trigger.fired", {"trigger": {"name": f"t{i}"}})
    path = root / f"{log}.jsonl"
    ls = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(ls[k - 1] for k in order))


@pytest.mark.parametrize("cmd", [["page", "--format", "jsonl"], ["page", "-t", "run.failed", "--format", "jsonl"],
                                 ["page", "--limit", "3", "--format", "jsonl"], ["tail", "-n", "20"]])
@pytest.mark.parametrize("order", [[1, 2, 2, 3, 4, 5, 6], [1, 2, 4, 3, 5, 6]], ids=["repeated", "out-of-order"])
def test_a_line_repeated_or_out_of_order_is_passed_over_with_a_warning(root, cmd, order):
    """Never silently: the line whose sequence is not above the one before it is left out and
    a warning names the log and the line (a forward read leaves out the later of two, tail's
    backward read the earlier)."""
    _repeat_log(root, "acme/rep", order)
    _gap_log(root, "acme/fine", [])
    p = run_cli(cmd[0], "acme/rep", "acme/fine", *cmd[1:], root=root)
    assert p.returncode == 0, p.stderr
    got = [(e["subject"], int(e["sequence"])) for e in map(orjson.loads, p.stdout.splitlines())]
    mine = [q for subj, q in got if subj == "agents/acme/rep"]
    assert mine == sorted(set(mine)), got  # each sequence once, in order
    ws = [w for w in warning_lines(p) if "missing" not in w]  # 1,2,4,3: 3 is first missing, then late
    # (a filtered read passes over a block in shape by its first and last sequences and its
    # line count: two lines swapped inside it are not seen there; `check` sees them)
    if "run.failed" not in cmd or order[2] == 2:
        assert len(ws) == 1 and "acme/rep" in ws[0] and "out of order" in ws[0], p.stderr
    assert not any("acme/fine" in w for w in warning_lines(p)), p.stderr


def test_fold_passes_over_a_repeated_line_with_a_warning(root):
    _repeat_log(root, "acme/rep", [1, 2, 2, 3, 4, 5, 6])
    p = run_cli("fold", "acme/rep", "--format", "json", root=root)
    assert p.returncode == 0 and orjson.loads(p.stdout)["through"] == 6, p.stderr
    ws = warning_lines(p)
    assert len(ws) == 1 and "acme/rep" in ws[0] and "out of order" in ws[0], p.stderr


def test_gap_across_several_logs_names_the_right_log(root):
    _gap_log(root, "acme/fine", [])
    _gap_log(root, "acme/holed", [2])
    p = run_cli("page", "acme/*", "--format", "jsonl", root=root)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 11
    ws = warning_lines(p)
    assert len(ws) == 1 and "acme/holed" in ws[0] and "acme/fine" not in ws[0], p.stderr


# ---------------------------------------------------------------------------------------------
# events.dropped after compaction, and --since
# ---------------------------------------------------------------------------------------------
DROP_LOG = "acme/old"


@pytest.fixture
def compacted(root):
    """6 events 10 days old (dropped by a 5d retention), then 4 recent ones in run A."""
    now = utcnow()
    old0 = now - timedelta(days=10)
    items = [{"type": "trigger.fired", "data": {"trigger": {"name": f"old{i}"}}, "at": old0 + timedelta(minutes=i)}
             for i in range(6)]
    recent = run_items(RUN_A, now - timedelta(hours=1), task="recent work", answer=None)  # 3 events
    recent.append({"type": "message.received", "data": {"message": {"id": "m9"}}, "at": now - timedelta(minutes=30),
                   "trace": RUN_A})
    evs = write_log(root, DROP_LOG, items + recent)
    assert_checks(root)
    (root / ".wardrik").mkdir(exist_ok=True)
    out = orjson.loads(ok(root, "compact", "--retention", "5d", "--format", "json").stdout)
    assert out["dropped"] == 6
    newest_dropped = datetime.strptime(evs[5]["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return {"events": evs, "newest_dropped": newest_dropped}


def _one_notice(evs: list[dict], count: int) -> None:
    ns = notices(evs)
    assert len(ns) == 1, [e["type"] for e in evs]
    assert evs[0]["type"] == DROPPED
    assert ns[0]["data"]["log"] == DROP_LOG and ns[0]["data"]["count"] == count


def test_dropped_notice_without_position(root, compacted):
    evs = events_of(root, "page", DROP_LOG)
    _one_notice(evs, 6)
    assert seqs(kept(evs)) == [7, 8, 9, 10]


def test_no_dropped_notice_when_since_is_after_newest_dropped(root, compacted):
    for since in ["3d", "2h", stamp(compacted["newest_dropped"] + timedelta(microseconds=1)),
                  stamp(compacted["newest_dropped"] + timedelta(days=1))]:
        evs = events_of(root, "page", DROP_LOG, "--since", since)
        assert notices(evs) == [], since
        assert seqs(evs) == [7, 8, 9, 10], since


def test_dropped_notice_when_since_reaches_into_dropped(root, compacted):
    nd = compacted["newest_dropped"]
    for since in ["20d", stamp(nd - timedelta(minutes=2)), stamp(nd)]:  # "not later than" includes equal
        evs = events_of(root, "page", DROP_LOG, "--since", since)
        _one_notice(evs, 6)
        assert seqs(kept(evs)) == [7, 8, 9, 10], since


@pytest.mark.parametrize("filt", [
    ["-t", "run.completed"], ["-g", "nothing-like-this"], ["--where", "data.nope = 1"], ["--run", "ef01"],
    ["-x", "run.started,tool_call.started,tool_call.completed,message.received"],
    ["-t", "message.received"], ["--run", "abcd1111"],
])
def test_dropped_notice_passes_every_filter(root, compacted, filt):
    evs = events_of(root, "page", DROP_LOG, *filt)
    _one_notice(evs, 6)


def test_dropped_notice_passes_filters_with_since_before(root, compacted):
    evs = events_of(root, "page", DROP_LOG, "--since", "20d", "-g", "nothing-like-this")
    assert [e["type"] for e in evs] == [DROPPED]
    evs = events_of(root, "page", DROP_LOG, "--since", "3d", "-t", "message.received")
    assert notices(evs) == [] and seqs(evs) == [10]


def test_dropped_notice_does_not_count_toward_limit(root, compacted):
    evs = events_of(root, "page", DROP_LOG, "--limit", "2")
    _one_notice(evs, 6)
    assert seqs(kept(evs)) == [7, 8]


def test_dropped_notice_from_a_cursor_inside_the_dropped_range(root, compacted):
    evs = events_of(root, "page", DROP_LOG, "--after", encode_cursor({DROP_LOG: 3}))
    _one_notice(evs, 3)
    evs = events_of(root, "page", DROP_LOG, "--after", encode_cursor({DROP_LOG: 7}))
    assert notices(evs) == [] and seqs(evs) == [8, 9, 10]


def test_tail_since_and_dropped(root, compacted):
    evs = events_of(root, "tail", DROP_LOG, "--since", "3d")
    assert notices(evs) == [] and seqs(evs) == [7, 8, 9, 10]
    evs = events_of(root, "tail", DROP_LOG, "--since", "20d")
    _one_notice(evs, 6)


# ---------------------------------------------------------------------------------------------
# times
# ---------------------------------------------------------------------------------------------
OFFSETS = [timedelta(days=4), timedelta(hours=49), timedelta(hours=26), timedelta(hours=23), timedelta(hours=5),
           timedelta(hours=3), timedelta(minutes=105), timedelta(minutes=75), timedelta(minutes=20),
           timedelta(minutes=1)]


@pytest.fixture
def timed(root):
    now = utcnow()
    items = [{"type": "trigger.fired", "data": {"trigger": {"name": f"t{i}"}}, "at": now - off}
             for i, off in enumerate(OFFSETS)]
    evs = write_log(root, "acme/timed", items)
    return [(int(e["sequence"]), now - off) for e, off in zip(evs, OFFSETS, strict=True)]


def _midnight(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _clock_arg(now: datetime, back: timedelta, with_seconds: bool) -> tuple[str, datetime]:
    t = now - back
    if t.date() != now.date():
        t = _midnight(now)
    t = t.replace(microsecond=0) if with_seconds else t.replace(second=0, microsecond=0)
    return (t.strftime("%H:%M:%S") if with_seconds else t.strftime("%H:%M")), t


@pytest.mark.parametrize("form", ["now", "today", "yesterday", "date", "HH:MM", "HH:MM:SS", "1h30m", "2h ago",
                                  "90m", "1d2h"])
def test_since_forms(root, timed, form):
    now = utcnow()
    if form == "now":
        arg, since = "now", now
    elif form == "today":
        arg, since = "today", _midnight(now)
    elif form == "yesterday":
        arg, since = "yesterday", _midnight(now) - timedelta(days=1)
    elif form == "date":
        d = _midnight(now) - timedelta(days=2)
        arg, since = d.strftime("%Y-%m-%d"), d
    elif form == "HH:MM":
        arg, since = _clock_arg(now, timedelta(minutes=150), False)
    elif form == "HH:MM:SS":
        arg, since = _clock_arg(now, timedelta(minutes=50), True)
    elif form in ("1h30m", "90m"):
        arg, since = form, now - timedelta(minutes=90)
    elif form == "1d2h":
        arg, since = form, now - timedelta(hours=26)  # the event 26h old is just outside
    else:
        arg, since = "2h ago", now - timedelta(hours=2)
    expected = [s for s, at in timed if at >= since]
    assert seqs(events_of(root, "page", "acme/timed", "--since", arg)) == expected, (arg, since)


def test_until_forms_and_windows(root, timed):
    now = utcnow()
    assert seqs(events_of(root, "page", "acme/timed", "--until", "now")) == [s for s, _ in timed]
    y0, t0 = _midnight(now) - timedelta(days=1), _midnight(now)
    expected = [s for s, at in timed if y0 <= at < t0]
    assert seqs(events_of(root, "page", "acme/timed", "--since", "yesterday", "--until", "today")) == expected
    expected = [s for s, at in timed if now - timedelta(hours=4) <= at < now - timedelta(minutes=30)]
    assert seqs(events_of(root, "page", "acme/timed", "--since", "4h ago", "--until", "30m")) == expected
    arg, until = _clock_arg(now, timedelta(minutes=50), True)
    expected = [s for s, at in timed if at < until]
    assert seqs(events_of(root, "page", "acme/timed", "--until", arg)) == expected


def test_since_date_with_until_date(root, timed):
    now = utcnow()
    d2, d1 = _midnight(now) - timedelta(days=2), _midnight(now) - timedelta(days=1)
    expected = [s for s, at in timed if d2 <= at < d1]
    got = events_of(root, "page", "acme/timed", "--since", d2.strftime("%Y-%m-%d"), "--until", d1.strftime("%Y-%m-%d"))
    assert seqs(got) == expected


def test_tail_since(root, timed):
    expected = [s for s, at in timed if at >= utcnow() - timedelta(hours=2)]
    assert seqs(events_of(root, "tail", "acme/timed", "--since", "2h")) == expected
    assert seqs(events_of(root, "tail", "acme/timed", "--since", "2h", "-n", "2")) == expected[-2:]
    assert seqs(events_of(root, "tail", "acme/timed", "--since", "1h30m", "-n", "10")) == \
        [s for s, at in timed if at >= utcnow() - timedelta(minutes=90)]


@pytest.mark.parametrize("window", [
    ["--since", "2h", "--until", "3h"],                                          # inverted
    ["--since", "2026-10-22T10:00:00Z", "--until", "2026-10-22T10:00:00Z"],      # empty
    ["--since", "2026-10-22T10:00:00Z", "--until", "2026-10-22T09:00:00Z"],
    ["--since", "today", "--until", "yesterday"],
    ["--since", "now", "--until", "1h ago"],
])
def test_empty_or_inverted_window_refused(root, timed, window):
    assert_usage_error(run_cli("page", "acme/timed", *window, root=root), "--since", "--until")


def test_audit_page_empty_window_refused(root):
    record_audit(root, "agent.created", "agents/x", {"agent": {"id": "x"}}, "user:alice")
    assert_usage_error(run_cli("audit", "page", "--since", "2h", "--until", "3h", root=root), "--since", "--until")


# ---------------------------------------------------------------------------------------------
# fold --run, fold --since
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def two_runs(root):
    now = utcnow()
    a = run_items(RUN_A, now - timedelta(hours=2), task="first task", answer="first answer", n_tools=2)
    b = run_items(RUN_B, now - timedelta(minutes=10), task="second task", answer=None)
    evs = write_log(root, "acme/fold", a + b)
    assert_checks(root)
    return evs


def fold_json(root: Path, *args) -> dict:
    return orjson.loads(ok(root, "fold", "acme/fold", *args, "--format", "json").stdout)


def test_fold_whole_log_is_the_latest_run(root, two_runs):
    st_ = fold_json(root)["state"]
    assert st_["status"] == "running" and st_["task"] == "second task"
    assert fold_json(root, "--view", "review_data:Seqs")["state"] == list(range(1, len(two_runs) + 1))


@pytest.mark.parametrize("run_arg", ["abcd1111", "abcd1", RUN_A[:12], RUN_A])
def test_fold_run_folds_only_that_run(root, two_runs, run_arg):
    fold_json(root)  # a checkpoint of the whole log must not leak into the run's fold
    st_ = fold_json(root, "--run", run_arg)["state"]
    assert st_["status"] == "completed"
    assert st_["task"] == "first task" and st_["answer"] == "first answer" and st_["tool_calls"] == 2
    a_seqs = [int(e["sequence"]) for e in two_runs if trace_of(e) == RUN_A]
    assert fold_json(root, "--run", run_arg, "--view", "review_data:Seqs")["state"] == a_seqs


def test_fold_run_by_traceparent(root, two_runs):
    tp = next(e["traceparent"] for e in two_runs if trace_of(e) == RUN_B)
    st_ = fold_json(root, "--run", tp)["state"]
    assert st_["status"] == "running" and st_["task"] == "second task"
    assert fold_json(root, "--run", tp, "--view", "review_data:Seqs")["state"] == \
        [int(e["sequence"]) for e in two_runs if trace_of(e) == RUN_B]


def test_fold_since(root, two_runs):
    fold_json(root, "--view", "review_data:Seqs")  # a checkpoint first
    b_seqs = [int(e["sequence"]) for e in two_runs if trace_of(e) == RUN_B]
    assert fold_json(root, "--since", "1h", "--view", "review_data:Seqs")["state"] == b_seqs
    assert fold_json(root, "--since", "3h", "--view", "review_data:Seqs")["state"] == list(range(1, len(two_runs) + 1))
    st_ = fold_json(root, "--since", "1h")["state"]
    assert st_["task"] == "second task" and st_["status"] == "running"


@pytest.mark.parametrize("args, names", [
    (["--run", "xyz1"], ["--run"]), (["--run", "abc"], ["--run"]), (["--since", "tomorow"], ["--since"]),
])
def test_fold_bad_run_or_since_refused(root, two_runs, args, names):
    good = {"--run": "abcd1111", "--since": "3h"}[args[0]]
    assert run_cli("fold", "acme/fold", args[0], good, "--format", "json", root=root).returncode == 0
    assert_usage_error(run_cli("fold", "acme/fold", *args, root=root), *names)


# ---------------------------------------------------------------------------------------------
# audit page / audit tail with the filters
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def audit_log(root):
    return [
        record_audit(root, "agent.created", "agents/acme/a", {"agent": {"id": "acme/a"}, "note": "rotate the keys"},
                     "user:alice"),
        record_audit(root, "agent.configured", "agents/acme/a", {"agent": {"id": "acme/a"}, "note": "nothing"},
                     "user:bob"),
        record_audit(root, "trigger.created", "triggers/nightly", {"trigger": {"name": "nightly"}}, "user:alice"),
    ]


@pytest.mark.parametrize("args, expected", [
    (["-g", "rotate the keys"], [1]),
    (["-g", "ROTATE", "-i"], [1]),
    (["-g", "alice"], [1, 3]),
    (["-g", "actor"], []),                                    # a key name
    (["--where", "data.actor = user:bob"], [2]),
    (["--where", "data.actor ~ alice", "--where", "subject ~ ^triggers/"], [3]),
    (["-x", "agent.configured"], [1, 3]),
    (["-t", "agent.created", "-t", "trigger.created"], [1, 3]),
    (["-t", "agent.created,agent.configured", "-x", "agent.created"], [2]),
])
def test_audit_page_filters(root, audit_log, args, expected):
    assert seqs(events_of(root, "audit", "page", *args)) == expected


def test_audit_tail_filters(root, audit_log):
    assert seqs(events_of(root, "audit", "tail", "-n", "1", "-g", "alice")) == [3]
    assert seqs(events_of(root, "audit", "tail", "-n", "1", "--where", "data.actor = user:alice", "-x",
                          "trigger.created")) == [1]
    assert seqs(events_of(root, "audit", "tail", "-n", "5", "-t", "agent.created", "-t", "agent.configured")) == [1, 2]


def test_audit_page_note_at_limit(root, audit_log):
    p = ok(root, "audit", "page", "--limit", "1", "--format", "json")
    [note] = note_lines(p)
    m = NOTE_RE.match(note)
    assert m and m.group(2) == orjson.loads(p.stdout)["next"], note
    rest = orjson.loads(ok(root, "audit", "page", "--after", m.group(2), "--format", "json").stdout)
    assert seqs(rest["events"]) == [2, 3]


# ---------------------------------------------------------------------------------------------
# bad input: one `error:` line naming the option, exit 2, nothing on stdout
# ---------------------------------------------------------------------------------------------
# (case, bad arguments, option names the error may use, good arguments for the same option)
BAD = [
    ("grep-paren", ["--grep", "("], ["--grep"], ["--grep", "(t)"]),
    ("grep-short-paren", ["-g", "("], ["--grep", "-g"], ["-g", "(t)"]),
    ("where-no-op", ["--where", "data.x"], ["--where"], ["--where", "data.x != 3"]),
    ("where-bad-op", ["--where", "data.x ?? 3"], ["--where"], ["--where", "data.x = 3"]),
    ("where-not-a-number", ["--where", "data.n < abc"], ["--where"], ["--where", "data.n < 3"]),
    ("where-bad-time", ["--where", "time > bogus"], ["--where"], ["--where", "time > 2026-01-01"]),
    # bytes that are not UTF-8 (argv decodes them to lone surrogates): before, an internal error, exit 1
    ("grep-not-utf8", ["--grep", "a\udcff"], ["--grep"], ["--grep", "a\u00ff"]),
    ("where-not-utf8", ["--where", "data.x ~ \udcff"], ["--where"], ["--where", "data.x ~ \u00ff"]),
    ("since-typo", ["--since", "tomorow"], ["--since"], ["--since", "yesterday"]),
    ("run-not-hex", ["--run", "xyz1"], ["--run"], ["--run", "abc1"]),
    ("run-too-short", ["--run", "abc"], ["--run"], ["--run", "abcd"]),
    ("exclude-unknown", ["-x", "no.such.type"], ["--exclude-types", "-x"], ["-x", "trigger.created"]),
    ("exclude-unknown-long", ["--exclude-types", "tool_call.started,no.such.type"], ["--exclude-types"],
     ["--exclude-types", "tool_call.started,agent.created"]),
]
COMMANDS = {
    "page": ["page", "acme/bad"],
    "tail": ["tail", "acme/bad"],
    "audit-page": ["audit", "page"],
    "audit-tail": ["audit", "tail"],
}


@pytest.fixture
def bad_root(root):
    append(root, "acme/bad", "trigger.fired", {"trigger": {"name": "t"}})
    record_audit(root, "agent.created", "agents/x", {"agent": {"id": "x"}}, "user:alice")
    return root


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
@pytest.mark.parametrize("case, args, names, good", BAD, ids=[b[0] for b in BAD])
def test_bad_input_refused(bad_root, cmd, case, args, names, good):
    # the option exists: a good value is taken (so the refusal below is about the value)
    g = run_cli(*COMMANDS[cmd], *good, "--format", "jsonl", root=bad_root)
    assert g.returncode == 0 and b"error:" not in g.stderr, (good, g.stderr)
    p = run_cli(*COMMANDS[cmd], *args, root=bad_root)
    assert_usage_error(p, *names)


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_bad_input_refused_even_with_good_filters_beside(bad_root, cmd):
    p = run_cli(*COMMANDS[cmd], "-g", "t", "--where", "data.x = 1", "--where", "data.y ?? 2", root=bad_root)
    assert_usage_error(p, "--where")


def test_page_inverted_window_names_the_option(bad_root):
    assert_usage_error(run_cli("page", "acme/bad", "--since", "2h", "--until", "3h", root=bad_root),
                       "--since", "--until")


def test_good_run_forms_are_accepted(bad_root):
    """The refusals above are about the value: 4+ hex digits, a full id or a traceparent pass."""
    tp = f"00-{RUN_C}-{hex_id(8)}-01"
    for arg in ["abcd", "0123", RUN_C[:8], RUN_C, tp]:
        p = run_cli("page", "acme/bad", "--run", arg, "--format", "json", root=bad_root)
        assert p.returncode == 0, (arg, p.stderr)
