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
from typing import Any
from collections.abc import Callable, Iterator

import orjson

from wardrik_cli.protocol.cursor import Cursor
from wardrik_cli.errors import BadCursor, CorruptLedger, NoSuchLog
from wardrik_cli.protocol.envelope import agent_source, audit_source, dumps_line
from wardrik_cli.read.filters import Filters as Filters, parse_types as parse_types  # re-exported
from wardrik_cli.store import lines
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.names import has_wildcards
from wardrik_cli.store.log import Log, LogView
from wardrik_cli.read.scan import scan
from wardrik_cli.protocol.catalogue import DROPPED
from wardrik_cli.protocol.times import now

OnCorrupt = Callable[[CorruptLedger], None] | None
READ_BUDGET = 32 << 20  # bytes of blocks a read over many logs holds at once, shared by its logs
MIN_BLOCK = 4 << 10


def block_size(n_logs: int) -> int:
    """The read block for each of ``n_logs`` logs read side by side: memory stays flat
    however many logs a pattern matches."""
    return max(MIN_BLOCK, min(lines.CHUNK, READ_BUDGET // max(n_logs, 1)))


def gap_warning(log: str, before: int, after: int) -> str:
    n = after - before - 1
    what = f"sequence {before + 1} is" if n == 1 else f"sequences {before + 1}..{after - 1} are"
    return f"{log}: {what} missing ({n} event{'s' if n != 1 else ''}); reading on (see `wardrik check`)"


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


class Item:
    """One event a reader hands out: its log, raw stored bytes and decoded form (decoded
    when first asked for, when the reader did not keep it: a merge over many logs holds
    bytes, not dicts)."""

    __slots__ = ("log", "raw", "_event", "seq")

    def __init__(self, log: str, raw: bytes, event: dict[str, Any] | None = None, seq: int | None = None):
        self.log, self.raw, self._event, self.seq = log, raw, event, seq  # seq None: a notice or live event

    @property
    def event(self) -> dict[str, Any]:
        if self._event is None:
            self._event = orjson.loads(self.raw)
        return self._event

    def __repr__(self) -> str:
        return f"Item({self.log!r}, seq={self.seq!r}, {self.raw[:60]!r})"


def check_position(view: LogView, position: int) -> None:
    last = view.last_seq()
    if position > last:
        raise BadCursor(f"bad cursor: {view.log.name} is at {position} but the log ends at {last}")


KEEP_OPEN = 64  # over this many logs, a log's file is open only while its blocks are read


class Reader:
    """A read across the matched logs from a cursor; iterate for items, then read ``next``
    (and ``more``: True when it stopped at ``limit`` with a matching event still to read)."""

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
        self.more = False
        self.positions: dict[str, int] = {}
        self.views: dict[str, LogView] = {}
        self.block = block_size(len(logs))
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
        """An ``events.dropped`` for each log whose window reaches into dropped events: the
        position is before its first kept event, and ``since`` (if any) is not later than the
        newest dropped event (the compaction record's; without one, the first kept event's
        time bounds it)."""
        since = self.filters.since
        for log in self.logs:
            view = self.views[log.name]
            pos = self.positions[log.name]
            first = view.first_seq()
            if pos >= first - 1:
                continue
            wm = view.watermark()
            if view.first_was_damaged and wm is None:
                continue  # events before a damaged first line were not dropped by retention
            if since is not None:
                newest = wm.time if wm is not None and wm.time else None
                if newest is None:
                    f = view.first()
                    newest = f[1]["time"] if f is not None else None
                if newest is not None and since > newest:
                    continue  # the window starts after everything dropped: nothing was missed
            ev = dropped_notice(log, view, pos, first, self.deployment)
            self.positions[log.name] = first - 1
            yield Item(log.name, dumps_line(ev)[:-1], ev, None)

    def _stream(self, log: Log) -> Iterator[tuple[str, str, int, Item | None]]:
        """(time, log id, sequence, item) in sequence order (``read.scan``), judged here, per
        log, so that only matches enter the merge; item is None for lines filtered out (they
        still move the cursor)."""
        view = self.views[log.name]
        view.reacquire()
        if view.fd is None:
            return
        pos = self.positions[log.name]
        start = view.offset_after_seq(pos)
        exact = pos >= view.first_seq() - 1  # the next line read must be pos + 1
        if self.filters.since is not None:
            at_time = view.offset_at_time(self.filters.since)
            if not view.sorted_by_time and self.warn is not None:
                self.warn(f"{log.name}: its times are not in order, so --since read it from the start "
                          "(see `wardrik check`)")
            if at_time > start:
                start, exact = at_time, False
        name = log.name
        many = len(self.logs) > KEEP_OPEN
        release = view.release if many else None
        warn = self.warn
        on_gap = (lambda a, b: warn(gap_warning(name, a, b))) if warn is not None else None
        f = self.filters
        accepts = None if f.only_times and f.since is None else f.accepts
        until = f.until
        for line in scan(view, start, view.end, test=f.line_test(), after_seq=pos, until=until,
                         on_corrupt=self.on_corrupt, release=release, on_gap=on_gap, gap_from_start=exact,
                         block=self.block):
            ev = line.event
            if ev is None or (accepts is not None and not accepts(ev)):
                yield line.time, name, line.seq, None
            else:
                yield line.time, name, line.seq, Item(name, line.raw, None if many else ev, line.seq)

    def __iter__(self) -> Iterator[Item]:
        yield from self.notices()
        if self.limit is not None and self.limit <= 0:
            return
        streams = [self._stream(log) for log in self.logs]
        if not streams:
            return
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, key=lambda x: x[:3])
        delivered = 0
        positions = self.positions
        limit = self.limit
        for _t, name, seq, item in merged:
            if item is None:
                positions[name] = seq
                continue
            if limit is not None and delivered >= limit:
                self.more = True  # one more match: its position stays before it
                return
            positions[name] = seq
            yield item
            delivered += 1


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
    """The logs the patterns match; a literal pattern naming no log (nor a folder) is an error."""
    root.require()
    ids = root.match(patterns)
    found = set(ids)
    for p in patterns:
        if not has_wildcards(p) and p not in found and not root.is_folder(p):
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
