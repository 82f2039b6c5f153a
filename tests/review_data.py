"""Helpers for tests/test_review_acceptance.py: logs written by hand in the stored format
(CONTRACT.md, "Stored events"), so that events can carry times in the past and lines can be
written the way another tool would write them (``\\u00e9`` escapes); cursors; a custom view.

Nothing here imports the implementation: a stored line is built from the contract alone.
"""
from __future__ import annotations

import base64
import json
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

SEQ_WIDTH = 12


def stamp(dt: datetime) -> str:
    """A stored time: RFC 3339 UTC, six fractional digits, Z."""
    u = dt.astimezone(UTC)
    return u.strftime("%Y-%m-%dT%H:%M:%S.") + f"{u.microsecond:06d}Z"


def utcnow() -> datetime:
    return datetime.now(UTC)


_last = [0, 0]


def uuid7(unix_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if unix_ms is None else unix_ms
    rand = int.from_bytes(os.urandom(10), "big") & ((1 << 74) - 1)
    if ms <= _last[0]:
        ms, rand = _last[0], (_last[1] + 1) & ((1 << 74) - 1)
    _last[0], _last[1] = ms, rand
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def hex_id(n: int) -> str:
    return os.urandom(n).hex()


def make_event(log: str, type_: str, data: dict, *, seq: int, at: datetime, trace: str | None = None,
               subject: str | None = None, deployment: str = "local") -> dict:
    """One stored agent event, keys in the stored order."""
    return {
        "specversion": "1.0",
        "id": uuid7(),
        "type": type_ if type_.startswith("wardrik.") else "wardrik." + type_,
        "source": f"wardrik://{deployment}/agents/{log}",
        "subject": subject if subject is not None else f"agents/{log}",
        "time": stamp(at),
        "sequence": f"{seq:0{SEQ_WIDTH}d}",
        "traceparent": f"00-{trace or hex_id(16)}-{hex_id(8)}-01",
        "data": data,
    }


def line_of(event: dict, *, ascii_escapes: bool = False) -> bytes:
    """The stored line: compact JSON and ``\\n``. ``ascii_escapes`` writes it as another tool
    might (json.dumps' default: non-ASCII as ``\\uXXXX``), still compact and valid."""
    if ascii_escapes:
        return json.dumps(event, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
    return orjson.dumps(event) + b"\n"


def write_log(root: Path, log: str, items: list[dict], *, ascii_escapes: bool = False) -> list[dict]:
    """Write a whole log by hand. Each item: {"type", "data", "at": datetime, "trace"?, "subject"?,
    "ascii"?}. Sequences 1, 2, 3 ...; times must not go back. Returns the stored events."""
    path = root / f"{log}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    events, blob = [], b""
    prev = None
    for i, it in enumerate(items, start=1):
        e = make_event(log, it["type"], it["data"], seq=i, at=it["at"], trace=it.get("trace"),
                       subject=it.get("subject"))
        assert prev is None or e["time"] >= prev, "times must not go back in a log"
        prev = e["time"]
        events.append(e)
        blob += line_of(e, ascii_escapes=ascii_escapes or it.get("ascii", False))
    path.write_bytes(blob)
    return events


def run_items(run_id: str, start: datetime, *, task: str = "task", answer: str | None = "done",
              step: timedelta = timedelta(seconds=1), n_tools: int = 1) -> list[dict]:
    """The items of one whole run (all sharing the run's trace), starting at ``start``."""
    items = [{"type": "run.started", "data": {"run": {"id": run_id}, "task": task}}]
    for c in range(n_tools):
        cid = f"{run_id[:6]}-c{c}"
        items.append({"type": "tool_call.started", "data": {"tool": {"name": "grep", "call": {"id": cid}}}})
        items.append({"type": "tool_call.completed", "data": {"tool": {"call": {"id": cid}}, "output": "ok"}})
    if answer is not None:
        items.append({"type": "run.completed", "data": {"answer": answer}})
    for i, it in enumerate(items):
        it["at"] = start + step * i
        it["trace"] = run_id
    return items


# --- cursors (CONTRACT.md, "Cursor") ------------------------------------------------------------
def encode_cursor(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict:
    cursor = cursor.strip()
    alt = cursor.replace("+", "-").replace("/", "_").rstrip("=")
    return json.loads(base64.urlsafe_b64decode(alt + "=" * (-len(alt) % 4)))


# --- output --------------------------------------------------------------------------------------
def lines(b: bytes) -> list[str]:
    return [l for l in b.decode(errors="replace").splitlines() if l.strip()]


def seqs(events: list[dict]) -> list[int]:
    return [int(e["sequence"]) for e in events]


def numbers_in(text: str) -> set[int]:
    return {int(x) for x in re.findall(r"\d+", text)}


class Seqs:
    """A custom view (``review_data:Seqs``): the sequences it was given, in order."""

    def initial(self):
        return []

    def apply(self, state, event):
        return [*state, int(event["sequence"])]
