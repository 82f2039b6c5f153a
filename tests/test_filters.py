"""The reading filters' invariants (read/filters.py, read/scan.py, read/backward.py).

- A byte test only ever rules a line out when the decoded event would not match: for any
  event, written by this tool (orjson) or by a writer that escapes everything (\\u, \\/),
  ``LineTest.may_match`` is True whenever ``Filters.accepts`` is.
- The block scan with a filter (the sparse byte search included) yields exactly the events a
  line-by-line decode and ``accepts`` would, and moves past every line.
- ``ReadBack`` (tail -n over many logs) picks exactly the last n matching events of the merge.
"""
from __future__ import annotations

import json
import os
import random
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.read import backward
from wardrik_cli.read.backward import ReadBack
from wardrik_cli.read.filters import Filters, Where, grep_data, required_literals
from wardrik_cli.read.scan import scan
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from tests.ledgergen import START

TYPES = ["tool_call.completed", "tool_call.failed", "message.completed", "run.started"]
WORDS = ["pool", "exhausted", "Pool Exhausted", "naïve", "é", "quote\"d", "back\\slash", "line\nbreak",
         "tab\tx", "bash", "python", "42", "{x}", "\u202e", "\x1b[31m", "ÉCOLE", "école"]
TRACES = ["901fe023" + "a" * 24, "901f0000" + "b" * 24, "c" * 32]

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)
values = st.recursive(
    st.one_of(texts, st.integers(-5, 100), st.booleans(), st.none(), st.floats(allow_nan=False, allow_infinity=False, width=32)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(WORDS + ["tool", "name"]),
                                                                         inner, max_size=3)),
    max_leaves=8)
datas = st.fixed_dictionaries({"tool": st.fixed_dictionaries({"name": st.sampled_from(["bash", "python", "é x"])}),
                               "output": values, "n": st.integers(0, 10)})


def make(seq: int, etype: str, data: dict, trace: str, log_id: str = "acme/a", t: str | None = None) -> dict:
    return build_event(etype=lookup(etype), data=data, source=f"wardrik://local/agents/{log_id}",
                       subject=f"agents/{log_id}", seq=seq, time_str=t or format_dt(START + timedelta(seconds=seq)),
                       trace=trace, span=new_span_id())


grep_patterns = st.one_of(
    st.sampled_from(WORDS).map(lambda w: __import__("re").escape(w)),
    st.sampled_from(["pool|bash", "po+l", "exh.usted", "^pool", "ool ex", "[é]cole", "(?i)POOL", "\\d+", "x}$"]))
filters = st.builds(
    lambda grep, ic, run, where, types: Filters.build(types or None, run=run, grep=grep, ignore_case=ic, where=where),
    st.one_of(st.none(), grep_patterns), st.booleans(),
    st.one_of(st.none(), st.sampled_from(["901f", "901fe023", "c" * 32, "00-" + "c" * 32 + "-" + "d" * 16 + "-01"])),
    st.lists(st.sampled_from(["data.tool.name=bash", "data.tool.name=é x", "data.output~pool", "data.n>=3",
                              "data.output!=42", "data.output=42", "data.output=true", "data.missing!=x",
                              "subject=agents/acme/a"]), max_size=2),
    st.lists(st.sampled_from(TYPES), max_size=2))


@settings(max_examples=400, deadline=None)
@given(etype=st.sampled_from(TYPES), data=datas, trace=st.sampled_from(TRACES), f=filters)
def test_a_byte_test_never_rules_out_a_match(etype, data, trace, f):
    ev = make(7, etype, data, trace)
    test = f.line_test()
    if test is None:
        return
    accepted = f.accepts(ev)
    # as this tool writes it, and as a writer that escapes everything it may (\\u, \\/) writes it
    for raw in (dumps_line(ev)[:-1], json.dumps(ev, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/").encode(),
                orjson.dumps({k: v for k, v in ev.items() if k != "data"})[:-1] + b',"data":'
                + _escape_everything(ev["data"]) + b"}"):
        assert orjson.loads(raw) == ev
        from wardrik_cli.store.log import peek

        p = peek(raw)
        ruled_out = p is not None and (not test.type_ok(p[0]) or not test.may_match(raw))
        if accepted:
            assert not ruled_out, (raw, f)


def _escape_everything(v) -> bytes:
    """JSON as a writer that escapes every character of every string value writes it (keys
    as they are; used for data, so that the envelope keeps this tool's shape)."""
    if isinstance(v, str):
        return b'"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else
                               json.dumps(c)[1:-1] for c in v).encode() + b'"'
    if isinstance(v, dict):
        return b"{" + b",".join(json.dumps(k).encode() + b":" + _escape_everything(x) for k, x in v.items()) + b"}"
    if isinstance(v, list):
        return b"[" + b",".join(_escape_everything(x) for x in v) + b"]"
    return orjson.dumps(v)


def test_grep_reads_values_not_keys_and_not_numbers():
    import re

    rx = re.compile("pool")
    assert grep_data(rx, {"a": ["x", {"b": "the pool"}]})
    assert not grep_data(rx, {"pool": 1})
    assert not grep_data(re.compile("42"), {"n": 42})
    deep: object = "pool"
    for _ in range(5000):  # deeper than any recursion limit
        deep = [deep]
    assert grep_data(rx, {"d": deep})


def test_required_literals():
    import re

    assert required_literals(re.compile("pool exhausted")) == [b"pool exhausted"]
    assert required_literals(re.compile("a+pool.*exhausted")) == [b"exhausted"]
    assert required_literals(re.compile("bash|python")) == [b"bash", b"python"]
    assert required_literals(re.compile("POOL", re.I)) == [b"pool"]
    assert required_literals(re.compile("é", re.I)) is None  # Unicode case folding: no byte search
    assert required_literals(re.compile('say "hi"')) is None  # a quote may be escaped in the line
    assert required_literals(re.compile("a|b.c")) is None


def test_where_parses_and_refuses():
    w = Where.parse("data.attempt >= 3")
    assert (w.path, w.op, w.number) == (("data", "attempt"), ">=", 3.0)
    assert Where.parse("data.note = 'two words '").value == "two words "
    for bad in ("data.x", "data.x ?? 3", "data.n < abc", "data..x=1", "=3", "data.n > nan",
                "data.task == t1", "data.task=~t1"):  # before: read as = with a value '= t1'
        with pytest.raises(Exception) as e:
            Where.parse(bad)
        assert "--where" in str(e.value)
    assert Where.parse("data.task = =t1").value == "=t1"  # a value that starts so: after a space
    assert Where.parse("data.id=<none>").value == "<none>" and Where.parse("data.x=!y").value == "!y"


def _write(path: Path, events: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for e in events:
            f.write(dumps_line(e))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), f=filters, block=st.sampled_from([1 << 10, 1 << 12, 1 << 20]),
       rate=st.sampled_from([0.01, 0.2, 0.9]))
def test_scan_with_filters_equals_decoding_every_line(tmp_path_factory, seed, f, block, rate):
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("scan")
    evs = []
    for seq in range(1, 400):
        hit = rng.random() < rate
        data = {"tool": {"name": "bash" if hit else "ls"}, "output": "pool exhausted" if hit else "fine " * rng.randint(0, 30),
                "n": rng.randint(0, 10)}
        evs.append(make(seq, rng.choice(TYPES) if hit else "message.completed", data, rng.choice(TRACES)))
    path = tmp / "acme" / "a.jsonl"
    _write(path, evs)
    root = Root(tmp)
    with Log.agent(root, "acme/a").open() as view:
        got, last = [], 0
        for line in scan(view, 0, view.end, test=f.line_test(), block=block):
            last = line.seq
            if line.event is not None and f.accepts(line.event):
                got.append(line.seq)
    assert last == len(evs)  # the position moved past every line
    assert got == [int(e["sequence"]) for e in evs if f.accepts(e)]


def test_scan_reports_a_gap_once_in_either_mode(tmp_path):
    evs = [make(s, "message.completed", {"output": "pool" if s % 50 == 0 else "x"}, TRACES[0]) for s in range(1, 301)]
    evs = [e for e in evs if e["sequence"] not in ("000000000120", "000000000121")]
    _write(tmp_path / "acme" / "a.jsonl", evs)
    root = Root(tmp_path)
    for f in (Filters(), Filters.build(grep="pool")):
        gaps: list[tuple[int, int]] = []
        with Log.agent(root, "acme/a").open() as view:
            seqs = [ln.seq for ln in scan(view, 0, view.end, test=f.line_test(), on_gap=lambda a, b, g=gaps: g.append((a, b)),
                                          gap_from_start=True, block=1 << 12)]
        assert gaps == [(119, 122)], f
        assert seqs[-1] == 300


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), n=st.integers(0, 60), n_logs=st.integers(1, 70),
       f=st.sampled_from([Filters(), Filters.build(["tool_call.failed"]), Filters.build(grep="pool"),
                          Filters.build(since=format_dt(START + timedelta(seconds=30)))]),
       crowded=st.booleans())
def test_read_back_is_the_last_n_of_the_merge(tmp_path_factory, seed, n, n_logs, f, crowded):
    """crowded: as over tens of thousands of logs, each log holds only its waiting line
    (``_Back.park``) and reads the rest of its block again when its turn comes."""
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("back")
    root = Root(tmp)
    everything = []
    for i in range(n_logs):
        log_id = f"m/l{i:03d}"
        evs, t = [], 0
        for seq in range(1, rng.randint(0, 12) + 1):
            t += rng.randint(0, 9)  # equal times across logs are ordered by log id
            failed = rng.random() < 0.2
            evs.append(make(seq, "tool_call.failed" if failed else "message.completed",
                            {"output": "pool" * rng.randint(0, 1) + "y" * rng.randint(0, 3000)}, TRACES[0], log_id,
                            format_dt(START + timedelta(seconds=t))))
        _write(tmp / f"{log_id}.jsonl", evs)
        everything += [(e["time"], log_id, int(e["sequence"])) for e in evs if f.accepts(e)]
    views = [Log.agent(root, f"m/l{i:03d}").open() for i in range(n_logs)]
    budget = backward.READ_BUDGET
    backward.READ_BUDGET = 0 if crowded else budget
    try:
        got = ReadBack(views, n, f).run()
    finally:
        backward.READ_BUDGET = budget
        for v in views:
            v.close()
    want = sorted(everything)[-n:] if n else []
    assert [(orjson.loads(raw)["time"], name, seq) for name, seq, raw, _ev in got] == want
    assert all(orjson.loads(raw) == ev for _n, _s, raw, ev in got)  # the event printed is the line's


def test_read_back_reads_about_what_it_shows(tmp_path):
    """tail -n 20 over 100 logs of 300 events reads a few blocks per log, not the logs."""
    for i in range(100):
        evs = [make(s, "message.completed", {"output": "z" * 200}, TRACES[0], f"m/l{i:03d}",
                    format_dt(START + timedelta(seconds=s * 100 + i))) for s in range(1, 301)]
        _write(tmp_path / "m" / f"l{i:03d}.jsonl", evs)
    total = sum(os.path.getsize(p) for p in (tmp_path / "m").iterdir())
    views = [Log.agent(Root(tmp_path), f"m/l{i:03d}").open() for i in range(100)]
    try:
        before = _rchar()
        got = ReadBack(views, 20, Filters()).run()
        read = _rchar() - before
    finally:
        for v in views:
            v.close()
    assert [seq for _n, seq, _r, _e in got] == [300] * 20
    assert read < total / 20, (read, total)
    # with --since after every event (quiet logs): a log costs its last block and the small
    # check before it, never a seek's bisection and samples (a review measured 18x the bytes)
    views = [Log.agent(Root(tmp_path), f"m/l{i:03d}").open() for i in range(100)]
    try:
        before = _rchar()
        got = ReadBack(views, 20, Filters.build(since=format_dt(START + timedelta(days=1)))).run()
        read = _rchar() - before
    finally:
        for v in views:
            v.close()
    assert got == [] and read < total / 5, (read, total)  # 100 x (a 4 KB block + 16 KB checked): 2 MB of 16


def _rchar() -> int:
    """Bytes this thread has read (/proc/thread-self/io): what a read really cost."""
    with open("/proc/thread-self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))




def test_the_table_of_characters_that_fold_to_ascii_is_complete():
    """FOLDS_TO_ASCII is what Python's case-insensitive matching does, derived anew: every
    character outside ASCII that matches an ASCII letter under re.IGNORECASE."""
    import re

    from wardrik_cli.read.filters import FOLDS_TO_ASCII

    found: dict[str, set[str]] = {}
    pats = {c: re.compile(c, re.IGNORECASE) for c in map(chr, range(128)) if c.isalpha()}
    any_letter = re.compile("[a-z]", re.IGNORECASE)  # one match per character, then which letter
    for cp in range(128, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if any_letter.fullmatch(ch) is None:
            continue
        for letter, p in pats.items():
            if p.fullmatch(ch):
                found.setdefault(letter.lower(), set()).add(ch)
    assert {k: set(v) for k, v in FOLDS_TO_ASCII.items()} == found
