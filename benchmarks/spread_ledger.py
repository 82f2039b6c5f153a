"""A fast generator of valid wardrik logs whose times are spread over days (for retention).

``gen_ledger.py`` writes realistic content with times close together; retention needs a
log whose events span, say, 100 days up to now, so that ``compact --retention 10d`` drops
about 90%. This one writes a fixed-shape ``tool_call.completed`` line per event, in the
stored format (valid CloudEvents, 12-digit sequences from ``first_seq``, non-decreasing
microsecond times, UUIDv7-shaped ids), straight to the file, at a few hundred MB/s.

    python benchmarks/spread_ledger.py --root /tmp/r --log acme/big --mb 200 --days 100
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

DAY_NS = 86_400 * 10**9
_LINE = ('{"specversion":"1.0","id":"%08x-%04x-7%03x-8%03x-%012x","type":"wardrik.tool_call.completed",'
         '"source":"wardrik://%s/agents/%s","subject":"agents/%s","time":"%s.%06dZ","sequence":"%012d",'
         '"traceparent":"00-%032x-%016x-01","data":{"tool":{"call":{"id":"c%d"}},"output":"%s"}}\n')


def write_spread(path: Path, *, mb: float | None = None, events: int | None = None, days: float = 100.0,
                 end_ns: int | None = None, first_seq: int = 1, log_id: str = "acme/big",
                 deployment: str = "local", pad: int = 480) -> dict:
    """Write the log; events run evenly from ``end_ns - days`` to ``end_ns`` (default now).

    Returns {"events", "bytes", "first_time", "last_time", "start_ns", "step_ns"}.
    """
    if (mb is None) == (events is None):
        raise ValueError("give mb or events")
    end_ns = time.time_ns() if end_ns is None else end_ns
    line_len = len(_LINE % (0, 0, 0, 0, 0, deployment, log_id, log_id, "2026-01-01T00:00:00", 0, 0, 0, 0, 0, "x" * pad))
    n = events if events is not None else max(1, int(mb * 1_000_000 // line_len))
    start_ns = end_ns - int(days * DAY_NS)
    step = (end_ns - start_ns) // max(n, 1)
    filler = "x" * pad
    path.parent.mkdir(parents=True, exist_ok=True)
    buf: list[str] = []
    written = 0
    last_sec, sec_text = -1, ""
    first_time = last_time = ""
    with open(path, "wb") as f:
        for i in range(n):
            t = start_ns + step * i
            sec, us = divmod(t // 1000, 1_000_000)
            if sec != last_sec:
                sec_text, last_sec = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)), sec
            ms = t // 1_000_000
            seq = first_seq + i
            line = _LINE % (ms >> 16, ms & 0xFFFF, seq & 0xFFF, (seq >> 12) & 0xFFF, seq, deployment, log_id, log_id,
                            sec_text, us, seq, seq | (1 << 120), seq | (1 << 60), seq, filler)
            buf.append(line)
            if i == 0:
                first_time = f"{sec_text}.{us:06d}Z"
            if len(buf) >= 4096:
                data = "".join(buf).encode()
                f.write(data)
                written += len(data)
                buf.clear()
        last_time = f"{sec_text}.{us:06d}Z"
        data = "".join(buf).encode()
        f.write(data)
        written += len(data)
    return {"events": n, "bytes": written, "first_time": first_time, "last_time": last_time,
            "start_ns": start_ns, "step_ns": step}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--log", default="acme/big")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--mb", type=float)
    g.add_argument("--events", type=int)
    ap.add_argument("--days", type=float, default=100.0)
    a = ap.parse_args()
    info = write_spread(a.root / (a.log + ".jsonl"), mb=a.mb, events=a.events, days=a.days, log_id=a.log)
    print(info)


if __name__ == "__main__":
    main()
