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
