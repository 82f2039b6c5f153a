"""Property: under any interleaving of concurrent appenders, sequences are exactly 1..N,
each batch is one contiguous block, and times never go back."""
from __future__ import annotations

import multiprocessing as mp

import orjson
from hypothesis import HealthCheck, given, settings, strategies as st

from wardrik_cli.store.append import append, make_item
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log


def _worker(root_path: str, batches: list[int], q) -> None:
    root = Root(root_path)
    log = Log.agent(root, "acme/a")
    got = []
    for size in batches:
        items = [make_item("trigger.fired", {"trigger": {"name": f"t{i}"}}) for i in range(size)]
        lines = append(root, log, items, deployment="local", sync=False, warn=lambda m: None)
        got.append([int(orjson.loads(l)["sequence"]) for l in lines])
    q.put(got)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=6), min_size=2, max_size=5))
def test_contiguous_under_any_interleaving(tmp_path_factory, schedule):
    root = tmp_path_factory.mktemp("r")
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(root), batches, q)) for batches in schedule]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    total = sum(sum(b) for b in schedule)
    events = [orjson.loads(l) for l in (root / "acme" / "a.jsonl").read_bytes().splitlines()]
    assert [int(e["sequence"]) for e in events] == list(range(1, total + 1))
    assert all(a["time"] <= b["time"] for a, b in zip(events, events[1:], strict=False))
    for got in results:
        for block in got:
            assert block == list(range(block[0], block[0] + len(block)))


def test_a_batch_is_held_once_while_it_is_written(tmp_path):
    """The lines of a batch are made into the one buffer that is written (``StoredLines``), not
    a list of lines and then their join: what append allocates is about the output once."""
    import tracemalloc

    root = Root(tmp_path / "r")
    items = [make_item("tool_call.started", {"tool": {"name": "t", "call": {"id": f"c{i}"}, "args": {"q": "x" * 200}}})
             for i in range(5000)]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = append(root, Log.agent(root, "acme/a"), items, deployment="d", sync=False)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    size = (tmp_path / "r" / "acme" / "a.jsonl").stat().st_size
    assert len(out) == 5000 and b"".join(out) == (tmp_path / "r" / "acme" / "a.jsonl").read_bytes()
    assert out[-1].endswith(b"\n") and orjson.loads(out[-1])["sequence"] == "000000005000"
    assert peak < 1.6 * size, (peak, size)  # before: the lines and their join, 2x and more
