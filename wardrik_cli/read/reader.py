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

from itertools import repeat
from operator import itemgetter
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
from wardrik_cli.read.merge import Entry, Source, merge_batches
from wardrik_cli.read.scan import OnGap, OnRepeat
from wardrik_cli.store.log import Log, LogView, decode_event, head_envelope, lines_before, peek
from wardrik_cli.store.recorded_gaps import RecordedGap, any_recorded, covered, older_than, read_gaps
from wardrik_cli.read.scan import scan
from wardrik_cli.read.whole import whole_span
from wardrik_cli.protocol.catalogue import DROPPED
from wardrik_cli.protocol.times import now

OnCorrupt = Callable[[CorruptLedger], None] | None
READ_BUDGET = 32 << 20
MIN_BLOCK = 2 << 10
MAX_READ = 4 * lines.CHUNK  # the longest read of a span that keeps few of its lines
SINGLE_BATCH = 512
_NAME, _SEQ, _RAW = itemgetter(1), itemgetter(2), itemgetter(3)


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
    return dropped_between(log, view, position + 1, first_seq - 1, when, deployment)


class Notice(dict[str, Any]):
    """An ``events.dropped`` met in the middle of a read (a recorded gap): it passes every
    filter and does not count toward a limit, as the one before a log's first event."""


def dropped_between(log: Log, view: LogView, first_missing: int, last_missing: int, when: str,
                    deployment: str) -> dict[str, Any]:
    """The ``events.dropped`` for events [first_missing, last_missing] of ``log``, dated
    ``when``; its id is derived from the log's source and the range, so a repeat has the same id."""
    first = view.first()
    source = first[1].get("source") if first is not None else None
    if not isinstance(source, str):
        wm = view.watermark() if first is None else None  # an emptied log: the source its events had
        source = wm.source if wm is not None and wm.source else None
    if not isinstance(source, str):
        source = audit_source(deployment) if log.is_audit else agent_source(deployment, log.name)
    subject = "audit" if log.is_audit else f"agents/{log.name}"
    import hashlib  # here: only a notice needs it, and a reader's start-up is 3 ms shorter

    digest = hashlib.sha256(f"{DROPPED}\0{source}\0{first_missing}\0{last_missing}".encode()).hexdigest()
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
        "data": {"log": log.name, "count": last_missing - first_missing + 1},
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


def gap_reporter(log: Log, warn: Callable[[str], None] | None, pending: list[RecordedGap] | None = None, *,
                 recorded: bool | None = None, since: str | None = None,
                 hold: Callable[[int, str], None] | None = None) -> OnGap | None:
    """What a read of ``log`` does when its sequence jumps: a warning naming the missing
    events, unless a record says they were dropped at their source (``store.recorded_gaps``):
    then the recorded gap goes to ``pending``, for the caller to hand out as an
    ``events.dropped`` before the next line (``gap_notice``), or, without ``pending``, a
    warning that says so; nothing when its newest dropped event is older than ``since``
    (the window never reached it). ``recorded``: whether the root has gap records (None: look).
    ``hold``: a warning is handed to it with the sequence after the gap instead of told (a
    read that may stop before that event tells it only if it gets there)."""
    if recorded is None:
        recorded = any_recorded(log.root)
    gaps = read_gaps(log.root, log.state_key) if recorded else {}
    name = log.name
    if warn is not None and hold is not None:
        tell: Callable[[int, str], None] | None = hold
    elif warn is not None:
        told = warn
        tell = lambda _at, msg: told(msg)  # noqa: E731
    else:
        tell = None
    if not gaps:
        return (lambda a, b: tell(b, gap_warning(name, a, b))) if tell is not None else None

    firsts = sorted(gaps)

    def on_gap(before: int, after: int) -> None:
        found, rest = covered(gaps, before, after, firsts)
        for g in found:
            if older_than(g, since):
                continue  # all of it older than the window
            if pending is not None:
                pending.append(g)
            elif tell is not None:
                tell(after, f"{name}: events {g.first}..{g.last} were dropped at their source before they were shipped")
        if tell is not None:
            for a, b in rest:
                tell(after, gap_warning(name, a - 1, b + 1))

    return on_gap


REPEATS_TOLD = 10  # lines out of order told one by one per log; past it, one line says there are more


def repeat_reporter(name: str, warn: Callable[[str], None] | None) -> OnRepeat | None:
    """What a read does with a line whose sequence is not above the one before it (repeated or
    out of order: a damaged log): passed over, and a warning says so (never silently)."""
    if warn is None:
        return None
    told = [0]

    def on_repeat(off: int, seq: int, before: int) -> None:
        told[0] += 1
        if told[0] <= REPEATS_TOLD:
            warn(f"{name}: sequence {seq} at byte {off} is out of order next to {before} (a line repeated or "
                 "out of order); passed over (see `wardrik check`)")
        elif told[0] == REPEATS_TOLD + 1:
            warn(f"{name}: more lines repeat or go back in sequence; passed over (see `wardrik check`)")

    return on_repeat


def gap_notice(log: Log, view: LogView, gap: RecordedGap, next_time: str, deployment: str) -> tuple[bytes, Notice]:
    """The stored form and event of the ``events.dropped`` for a recorded gap met in a read
    (dated by the record, else by the event after the gap)."""
    ev = Notice(dropped_between(log, view, gap.first, gap.last, gap.time or next_time, deployment))
    return dumps_line(ev)[:-1], ev


def missing_start(view: LogView) -> bool:
    """Does the log start after sequence 1 with no compaction record (and no damaged first
    line, which the read reports itself)? Then the read from before its first event warns of
    the gap, as of any other."""
    try:
        return view.first_seq() > 1 and not view.first_was_damaged and view.watermark() is None
    except CorruptLedger:
        return False  # a damaged first line: the read meets it and says so (or skips it, told)


def window_reaches_dropped(view: LogView, position: int, since: str | None) -> bool:
    """Does a reader at ``position`` reading from ``since`` (if any) miss dropped events? Its
    position is before the first kept event, and ``since`` is not later than the newest
    dropped event (the compaction record's; without one, the first kept event's time bounds
    it). A log that starts after sequence 1 with no compaction record saying why was not
    compacted: its missing start is damage (a line deleted by hand), a gap the read warns of
    (``missing_start``), never passed off as a retention drop."""
    if position >= view.first_seq() - 1:
        return False
    wm = view.watermark()
    if wm is None:
        return False
    if since is not None:
        newest = wm.time if wm is not None and wm.time else None
        if newest is None:
            f = view.first()
            newest = f[1]["time"] if f is not None else None
        if newest is not None and since > newest:
            return False  # the window starts after everything dropped: nothing was missed
    return True


def check_position(view: LogView, position: int) -> None:
    """Refuse a position past the log's end: past its last line's sequence, unless a line in
    the ``POSITION_LOOK_BACK`` bytes before the end holds that sequence or a later one (a log
    whose last lines are out of order, where a read's own cursor moved past the highest)."""
    last = view.last_seq()
    if position > last and not _holds_at_least(view, position):
        raise BadCursor(f"bad cursor: {view.log.name} is at {position} but the log ends at {last}")


POSITION_LOOK_BACK = 1 << 20


def _holds_at_least(view: LogView, seq: int) -> bool:
    if view.fd is None:
        return False
    for raw in lines_before(view.fd, view.end, POSITION_LOOK_BACK):
        p = peek(raw)
        try:
            got = int(p[1]) if p is not None else int(decode_event(raw)["sequence"])
        except ValueError:
            continue
        if got >= seq:
            return True
    return False


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
        self.on_corrupt = _once_each(on_corrupt) if on_corrupt is not None else None
        self.more = False
        self.positions: dict[str, int] = {}
        self.views: dict[str, LogView] = {}
        self.block = block_size(len(logs))
        self._by_name = {log.name: log for log in logs}
        self._until_scan: set[str] = set()  # logs read past --until (times out of order around it)
        self._held: dict[str, list[tuple[int, str]]] = {}  # gap warnings told once the read gets there
        self._holding = False  # the reader's own read (_matches, raws) holds them; a caller's scan does not
        # gap records exist only in copies of shipped logs: one stat says whether to look per log
        self._gap_root = logs[0].root if logs and any_recorded(logs[0].root) else None
        # Every file stays open when the descriptor limit allows (raised up to the hard
        # limit if need be); else a file is open only while its spans are read.
        self.release_files = len(logs) > KEEP_OPEN and not _allow_open_files(len(logs) + 64)
        if self.release_files:
            _allow_open_files(KEEP_OPEN + 64)
        for log in logs:
            view = log.open()
            view.lenient = on_corrupt is not None
            view.ends_from_bytes = True  # its lines are checked as they are read
            self.views[log.name] = view
            pos = self.after.get(log.name, 0)
            if pos > 0:  # no log ends before 0: its last line need not be read
                check_position(view, pos)
            self.positions[log.name] = pos
            if len(logs) > KEEP_OPEN:
                view.first()  # known before the file is closed: notices need it
                view.slim()
                if self.release_files:
                    view.release()  # opened again when its turn comes (see _merged)

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
        """An ``events.dropped`` for each log whose window reaches into dropped events
        (``window_reaches_dropped``)."""
        since = self.filters.since
        for log in self.logs:
            view = self.views[log.name]
            pos = self.positions[log.name]
            first = view.first_seq()
            if not window_reaches_dropped(view, pos, since):
                continue
            ev = dropped_notice(log, view, pos, first, self.deployment)
            self.positions[log.name] = first - 1
            yield Item(log.name, dumps_line(ev)[:-1], ev, None)

    def start_of(self, log: Log) -> tuple[LogView, int, int, bool] | None:
        """(view, start offset, position, exact) of a log's read (the reader's own loop, and
        ``folding.stats``, which drives the scan itself): just after the position
        (bisection by sequence), or at ``since`` (bisection by time) when that is later;
        exact when the next line read must be position + 1 (a gap otherwise)."""
        view = self.views[log.name]
        view.reacquire()
        if view.fd is None:
            return None
        pos = self.positions[log.name]
        start = view.offset_after_seq(pos)
        exact = pos >= view.first_seq() - 1 or missing_start(view)
        if self.filters.since is not None:
            at_time = view.offset_at_time(self.filters.since)
            if not view.sorted_by_time and self.warn is not None:
                self.warn(f"{log.name}: its times are not in order, so --since read it from the start "
                          "(see `wardrik check`)")
            if at_time > start:
                # The read starts at the first event of the window: the one before it (just
                # outside) is where the sequence must run on from, so a hole between them, in
                # the window's reach, is told (an events.dropped if recorded, else a warning).
                before = _seq_before(view, at_time) if view.sorted_by_time else None
                if before is not None and before >= pos:
                    start, pos, exact = at_time, before, True
                else:
                    start, exact = at_time, False
        return view, start, pos, exact

    def scan_until(self, name: str) -> str | None:
        """Where a read of log ``name`` may stop: ``--until``, unless its times were found out
        of order past it (``read_on``): then None, and ``accepts_of`` judges each event."""
        return None if name in self._until_scan else self.filters.until

    def read_on(self, name: str, view: LogView, off: int) -> bool:
        """Must a read of log ``name`` that stopped at ``off`` under ``--until`` go on? Not
        when ``off`` is past the log's end or its line is in the window (the read stopped for
        another reason); else when a line after it is inside the window (``later_from``):
        stopping there would leave it out unseen. The log is then read to its end, each event
        judged by its time (``--until`` is then a filter like any other: the cursor moves past
        every event read, filtered or not), with a warning."""
        until = self.scan_until(name)
        if until is None:
            return False
        at = _time_at(view, off)
        if at is None or at == "" or at < until or view.later_from(off, until):
            return False
        self._until_scan.add(name)
        if self.warn is not None:
            self.warn(f"{name}: its times are not in order, so --until read it to the end, judging each event "
                      "by its time (the cursor moves past them all; see `wardrik check`)")
        return True

    def accepts_of(self, name: str) -> Callable[[dict[str, Any]], bool] | None:
        """``judge_accepts`` for log ``name``: every event is judged in a log read past ``--until``."""
        return self.filters.accepts if name in self._until_scan else self.judge_accepts()

    def _passed(self, name: str, pos: int) -> None:
        """The seek by ``--since`` passed over the events through ``pos``: the cursor moves past
        them, as past any event a filter leaves out (a log wholly before the window too, which
        no read reaches: its cursor stayed where it was, and the next page read it all)."""
        if pos > self.positions[name]:
            self.positions[name] = pos

    def judge_accepts(self) -> Callable[[dict[str, Any]], bool] | None:
        """``judge``'s accepts, the same for every log."""
        f = self.filters
        return None if f.only_times and f.since is None else f.accepts

    def judge(self, name: str, pending: list[RecordedGap] | None = None
              ) -> tuple[Callable[[dict[str, Any]], bool] | None, OnGap | None]:
        """(accepts, on_gap) for reading log ``name``: accepts is None when every line read
        is a match (no filter but the time window, which the seek and ``until`` keep).

        A hole in the sequence is a warning, unless a record says its events were dropped at
        their source (``store.recorded_gaps``): then the recorded gap goes to ``pending``, for
        the caller to hand out as an ``events.dropped`` (``gap_notice``) before the next line
        (without ``pending``, a warning that says so)."""
        log = self._by_name[name]
        return self.accepts_of(name), gap_reporter(log, self.warn, pending, recorded=self._gap_root is not None,
                                                  since=self.filters.since,
                                                  hold=(lambda at, msg: self._hold(name, at, msg)) if self._holding
                                                  else None)

    def _hold(self, name: str, at: int, msg: str) -> None:
        """A gap warning for log ``name``, told once the read passes sequence ``at`` (the
        event after the gap): a page that stops at its limit before it says nothing of it."""
        self._held.setdefault(name, []).append((at, msg))

    def _release(self, name: str, seq: int) -> None:
        held = self._held.get(name)
        if held is None or self.warn is None:
            return
        keep = []
        for at, msg in held:
            if at <= seq:
                self.warn(msg)
            else:
                keep.append((at, msg))
        if keep:
            self._held[name] = keep
        else:
            del self._held[name]

    def gap_notice(self, name: str, gap: RecordedGap, next_time: str) -> tuple[bytes, Notice]:
        return gap_notice(self._by_name[name], self.views[name], gap, next_time, self.deployment)

    def _batches(self) -> Iterator[list[Entry]]:
        """Every log's entries (time, log id, seq, raw, event) in (time, log id, seq) order, a
        batch at a time, judged per log so that only matches carry their bytes (raw is None for
        lines filtered out: they still move the cursor; one such entry may stand for a run of
        them). One log is read straight through; several are merged (``read.merge``), a span of
        each at a time."""
        f = self.filters
        test = f.line_test()
        if len(self.logs) == 1:
            log = self.logs[0]
            got = self.start_of(log)
            if got is None:
                return
            view, start, pos, exact = got
            name = log.name
            self._passed(name, pos)
            pending: list[RecordedGap] = []
            accepts, on_gap = self.judge(name, pending)
            batch: list[Entry] = []
            on_repeat = repeat_reporter(name, self.warn)
            try:
                while True:
                    for line in scan(view, start, view.end, test=test, after_seq=pos, until=self.scan_until(name),
                                     on_corrupt=self.on_corrupt, on_gap=on_gap, gap_from_start=exact,
                                     block=self.block, on_repeat=on_repeat):
                        if pending:  # events dropped at their source just before this line
                            for g in pending:
                                raw, notice = self.gap_notice(name, g, line.time)
                                batch.append((line.time, name, g.last, raw, notice))
                            pending.clear()
                        ev = line.event
                        if ev is None or (accepts is not None and not accepts(ev)):
                            batch.append((line.time, name, line.seq, None, None))
                        else:
                            batch.append((line.time, name, line.seq, line.raw, ev))
                        start, pos, exact = line.end, line.seq, True
                        if len(batch) >= SINGLE_BATCH:
                            yield batch
                            batch = []
                    if not self.read_on(name, view, start):
                        break
                    accepts = self.accepts_of(name)  # read on past --until: each event judged by its time
            except CorruptLedger:
                # the events before the corrupt line are shown first; a page that stops at its
                # limit before the line never meets the error (the consumer stops taking)
                if batch:
                    yield batch
                raise
            if batch:
                yield batch
            return
        many = self.release_files
        sources = []
        for log in self.logs:
            got = self.start_of(log)
            if got is None:
                continue
            view, start, pos, exact = got
            self._passed(log.name, pos)
            low = _low(view, start)  # every line from here on is merged at this time or later
            if low is not None:
                # A log's gap and repeat reporters are made when it first meets one (see fill):
                # over tens of thousands of logs, two closures each outweighed the read.
                # state: [view, gap reporter, read size, recorded gaps met, repeat reporter,
                #         a corrupt line met after entries this span returned: raised next]
                sources.append(Source(log.name, start, pos, exact, low,
                                      [view, None, self.block, [], None, None, view.replaced]))
            if many:
                view.release()
        hold = self.block  # bytes of matches a log's span may hold: the shared budget per log
        # Reads grow past ``hold`` only when reading to the end: a page that stops at a limit
        # keeps spans short, so its cursor moves past what was passed over before the stop.
        longest = MAX_READ if self.limit is None else hold

        every = test is None  # no filter: every line read is a match, checked a span at a time

        def reporters(src: Source) -> tuple[OnGap, OnRepeat]:
            state = src.state

            def on_gap(a: int, b: int) -> None:
                if state[1] is None:
                    state[1] = self.judge(src.name, state[3])[1] or _quiet
                state[1](a, b)

            def on_repeat(off: int, seq: int, before: int) -> None:
                if state[4] is None:
                    state[4] = repeat_reporter(src.name, self.warn) or _quiet
                state[4](off, seq, before)

            return on_gap, on_repeat

        def resume(src: Source) -> list[Entry]:
            """The log's file was replaced (compacted) while it was closed between spans (a
            read over more logs than files it may hold open): the offset into the old file is
            void. The read goes on in the new file after the sequence it reached; the events
            dropped under it, before they were read, are told by an ``events.dropped`` there."""
            view = src.state[0]
            view.reacquire()
            if view.replaced == src.state[6]:
                return []
            src.state[6] = view.replaced
            if view.fd is None:
                return []
            lost: list[Entry] = []
            first = view.first_seq()
            if src.seq < first - 1:
                log = self._by_name[src.name]
                ev = Notice(dropped_notice(log, view, src.seq, first, self.deployment))
                lost.append((max(src.high, src.low), src.name, first - 1, dumps_line(ev)[:-1], ev))
                src.seq = first - 1
            src.offset, src.exact = view.offset_after_seq(src.seq), True
            return lost

        def fill(src: Source) -> list[Entry]:
            lost = resume(src) if many else []
            got = fill_span(src)
            return lost + got if lost else got

        def fill_span(src: Source) -> list[Entry]:
            state = src.state
            view, _, read, pending, _, failed, _ = state
            if failed is not None:
                raise failed
            view.reacquire()
            name = src.name
            accepts, until = self.accepts_of(name), self.scan_until(name)  # a log read past --until: each judged
            if every and accepts is None:
                got = whole_span(view, src.offset, read, src.seq, src.exact, src.high, until)
                if got is not None:  # a plain span: checked in C, no look at each line in Python
                    raws, times, first_seq, end = got
                    n = len(raws)
                    src.high = times[-1]
                    src.offset, src.seq, src.exact = end, first_seq + n - 1, True
                    src.done = end >= view.end or (until is not None and _starts_at_or_after(view, end, until)
                                                   and not self.read_on(name, view, end))
                    if many:
                        view.release()
                    return list(zip(times, repeat(name, n), range(first_seq, first_seq + n), raws, repeat(None, n),
                                    strict=True))
            out: list[Entry] = []
            kept = 0
            first = src.offset
            on_gap, on_repeat = reporters(src)
            try:
                for once in (True, False):  # a span; else (all of it passed over) on to the next line kept
                    for line in scan(view, src.offset, view.end, test=test, after_seq=src.seq, until=until,
                                     on_corrupt=self.on_corrupt, on_gap=on_gap, gap_from_start=src.exact,
                                     block=read, once=once, on_repeat=on_repeat):
                        ev = line.event
                        t = line.time  # keyed(), inlined: never below the log's last key
                        if t < src.high:
                            t = src.high
                        else:
                            src.high = t
                        if pending:  # events dropped at their source just before this line
                            for g in pending:
                                out.append((t, name, g.last, *self.gap_notice(name, g, line.time)))
                            pending.clear()
                        if ev is None or (accepts is not None and not accepts(ev)):
                            out.append((t, name, line.seq, None, None))
                        else:
                            raw = line.raw
                            out.append((t, name, line.seq, raw, None))  # bytes, not dicts, wait in a merge
                            kept += len(raw)
                        src.offset, src.seq, src.exact = line.end, line.seq, True
                        if not once or kept >= hold:
                            break
                    if out or view.fd is None:
                        break
            except CorruptLedger as e:
                if not out:
                    raise
                state[5] = e  # the entries before the line go into the merge first; the error next
                return out
            # The next read: what this span kept per byte read says how far a span may go
            # before it holds ``hold`` bytes (a rare match: a long read, passed over in C).
            state[2] = max(hold, min(longest, (src.offset - first) * hold // kept)) if kept else longest
            src.done = src.offset >= view.end or (
                (not out or (until is not None and _starts_at_or_after(view, src.offset, until)))
                and not self.read_on(name, view, src.offset))
            if many:
                view.release()
            return out

        yield from merge_batches(sources, fill)

    def _matches(self) -> Iterator[tuple[str, int | None, bytes, dict[str, Any] | None]]:
        """(log, seq, raw, event or None) of each match in merge order, up to the limit (with
        ``--limit 0``, none: the read goes only as far as the first match, for ``more``)."""
        delivered = 0
        positions = self.positions
        limit = self.limit
        held = self._held
        self._holding = True
        for batch in self._batches():
            for _t, name, seq, raw, ev in batch:
                if raw is None:
                    positions[name] = seq
                    if held and name in held:
                        self._release(name, seq)
                    continue
                if limit is not None and delivered >= limit:
                    self.more = True  # one more match: its position stays before it
                    return
                positions[name] = seq
                if held and name in held:
                    self._release(name, seq)
                if ev is not None and type(ev) is Notice:
                    yield name, None, raw, ev  # not a stored event; no count toward the limit
                    continue
                yield name, seq, raw, ev
                delivered += 1

    def __iter__(self) -> Iterator[Item]:
        yield from self.notices()
        for name, seq, raw, ev in self._matches():
            yield Item(name, raw, ev, seq)

    def raws(self) -> Iterator[bytes]:
        """The stored lines only (what ``jsonl`` prints): no ``Item`` made per event, and with
        no limit, a batch's cursor moves and lines are taken in C."""
        for it in self.notices():
            yield it.raw
        if self.limit is not None:
            for _name, _seq, raw, _ev in self._matches():
                yield raw
            return
        positions = self.positions
        held = self._held
        self._holding = True
        for batch in self._batches():
            positions.update(zip(map(_NAME, batch), map(_SEQ, batch), strict=True))  # a log's last in the batch wins
            if held:
                for name in list(held):
                    self._release(name, positions[name])
            yield from filter(None, map(_RAW, batch))  # None: passed over (a stored line is never empty)

def _once_each(on_corrupt: Callable[[CorruptLedger], None]) -> Callable[[CorruptLedger], None]:
    """``on_corrupt`` told once per corrupt line: a merge may read a line again (the last line
    of a log is met by the span that ends there and by the read that finds nothing after)."""
    seen: set[tuple[str, int]] = set()

    def tell(e: CorruptLedger) -> None:
        if (e.path, e.offset) not in seen:
            seen.add((e.path, e.offset))
            on_corrupt(e)

    return tell


def _seq_before(view: LogView, offset: int) -> int | None:
    """The sequence of the complete line ending at ``offset``, or None (no line, or one whose
    sequence cannot be read: the read then starts there without a sequence to run on from)."""
    if view.fd is None or offset <= 0:
        return None
    for off, raw in lines.iter_lines_backward(view.fd, offset, lines.PROBE):
        if isinstance(raw, lines.Head):
            env = head_envelope(view.fd, off, raw)
            return int(env["sequence"]) if env is not None else None
        p = peek(raw)
        if p is not None:
            return int(p[1])
        try:
            return int(decode_event(raw)["sequence"])
        except ValueError:
            return None
    return None


def _time_at(view: LogView, offset: int) -> str | None:
    """The time of the complete line at ``offset`` ("" for a line that is not an event: it
    will be reported where it is read); None when no line is there."""
    if view.fd is None or offset >= view.end:
        return None
    got = lines.read_line_at(view.fd, offset, view.end)
    if got is None:
        return None
    p = peek(got[1])
    if p is not None:
        return p[2].decode()
    try:
        return str(decode_event(got[1])["time"])
    except ValueError:
        return ""


def _low(view: LogView, offset: int) -> str | None:
    """``_time_at``, from the first event already read when the read starts at it."""
    first = view.first() if offset == 0 and view.end > 0 else None
    if first is not None and first[0] == 0:
        t = first[1].get("time")
        if isinstance(t, str):
            return t
    return _time_at(view, offset)


def _starts_at_or_after(view: LogView, offset: int, t: str) -> bool:
    """Is the line at ``offset`` at or after time ``t`` (where a scan with ``until`` stopped)?"""
    at = _time_at(view, offset)
    return at is None or at >= t


def _allow_open_files(n: int) -> bool:
    """Raise the soft limit on open files to ``n`` if the hard limit allows; True if it is at
    least ``n`` now."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= n:
        return True
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        return False  # the open that fails will say so, as one error line
    return want >= n


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
            view.ends_from_bytes = True
            cur[log.name] = view.last_seq()
    return cur


def _quiet(*_args: int) -> None:
    """A reporter with no one to tell (no ``warn``)."""
