"""``check``: verify every line of the logs and the audit chain, reporting each problem.

Contract kept here: a problem names the file, the 1-based line and the byte offset of the
line's first byte. Corruption (a complete line that is not a valid event), a sequence
gap or repeat, and a broken audit chain are errors; a torn tail is a warning, because a
writer may be mid-line. The whole file is read once, in a stream.

A hole in an agent log that the root's record of recorded gaps (``store.recorded_gaps``:
events dropped at their source before they were shipped, written by ``pull`` and the remote
mirror) accounts for is not damage, but it is never passed over in silence: it is a warning
naming the record (a copy pulled from a store is missing those events; a root written here
should hold no record, and a record planted by hand must not quiet ``check``). The runs of a
hole no record covers are errors, as any gap is. The audit log's holes are errors whatever a
record says: its chain is what makes it tamper-evident, and a record would let a line be
removed unseen.

A time must be one a clock can show: an RFC 3339 UTC time with microseconds whose date exists
and whose hour is 00-23 (``24:00:00`` and ``2026-02-30`` are errors: the day a shipped segment
is filed under, and any reader's ordering, depend on it).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from wardrik_cli.protocol.envelope import parse_traceparent
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.store.log import Log
from wardrik_cli.store.recorded_gaps import KIND, RecordedGap, any_recorded, covered, read_gaps
from wardrik_cli.protocol.catalogue import AUDIT, KEPT, PREFIX, TYPES, validate_data
from wardrik_cli.errors import BadEvent
from wardrik_cli.protocol.envelope import GENESIS_HASH

ERROR, WARNING = "error", "warning"
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_SEQ_RE = re.compile(r"[0-9]{12}")
_SOURCE_RE = re.compile(r"wardrik://([a-z0-9][a-z0-9.-]{0,62})/(audit|agents/.+)")


def _real_time(t: str) -> bool:
    """Is ``t`` (already in the shape ``_TIME_RE`` matches) a real date and time of day?"""
    try:
        datetime.fromisoformat(t[:-1])  # refuses 2026-02-30 and T24:00:00
    except ValueError:
        return False
    return True


@dataclass
class Problem:
    file: str
    line: int
    offset: int
    what: str
    severity: str = ERROR

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.offset}: {self.what}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "offset": self.offset, "problem": self.what,
                "severity": self.severity}


def _event_problem(ev: object, is_audit: bool, log_id: str = "") -> str | None:
    if not isinstance(ev, dict):
        return "not a JSON object"
    if ev.get("specversion") != "1.0":
        return "specversion is not \"1.0\""
    if not isinstance(ev.get("id"), str) or not _UUID_RE.fullmatch(ev["id"]):
        return "id is not a lowercase hyphenated UUID"
    t = ev.get("type")
    if not isinstance(t, str) or not t.startswith(PREFIX) or t[len(PREFIX):] not in TYPES:
        return f"unknown type {t!r}"
    et = TYPES[t[len(PREFIX):]]
    want = AUDIT if is_audit else KEPT
    if et.kind != want:
        return f"{t} does not belong in {'the audit log' if is_audit else 'an agent log'}"
    for key in ("source", "subject"):
        if not isinstance(ev.get(key), str) or not ev[key]:
            return f"{key} missing"
    m = _SOURCE_RE.fullmatch(ev["source"])
    if m is None or (m.group(2) != "audit" if is_audit else m.group(2) != f"agents/{log_id}" and log_id):
        want = "wardrik://DEPLOYMENT/audit" if is_audit else f"wardrik://DEPLOYMENT/agents/{log_id or 'LOG'}"
        return f"source {ev['source'][:120]!r} is not {want} (an event of another log, or not one wardrik wrote)"
    if not is_audit and "prevhash" in ev:
        return "prevhash in an agent log (only the audit log's events are chained)"
    if not isinstance(ev.get("time"), str) or not _TIME_RE.fullmatch(ev["time"]):
        return "time is not RFC 3339 UTC with microseconds"
    if not _real_time(ev["time"]):
        return f"time {ev['time']} is not a time a clock shows (no such date, or an hour past 23)"
    if not isinstance(ev.get("sequence"), str) or not _SEQ_RE.fullmatch(ev["sequence"]):
        return "sequence is not a 12-digit string"
    try:
        parse_traceparent(ev.get("traceparent"))
    except BadEvent as e:
        return str(e)
    try:
        validate_data(et, ev.get("data"))
    except BadEvent as e:
        return str(e)
    if is_audit and not (isinstance(ev.get("prevhash"), str) and len(ev["prevhash"]) == 64):
        return "prevhash missing"
    return None


def check_log(log: Log) -> Iterator[Problem]:
    with log.open() as view:
        if view.fd is None:
            return
        path = str(log.path)
        expect: int | None = None
        prev_time: str | None = None
        prev_hash: str | None = None
        if log.is_audit:
            wm = view.watermark()
            prev_hash = wm.hash if wm else None
        line_no = 0
        future = format_dt(datetime.now(UTC) + timedelta(days=1))  # a day: more than any clock's skew
        told_future = False
        recorded: dict[int, RecordedGap] | None = None  # read when the first hole is met
        firsts: list[int] = []  # its first sequences, sorted (recorded_gaps.covered)
        for off, raw in view.iter_raw(0):
            line_no += 1
            this_hash = hashlib.sha256(raw + b"\n").hexdigest() if log.is_audit else None
            try:
                ev = orjson.loads(raw)
            except orjson.JSONDecodeError:
                yield Problem(path, line_no, off, "corrupt line: not valid JSON")
                expect, prev_hash = None, this_hash
                continue
            what = _event_problem(ev, log.is_audit, "" if log.is_audit else log.name)
            if what:
                yield Problem(path, line_no, off, f"corrupt line: {what}")
                expect, prev_hash = None, this_hash
                continue
            seq = int(ev["sequence"])
            if line_no == 1 and seq != 1 and not ((wm := view.watermark()) and wm.next_sequence == seq):
                yield Problem(path, line_no, off, f"log starts at sequence {ev['sequence']}, not 1, and no "
                              "compaction record explains the missing start")
            if expect is not None and seq != expect:
                if seq > expect:
                    if recorded is None:
                        # the audit log's holes are damage whatever a record says (see above)
                        recorded = read_gaps(log.root, log.state_key) \
                            if any_recorded(log.root) and not log.is_audit else {}
                        firsts = sorted(recorded)
                    found, rest = covered(recorded, expect - 1, seq, firsts)
                    for a, b in rest:
                        yield Problem(path, line_no, off, f"sequence gap: {ev['sequence']} follows {expect - 1:012d} "
                                      f"({b - a + 1} missing" + (")" if not found else
                                                                 f": {a:012d} to {b:012d}; the rest was dropped at "
                                                                 "its source, as recorded)"))
                    for g in found:
                        n = g.last - g.first + 1
                        yield Problem(path, line_no, off, f"{n} event{'s' if n != 1 else ''} missing before "
                                      f"{ev['sequence']} ({g.first:012d} to {g.last:012d}): dropped at their "
                                      "source before they were shipped, as the root's gap record says "
                                      f"(.wardrik/{KIND}; a log written here should have none)", WARNING)
                else:
                    yield Problem(path, line_no, off, f"sequence {ev['sequence']} repeats or goes back "
                                  f"(expected {expect:012d})")
            if not told_future and ev["time"] > future:
                told_future = True
                yield Problem(path, line_no, off, f"time {ev['time']} is in the future: the events appended after "
                              "it repeat it (times never go back), so retention drops none of them before then",
                              WARNING)
            if prev_time is not None and ev["time"] < prev_time:
                yield Problem(path, line_no, off, f"time {ev['time']} is earlier than the previous event's {prev_time}",
                              WARNING)
            if log.is_audit:
                expected = prev_hash if prev_hash is not None else (GENESIS_HASH if seq == 1 else None)
                if expected is not None and ev["prevhash"] != expected:
                    before = (f"line {line_no - 1}" if line_no > 1 else
                              "the last line compaction dropped" if prev_hash is not None else "the start of the chain")
                    yield Problem(path, line_no, off, "audit chain broken here: prevhash is not the SHA-256 of "
                                  f"{before} ({before} was changed, or this line's prevhash was, or lines were "
                                  "inserted or removed between them)")
            expect, prev_time, prev_hash = seq + 1, ev["time"], this_hash
        if view.torn_bytes:
            yield Problem(path, line_no + 1, view.end,
                          f"torn tail: {view.torn_bytes} bytes after the last newline (a writer may be mid-line; "
                          "the next append cuts it, keeping its bytes beside the log)", WARNING)
