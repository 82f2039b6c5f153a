"""`wardrik stats`' fast paths against the plain ones: the dense scan (``read.scan``'s ``lazy``:
lines of the types read found by byte search, each decoded whole) gives what reading every
event through the reader gives, on random logs with corrupt lines, lines out of this tool's
shape, envelopes that are not plain ASCII, and events written inside data."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldhelp import compact
from test_stats import ledgers, write_root
from wardrik_cli.errors import CorruptLedger
from wardrik_cli.folding import checkpoint as ckpt
from wardrik_cli.folding import stats as stats_mod
from wardrik_cli.folding.stats import count, load_prices, stats
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.read import reader as reader_mod
from wardrik_cli.read.reader import Filters, Reader
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log

TYPES = ["run.started", "run.completed", "run.failed", "tool_call.started", "tool_call.completed",
         "tool_call.failed", "message.started", "message.completed", "message.received"]
DEPLOYMENT = "local"


def old_stats(logs: list[Log], by: str, since=None, until=None, on_corrupt=None) -> list[dict]:
    """What ``stats`` counted before its dense path: every event the reader hands out."""
    filters = Filters(types=stats_mod.READS[by], since=since, until=until)

    def events():
        for log in logs:
            with Reader([log], None, filters=filters, deployment=DEPLOYMENT, on_corrupt=on_corrupt) as r:
                for it in r:
                    if it.seq is not None:
                        yield log.name, it.event
    return count(events(), by)


def _line(kind: str, seq: int, typ: str, data: dict, trace: str, log: str, us: int) -> bytes:
    t = f"2026-10-22T09:{us // 60_000_000 % 60:02d}:{us // 1_000_000 % 60:02d}.{us % 1_000_000:06d}Z"
    e = build_event(etype=lookup(typ), data=data, source=f"wardrik://local/agents/{log}", subject=f"agents/{log}",
                    seq=seq, time_str=t, trace=trace, span=new_span_id())
    if kind == "sorted":  # another writer: valid, out of this tool's shape
        return orjson.dumps(e, option=orjson.OPT_SORT_KEYS) + b"\n"
    if kind == "unicode":  # in shape, but an envelope that is not plain (a non-ASCII subject)
        e["subject"] = f"agents/{log}/é"
    if kind == "embedded":  # an event of a type read, written inside data
        inner = dict(e, type="wardrik.tool_call.completed", sequence=f"{seq + 1000:012d}",
                     data={"tool": {"name": "evil", "call": {"id": "c1"}}})
        e["data"] = dict(data, inner=inner)
    if kind == "notdict":
        e["data"] = 5
    raw = dumps_line(e)
    if kind == "baddata":  # in shape, its data broken: corrupt
        return raw[:-3] + b",}}\n"
    if kind == "torn":  # corrupt, out of shape
        return raw[: len(raw) // 2] + b"\n"
    if kind == "garbage":
        return b"not json at all\n"
    return raw


@st.composite
def raw_logs(draw):
    out = {}
    for li in range(draw(st.integers(1, 2))):
        log = f"acme/a{li}"
        lines, us = [], 0
        trace = "ab" * 16
        odd = draw(st.sampled_from([0, 2, 10, 40]))  # how often a line is not plain, in 100: blocks in shape need few
        for seq in range(1, draw(st.integers(1, 60)) + 1):
            typ = draw(st.sampled_from(TYPES))
            ident = f"c{draw(st.integers(1, 6))}"
            data: dict = {"tool": {"name": draw(st.sampled_from(["bash", "sql"])), "call": {"id": ident}},
                          "message": {"id": ident}, "model": "anthropic:claude-haiku-4-5"}
            if draw(st.integers(0, 3)) == 0:
                data["pad"] = "x" * draw(st.integers(0, 900))
            us += draw(st.integers(0, 2_000_000))
            kind = "plain" if draw(st.integers(0, 99)) >= odd else draw(st.sampled_from(
                ["sorted", "unicode", "embedded", "embedded", "notdict", "baddata", "torn", "garbage"]))
            lines.append(_line(kind, seq, typ, data, trace, log, us))
        out[log] = b"".join(lines)
    return out


def _write(root: Path, logs: dict[str, bytes]) -> list[Log]:
    (root / ".wardrik").mkdir(parents=True, exist_ok=True)
    r = Root(root)
    for log, body in logs.items():
        p = root / (log + ".jsonl")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)
    return [Log.agent(r, log) for log in sorted(logs)]


class Approx(list):
    """Rows compared with floats within rounding: per-log sums added in another order."""

    def __eq__(self, other):
        return len(self) == len(other) and all(
            a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], rel=1e-9, abs=2e-6) if isinstance(a[k], float)
                                         else a[k] == b[k] for k in a) for a, b in zip(self, other, strict=True))


def _run(fn, *args, **kw):
    told: list[tuple[int | None, int | None]] = []
    try:
        rows = fn(*args, on_corrupt=lambda e: told.append((e.line, e.offset)), **kw)
    except CorruptLedger as e:  # pragma: no cover - on_corrupt is given
        return ("raised", e.line, e.offset)
    return Approx(rows), sorted(told)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(logs=raw_logs(), by=st.sampled_from(["tool", "model", "run", "type"]), block=st.sampled_from([600, 2048, 1 << 18]),
       window=st.sampled_from([(None, None), ("2026-10-22T09:00:20.000000Z", None),
                               (None, "2026-10-22T09:00:40.000000Z")]))
def test_the_dense_path_counts_what_the_reader_hands_out(tmp_path_factory, monkeypatch, logs, by, block, window):
    root = tmp_path_factory.mktemp("fast") / "root"
    ls = _write(root, logs)
    since, until = window
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "block_size", lambda n: block)  # many blocks: in shape and not
        new = _run(lambda **kw: stats(ls, by, deployment=DEPLOYMENT, since=since, until=until, **kw).rows)
        old = _run(lambda **kw: old_stats(ls, by, since, until, **kw))
    assert new == old


@pytest.mark.parametrize("by", ["tool", "model"])
def test_a_corrupt_line_of_a_type_read_stops_the_count_as_before(tmp_path, by):
    typ = "tool_call.completed" if by == "tool" else "message.completed"
    body = b"".join(_line("plain", i, typ, {"tool": {"call": {"id": "c"}}, "message": {"id": "m"}}, "ab" * 16,
                          "acme/a", i) for i in range(1, 5))
    bad = _line("baddata", 5, typ, {"tool": {"call": {"id": "c"}}, "message": {"id": "m"}}, "ab" * 16, "acme/a", 5)
    ls = _write(tmp_path / "root", {"acme/a": body + bad})
    with pytest.raises(CorruptLedger) as got:
        stats(ls, by, deployment=DEPLOYMENT)
    assert got.value.line == 5 and got.value.offset == len(body)


@pytest.mark.parametrize("kind", ["embedded", "unicode", "notdict", "baddata", "sorted"])
@pytest.mark.parametrize("block", [600, 1 << 18])
def test_each_odd_line_in_a_block_in_shape(tmp_path, monkeypatch, kind, block):
    """One odd line among plain ones (the block stays in shape for all but ``sorted``)."""
    types = ["tool_call.started", "tool_call.completed", "tool_call.started", "tool_call.failed", "run.completed"]
    body = b"".join(_line(kind if i == 3 else "plain", i, types[i % 5], {"tool": {"name": "a", "call": {"id": f"c{i // 2}"}}},
                          "ab" * 16, "acme/a", i * 1000) for i in range(1, 12))
    ls = _write(tmp_path / "root", {"acme/a": body})
    monkeypatch.setattr(reader_mod, "block_size", lambda n: block)
    new = _run(lambda **kw: stats(ls, "tool", deployment=DEPLOYMENT, **kw).rows)
    assert new == _run(lambda **kw: old_stats(ls, "tool", **kw))
    assert new[0] and (kind == "baddata") == bool(new[1])



# ---------------------------------------------------------------------------------------
# checkpoints: a second count reads only what was appended
# ---------------------------------------------------------------------------------------
def _split_root(root: Path, logs: dict) -> tuple[list[Log], dict[str, list[bytes]]]:
    write_root(root, logs)
    r = Root(root)
    names = sorted(logs)
    return [Log.agent(r, n) for n in names], {n: (root / (n + ".jsonl")).read_bytes().splitlines(True) for n in names}


def _count(root: Path, ls: list[Log], by: str, **kw) -> list[dict]:
    return stats(ls, by, deployment=DEPLOYMENT, prices=load_prices(Root(root)), **kw).rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(logs=ledgers(), by=st.sampled_from(["tool", "model", "run", "agent", "type"]),
       cuts=st.lists(st.floats(0, 1), min_size=1, max_size=3))
def test_a_checkpoint_and_the_suffix_count_as_the_whole(tmp_path_factory, monkeypatch, logs, by, cuts):
    root = tmp_path_factory.mktemp("ck") / "root"
    ls, lines = _split_root(root, logs)
    used: list = []
    real_load = ckpt.load

    def load(*a, **kw):
        got = real_load(*a, **kw)
        used.append(got is not None)
        return got
    monkeypatch.setattr(ckpt, "load", load)
    done = dict.fromkeys(lines, 0)
    for n in lines:
        (root / (n + ".jsonl")).write_bytes(b"")
    had = 0
    for cut in sorted(cuts) + [1.0]:  # the log grows by appends; each count after one uses the last
        had = sum(1 for v in done.values() if v)  # logs counted before this append: a checkpoint each
        for n, body in lines.items():
            upto = int(len(body) * cut)
            if upto > done[n]:
                with open(root / (n + ".jsonl"), "ab") as f:
                    f.write(b"".join(body[done[n]:upto]))
                done[n] = upto
        used.clear()
        got = _count(root, ls, by)
        assert Approx(got) == _count(root, ls, by, checkpoints=False)
    assert sum(used) == had  # the last count resumed every log counted before from its checkpoint


def test_a_compacted_log_discards_its_checkpoint(tmp_path):
    root = tmp_path / "root"
    tool = [("tool_call.started", {"tool": {"name": "bash", "call": {"id": f"c{i}"}}}, i, "ab" * 16)
            for i in range(6)]
    ends = [("tool_call.completed", {"tool": {"call": {"id": f"c{i}"}}}, 1000, "ab" * 16) for i in range(6)]
    ls, lines = _split_root(root, {"acme/a": tool + ends})
    before = _count(root, ls, "tool")
    assert before[0]["calls"] == 6
    assert list((root / ".wardrik" / "checkpoints" / "acme").iterdir())
    compact(root, "acme/a", 4)  # the first four starts are gone
    after = _count(root, ls, "tool")
    assert after == _count(root, ls, "tool", checkpoints=False)
    rows = {r["tool"]: r for r in after}  # an end whose start was dropped has no name, nor duration
    assert rows["bash"]["calls"] == 2 and rows[None]["calls"] == 4 and rows[None]["max_s"] is None
    assert ckpt.load(ls[0], ls[0].open(), "wardrik.stats.tool", "x") is None
    # truncated (a line cut off): discarded too
    p = root / "acme/a.jsonl"
    p.write_bytes(b"".join(p.read_bytes().splitlines(True)[:-1]))
    assert _count(root, ls, "tool") == _count(root, ls, "tool", checkpoints=False)


def test_a_read_only_root_writes_no_checkpoint(tmp_path):
    root = tmp_path / "root"
    ls, _ = _split_root(root, {"acme/a": [("tool_call.started", {"tool": {"name": "b", "call": {"id": "c"}}}, 0,
                                           "ab" * 16)]})
    before = sorted(os.listdir(root / ".wardrik"))
    dirs = (root, root / "acme", root / ".wardrik")
    for d in dirs:
        os.chmod(d, 0o555)
    try:
        assert _count(root, ls, "tool")[0]["unended"] == 1
        assert sorted(os.listdir(root / ".wardrik")) == before
    finally:
        for d in dirs:
            os.chmod(d, 0o755)


def test_a_window_neither_reads_nor_writes_a_checkpoint(tmp_path):
    root = tmp_path / "root"
    ls, _ = _split_root(root, {"acme/a": [("tool_call.started", {"tool": {"name": "b", "call": {"id": "c"}}}, 0,
                                           "ab" * 16)]})
    _count(root, ls, "tool", since="2026-01-01T00:00:00.000000Z")
    assert not (root / ".wardrik" / "checkpoints").exists()
