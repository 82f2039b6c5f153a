"""Baseline for `wardrik append --batch`: seed 000's naive EventStore, writing CloudEvents.

Seed 000 (``/work/shared/seeds/000_959cb7cc4e6bba3f.txt``) appends each event by opening the
file in append mode, writing one ``json.dumps`` line and closing it again:

    def append(self, etype, data):
        self._seq += 1
        event = {"seq": self._seq, "type": etype, "data": data}
        with self.path.open("a") as f:
            f.write(json.dumps(event) + "\\n")
        return event

This keeps exactly that write path (stdlib ``json``, one open/write/close per event, no lock,
no fsync, like the seed) but builds the event in the stored shape of CONTRACT.md (specversion,
id, type, source, subject, time, sequence, traceparent, data; compact separators so the bytes
are the same size as wardrik's). Unlike the seed it does not truncate the file first: the
sequence carries on from the lines already there.

    python benchmarks/naive_store.py --file ROOT/bench/naive.jsonl --batch items.jsonl

reads a JSONL file of ``{"type", "data", "subject"?}`` items (the input of ``wardrik append
--batch``) and appends them one by one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, UTC
from pathlib import Path


def uuid7() -> str:
    ms = time.time_ns() // 1_000_000
    rnd = int.from_bytes(os.urandom(10), "big")  # 80 bits, 74 used
    h = "%012x7%03x%x%015x" % (ms, (rnd >> 62) & 0xFFF, 8 | ((rnd >> 60) & 3), rnd & ((1 << 60) - 1))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class EventStore:
    def __init__(self, path: str, log: str, deployment: str = "local"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._seq = sum(1 for _ in self.path.open("rb")) if self.path.exists() else 0
        self.source = f"wardrik://{deployment}/agents/{log}"
        self.subject = f"agents/{log}"
        self._trace: str | None = None
        self._last_time = ""

    def append(self, etype: str, data: dict, subject: str | None = None) -> dict:
        etype = etype if etype.startswith("wardrik.") else "wardrik." + etype
        if etype == "wardrik.run.started":
            self._trace = (data.get("run") or {}).get("id") or os.urandom(16).hex()
        trace = self._trace or os.urandom(16).hex()
        if etype in ("wardrik.run.completed", "wardrik.run.failed"):
            self._trace = None
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._last_time = now = max(now, self._last_time)
        self._seq += 1
        event = {
            "specversion": "1.0", "id": uuid7(), "type": etype, "source": self.source,
            "subject": subject or self.subject, "time": now, "sequence": "%012d" % self._seq,
            "traceparent": f"00-{trace}-{os.urandom(8).hex()}-01", "data": data,
        }
        with self.path.open("a") as f:
            f.write(json.dumps(event, separators=(",", ":")) + "\n")
        return event


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="append a batch of events the naive (seed 000) way")
    ap.add_argument("--file", required=True, type=Path, help="the log file to append to")
    ap.add_argument("--batch", required=True, help="JSONL of {type, data} items, or - for stdin")
    ap.add_argument("--log", default="bench/naive", help="log id for source/subject")
    ap.add_argument("--deployment", default="local")
    a = ap.parse_args(argv)
    store = EventStore(a.file, a.log, a.deployment)
    src = sys.stdin if a.batch == "-" else open(a.batch, encoding="utf-8")
    items = [json.loads(line) for line in src if line.strip()]
    for item in items:
        store.append(item["type"], item["data"], item.get("subject"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
