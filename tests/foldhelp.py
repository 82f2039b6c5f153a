"""Helpers for the fold/views/checkpoint/activity tests: logs with chosen types and times."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, UTC
from pathlib import Path

import orjson

from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.times import format_dt

START = datetime(2026, 10, 22, 9, 0, tzinfo=UTC)
TRACE = "0af7651916cd43dd8448eb211c80319c"
SEED_FIXTURE = Path(__file__).parent / "fixtures" / "seed000_events.jsonl"


def line(log_id: str, seq: int, type_: str, data: dict, seconds: float = 0.0) -> bytes:
    e = build_event(etype=lookup(type_), data=data, source=f"wardrik://local/agents/{log_id}",
                    subject=f"agents/{log_id}", seq=seq, time_str=format_dt(START + timedelta(seconds=seconds)),
                    trace=TRACE, span=new_span_id())
    return dumps_line(e)


def write(root: Path, log_id: str, events: list[tuple], *, first_seq: int = 1, mode: str = "wb") -> list[bytes]:
    """events: (type, data) or (type, data, seconds after START). Returns the lines written."""
    path = root / (log_id + ".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for i, ev in enumerate(events):
        t, d = ev[0], ev[1]
        secs = ev[2] if len(ev) > 2 else float(first_seq + i)
        out.append(line(log_id, first_seq + i, t, d, secs))
    with open(path, mode) as f:
        f.write(b"".join(out))
    return out


def run_events(n_tools: int = 2) -> list[tuple]:
    """A run: message received, run.started taking it, a model call, tool calls, the end."""
    ev = [("message.received", {"message": {"id": "m1"}}, 0),
          ("run.started", {"run": {"id": TRACE, "message_ids": ["m1"]}, "task": "Why is checkout slow?"}, 1),
          ("message.started", {"message": {"id": "a1"}}, 2),
          ("message.completed", {"message": {"id": "a1"}}, 3.5)]
    t = 4.0
    for i in range(n_tools):
        ev.append(("tool_call.started", {"tool": {"name": f"tool{i}", "call": {"id": f"c{i}"}}}, t))
        ev.append(("tool_call.completed", {"tool": {"call": {"id": f"c{i}"}}}, t + 0.25 * (i + 1)))
        t += 1
    ev.append(("run.completed", {"answer": "the pool"}, t))
    return ev


def compact(root: Path, log_id: str, drop: int) -> None:
    """Simulate `compact`: rewrite the log without its first ``drop`` lines (temp, rename) and
    write the watermark as store/log.py describes it."""
    path = root / (log_id + ".jsonl")
    raw = path.read_bytes().split(b"\n")
    body = [l for l in raw[:-1]]
    kept = body[drop:]
    tmp = path.with_name(path.name + ".compact-tmp")
    tmp.write_bytes(b"".join(l + b"\n" for l in kept) + raw[-1])
    last_dropped = orjson.loads(body[drop - 1]) if drop else None
    next_seq = int(orjson.loads(kept[0])["sequence"]) if kept else (int(last_dropped["sequence"]) + 1 if last_dropped else 1)
    os.replace(tmp, path)
    wm = Root(root).state_path("watermarks", log_id, "json")
    wm.parent.mkdir(parents=True, exist_ok=True)
    wm.write_bytes(orjson.dumps({"inode": os.stat(path).st_ino, "next_sequence": next_seq,
                                 "time": last_dropped["time"] if last_dropped else None, "hash": None,
                                 "first_time_kept": orjson.loads(kept[0])["time"] if kept else None}))
