"""The last n matching events across logs: ``tail -n N``'s read-back.

Contract kept here:
- The logs are read backwards side by side, newest line first across them (a merge by
  (time, log id, sequence), descending), until n lines have matched or every log has been
  read back. So a read-back costs about the n events it shows (plus one look per log) when
  most lines match, and memory is n raw lines plus one small block per log (blocks share the
  reader's ``READ_BUDGET``; over ``KEEP_OPEN`` logs a file is open only while a block is read).
  Past the logs whose smallest blocks would overrun that budget, a log holds only the line it
  has waiting in the merge (``_Back.park``): what is left of its block is read again when its
  turn comes.
- A line in this tool's shape is judged on its bytes first (``store.log.peek`` and the
  filters' ``LineTest``); only lines that may match are decoded (which also validates them: a
  corrupt complete line is ``CorruptLedger``, or skipped when ``on_corrupt`` is given).
- With ``since``, a log is read back no further than its first line older than ``since``, once
  every line in the ``SINCE_CHECK`` bytes before that one is older too (one small read); a log
  where one is not (times out of order) is read back to its start, its lines older than
  ``since`` passed over, and ``on_unsorted(log)`` is told. The limit: a line out of order
  further back than that is not seen (``page --since``'s seek checks more: its window and
  samples, ``LogView.offset_at_time``).
- A sequence gap between lines read back goes to ``on_gap(log, before, after)``; a line
  whose sequence is not below the one read back before it (repeated or out of order) is passed
  over and goes to ``on_repeat(log, offset, seq, after)``.
- ``ReadBack.exhausted`` names the logs read back to their first line: every matching event
  they hold was chosen.
"""
from __future__ import annotations

import heapq
import os
from collections.abc import Callable
from typing import Any

from wardrik_cli.errors import CorruptLedger
from wardrik_cli.read.filters import Filters
from wardrik_cli.read.reader import KEEP_OPEN, MIN_BLOCK, READ_BUDGET, block_size
from wardrik_cli.store import lines
from wardrik_cli.store.log import LogView, line_time, lines_before, peek

PROBE = 1 << 12  # the first read back of a log: a tail of a few lines costs a few KB
MAX_BLOCK = 1 << 16
LONG = 1 << 20  # a part-line this long: the rest of the line is found, then read whole
SINCE_CHECK = 16 << 10  # bytes before a log's first line older than --since checked for later ones


class _Back:
    """One log read backwards a block at a time; ``next()`` gives (offset, raw) or None."""

    __slots__ = ("view", "pos", "buf", "j", "block", "cap", "ino", "many", "done", "last_seq", "long")

    def __init__(self, view: LogView, cap: int, many: bool):
        self.view, self.cap, self.many = view, cap, many
        self.block = min(PROBE, cap)  # doubles up to cap: a tail of a few lines reads a few KB
        self.pos = view.end  # buf holds the bytes [pos, pos + len(buf))
        self.buf = b""
        self.j = -1  # index in buf of the newline that ends the next line to give; -1: none yet
        self.ino = view.ino
        self.last_seq: int | None = None  # the sequence read back last (the next must be one less)
        self.done = view.ino is None or view.end == 0  # no file (a released view still has its ino)
        self.long: tuple[int, bytes] | None = None  # a line longer than LONG, read whole, to give next

    def park(self) -> None:
        """Let go of the rest of the block held: it is read again if this log's turn comes.
        Over so many logs that a block each would pass the shared budget, what is held per
        log is the one line waiting in the merge, not a block."""
        if self.j >= 0:
            self.pos += self.j + 1  # a line start: the next line read back ends just before it
            self.buf, self.j = b"", -1

    def next(self) -> tuple[int, bytes] | None:
        while not self.done:
            if self.long is not None:
                got, self.long = self.long, None
                return got
            j = self.j
            if j >= 0:
                i = self.buf.rfind(b"\n", 0, j)
                if i >= 0:
                    self.j = i
                    return self.pos + i + 1, self.buf[i + 1:j]
                if self.pos == 0:
                    self.done = True
                    return 0, self.buf[:j]
            if not self._refill():
                self.done = True
        return None

    def _refill(self) -> bool:
        """Read the block before ``pos``; the part-line already held is kept. A line found
        longer than ``LONG`` is not grown further: its start is searched for in the file
        (``lines.rfind``: windows, nothing kept), then it is read whole, once (``long``), so a
        200 MB line costs one read and one copy in memory, not a doubling series of joins."""
        if self.pos == 0:
            return False
        view = self.view
        view.reacquire()
        if view.fd is None or view.ino != self.ino:
            return False  # replaced while read back (compaction): this snapshot ends here
        if self.j + 1 > LONG:
            stop = self.pos + self.j  # the newline ending the line
            start = lines.rfind(view.fd, b"\n", 0, self.pos) + 1
            whole = lines.read_exactly(view.fd, start, stop)
            if self.many:
                view.release()
            if whole is None:
                return False  # cut short under us: this snapshot ends here
            self.long, self.pos, self.buf, self.j = (start, whole), start, b"", -1
            return True
        keep = self.buf[: self.j + 1]
        n = min(self.pos, max(self.block, len(keep)))
        self.block = min(self.block * 2, self.cap)
        got = os.pread(view.fd, n, self.pos - n)
        if len(got) != n:
            return False  # cut short under us: this snapshot ends here
        self.pos -= n
        self.buf = got + keep
        self.j = len(self.buf) - 1  # keep ends with a newline; so does the first block (view.end)
        if self.many:
            view.release()
        return True


class _Newest:
    """A heap entry ordered newest first: (time, log, seq) descending."""

    __slots__ = ("key", "idx", "off", "raw", "peeked")

    def __init__(self, key: tuple[str, str, int], idx: int, off: int, raw: bytes, peeked: bool):
        self.key, self.idx, self.off, self.raw, self.peeked = key, idx, off, raw, peeked

    def __lt__(self, other: _Newest) -> bool:
        return self.key > other.key


class ReadBack:
    """``run()`` gives the chosen (log id, seq, raw, event) oldest first; see the module docstring."""

    def __init__(self, views: list[LogView], n: int, filters: Filters, *,
                 on_corrupt: Callable[[CorruptLedger], None] | None = None,
                 on_gap: Callable[[str, int, int], None] | None = None,
                 on_repeat: Callable[[str, int, int, int], None] | None = None,
                 on_unsorted: Callable[[str], None] | None = None):
        self.views, self.n, self.filters, self.on_corrupt, self.on_gap = views, n, filters, on_corrupt, on_gap
        self.on_repeat, self.on_unsorted = on_repeat, on_unsorted
        self.exhausted: set[str] = set()

    def run(self) -> list[tuple[str, int, bytes, dict[str, Any]]]:
        views, n = self.views, self.n
        if n <= 0 or not views:
            return []
        many = len(views) > KEEP_OPEN
        crowded = len(views) * MIN_BLOCK > READ_BUDGET  # a block each would pass the budget: park
        block = min(MAX_BLOCK, block_size(len(views)))
        backs = [_Back(v, block, many) for v in views]
        since = self.filters.since
        test = self.filters.line_test()
        accepts = self.filters.accepts
        plain = self.filters.only_times
        heap: list[_Newest] = []
        starts: dict[int, int] = {}  # per log met older than since: where its window starts

        def window_start(back: _Back, off: int) -> int:
            """Where the read-back of this log may stop, met at ``off`` its first line older than
            ``since``: there, when every line in the ``SINCE_CHECK`` bytes before it is older too
            (one read: a quiet log costs a block, not a seek's bisection and samples); else 0,
            the log's start (its times are out of order: read back whole, and said)."""
            view = back.view
            view.reacquire()
            if view.fd is None or view.ino != back.ino:
                return view.end  # replaced while read back: this snapshot ends here
            assert since is not None
            at = off
            for raw in lines_before(view.fd, off, SINCE_CHECK):
                when = line_time(raw)  # None: a damaged line, which the read-back meets if it reaches it
                if when is not None and when >= since:
                    at = 0
                    if self.on_unsorted is not None:
                        self.on_unsorted(view.log.name)
                    break
            if many:
                view.release()
            return at

        def push(idx: int) -> None:
            back = backs[idx]
            while True:
                got = back.next()
                if got is None:
                    self.exhausted.add(back.view.log.name)
                    return
                off, raw = got
                p = peek(raw)
                if p is not None:
                    seq, t = int(p[1]), p[2].decode()
                    peeked = True
                else:
                    ev = back.view.decode_or_report(off, raw, self.on_corrupt)
                    if ev is None:
                        continue
                    seq, t, peeked = int(ev["sequence"]), ev["time"], False
                if back.last_seq is not None and seq >= back.last_seq:
                    # not below the line after it: repeated or out of order (a damaged log);
                    # passed over, and told (read backwards, it is the earlier of the two)
                    if self.on_repeat is not None:
                        self.on_repeat(back.view.log.name, off, seq, back.last_seq)
                    continue
                if back.last_seq is not None and seq != back.last_seq - 1 and self.on_gap is not None:
                    self.on_gap(back.view.log.name, seq, back.last_seq)
                back.last_seq = seq
                if since is not None and t < since:
                    if idx not in starts:
                        starts[idx] = window_start(back, off)
                    if off < starts[idx]:
                        return  # before the window's start: so is the rest of this log
                    continue  # older, but inside a log whose times are out of order: read on back
                heapq.heappush(heap, _Newest((t, back.view.log.name, seq), idx, off, raw, peeked))
                if crowded:
                    back.park()
                return

        for i in range(len(backs)):
            push(i)
        chosen: list[tuple[str, int, bytes, dict[str, Any]]] = []
        while heap and len(chosen) < n:
            top = heapq.heappop(heap)
            view = backs[top.idx].view
            ok = True
            if top.peeked and test is not None:
                p = peek(top.raw)
                assert p is not None
                ok = test.line_may_match(p[0], top.raw)
            if ok:
                ev = view.decode_or_report(top.off, top.raw, self.on_corrupt)  # checked, and kept to print
                if ev is not None and (plain and since is None or accepts(ev)):
                    chosen.append((top.key[1], top.key[2], top.raw, ev))
            if len(chosen) >= n:
                try:
                    push(top.idx)  # only to learn whether this log was read back to its start
                except CorruptLedger:
                    pass  # a line before every event wanted: never read for this answer
                break
            push(top.idx)
        for b in backs:
            if not b.done:
                self.exhausted.discard(b.view.log.name)
            if many:
                b.view.release()
        chosen.reverse()
        return chosen
