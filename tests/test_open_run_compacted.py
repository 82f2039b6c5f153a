"""The run open where compaction cuts stays open for the appender (issue 11: the open run is
found without an arbitrary limit): its run.started may be among the events dropped."""
from __future__ import annotations

from datetime import datetime, timedelta, UTC

import orjson
import pytest

from conftest import run_cli
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt

OLD = datetime(2020, 1, 1, tzinfo=UTC)  # dropped by a 30d retention
NEW = datetime.now(UTC) - timedelta(days=1)  # kept
T, U = "0af7651916cd43dd8448eb211c80319c", "1bf7651916cd43dd8448eb211c80319d"


def _write(path, events):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for seq, (etype, trace, when) in enumerate(events, 1):
            data = {"run": {"id": trace}} if etype == "run.started" else {}
            if etype == "message.started":
                data = {"message": {"id": f"m{seq}"}}
            f.write(dumps_line(build_event(etype=lookup(etype), data=data, source="wardrik://local/agents/a",
                                           subject="agents/a", seq=seq, time_str=format_dt(when), trace=trace,
                                           span=new_span_id())))


def _appended_trace(root) -> str:
    p = run_cli("append", "a", "message.started", "--data", '{"message": {"id": "z"}}', root=root)
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)["traceparent"].split("-")[1]


@pytest.mark.parametrize("case, events, want", [
    ("start dropped, one event kept", [("run.started", T, OLD), ("message.started", T, NEW)], T),
    ("every event dropped", [("run.started", T, OLD), ("message.started", T, OLD)], T),
    ("run ended before the cut", [("run.started", T, OLD), ("run.completed", T, OLD), ("message.started", U, NEW)],
     None),
])
def test_the_run_open_at_the_cut_goes_on(root, case, events, want):
    _write(root / "a.jsonl", events)
    before = root.parent / "copy"
    _write(before / "a.jsonl", events)
    assert run_cli("compact", "-q", root=root).returncode == 0
    got = _appended_trace(root)
    if want is not None:
        assert got == want == _appended_trace(before), case  # as with nothing compacted
    else:
        assert got not in (T, U), case  # a trace of its own, as with nothing compacted


def test_a_run_open_across_two_sweeps(root):
    _write(root / "a.jsonl", [("run.started", T, OLD), ("message.started", T, OLD + timedelta(days=10))])
    assert run_cli("compact", "-q", "--retention", f"{(datetime.now(UTC) - OLD).days - 5}d", root=root).returncode == 0
    assert (root / "a.jsonl").read_bytes().count(b"\n") == 1  # the start gone, one event of the run kept
    assert run_cli("compact", "-q", root=root).returncode == 0  # then that one too
    assert (root / "a.jsonl").read_bytes() == b""
    assert _appended_trace(root) == T
