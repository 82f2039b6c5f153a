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
from typing import Any, Callable, Iterable, Iterator, Optional

from wardrik_cli.protocol.cursor import Cursor
from wardrik_cli.errors import BadCursor, BadInput, CorruptLedger, NoSuchLog
from wardrik_cli.protocol.envelope import agent_source, audit_source, dumps_line, trace_id_of
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.names import has_wildcards
from wardrik_cli.store import lines
from wardrik_cli.store.log import HEAD, Log, LogView, peek
from wardrik_cli.protocol.catalogue import DROPPED, lookup
from wardrik_cli.protocol.times import now

OnCorrupt = Optional[Callable[[CorruptLedger], None]]
_RUN_RE = re.compile(r"[0-9a-f]{32}")


@dataclass
class Filters:
    """What a reader wants to see; ``events.dropped`` passes all of it."""

    types: Optional[frozenset[str]] = None  # full names
    since: Optional[str] = None  # stored time strings; since inclusive, until exclusive
    until: Optional[str] = None
    run: Optional[str] = None

    @classmethod
    def build(cls, types: Optional[Iterable[str]] = None, since: Optional[str] = None,
              until: Optional[str] = None, run: Optional[str] = None) -> "Filters":
        full = None
        if types:
            full = frozenset(lookup(t).full for t in types)
        if run is not None and not _RUN_RE.fullmatch(run):
            raise BadInput(f"bad run id {run!r}: expected 32 lowercase hex digits (a run's trace id)")
        return cls(full, since, until, run)

    def accepts(self, event: dict) -> bool:
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


def parse_types(text: Optional[str]) -> Optional[list[str]]:
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
    seq: Optional[int]  # None for events.dropped and live events


def check_position(view: LogView, position: int) -> None:
    last = view.last_seq()
    if position > last:
        raise BadCursor(f"bad cursor: {view.log.name} is at {position} but the log ends at {last}")


class Reader:
    """A read across the matched logs from a cursor; iterate for items, then read ``next``."""

    def __init__(self, logs: list[Log], after: Optional[Cursor], *, filters: Filters, deployment: str,
                 limit: Optional[int] = None, on_corrupt: OnCorrupt = None):
        self.logs = logs
        self.after = dict(after or {})
        self.filters = filters
        self.deployment = deployment
        self.limit = limit
        self.on_corrupt = on_corrupt
        self.positions: dict[str, int] = {}
        self.views: dict[str, LogView] = {}
        _allow_open_files(len(logs) + 64)  # the merge holds every matched log open at once
        for log in logs:
            view = log.open()
            view.lenient = on_corrupt is not None
            self.views[log.name] = view
            pos = self.after.get(log.name, 0)
            check_position(view, pos)
            self.positions[log.name] = pos

    @property
    def next(self) -> Cursor:
        cur = dict(self.after)
        cur.update(self.positions)
        return cur

    def close(self) -> None:
        for v in self.views.values():
            v.close()

    def __enter__(self) -> "Reader":
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

    def _stream(self, log: Log) -> Iterator[tuple[str, str, int, Optional[Item]]]:
        """(time, log id, sequence, item) in sequence order; item is None for a line that a
        type filter rejects on sight (it still moves the cursor)."""
        view = self.views[log.name]
        if view.fd is None:
            return
        pos = self.positions[log.name]
        start = view.offset_after_seq(pos)
        if self.filters.since is not None:
            start = max(start, view.offset_at_time(self.filters.since))
        for block_off, block in lines.iter_blocks(view.fd, start, view.end):
            for item in self._lines_of(view, log.name, block_off, block, pos, self.filters.until):
                if item is _UNTIL:
                    return
                yield item

    def _stream_by_type(self, log: Log) -> Iterator[tuple[str, str, int, Optional[Item]]]:
        """The same stream for one log under a type filter, a block at a time.

        When every line of a block has this tool's shape (checked with a few whole-block
        byte counts, see ``ledger.peek``), only the lines whose type is wanted are found
        (by searching the block for their type) and decoded; the block's last sequence moves
        the position past the rest. Any block that is not all in shape, or that reaches
        ``until``, goes line by line through ``_stream``'s rules.
        """
        view = self.views[log.name]
        name = log.name
        pos = self.positions[log.name]
        start = view.offset_after_seq(pos)
        if self.filters.since is not None:
            start = max(start, view.offset_at_time(self.filters.since))
        until = self.filters.until
        markers = [b'","type":"' + t + b'"' for t in self._wanted_types]
        for block_off, block in lines.iter_blocks(view.fd, start, view.end) if view.fd is not None else ():
            n_lines = block.count(b"\n")
            last_start = block.rfind(b"\n", 0, len(block) - 1) + 1
            last = peek(block[last_start:-1])
            in_shape = (
                last is not None
                and block.startswith(HEAD)
                and block.count(b'}}\n{"specversion":"1.0","id":"') == n_lines - 1
                and block.count(b'"specversion"') == n_lines
                and (until is None or last[2].decode() < until)
            )
            if not in_shape:
                for item in self._lines_of(view, name, block_off, block, pos, until):
                    if item is _UNTIL:
                        return
                    pos = max(pos, item[2])
                    yield item
                continue
            hits = sorted({i for m in markers for i in _find_all(block, m)})
            for i in hits:
                line_start = block.rfind(b"\n", 0, i) + 1
                if i - line_start != 36 + len(HEAD):
                    continue  # "type" inside data, not the event's own
                line_end = block.index(b"\n", i)
                raw = block[line_start:line_end]
                for item in self._lines_of(view, name, block_off + line_start, raw + b"\n", pos, until):
                    if item is _UNTIL:
                        return
                    pos = max(pos, item[2])
                    yield item
            last_seq = int(last[1])
            if last_seq > pos:
                pos = last_seq
                yield last[2].decode(), name, last_seq, None

    def _lines_of(self, view: LogView, name: str, base: int, block: bytes, pos: int, until: Optional[str]):
        """Decode every line of a block with the full rules (corrupt lines, positions, until)."""
        wanted = self._wanted_types
        off = base
        for raw in block.split(b"\n")[:-1]:
            here = off
            off += len(raw) + 1
            p = peek(raw) if wanted is not None else None
            if p is not None and p[0] not in wanted:
                seq, t = int(p[1]), p[2].decode()
                if seq <= pos:
                    continue
                if until is not None and t >= until:
                    yield _UNTIL
                    return
                yield t, name, seq, None
                continue
            ev = view.decode_or_report(here, raw, self.on_corrupt)
            if ev is None:
                continue
            seq = int(ev["sequence"])
            if seq <= pos:
                continue
            if until is not None and ev["time"] >= until:
                yield _UNTIL
                return
            yield ev["time"], name, seq, Item(name, raw, ev, seq)

    @property
    def _wanted_types(self) -> Optional[frozenset[bytes]]:
        t = self.filters.types
        return None if t is None else frozenset(x.encode() for x in t)

    def __iter__(self) -> Iterator[Item]:
        yield from self.notices()
        if self.limit is not None and self.limit <= 0:
            return
        if len(self.logs) == 1 and self.filters.types is not None and self.filters.run is None:
            streams = [self._stream_by_type(self.logs[0])]
        else:
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


_UNTIL = object()  # sentinel: a stream reached --until


def _allow_open_files(n: int) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        want = n if hard == resource.RLIM_INFINITY else min(n, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # the open that fails will say so, as one error line


def _find_all(block: bytes, marker: bytes) -> Iterator[int]:
    i = block.find(marker)
    while i >= 0:
        yield i
        i = block.find(marker, i + 1)


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
