"""The fast read paths across many logs give exactly what a naive read gives.

``read.merge.merge_batches`` (a heap of sources by how far they are read, batches sorted in C)
and the reader's spans (a span that keeps nothing passes over its lines as one entry, reads
that grow when few lines are kept, ``raws()`` taking a batch at a time) are checked against
the definition: decode every line of every log, keep what ``Filters.accepts``, order by
(time made non-decreasing per log, log id, sequence). Cursors, gap warnings and corrupt lines
are checked the same way.
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.read import merge, reader
from wardrik_cli.read.reader import Filters, Reader, resolve_logs
from wardrik_cli.store.layout import Root

START = datetime(2026, 10, 22, 9, 0, tzinfo=UTC)
TYPES = ["tool_call.started", "tool_call.completed", "tool_call.failed", "message.received", "run.started"]
TRACES = ["ab12" + "0" * 28, "cd34" + "1" * 28]
WORDS = ["pool exhausted", "all good", "retry later", "caf\u00e9 \"quoted\"", "x" * 30]


# --- merge_batches against the sorted merge --------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(logs=st.lists(st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=30), min_size=1, max_size=12),
       spans=st.lists(st.integers(1, 7), min_size=1, max_size=5), emit=st.integers(1, 40))
def test_merge_batches_is_the_sorted_merge(logs, spans, emit):
    """Batches, one after the other, are the (key, log id, seq) order of every entry, whatever
    the spans (varying per fill), ties, empty logs and how often a batch is emitted."""
    old = merge.EMIT
    merge.EMIT = emit
    try:
        _check_merge(logs, spans)
    finally:
        merge.EMIT = old


def _check_merge(logs, spans):
    data = {}
    for i, entries in enumerate(logs):
        data[f"l{i:02d}"] = [(f"{t:02d}", seq + 1, keep) for seq, (t, keep) in enumerate(entries)]
    sources = [merge.Source(name, 0, 0, True, min((t for t, _s, _k in rows), default=""))
               for name, rows in data.items() if rows]
    calls = [0]

    def fill(src):
        calls[0] += 1
        assert calls[0] < 10_000, "the merge makes no progress"
        rows = data[src.name]
        span = spans[calls[0] % len(spans)]
        out = [(merge.keyed(src, t), src.name, seq, b"x" if keep else None, None)
               for t, seq, keep in rows[src.offset:src.offset + span]]
        src.offset += len(out)
        src.done = src.offset >= len(rows)
        return out

    got = [(e[0], e[1], e[2]) for b in merge.merge_batches(sources, fill) for e in b]
    want = []
    for name, rows in data.items():
        high = ""
        for t, seq, _keep in rows:
            high = max(high, t)
            want.append((high, name, seq))
    assert got == sorted(want)


def test_merge_holds_nothing_of_a_log_before_the_frontier_reaches_it():
    """A log whose events all come later is not filled until the merge gets there."""
    a = [(f"{t:02d}", t + 1) for t in range(10)]
    b = [(f"{t:02d}", t - 49) for t in range(50, 60)]
    data = {"a": a, "b": b}
    filled_at: list[tuple[str, int]] = []
    emitted = [0]

    def fill(src):
        filled_at.append((src.name, emitted[0]))
        rows = data[src.name]
        out = [(merge.keyed(src, t), src.name, s, b"x", None) for t, s in rows[src.offset:src.offset + 2]]
        src.offset += len(out)
        src.done = src.offset >= len(rows)
        return out

    srcs = [merge.Source("a", 0, 0, True, "00"), merge.Source("b", 0, 0, True, "50")]
    got = []
    for batch in merge.merge_batches(srcs, fill):
        got += batch
        emitted[0] = len(got)
    assert [e[2] for e in got] == list(range(1, 11)) * 2
    assert [n for n, _ in filled_at[:5]] == ["a"] * 5  # b waits until a has been read past 50


# --- the reader against a naive read ----------------------------------------------------------
def _line(log_id: str, seq: int, t: datetime, etype: str, text: str, trace: str) -> bytes:
    e = build_event(etype=lookup(etype), data={"tool": {"name": text[:6], "call": {"id": f"c{seq}"}}, "output": text},
                    source=f"wardrik://local/agents/{log_id}", subject=f"agents/{log_id}", seq=seq,
                    time_str=format_dt(t), trace=trace, span=new_span_id())
    return dumps_line(e)


log_rows = st.lists(st.tuples(st.integers(-3, 40), st.sampled_from(TYPES), st.sampled_from(WORDS),
                              st.sampled_from(TRACES), st.integers(0, 30)), min_size=0, max_size=60)


def write_logs(root: Path, logs: list[list[tuple]], damage: bool, sorted_: bool = False) -> None:
    """Logs whose times mostly rise (sometimes go back), with a rare gap and, when ``damage``,
    a corrupt line now and then."""
    (root / ".wardrik").mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(logs):
        log_id = f"f/l{i:02d}"
        path = root / "f" / f"l{i:02d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        t = START + timedelta(minutes=i)
        seq = 0
        out = []
        for step, etype, text, trace, roll in rows:
            t += timedelta(seconds=max(step, 0) if sorted_ else step)
            seq += 2 if roll == 0 and seq else 1  # a gap now and then (never before the first)
            out.append(_line(log_id, seq, t, etype, text, trace))
            if damage and roll == 1:
                out.append(b"#### not json ####\n")
        path.write_bytes(b"".join(out))


def naive(root: Path, filters: Filters) -> tuple[list[bytes], dict[str, int], set[tuple[str, int, int]]]:
    """(lines kept in order, last sequence of each log, gaps) by decoding everything."""
    rows = []
    last: dict[str, int] = {}
    gaps = set()
    for path in sorted((root / "f").glob("*.jsonl")):
        name = f"f/{path.stem}"
        high, prev = "", 0
        for raw in path.read_bytes().splitlines():
            try:
                ev = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            seq = int(ev["sequence"])
            if seq != prev + 1:
                gaps.add((name, prev, seq))
            prev = seq
            high = max(high, ev["time"])
            last[name] = seq
            if filters.accepts(ev):
                rows.append((high, name, seq, raw))
    rows.sort(key=lambda r: r[:3])
    return [r[3] for r in rows], last, gaps


FILTERS = [dict(), dict(types=["tool_call.failed"]), dict(types=["tool_call.started", "tool_call.completed"]),
           dict(grep="pool exhausted"), dict(grep="QUOTED", ignore_case=True), dict(run="cd34"),
           dict(where=["data.tool.name=pool e"]), dict(exclude=["message.received"]),
           dict(types=["tool_call.failed"], grep="caf\u00e9")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs=st.lists(log_rows, min_size=2, max_size=8), which=st.integers(0, len(FILTERS) - 1),
       damage=st.booleans(), small=st.booleans(), limit=st.one_of(st.none(), st.integers(1, 40)),
       sorted_=st.booleans())
def test_reader_is_the_naive_read(tmp_path_factory, logs, which, damage, small, limit, sorted_):
    """Every kept event in (time, log id, seq) order, the cursor past every event read, one
    gap warning per gap, corrupt lines reported and passed over; with a limit, pages read on
    with the cursor give the same events."""
    root = tmp_path_factory.mktemp("r") / "root"
    write_logs(root, logs, damage, sorted_)
    kw = dict(FILTERS[which])
    filters = Filters.build(types=kw.get("types"), run=kw.get("run"), exclude=kw.get("exclude"),
                            grep=kw.get("grep"), ignore_case=kw.get("ignore_case", False), where=kw.get("where", ()))
    want, last, gaps = naive(root, filters)
    old = reader.READ_BUDGET, reader.MAX_READ, merge.EMIT
    if small:  # spans of a few lines, batches of a few entries: every path of the merge
        reader.READ_BUDGET, reader.MAX_READ, merge.EMIT = 1, 3000, 3
    try:
        logs_ = resolve_logs(Root(root), ["f/*"])
        got: list[bytes] = []
        warnings: list[str] = []
        corrupt: list[object] = []
        after = None
        for _page in range(1000):
            with Reader(logs_, after, filters=filters, deployment="local", limit=limit, warn=warnings.append,
                        on_corrupt=corrupt.append) as r:
                page = list(r.raws())
                got += page
                after = r.next
                if limit is None or not r.more:
                    assert limit is None or len(page) <= limit
                    break
                assert len(page) == limit
        if not sorted_ and any(step < 0 for rows in logs for step, *_ in rows[1:]):
            # A log whose times go back (never one wardrik wrote) is read in sequence order,
            # its key the highest time *seen*; a span the byte search passes over shows only
            # its bounds, so across logs such a log interleaves by what was seen: the events
            # and each log's order are exact, the interleaving best effort.
            def by_log(lines: list[bytes]) -> dict[str, list[bytes]]:
                out: dict[str, list[bytes]] = {}
                for raw in lines:
                    out.setdefault(orjson.loads(raw)["subject"], []).append(raw)
                return out
            assert by_log(got) == by_log(want)
        else:
            assert got == want
        assert {k: v for k, v in after.items() if k in last} == last
        if limit is None:
            assert len(warnings) == len(gaps)
            for name, a, b in gaps:
                assert any(w.startswith(f"{name}:") and f"{a + 1}" in w for w in warnings), (name, a, b, warnings)
            # each corrupt line reported once, however many times a span read it
            assert len(corrupt) == sum(1 for rows in logs for *_, roll in rows if roll == 1) * damage
    finally:
        reader.READ_BUDGET, reader.MAX_READ, merge.EMIT = old


def test_reader_items_match_raws(tmp_path):
    """Items (pretty, tail, stats) and raws (jsonl) are the same events in the same order."""
    root = tmp_path / "root"
    rows = [[(s % 7, TYPES[s % 5], WORDS[s % 5], TRACES[s % 2], 5) for s in range(80)] for _ in range(5)]
    write_logs(root, rows, False)
    logs_ = resolve_logs(Root(root), ["f/*"])
    f = Filters.build(types=["tool_call.failed", "run.started"])
    with Reader(logs_, None, filters=f, deployment="local") as r:
        items = [(it.log, it.seq, it.raw) for it in r]
        n1 = r.next
    with Reader(logs_, None, filters=f, deployment="local") as r:
        raws = list(r.raws())
        n2 = r.next
    assert [raw for _l, _s, raw in items] == raws and n1 == n2 and raws
