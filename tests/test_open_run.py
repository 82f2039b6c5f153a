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


def _lines(path, events):
    """Log ``a/x`` at ``path``: one stored line per (type, data, time, trace), sequences from 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for seq, (type_name, data, t, trace) in enumerate(events, 1):
            f.write(dumps_line(build_event(etype=lookup(type_name), data=data, source="wardrik://local/agents/a/x",
                                           subject="agents/a/x", seq=seq, time_str=format_dt(t), trace=trace,
                                           span=new_span_id())))


def _write(path, old: int, own_traces: int, run_trace: str):
    """``old`` events 40 days ago (to be compacted), then a run.started, then ``own_traces``
    events each with a traceparent of its own (as an agent that passes --trace does)."""
    start = datetime.now(UTC) - timedelta(days=40)
    now = datetime.now(UTC) - timedelta(minutes=5)
    _lines(path, [*(("trigger.fired", {"trigger": {"name": "old"}}, start + timedelta(seconds=i), new_trace_id())
                    for i in range(old)),
                  ("run.started", {"run": {"id": run_trace}}, now, run_trace),
                  *(("trigger.fired", {"trigger": {"name": f"t{i}"}}, now + timedelta(milliseconds=i), new_trace_id())
                    for i in range(own_traces))])


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


def _cli_as(root, state, *args):
    """Another user (a state home of its own): the appender's note is not theirs to trust."""
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1", "XDG_STATE_HOME": str(state)}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


def test_events_sharing_a_given_trace_do_not_make_a_run_for_an_appender_without_the_note(tmp_path):
    root, given = tmp_path / "root", "c" * 32
    tp = f"00-{given}-{'d' * 16}-01"
    run_id = "1" * 32

    def two_with_the_given_trace_then_another_user_appends(who: str) -> str:
        for m in ("m1", "m2"):
            assert _cli(root, "append", "a", "message.received", "-d", f'{{"message": {{"id": "{m}"}}}}',
                        "--trace", tp)[0] == 0
        code, out, err = _cli_as(root, tmp_path / who, "append", "a", "trigger.fired",
                                 "-d", '{"trigger": {"name": "x"}}')
        assert code == 0, err
        return str(orjson.loads(out)["traceparent"].split("-")[1])

    assert _cli(root, "append", "a", "run.started", "-d", f'{{"run": {{"id": "{run_id}"}}}}')[0] == 0
    # before: two neighbours with one trace were taken for the open run (the given trace)
    assert two_with_the_given_trace_then_another_user_appends("other") == run_id
    assert _cli(root, "append", "a", "run.completed")[0] == 0
    # outside a run too: the given trace is no run
    assert two_with_the_given_trace_then_another_user_appends("third") not in (given, run_id)


def test_a_run_opened_over_a_megabyte_before_the_cut_stays_open_after_compaction(tmp_path):
    """The sweep finds the run open at its cut from the last line naming a run's type that
    its check of the part dropped met, however far back (before: a walk back of at most
    1 MB from the cut gave up, and the run lost its trace at the next append)."""
    root = tmp_path / "root"
    path = root / "a" / "x.jsonl"
    path.parent.mkdir(parents=True)
    assert _cli(root, "init")[0] == 0
    run_trace = new_trace_id()
    old = datetime.now(UTC) - timedelta(days=40)
    _lines(path, [("run.started", {"run": {"id": run_trace}}, old, run_trace),
                  *(("trigger.fired", {"trigger": {"name": f"t{i}"}, "pad": "x" * 400}, old + timedelta(seconds=i),
                     new_trace_id()) for i in range(3000)),  # each with a trace of its own (--trace), 1.5 MB
                  ("trigger.fired", {"trigger": {"name": "recent"}}, datetime.now(UTC) - timedelta(minutes=1),
                   new_trace_id())])
    code, out, err = _cli(root, "compact", "--retention", "30d", "-F", "json")
    assert code == 0 and orjson.loads(out)["dropped"] == 3001, err
    code, out, err = _cli_as(root, tmp_path / "other", "append", "a/x", "trigger.fired",
                             "--data", '{"trigger": {"name": "after"}}')
    assert code == 0, err
    assert orjson.loads(out)["traceparent"].split("-")[1] == run_trace
