"""Writing valid ledgers fast for tests (straight to the file, in the stored format)."""
from __future__ import annotations

from datetime import datetime, timedelta, UTC
from pathlib import Path

from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.times import format_dt

START = datetime(2026, 10, 22, 9, 0, tzinfo=UTC)


def write_log(path: Path, n: int, *, first_seq: int = 1, start: datetime = START, step: timedelta = timedelta(seconds=1),
              pad: int = 300, log_id: str = "acme/big") -> list[str]:
    """Write n tool_call.completed events (each about pad bytes of data); returns their times."""
    et = lookup("tool_call.completed")
    path.parent.mkdir(parents=True, exist_ok=True)
    times = []
    trace = new_trace_id()
    with open(path, "wb") as f:
        for i in range(n):
            t = format_dt(start + step * i)
            times.append(t)
            e = build_event(etype=et, data={"tool": {"call": {"id": f"c{i}"}}, "output": "x" * pad},
                            source=f"wardrik://local/agents/{log_id}", subject=f"agents/{log_id}",
                            seq=first_seq + i, time_str=t, trace=trace, span=new_span_id())
            f.write(dumps_line(e))
    return times
