"""An open run keeps its trace whatever came before: no count of events, and compaction in between."""
from __future__ import annotations

import io
from datetime import datetime, timedelta, UTC

import orjson

from wardrik_cli.cli.app import run
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id
from wardrik_cli.protocol.times import format_dt


def _cli(root, *args):
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


def _write(path, old: int, own_traces: int, run_trace: str):
    """``old`` events 40 days ago (to be compacted), then a run.started, then ``own_traces``
    events each with a traceparent of its own (as an agent that passes --trace does)."""
    start = datetime.now(UTC) - timedelta(days=40)
    path.parent.mkdir(parents=True, exist_ok=True)
    seq = 0
    with open(path, "wb") as f:
        def put(type_name, data, t, trace):
            nonlocal seq
            seq += 1
            f.write(dumps_line(build_event(etype=lookup(type_name), data=data, source="wardrik://local/agents/a/x",
                                           subject="agents/a/x", seq=seq, time_str=format_dt(t), trace=trace,
                                           span=new_span_id())))
        for i in range(old):
            put("trigger.fired", {"trigger": {"name": "old"}}, start + timedelta(seconds=i), new_trace_id())
        now = datetime.now(UTC) - timedelta(minutes=5)
        put("run.started", {"run": {"id": run_trace}}, now, run_trace)
        for i in range(own_traces):
            put("trigger.fired", {"trigger": {"name": f"t{i}"}}, now + timedelta(milliseconds=i), new_trace_id())


def test_a_plain_append_joins_the_open_run_past_2000_events_and_a_compaction(tmp_path):
    root = tmp_path / "root"
    run_trace = new_trace_id()
    _write(root / "a" / "x.jsonl", old=50, own_traces=2500, run_trace=run_trace)
    code, out, err = _cli(root, "append", "a/x", "trigger.fired", "--data", '{"trigger": {"name": "first"}}')
    assert code == 0, err
    assert orjson.loads(out)["traceparent"].split("-")[1] == run_trace  # before: a trace of its own (2000-line walk)
    code, out, err = _cli(root, "compact", "--retention", "30d", "-F", "json")
    assert code == 0 and orjson.loads(out)["dropped"] == 50, err
    code, out, err = _cli(root, "append", "a/x", "trigger.fired", "--data", '{"trigger": {"name": "after"}}')
    assert code == 0, err
    assert orjson.loads(out)["traceparent"].split("-")[1] == run_trace
