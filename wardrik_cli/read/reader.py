"""Reading across logs: the merge behind ``page``, ``head`` and the read-back of ``tail``.

Contract kept here:
- Each log is read in sequence order from just after the reader's position (found by
  bisection, never by scanning); logs are interleaved oldest first by (time, log id,
  sequence).
- A reader whose position is before a log's first kept event first gets one
  ``events.dropped`` for that log (count = events it missed); the notice passes every
  filter, does not count toward a limit, and comes before every event (in a page, before
  all events). Its id is derived from the log and the range, so a repeat has the same id.
- The next cursor moves past every event read, delivered or filtered out; keys of logs
  that the patterns do not match are carried over unchanged.
- A cursor position past the end of a matched log is refused.
"""
from __future__ import annotations

import hashlib
import heapq
import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable, Iterator

from wardrik_cli.protocol.cursor import Cursor
from wardrik_cli.errors import BadCursor, BadInput, CorruptLedger, NoSuchLog
from wardrik_cli.protocol.envelope import agent_source, audit_source, dumps_line, trace_id_of
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.names import has_wildcards
from wardrik_cli.store.log import Log, LogView
from wardrik_cli.read.scan import scan
from wardrik_cli.protocol.catalogue import DROPPED, lookup
from wardrik_cli.protocol.times import now

OnCorrupt = Callable[[CorruptLedger], None] | None
_RUN_RE = re.compile(r"[0-9a-f]{32}")


@dataclass
class Filters:
    """What a reader wants to see; ``events.dropped`` passes all of it."""

    types: frozenset[str] | None = None  # full names
    since: str | None = None  # stored time strings; since inclusive, until exclusive
    until: str | None = None
    run: str | None = None

    @classmethod
    def build(cls, types: Iterable[str] | None = None, since: str | None = None,
              until: str | None = None, run: str | None = None) -> Filters:
        full = None
        if types:
            full = frozenset(lookup(t).full for t in types)
        if run is not None and not _RUN_RE.fullmatch(run):
            raise BadInput(f"bad run id {run!r}: expected 32 lowercase hex digits (a run's trace id)")
        return cls(full, since, until, run)

    def accepts(self, event: dict[str, Any]) -> bool:
        t = event.get("type")
        if t == DROPPED:
            return True
        if self.types is not None and t not in self.types:
            return False
        if self.since is not None and event["time"] < self.since:
            return False
        if self.until is not None and event["time"] >= self.until:
            return False
        if self.run is not None and trace_id_of(event) != self.run:
            return False
        return True


def parse_types(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise BadInput("--types needs at least one type")
    for t in items:
        lookup(t)
    return items


def dropped_notice(log: Log, view: LogView, position: int, first_seq: int, deployment: str) -> dict[str, Any]:
    """The ``events.dropped`` a reader at ``position`` gets for events [position+1, first_seq-1]."""
    first = view.first()
    when = first[1]["time"] if first is not None else now()
    source = first[1].get("source") if first is not None else None
    if not isinstance(source, str):
        source = audit_source(deployment) if log.is_audit else agent_source(deployment, log.name)
    subject = "audit" if log.is_audit else f"agents/{log.name}"
    digest = hashlib.sha256(f"{DROPPED}\0{source}\0{position + 1}\0{first_seq - 1}".encode()).hexdigest()
    h = list(digest[:32])
    h[12] = "8"  # RFC 9562 version 8: a custom, deterministic UUID
    h[16] = "89ab"[int(h[16], 16) & 3]
    uid = "".join(h)
    trace = digest[32:64]
    return {
        "specversion": "1.0",
        "id": f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}",
        "type": DROPPED,
        "source": source,
        "subject": subject,
        "time": when,
        "traceparent": f"00-{trace}-{digest[:16]}-01",
        "data": {"log": log.name, "count": first_seq - 1 - position},
    }


@dataclass
class Item:
    """One event a reader hands out: its log, raw stored bytes and decoded form."""

    log: str
    raw: bytes
    event: dict[str, Any]
    seq: int | None  # None for events.dropped and live events


def check_position(view: LogView, position: int) -> None:
    last = view.last_seq()
    if position > last:
        raise BadCursor(f"bad cursor: {view.log.name} is at {position} but the log ends at {last}")


KEEP_OPEN = 64  # over this many logs, a log's file is open only while its blocks are read


class Reader:
    """A read across the matched logs from a cursor; iterate for items, then read ``next``."""

    def __init__(self, logs: list[Log], after: Cursor | None, *, filters: Filters, deployment: str,
                 limit: int | None = None, on_corrupt: OnCorrupt = None,
                 warn: Callable[[str], None] | None = None):
        self.logs = logs
        self.warn = warn
        self.after = dict(after or {})
        self.filters = filters
        self.deployment = deployment
        self.limit = limit
        self.on_corrupt = on_corrupt
        self.positions: dict[str, int] = {}
        self.views: dict[str, LogView] = {}
        _allow_open_files(min(len(logs), KEEP_OPEN) + 64)
        for log in logs:
            view = log.open()
            view.lenient = on_corrupt is not None
            self.views[log.name] = view
            pos = self.after.get(log.name, 0)
            check_position(view, pos)
            self.positions[log.name] = pos
            if len(logs) > KEEP_OPEN:
                view.first()  # known before the file is closed: notices need it
                view.release()  # opened again when its turn comes (see _stream)

    @property
    def next(self) -> Cursor:
        cur = dict(self.after)
        cur.update(self.positions)
        return cur

    def close(self) -> None:
        for v in self.views.values():
            v.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def notices(self) -> Iterator[Item]:
        for log in self.logs:
            view = self.views[log.name]
            pos = self.positions[log.name]
            first = view.first_seq()
            if view.first_was_damaged and view.watermark() is None:
                continue  # events before a damaged first line were not dropped by retention
            if pos < first - 1:
                ev = dropped_notice(log, view, pos, first, self.deployment)
                self.positions[log.name] = first - 1
                yield Item(log.name, dumps_line(ev)[:-1], ev, None)

    def _stream(self, log: Log) -> Iterator[tuple[str, str, int, Item | None]]:
        """(time, log id, sequence, item) in sequence order (``read.scan``); item is None for
        lines a type filter passed over unread (they still move the cursor)."""
        view = self.views[log.name]
        view.reacquire()
        if view.fd is None:
            return
        pos = self.positions[log.name]
        start = view.offset_after_seq(pos)
        if self.filters.since is not None:
            at_time = view.offset_at_time(self.filters.since)
            if not view.sorted_by_time and self.warn is not None:
                self.warn(f"{log.name}: its times are not in order, so --since read it from the start "
                          "(see `wardrik check`)")
            start = max(start, at_time)
        name = log.name
        release = view.release if len(self.logs) > KEEP_OPEN else None
        for line in scan(view, start, view.end, wanted=self._wanted_types, after_seq=pos,
                         until=self.filters.until, on_corrupt=self.on_corrupt, release=release):
            ev = line.event
            yield line.time, name, line.seq, (Item(name, line.raw, ev, line.seq) if ev is not None else None)

    @property
    def _wanted_types(self) -> frozenset[bytes] | None:
        t = self.filters.types
        return None if t is None else frozenset(x.encode() for x in t)

    def __iter__(self) -> Iterator[Item]:
        yield from self.notices()
        if self.limit is not None and self.limit <= 0:
            return
        streams = [self._stream(log) for log in self.logs]
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda x: x[:3])
        delivered = 0
        accepts = self.filters.accepts
        positions = self.positions
        limit = self.limit
        for _t, name, seq, item in merged:
            positions[name] = seq
            if item is not None and accepts(item.event):
                yield item
                delivered += 1
                if limit is not None and delivered >= limit:
                    return


def _allow_open_files(n: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        want = n if hard == resource.RLIM_INFINITY else min(n, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # the open that fails will say so, as one error line


def resolve_logs(root: Root, patterns: list[str]) -> list[Log]:
    """The logs the patterns match; a literal pattern naming no log is an error."""
    root.require()
    ids = root.match(patterns)
    found = set(ids)
    for p in patterns:
        if not has_wildcards(p) and p not in found:
            import difflib  # only on this error path: name the closest logs there are
            close = difflib.get_close_matches(p, list(root.iter_log_ids()), n=3, cutoff=0.8)
            hint = f"did you mean {', '.join(close)}?" if close else \
                "patterns with * or ? may match nothing; a literal id must exist"
            raise NoSuchLog(f"no log {p!r} under {root.path} ({hint})")
    return [Log.agent(root, i) for i in ids]


def head(logs: list[Log]) -> Cursor:
    cur: Cursor = {}
    for log in logs:
        with log.open() as view:
            cur[log.name] = view.last_seq()
    return cur
