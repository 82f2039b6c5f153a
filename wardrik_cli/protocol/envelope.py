"""Building stored events: the CloudEvents 1.0 envelope every kept line carries.

Contract kept here:
- ``id`` is a UUIDv7 (RFC 9562), lowercase hyphenated.
- ``time`` is never earlier than the log's previous event: a clock that steps back repeats
  the previous time.
- ``sequence`` is the 12-digit zero-padded decimal string of an integer.
- ``traceparent`` is ``00-<32 hex trace id>-<16 hex span id>-01``; a run's events share the
  trace id of its ``run.started``, which is also that event's ``data.run.id``.
- Keys are written in one fixed order and the line is compact JSON (orjson), so that the
  first ``"type":`` and ``"time":`` in a line are the event's own.
"""
from __future__ import annotations

import os
import re
import time
from typing import Any

import orjson

from wardrik_cli.errors import BadEvent
from wardrik_cli.protocol.catalogue import PREFIX, RUN_CLOSERS, EventType
from wardrik_cli.protocol.times import format_ns

SEQ_WIDTH = 12
GENESIS_HASH = "0" * 64  # the prevhash of the first audit event ever written
_TRACEPARENT_RE = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01")
_last_uuid_ms = 0
_last_uuid_rand = 0


def uuid7(unix_ms: int | None = None) -> str:
    """A UUIDv7: 48-bit milliseconds, version 7, 74 random bits; monotonic within a process."""
    global _last_uuid_ms, _last_uuid_rand
    ms = time.time_ns() // 1_000_000 if unix_ms is None else unix_ms
    rand = int.from_bytes(os.urandom(10), "big") & ((1 << 74) - 1)
    if ms <= _last_uuid_ms:  # same millisecond: count up so ids still sort by creation
        ms = _last_uuid_ms
        rand = (_last_uuid_rand + 1) & ((1 << 74) - 1)
    _last_uuid_ms, _last_uuid_rand = ms, rand
    rand_a, rand_b = rand >> 62, rand & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def parse_traceparent(tp: object) -> tuple[str, str]:
    m = _TRACEPARENT_RE.fullmatch(tp) if isinstance(tp, str) else None
    if not m or m.group(1) == "0" * 32 or m.group(2) == "0" * 16:
        raise BadEvent(f"bad traceparent {tp!r}: expected 00-<32 hex trace id>-<16 hex span id>-01")
    return m.group(1), m.group(2)


def trace_id_of(event: dict[str, Any]) -> str | None:
    tp = event.get("traceparent")
    m = _TRACEPARENT_RE.fullmatch(tp) if isinstance(tp, str) else None
    return m.group(1) if m else None


def format_seq(seq: int) -> str:
    return f"{seq:0{SEQ_WIDTH}d}"


def agent_source(deployment: str, log_id: str) -> str:
    return f"wardrik://{deployment}/agents/{log_id}"


def audit_source(deployment: str) -> str:
    return f"wardrik://{deployment}/audit"


class RunTracker:
    """Which run is open in a log, so that appended events join its trace."""

    def __init__(self, open_trace: str | None = None):
        self.open_trace = open_trace

    def trace_for(self, etype: EventType, data: dict[str, Any], given: str | None) -> tuple[str, str]:
        """(trace id, span id) for the next event; updates the open run."""
        given_trace = given_span = None
        if given is not None:
            given_trace, given_span = parse_traceparent(given)
        if etype.name == "run.started":
            run = data.get("run") or {}
            run_id = run.get("id")  # appender.make_item refused a run.id that disagrees with --trace
            trace = given_trace or run_id or new_trace_id()
            if not run_id:
                data["run"] = {**run, "id": trace}
            self.open_trace = trace
        else:
            trace = given_trace or self.open_trace or new_trace_id()
            if etype.full in RUN_CLOSERS:
                self.open_trace = None
        return trace, given_span or new_span_id()


def build_event(*, etype: EventType, data: dict[str, Any], source: str, subject: str, seq: int | None,
                time_str: str, trace: str, span: str, prevhash: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "specversion": "1.0",
        "id": uuid7(),
        "type": PREFIX + etype.name,
        "source": source,
        "subject": subject,
        "time": time_str,
    }
    if seq is not None:
        event["sequence"] = format_seq(seq)
    event["traceparent"] = f"00-{trace}-{span}-01"
    if prevhash is not None:
        event["prevhash"] = prevhash
    event["data"] = data
    return event


def dumps_line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event) + b"\n"


class Clock:
    """Stored times that never go back: each is max(now, previous)."""

    def __init__(self, previous: str | None = None):
        self.previous = previous

    def next(self) -> str:
        t = format_ns(time.time_ns())
        if self.previous is not None and t < self.previous:
            t = self.previous
        self.previous = t
        return t
