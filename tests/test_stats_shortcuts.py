"""`wardrik stats --by tool`'s shortcuts, each against its fallback on hostile lines.

- The dense scan (``read.scan``'s ``lazy``) finds the lines of the types read by their type's
  bytes at a line's type offset (one search for the ``wardrik.tool_call.`` family) and decodes
  each whole: what is counted is what decoding says (an escaped name, a ``"name"`` inside
  another string, keys out of order or given twice, a second ``type`` or ``time`` in the
  envelope, escaped sequence digits), never what the bytes seemed to say; a line that is not
  an event is reported as the reader reports it.
- ``Counter.read`` under tool (``_read_tool``) inlines ``tool_event``, ``_Open.put``/``pop``
  and ``Durations.add``: it counts what feeding each event to ``Counter.add`` counts, for any
  data (ids and names of any JSON type, missing keys, bad times, a small open-call bound), and
  past ``Durations.EXACT`` values a group.
"""
from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_stats_fast import DEPLOYMENT, _line, _run, _write, old_stats
from wardrik_cli.folding.stats import Counter, Durations, stats
from wardrik_cli.read import reader as reader_mod
from wardrik_cli.read import scan as scan_mod
from wardrik_cli.read.scan import Line

T = "ab" * 16
LOG = "acme/a"


def _tool(typ: str, seq: int, us: int, call: Any, name: Any = None, **more: Any) -> bytes:
    tool: dict[str, Any] = {"call": {"id": call}}
    if name is not None:
        tool = {"name": name, **tool}
    return _line("plain", seq, typ, {"tool": tool, **more}, T, LOG, us)


def _swap(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert raw.count(old) == 1, (raw, old)
    return raw.replace(old, new)


def _before_data(raw: bytes, extra: bytes) -> bytes:
    """A key added to the envelope, just before data: the line keeps this tool's shape."""
    return _swap(raw, b',"data":', extra + b',"data":')


def _padding(first_seq: int, n: int) -> list[bytes]:
    """n plain calls of another tool: a block's first and last lines, so the block is in
    shape (its ends peek) whatever the odd lines between are."""
    out = []
    for i in range(n):
        seq = first_seq + 2 * i
        out.append(_tool("tool_call.started", seq, seq * 1000, f"p{seq}", "pad"))
        out.append(_tool("tool_call.completed", seq + 1, seq * 1000 + 500_000, f"p{seq}"))
    return out


def _seq(n: int) -> bytes:
    return b'"sequence":"%012d"' % n


# Each case: the odd lines from sequence s on, and what must be counted from them (rows by
# tool name, the columns given), besides the padding's six "pad" calls.
def _escaped_name(s: int) -> list[bytes]:
    start = _swap(_tool("tool_call.started", s, 0, "c1", "NAME"), b'"NAME"', rb'"na\"me\\x\u00e9"')
    return [start, _tool("tool_call.completed", s + 1, 2_000_000, "c1")]


def _name_inside_a_string(s: int) -> list[bytes]:
    # The first "name" in the bytes is inside a string; the data's own comes later.
    start = _line("plain", s, "tool_call.started", {"tool": {"args": '"name":"evil","call":{"id":"c9"}', "name": "good",
                                                             "call": {"id": "c1"}}}, T, LOG, 0)
    return [start, _tool("tool_call.completed", s + 1, 3_000_000, "c1", output='{"tool":{"name":"evil"}}')]


def _keys_out_of_order(s: int) -> list[bytes]:
    start = _line("plain", s, "tool_call.started", {"x": 1, "tool": {"call": {"id": "c1"}, "name": "late"}}, T, LOG, 0)
    end = _line("plain", s + 1, "tool_call.failed", {"error": {"message": "no"}, "tool": {"call": {"id": "c1"}}}, T,
                LOG, 1_000_000)
    return [start, end]


def _keys_twice(s: int) -> list[bytes]:
    # JSON's last value wins (as orjson decodes it, and the reader's path): name "second", id "c2".
    start = _swap(_tool("tool_call.started", s, 0, "c1", "first"), b'"call":{"id":"c1"}}',
                  b'"call":{"id":"c1"},"name":"second","call":{"id":"c2"}}')
    return [start, _tool("tool_call.completed", s + 1, 4_000_000, "c2")]


def _type_twice(s: int) -> list[bytes]:
    # Its bytes at the type offset say tool_call.started; decoded, it is a message.received.
    start = _before_data(_tool("tool_call.started", s, 0, "c1", "ghost"), b',"type":"wardrik.message.received"')
    return [start, _tool("tool_call.completed", s + 1, 1_000_000, "c1")]


def _time_twice(s: int) -> list[bytes]:
    end = _before_data(_tool("tool_call.completed", s + 1, 1_000_000, "c1"), b',"time":"2026-10-22T09:00:07.000000Z"')
    return [_tool("tool_call.started", s, 0, "c1", "slow"), end]


def _escaped_sequence(s: int) -> list[bytes]:
    digits = b"%012d" % s
    escaped = b"".join(b"\\u%04x" % c for c in digits[:3]) + digits[3:]
    start = _swap(_tool("tool_call.started", s, 0, "c1", "esc"), _seq(s), b'"sequence":"' + escaped + b'"')
    return [start, _tool("tool_call.completed", s + 1, 5_000_000, "c1")]


def _live_type_stored(s: int) -> list[bytes]:
    # Found by the search for the tool_call family, and not a type read: not counted.
    progress = _line("plain", s, "tool_call.progress", {"tool": {"name": "prog", "call": {"id": "c1"}}}, T, LOG, 0)
    return [progress, _tool("tool_call.completed", s + 1, 1_000_000, "c1", "prog")]


def _ids_not_strings(s: int) -> list[bytes]:
    return [_tool("tool_call.started", s, 0, 7, "num"), _tool("tool_call.started", s + 1, 0, {"k": [1]}, "obj"),
            _tool("tool_call.completed", s + 2, 1_000_000, {"k": [1]}), _tool("tool_call.completed", s + 3, 2_000_000, 7)]


CASES = {
    "escaped name": (_escaped_name, {'na"me\\xé': {"calls": 1, "max_s": 2.0}}),
    "name inside a string": (_name_inside_a_string, {"good": {"calls": 1, "max_s": 3.0}}),
    "keys out of order": (_keys_out_of_order, {"late": {"calls": 1, "failures": 1, "max_s": 1.0}}),
    "keys twice": (_keys_twice, {"second": {"calls": 1, "unended": 0, "max_s": 4.0}}),
    "type twice": (_type_twice, {None: {"calls": 1, "max_s": None}}),
    "time twice": (_time_twice, {"slow": {"calls": 1, "max_s": 7.0}}),
    "escaped sequence": (_escaped_sequence, {"esc": {"calls": 1, "max_s": 5.0}}),
    "live type stored": (_live_type_stored, {"prog": {"calls": 1, "unended": 0, "max_s": None}}),
    "ids not strings": (_ids_not_strings, {"num": {"calls": 1, "max_s": 2.0}, "obj": {"calls": 1, "max_s": 1.0}}),
}


def _spy_dense(monkeypatch) -> list[int]:
    """The line starts the dense scan's byte search finds (``read.scan._starts``)."""
    found: list[int] = []
    real = scan_mod._starts

    def starts(data: bytes, size: int, picker: list[bytes]) -> list[int]:
        got = real(data, size, picker)
        found.extend(got)
        return got
    monkeypatch.setattr(scan_mod, "_starts", starts)
    return found


@pytest.mark.parametrize("block", [600, 1 << 16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_line_in_a_dense_block_counts_as_decoded(tmp_path, monkeypatch, case, block):
    make, want = CASES[case]
    before = _padding(1, 3)
    odd = make(len(before) + 1)
    body = b"".join(before + odd + _padding(len(before) + len(odd) + 1, 3))
    ls = _write(tmp_path / "root", {LOG: body})
    monkeypatch.setattr(reader_mod, "block_size", lambda n: block)
    found = _spy_dense(monkeypatch)
    new = _run(lambda **kw: stats(ls, "tool", deployment=DEPLOYMENT, **kw).rows)
    if block > len(body):
        assert len(found) == 12 + len(odd)  # one block, in shape: every line found by the byte search
    assert new == _run(lambda **kw: old_stats(ls, "tool", **kw))
    rows, told = new
    assert told == []
    got = {r["tool"]: r for r in rows}
    assert set(got) == set(want) | {"pad"}
    assert got["pad"]["calls"] == 6 and got["pad"]["unended"] == 0
    for name, cols in want.items():
        for col, v in cols.items():
            assert got[name][col] == v, (name, col, got[name])


def _not_an_event(s: int) -> dict[str, bytes]:
    ok = _tool("tool_call.started", s, 0, "c1", "bad")
    return {
        "sequence not digits": _swap(ok, _seq(s), b'"sequence":"+%011d"' % s),
        "sequence not ascii digits": _swap(ok, _seq(s), b'"sequence":"%011d' % s + "١".encode() + b'"'),
        "sequence too short": _swap(ok, _seq(s), b'"sequence":"%d"' % s),
        "sequence a number": _swap(ok, _seq(s), b'"sequence":%d' % (10**11 + s)),
        "sequence a list": _swap(ok, _seq(s), b'"sequence":["%d"]' % s),
        "type not a string": _before_data(ok, b',"type":5'),
        "time not a string": _before_data(ok, b',"time":null'),
        "broken data": ok[:-3] + b",}}\n",
        "control byte in the envelope": _swap(ok, b'"subject":"agents/', b'"subject":"agents/\x01'),
        "bad utf-8 in the envelope": _swap(ok, b'"subject":"agents/', b'"subject":"agents/\xff'),
    }


@pytest.mark.parametrize("kind", sorted(_not_an_event(1)))
def test_a_line_of_a_type_read_that_is_not_an_event_is_reported_not_counted(tmp_path, monkeypatch, kind):
    """The dense scan's own checks of a decoded line are decode_event's: the same lines are
    reported (line and offset), and none is counted."""
    before = _padding(1, 3)
    bad = _not_an_event(len(before) + 1)[kind]
    body = b"".join(before + [bad] + _padding(len(before) + 2, 3))
    ls = _write(tmp_path / "root", {LOG: body})
    monkeypatch.setattr(reader_mod, "block_size", lambda n: 1 << 16)
    found = _spy_dense(monkeypatch)
    new = _run(lambda **kw: stats(ls, "tool", deployment=DEPLOYMENT, **kw).rows)
    assert len(found) == 13  # found by the byte search, and judged there
    assert new == _run(lambda **kw: old_stats(ls, "tool", **kw))
    rows, told = new
    assert told == [(len(before) + 1, len(b"".join(before)))]
    assert [r["tool"] for r in rows] == ["pad"]


# ---------------------------------------------------------------------------------------
# the inlined tool loop against tool_event
# ---------------------------------------------------------------------------------------
TYPES = ["wardrik.tool_call.started", "wardrik.tool_call.completed", "wardrik.tool_call.failed",
         "wardrik.run.completed", "wardrik.run.failed", "wardrik.message.started", "wardrik.tool_call.progress"]
json_atoms = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["c1", "c2", "c3", "", "bash"])
json_values = st.recursive(json_atoms, lambda inner: st.lists(inner, max_size=2)
                           | st.dictionaries(st.sampled_from(["id", "name", "call", "x"]), inner, max_size=3),
                           max_leaves=4)
ids = st.sampled_from(["c1", "c2", "c3"]) | json_values
names = st.sampled_from(["bash", "sql"]) | json_values
times = st.integers(0, 50).map(lambda s: f"2026-10-22T09:00:{s:02d}.000000Z") | st.sampled_from(["", "yesterday"])


@st.composite
def tool_data(draw) -> Any:
    shape = draw(st.sampled_from(["call", "call", "call", "no name", "odd tool", "odd call", "odd data"]))
    if shape == "odd data":
        return draw(json_values)
    if shape == "odd tool":
        return {"tool": draw(json_values)}
    if shape == "odd call":
        return {"tool": {"name": draw(names), "call": draw(json_values)}}
    tool = {"call": {"id": draw(ids)}}
    if shape != "no name":
        tool["name"] = draw(names)
    return {"tool": tool}


@st.composite
def tool_events(draw) -> list[dict[str, Any]]:
    out = []
    for _ in range(draw(st.integers(0, 40))):
        e = {"type": draw(st.sampled_from(TYPES)), "time": draw(times)}
        if draw(st.integers(0, 9)):
            e["data"] = draw(tool_data())
        out.append(orjson.loads(orjson.dumps(e)))  # as the scan hands them out: what orjson decodes
    return out


def _lines(events: list[dict[str, Any]]) -> list[Line]:
    return [Line(i, b"", i + 1, e["time"], e, i + 1, 1) for i, e in enumerate(events)]


def _by_add(events: list[dict[str, Any]], max_open: int, logs: tuple[str, ...] = (LOG,)) -> Counter:
    c = Counter("tool", max_open=max_open)
    for log in logs:
        for e in events:
            c.add(log, e)
    return c


def _by_read(events: list[dict[str, Any]], max_open: int, logs: tuple[str, ...] = (LOG,)) -> Counter:
    c = Counter("tool", max_open=max_open)
    for log in logs:
        last = c.read(log, iter(_lines(events)), None, None, None)
        assert last == (_lines(events)[-1] if events else None)
    return c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=tool_events(), max_open=st.sampled_from([1, 2, 3, 1000]), logs=st.sampled_from([(LOG,), (LOG, "b")]))
def test_the_inlined_tool_loop_counts_what_tool_event_counts(events, max_open, logs):
    want, got = _by_add(events, max_open, logs), _by_read(events, max_open, logs)
    assert got.dump() == want.dump()  # groups, durations as added, the calls open and their order
    assert got.rows() == want.rows()


def test_the_inlined_tool_loop_is_bounded_per_log():
    t = "2026-10-22T09:00:00.000000Z"
    starts = [{"type": "wardrik.tool_call.started", "time": t, "data": {"tool": {"name": "bash", "call": {"id": f"c{i}"}}}}
              for i in range(10)]
    ends = [{"type": "wardrik.tool_call.completed", "time": t, "data": {"tool": {"call": {"id": c}}}} for c in ("c9", "c0")]
    c = _by_read(starts + ends, 3)
    assert len(c.open) == 2  # three were open after the starts (the oldest seven counted unended); c9 ended
    rows = {r["tool"]: r for r in c.rows()}
    assert rows["bash"]["calls"] == 1 and rows["bash"]["unended"] == 9 and rows["bash"]["max_s"] == 0.0
    assert rows[None]["calls"] == 1 and rows[None]["max_s"] is None  # c0's start was forgotten: no name, no time


def test_the_inlined_durations_go_into_the_sketch_as_add_does():
    n = Durations.EXACT + 900
    events = []
    for i in range(n):
        us = i * 37_000 % 3_000_000  # durations from 0 (the zero bucket) to 3 s, out of order
        events.append({"type": "wardrik.tool_call.started", "time": "2026-10-22T09:00:00.000000Z",
                       "data": {"tool": {"name": "bash", "call": {"id": f"c{i}"}}}})
        events.append({"type": "wardrik.tool_call.completed",
                       "time": f"2026-10-22T09:00:{us // 1_000_000:02d}.{us % 1_000_000:06d}Z",
                       "data": {"tool": {"call": {"id": f"c{i}"}}}})
    got, want = _by_read(events, 1000), _by_add(events, 1000)
    assert got.groups["bash"].durations.values is None  # past EXACT: the sketch
    assert got.dump() == want.dump() and got.rows() == want.rows()


def test_durations_past_exact_in_several_logs_count_as_one_read(tmp_path, monkeypatch):
    """Each log's count is merged into the total (Durations.merge, its values bucketed at once)."""
    n = Durations.EXACT // 2 + 300
    logs = {}
    for li in range(3):
        lines = []
        for i in range(n):
            lines.append(_line("plain", 2 * i + 1, "tool_call.started", {"tool": {"name": "bash", "call": {"id": f"c{i}"}}},
                               T, f"acme/a{li}", 1_000_000 * i))
            lines.append(_line("plain", 2 * i + 2, "tool_call.completed", {"tool": {"call": {"id": f"c{i}"}}}, T,
                               f"acme/a{li}", 1_000_000 * i + (i * 7919 + li) % 900_000))
        logs[f"acme/a{li}"] = b"".join(lines)
    ls = _write(tmp_path / "root", logs)
    new = _run(lambda **kw: stats(ls, "tool", deployment=DEPLOYMENT, **kw).rows)
    assert new == _run(lambda **kw: old_stats(ls, "tool", **kw))
    (row,) = new[0]
    assert row["calls"] == 3 * n and row["unended"] == 0
