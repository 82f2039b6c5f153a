"""``export otlp`` over an event whose time OTLP cannot carry (year 0, not a time, an offset
past 24 hours, before 1970, past 2554): the span is exported with the fallback time the
module's contract gives (the last time before it that converted, else the first after it)
and one ``warning:`` naming the log, the sequence and the time; exit 0, never an internal
error. Times that convert are exported exactly as before."""
from __future__ import annotations

from datetime import datetime

import orjson
import pytest

from conftest import run_cli

T = ["2026-01-01T10:00:00.000000Z", "2026-01-01T10:00:01.000000Z", "2026-01-01T10:00:02.000000Z",
     "2026-01-01T10:00:03.000000Z", "2026-01-01T10:00:04.000000Z", "2026-01-01T10:00:05.000000Z"]
ITEMS = [("run.started", {"task": "t"}),
         ("message.started", {"message": {"id": "m1"}, "model": "gpt"}),
         ("message.completed", {"message": {"id": "m1"}, "usage": {"input_tokens": 5, "output_tokens": 3}}),
         ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c"}}}),
         ("tool_call.failed", {"tool": {"call": {"id": "c"}}, "error": {"message": "no", "type": "T"}}),
         ("run.completed", {"answer": "ok"})]
BAD = ["0000-01-01T00:00:00.000000Z", "not a time", "2026-01-01T10:00:02.000000+99:99",
       "1969-12-31T23:59:59.000000Z", "9999-12-31T23:59:59.999999Z", "2026-13-01T00:00:00.000000Z",
       "2026-01-01T10:00:02.000000Z" + "x" * 5000]


def ns(t: str) -> int:
    dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def _log(root, times):
    """The six events above, with the stored times replaced by ``times`` (as written by hand)."""
    batch = b"".join(orjson.dumps({"type": t, "data": d}) + b"\n" for t, d in ITEMS)
    run_cli("append", "a", "--batch", "-", input=batch, root=root, check=True)
    path = root / "a.jsonl"
    out = []
    for line, t in zip(path.read_bytes().splitlines(), times, strict=True):
        ev = orjson.loads(line)
        ev["time"] = t
        out.append(orjson.dumps(ev))
    path.write_bytes(b"\n".join(out) + b"\n")


def _spans(root, tmp_path, *extra):
    out = tmp_path / "spans.json"
    p = run_cli("export", "otlp", "-o", str(out), *extra, root=root)
    assert p.returncode == 0, p.stderr
    assert b"internal error" not in p.stderr
    spans = {}
    for line in out.read_bytes().splitlines():
        for rs in orjson.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    spans[s["name"].split(" ")[0]] = (int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"]))
    return spans, p.stderr.decode()


@pytest.mark.parametrize("bad", BAD, ids=lambda b: b[:30])
def test_a_model_call_ending_at_a_bad_time_ends_at_the_time_before_it(root, tmp_path, bad):
    _log(root, [T[0], T[1], bad, T[3], T[4], T[5]])
    spans, err = _spans(root, tmp_path)
    assert spans["chat"] == (ns(T[1]), ns(T[1]))  # the fallback: message.started's time
    assert spans["execute_tool"] == (ns(T[3]), ns(T[4]))
    assert spans["invoke_agent"] == (ns(T[0]), ns(T[5]))
    warnings = [w for w in err.splitlines() if w.startswith("warning:")]
    assert len(warnings) == 1 and "a: event 3: time" in warnings[0] and "OTLP" in warnings[0], err
    assert len(warnings[0]) < 400  # a long time is cut in the warning


def test_a_run_starting_at_a_bad_time_starts_at_the_first_time_after_it(root, tmp_path):
    _log(root, ["not a time", T[1], T[2], T[3], T[4], T[5]])
    spans, err = _spans(root, tmp_path, "--content")
    assert spans["invoke_agent"] == (ns(T[1]), ns(T[5]))
    assert spans["chat"] == (ns(T[1]), ns(T[2]))
    assert "a: event 1: time 'not a time'" in err


def test_every_time_bad_gives_the_epoch_and_two_warnings(root, tmp_path):
    _log(root, ["0000-01-01T00:00:00.000000Z"] * 6)
    spans, err = _spans(root, tmp_path)
    assert spans == {"chat": (0, 0), "execute_tool": (0, 0), "invoke_agent": (0, 0)}
    warnings = [w for w in err.splitlines() if w.startswith("warning:")]
    assert len(warnings) == 2 and "5 more events" in warnings[1], err


def test_good_times_export_as_before(root, tmp_path):
    _log(root, T)
    spans, err = _spans(root, tmp_path)
    assert spans == {"chat": (ns(T[1]), ns(T[2])), "execute_tool": (ns(T[3]), ns(T[4])),
                     "invoke_agent": (ns(T[0]), ns(T[5]))}
    assert "warning" not in err


@pytest.mark.parametrize("bad", ["1969-12-31T23:59:59.000000Z", "9999-12-31T23:59:59.999999Z"])
def test_protobuf_gets_times_it_can_hold(root, bad):
    """OTLP's times are fixed64: a time before 1970 or past 2554 would make protobuf raise."""
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    from wardrik_cli.folding import otlp
    from wardrik_cli.read.reader import resolve_logs
    from wardrik_cli.store.layout import Root

    _log(root, [T[0], T[1], bad, T[3], T[4], T[5]])
    bodies: list[bytes] = []
    warned: list[str] = []
    otlp.export(resolve_logs(Root(root), ["a"]), None, lambda b: bodies.append(otlp.request_proto(b, "d", "0")),
                deployment="d", warn=warned.append)
    assert bodies and len(warned) == 1
