"""The follow engine behind ``tail [-f]``, ``audit tail [-f]`` and the ``Listener``.

Contract kept here:
- Read back, then follow. The read-back is either every event after a cursor (the merge
  of ``reader.Reader``) or the last ``n`` events across the logs, read backwards from each
  file's end (never whole files). Its result is a position per log: the last sequence
  seen. Following then reads each log *by sequence* after that position, so between
  reading back and following no event is missed or shown twice, whatever writers do;
  wake-ups are armed before the read-back, so nothing written meanwhile waits for a later
  wake-up.
- Each log is delivered in sequence order; logs are read as they change. Logs that start
  to match later (a new file, a literal id that did not exist yet) are read from their
  start (or from the given cursor's position for them).
- Only complete lines are read: a half-written last line is waited for, never shown.
- A log replaced by a new file (compaction's atomic rename) is reopened and continued by
  sequence; when its first kept event is past the follower's position, one
  ``events.dropped`` (count = events missed) comes first. A log deleted is warned about;
  one whose new file does not continue the old one (sequences went back, or another event
  sits at the follower's position) is warned about and read again from its start.
- Wake-ups (``wakeup.Wakeups``): file changes under the root (inotify through watchfiles),
  after which only the logs that changed are read (each again for ``RECENT_S``; a new
  folder makes every log read once); a doorbell datagram from ``wardrik append`` on the
  live channel (see ``live``) for an immediate wake; and, where inotify is unavailable, a
  stat of every followed file every ``poll_s`` seconds (``WARDRIK_POLL_S``, 0.2 s). With
  inotify every file is still looked at every ``FULL_SWEEP_S`` as a safety net, so an idle
  follower's cost does not grow with the number of logs.
- A root deleted under the follower (``rm -rf``) is warned about once; it is then polled
  (as without inotify) until it exists again. A root made again (or replaced) gets a new
  watch, every log is looked for and read at once (a recreated log from its start, as
  above), and a live registration is made again in it.
- Over ``KEEP_OPEN`` logs a followed file is open only while it is read, so a follower
  needs a few file descriptors whatever the number of logs.
- A follower registered for live events that wants ``activity.changed`` makes it itself
  after reading new events (``folding.activity.ActivityTracker``: one fold, then only the
  new lines); appenders only ring.
- Live events (``live=PATTERNS`` on a writable root) are received by a thread into a
  bounded queue, so a follower blocked on its output never blocks an appender; when
  the queue is full, live events are dropped (never kept ones) and counted.
- The engine is silent: it warns through ``warn`` and raises library errors (a corrupt
  complete line is ``CorruptLedger`` unless ``on_corrupt``). It installs no signal
  handlers; ``stop()`` ends the iteration from any thread, and so does ``hangup_fd``
  (e.g. stdout) reporting POLLERR/POLLHUP: the reader of a pipe went away.
- Readers never write: no lock is taken; the only thing created is the live
  registration, and only when ``live`` is given and the root is writable.
"""
from __future__ import annotations

import collections
import os
import select
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from wardrik_cli.store import lines
from wardrik_cli.protocol.cursor import Cursor
from wardrik_cli.errors import CorruptLedger, NotRegular
from wardrik_cli.protocol.envelope import dumps_line
from wardrik_cli.store.log import HEAD, Log, LogView, decode_event
from wardrik_cli.read.scan import OnGap, OnRepeat, scan
from wardrik_cli.read.reader import (  # KEEP_OPEN: over this many logs a file is open only while read
    KEEP_OPEN, Filters, Item, OnCorrupt, Reader, dropped_notice, gap_notice, gap_reporter, gap_warning,
    missing_start, repeat_reporter, window_reaches_dropped,
)
from wardrik_cli.store.recorded_gaps import RecordedGap, any_recorded, covered, older_than, read_gaps
from wardrik_cli.follow.wakeup import GONE, HANGUP, NEW, Waker, Wakeups, dir_identity
from wardrik_cli.protocol.catalogue import PREFIX

if TYPE_CHECKING:
    from wardrik_cli.folding.activity import ActivityTracker
    from wardrik_cli.protocol.names import PatternSet

LogsFn = Callable[[], list[Log]]
Warn = Callable[[str], None]
LIVE_QUEUE_MAX = 10_000
ACTIVITY_CHANGED = PREFIX + "activity.changed"
FULL_SWEEP_S = 30.0  # with inotify, every followed file is still looked at this often
RECENT_S = 2.0  # a log that changed is read at every wake-up for this long after
LIVE_QUEUE_BYTES = 16 << 20


class _LiveReceiver(threading.Thread):
    """Drains the live socket into a bounded queue so the kernel's short queue never fills."""

    def __init__(self, sub: Any, waker: Waker):
        super().__init__(name="wardrik-live", daemon=True)
        self.sub, self.waker = sub, waker
        self.queue: collections.deque[tuple[str, bytes | None]] = collections.deque()
        self.lost = 0
        self.stopper = Waker()  # rung to end the thread
        # Bounded whatever the reader's pace: live events by count and bytes, doorbells by
        # log (one pending ring per log says all there is to say: "read this log").
        self._lock = threading.Lock()
        self._bytes = 0
        self._rung: set[str] = set()

    def pop(self) -> tuple[str, bytes | None] | None:
        with self._lock:
            if not self.queue:
                return None
            entry = self.queue.popleft()
            if entry[1] is None:
                self._rung.discard(entry[0])
            else:
                self._bytes -= len(entry[1])
            return entry

    def run(self) -> None:
        p = select.poll()
        p.register(self.sub.fileno(), select.POLLIN)
        p.register(self.stopper.r, select.POLLIN)
        while True:
            try:
                ready = p.poll()
            except InterruptedError:
                continue
            if any(fd == self.stopper.r for fd, _ in ready):
                return
            got = self.sub.receive()
            with self._lock:
                for entry in got:
                    log_id, body = entry
                    if body is None:
                        if log_id in self._rung:
                            continue
                        self._rung.add(log_id)
                    elif len(self.queue) >= LIVE_QUEUE_MAX or self._bytes + len(body) > LIVE_QUEUE_BYTES:
                        self.lost += 1  # best effort: live events only
                        continue
                    else:
                        self._bytes += len(body)
                    self.queue.append(entry)
            if got:
                self.waker.ring()

    def close(self) -> None:
        self.stopper.ring()
        self.join(timeout=2)
        self.stopper.close()


class _LogState:
    """Where the follower is in one log: position (last sequence seen) and the open file."""

    def __init__(self, log: Log, position: int, last_id: str | None = None):
        self.log = log
        self.position = position
        self.last_id = last_id
        self.view: LogView | None = None
        self.offset = 0
        self.missing_warned = False
        self.refused_warned = False  # its path was refused (a folder on the way became a link): told once
        self.seen_file = False
        self.size_seen: tuple[int, int] = (-1, -1)
        self.activity: ActivityTracker | None = None  # made when a follower wants activity.changed
        self.on_repeat: OnRepeat | None = None  # told of a line out of order (made on the first read)

    def close(self) -> None:
        if self.view is not None:
            self.view.close()
            self.view = None


class Follower:
    """Iterate for ``read.reader.Item``s (kept, notices, live); ``cursor`` is the cursor past the
    last item handed out (``prev_cursor``: before it). See the module docstring."""

    def __init__(self, root: Any, logs_fn: LogsFn, *, after: Cursor | None = None, n: int = 10,
                 follow: bool = False, filters: Filters | None = None, deployment: str = "local",
                 on_corrupt: OnCorrupt = None, live: Sequence[str] | bool = False,
                 warn: Warn | None = None, hangup_fd: int | None = None,
                 poll_s: float | None = None, watch_step_ms: int | None = None):
        if poll_s is None or watch_step_ms is None:
            from wardrik_cli.settings import Settings

            s = Settings.from_env()
            poll_s = s.poll_s if poll_s is None else poll_s
            watch_step_ms = s.watch_step_ms if watch_step_ms is None else watch_step_ms
        self.poll_s, self.watch_step_ms = poll_s, watch_step_ms
        self.root = root
        self.logs_fn = logs_fn
        self.after = dict(after) if after is not None else None
        self.n = max(0, n)
        self.follow = follow
        self.filters = filters or Filters()
        self.deployment = deployment
        self.on_corrupt = on_corrupt
        self.live_patterns = list(live) if live and not isinstance(live, bool) else []
        self._live_set: PatternSet | None = None  # made at the first live event it is asked of
        self.warn = warn or (lambda msg: None)
        self.hangup_fd = hangup_fd
        self.positions: dict[str, int] = {}
        self.states: dict[str, _LogState] = {}
        self.prev_cursor: Cursor = {}
        self.handed = 0  # items handed out: with prev_cursor, a stopped caller knows where it is
        # called with the cursor once the read-back is done and following begins (a cursor
        # file is saved there: a follower killed before its first event restarts from there)
        self.on_following: Callable[[Cursor], None] | None = None
        self.watcher_active = False
        self._stopped = False
        self._wakeups: Wakeups | None = None
        self._receiver: _LiveReceiver | None = None
        self._sub: Any = None
        self._lost_reported = 0
        self._root_abs = os.path.abspath(os.fspath(root.path))
        self._tool_abs = os.path.join(self._root_abs, os.path.basename(os.fspath(root.tool_dir)))
        self._tool_tried: tuple[int, int] | None = None  # the .wardrik/ a registration was last tried in
        self._ruled_out: set[str] = set()
        self._by_path: dict[str, _LogState] = {}  # absolute path -> state, for the watcher's changes
        self._recent: dict[str, float] = {}  # path -> until when it is read at every wake-up

    # -- cursor ----------------------------------------------------------------
    @property
    def cursor(self) -> Cursor:
        cur = dict(self.after or {})
        cur.update(self.positions)
        return cur

    def stop(self) -> None:
        """End the iteration (from any thread); the current item, if any, is finished first."""
        self._stopped = True
        if self._wakeups is not None:
            self._wakeups.ring()

    # -- set-up and tear-down -------------------------------------------------------
    def _arm(self) -> None:
        """Start wake-ups (and the live registration) before reading back."""
        self._wakeups = Wakeups(self._root_abs, step_ms=self.watch_step_ms, hangup_fd=self.hangup_fd, warn=self.warn)
        self.watcher_active = self._wakeups.watching
        self._tool_tried = dir_identity(self._tool_abs)
        self._register_live()

    def _register_live(self) -> None:
        if not (self.live_patterns and self._registrable()):
            return
        from wardrik_cli.follow.live import Subscription

        assert self._wakeups is not None
        types = sorted(self.filters.types) if self.filters.types is not None else None
        try:
            self._sub = Subscription(self.root, self.live_patterns, types)
        except OSError:
            self._sub = None  # a read-only root has no writers, hence no live events
        if self._sub is not None:
            self._receiver = _LiveReceiver(self._sub, self._wakeups.waker)
            self._receiver.start()

    def _keep_registered(self) -> None:
        """Between wake-ups (about once a second): register when the root's ``.wardrik/`` has
        appeared (a plain folder an append made a root, or a root made again in two steps: mkdir,
        then init) or is another one than the last try was in; register again when the
        registration was removed under us (``.wardrik/live/`` deleted), saying so, since live
        events sent meanwhile reached no one."""
        if self._sub is None:
            key = dir_identity(self._tool_abs)
            if key is not None and key != self._tool_tried:
                self._tool_tried = key
                self._register_live()
            return
        from wardrik_cli.follow.live import REG_SUFFIX

        if not os.path.exists(os.path.join(self._sub.dir, self._sub.token + REG_SUFFIX)):
            self._unregister_live()
            self._tool_tried = dir_identity(self._tool_abs)
            self._register_live()
            self.warn("the registration for live events was removed; registered again (live events sent "
                      "meanwhile were missed)")

    def _unregister_live(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
        if self._sub is not None:
            self._sub.close()
            self._sub = None

    def _registrable(self) -> bool:
        """Only a writable root made by ``init`` or an append (it has ``.wardrik/``) gets a
        registration: a read-only one is left untouched, and a plain folder of logs (an
        evidence copy) must not become a root that ``compact`` would then sweep. Until an
        appender makes ``.wardrik/``, there is no one to send live events anyway; the follow
        loop registers once it appears."""
        path = os.fspath(self.root.path)
        tool = os.fspath(self.root.tool_dir)
        from wardrik_cli.store.fsutil import writable_dir

        return os.path.isdir(tool) and writable_dir(path) and writable_dir(tool)

    def close(self) -> None:
        self._stopped = True
        self._unregister_live()
        for st in self.states.values():
            st.close()
        if self._wakeups is not None:
            self._wakeups.close()
            self._wakeups = None

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- iteration ---------------------------------------------------------------------
    def __iter__(self) -> Iterator[Item]:
        try:
            if self.follow:
                self._arm()
            logs = self.logs_fn()
            for log in logs:
                self.states[log.name] = _LogState(log, 0)
            if self.after is not None:
                yield from self._read_back_after(logs)
            else:
                yield from self._read_back_last(logs)
            if not self.follow:
                return
            yield from self._follow()
        finally:
            self.close()

    def _hand_out(self, item: Item) -> Item:
        self.prev_cursor = self.cursor
        self.handed += 1
        if item.seq is not None:
            self.positions[item.log] = item.seq
            st = self.states.get(item.log)
            if st is not None:
                st.position, st.last_id = item.seq, item.event.get("id")
        return item

    def _read_back_after(self, logs: list[Log]) -> Iterator[Item]:
        assert self.after is not None
        with Reader(logs, self.after, filters=self.filters, deployment=self.deployment,
                    on_corrupt=self.on_corrupt, warn=self.warn) as reader:
            for log in logs:
                self.positions[log.name] = reader.positions[log.name]
                self.states[log.name].position = reader.positions[log.name]
            for item in reader:
                if item.seq is None:  # a dropped notice: the reader already moved past it
                    self.positions[item.log] = reader.positions[item.log]
                    self.states[item.log].position = reader.positions[item.log]
                    yield self._hand_out(item)
                    continue
                # the reader may have skipped filtered events before this one
                yield self._hand_out(item)
                if self._stopped:
                    return
            for log in logs:  # past every event read, filtered or not
                st = self.states[log.name]
                if st.position != reader.positions[log.name]:
                    st.position, st.last_id = reader.positions[log.name], None
                self.positions[log.name] = st.position

    def _recorded_between(self, chosen: list[tuple[str, int, bytes, dict[str, Any]]],
                          views: dict[str, LogView]) -> dict[tuple[str, int], list[Item]]:
        """The ``events.dropped`` of the recorded gaps (``store.recorded_gaps``) between two
        events of a log that a read-back shows, keyed by the event each comes before: what
        ``page`` shows in the same place. Gaps older than ``--since`` are not in the window."""
        out: dict[tuple[str, int], list[Item]] = {}
        if not chosen or not any_recorded(views[chosen[0][0]].log.root):
            return out
        since = self.filters.since
        last: dict[str, int] = {}
        gaps: dict[str, dict[int, RecordedGap]] = {}
        for name, seq, _raw, ev in chosen:
            prev = last.get(name)
            last[name] = seq
            if prev is None or seq == prev + 1:
                continue
            view = views[name]
            if name not in gaps:
                gaps[name] = read_gaps(view.log.root, view.log.state_key)
            found, _rest = covered(gaps[name], prev, seq)
            for g in found:
                if older_than(g, since):
                    continue
                raw, notice = gap_notice(view.log, view, g, ev["time"], self.deployment)
                out.setdefault((name, seq), []).append(Item(name, raw, notice, None))
        return out

    def _read_back_last(self, logs: list[Log]) -> Iterator[Item]:
        """The last n accepted events across the logs (``read.backward``: read backwards side
        by side, memory n lines whatever the number of logs)."""
        from wardrik_cli.read.backward import ReadBack

        ends: dict[str, tuple[int, str | None]] = {}
        views: list[LogView] = []
        many = len(logs) > KEEP_OPEN
        try:
            for log in logs:
                view = log.open()
                view.lenient = self.on_corrupt is not None
                view.ends_from_bytes = True  # the lines read back are checked as they are read
                views.append(view)
                last = view.last()
                ends[log.name] = (view.last_seq(), last[1].get("id") if last else None)
                view.first()  # what a dropped notice needs, known before the file is closed
                if many:
                    view.slim()
                    view.release()
            # A recorded gap is an events.dropped among the events shown (below), not a warning.
            # Reporters are made for the logs that need one: over thousands of logs, a pair of
            # closures each would outweigh the read.
            by_log = {log.name: log for log in logs}
            reporters: dict[str, OnGap | None] = {}
            repeats: dict[str, OnRepeat | None] = {}

            def on_gap(name: str, a: int, b: int) -> None:
                if name not in reporters:
                    reporters[name] = gap_reporter(by_log[name], self.warn, [], since=self.filters.since)
                _tell(reporters[name], a, b)

            def on_repeat(name: str, off: int, q: int, after: int) -> None:
                if name not in repeats:
                    repeats[name] = repeat_reporter(name, self.warn)
                _tell_repeat(repeats[name], off, q, after)

            def on_unsorted(name: str) -> None:
                if self.warn is not None:
                    self.warn(f"{name}: its times are not in order, so --since read it back to its start "
                              "(see `wardrik check`)")

            back = ReadBack(views, self.n, self.filters, on_corrupt=self.on_corrupt, on_gap=on_gap,
                            on_repeat=on_repeat, on_unsorted=on_unsorted)
            chosen = back.run()
            by_name = {v.log.name: v for v in views}
            recorded = self._recorded_between(chosen, by_name)
            first_shown: dict[str, int] = {}
            for name, seq, _raw, _ev in chosen:
                first_shown.setdefault(name, seq)
            # Position before each log's first shown event, so every cursor handed out is exact.
            for log in logs:
                fs = first_shown.get(log.name)
                pos = fs - 1 if fs is not None else ends[log.name][0]
                self.positions[log.name] = pos
                self.states[log.name].position = pos
            notices = []
            since = self.filters.since
            # With n events chosen, the window starts at the oldest of them: a log's dropped
            # events all before it (its record's newest) were never in reach of this read.
            oldest = (chosen[0][3]["time"], chosen[0][0], chosen[0][1]) if self.n and len(chosen) >= self.n else None
            for name in sorted(back.exhausted):
                # this log's every matching event is shown: a reader starting at 0 missed what was dropped
                view = by_name[name]
                if missing_start(view) and self.warn is not None:
                    self.warn(gap_warning(name, 0, view.first_seq()))  # no record says it was compacted
                if not window_reaches_dropped(view, 0, since):
                    continue
                if oldest is not None:
                    wm = view.watermark()
                    if wm is not None and wm.time and (wm.time, name, wm.next_sequence - 1) < oldest:
                        continue
                ev = dropped_notice(view.log, view, 0, view.first_seq(), self.deployment)
                notices.append(Item(name, dumps_line(ev)[:-1], ev, None))
        finally:
            for v in views:
                v.close()
        for it in notices:
            yield self._hand_out(it)
        for name, seq, raw, ev in chosen:
            for it in recorded.get((name, seq), ()):
                yield self._hand_out(it)
            yield self._hand_out(Item(name, raw, ev, seq))
            if self._stopped:
                return
        for log in logs:  # past the end of the read-back snapshot (filtered events included)
            last_seq, last_id = ends[log.name]
            if self.positions[log.name] < last_seq:
                self.positions[log.name] = last_seq
                self.states[log.name].position, self.states[log.name].last_id = last_seq, last_id
        for name, (seq, last_id) in ends.items():
            if self.states[name].last_id is None and self.positions[name] == seq:
                self.states[name].last_id = last_id

    # -- following ---------------------------------------------------------------------
    def _follow(self) -> Iterator[Item]:
        wakeups = self._wakeups
        assert wakeups is not None
        import time

        last_rescan = last_sweep = time.monotonic()
        for st in list(self.states.values()):
            yield from self._read_log(st)
        if self.on_following is not None:
            self.on_following(self.cursor)
        while not self._stopped:
            # (per turn: watching stops while the root is gone, or when inotify fails)
            tick = self.poll_s if self.poll_s is not None else (1.0 if wakeups.watching else 0.2)
            rescan_every = FULL_SWEEP_S if wakeups.watching else tick
            if wakeups.wait(tick) == HANGUP:
                return
            if self._stopped:
                return
            root_news = wakeups.check_root()
            if root_news is not None:
                self.watcher_active = wakeups.watching
            if root_news == GONE:
                self.warn(f"the root {self._root_abs} was deleted; waiting for it to be made again")
            elif root_news == NEW:
                if self.live_patterns:
                    # the registration went with the old directory: no appender could reach us
                    self._unregister_live()
                    self._lost_reported = 0
                    self._tool_tried = dir_identity(self._tool_abs)
                    self._register_live()
            elif self.live_patterns:
                self._keep_registered()
            # live events and doorbells, in the order they were sent
            if self._receiver is not None:
                while not self._stopped:
                    entry = self._receiver.pop()
                    if entry is None:
                        break
                    log_id, body = entry
                    if body is None:
                        known = self.states.get(log_id)
                        if known is not None:
                            yield from self._read_log(known)
                        elif self._new_log(log_id):
                            yield from self._read_log(self.states[log_id])
                        continue
                    item = self._live_item(log_id, body)
                    if item is not None:
                        yield self._hand_out(item)
                lost = self._receiver.lost + (self._sub.missed() if self._sub is not None else 0)
                if lost > self._lost_reported:
                    self.warn(f"dropped {lost - self._lost_reported} live event(s): this follower could not keep up")
                    self._lost_reported = lost
            # files: unknown log files the watcher saw, then the followed logs that changed
            # (every followed log at each poll tick without inotify, and every FULL_SWEEP_S
            # with it, as a safety net): an idle follower's cost does not grow with its logs
            changed = wakeups.take_changes()
            now = time.monotonic()
            unknown = {p for p in changed if self._unknown(p)}
            # a new folder, or a new root (what it held before its watch was set was never reported)
            new_folder = root_news == NEW or any(not p.endswith(".jsonl") for p in changed)
            added: list[_LogState] = []
            if now - last_rescan >= rescan_every or unknown or new_folder:
                if now - last_rescan >= rescan_every or root_news == NEW:
                    self._ruled_out.clear()
                last_rescan = now
                for log in self.logs_fn():
                    if log.name not in self.states:
                        self._add(log)
                        added.append(self.states[log.name])
                for p in unknown:  # changed files that logs_fn did not pick: do not rescan for them again
                    if self._unknown(p):
                        self._ruled_out.add(os.path.relpath(p, self._root_abs)[: -len(".jsonl")].replace(os.sep, "/"))
            if not wakeups.watching or new_folder or now - last_sweep >= FULL_SWEEP_S:
                # (a new folder: a log written into it, awaited under a literal id, may be unreported)
                last_sweep = now
                targets = list(self.states.values())
            else:
                if len(self._by_path) != len(self.states):
                    self._by_path = {os.path.abspath(os.fspath(s.log.path)): s for s in self.states.values()}
                # A change can be reported as a writer opens the file, before its bytes land:
                # a log that changed is read again at each wake-up for RECENT_S seconds more.
                for p in changed:
                    if p in self._by_path:
                        self._recent[p] = now + RECENT_S
                self._recent = {p: until for p, until in self._recent.items() if until >= now}
                targets = added + [self._by_path[p] for p in self._recent if p in self._by_path]
            for st in targets:
                if self._stopped:
                    return
                yield from self._read_log(st)

    def _unknown(self, path: str) -> bool:
        """A log file the watcher saw that we do not follow yet (and did not rule out)."""
        from wardrik_cli.protocol.names import LOG_SUFFIX, is_log_id

        rel = os.path.relpath(path, self._root_abs).replace(os.sep, "/")
        if rel == ".wardrik/audit" + LOG_SUFFIX:
            name = "audit"
        elif rel.startswith(".") or "/." in rel or not rel.endswith(LOG_SUFFIX):
            return False
        else:
            name = rel[: -len(LOG_SUFFIX)]
            if not is_log_id(name):
                return False
        return name not in self.states and name not in self._ruled_out

    def _new_log(self, log_id: str) -> bool:
        for log in self.logs_fn():
            if log.name == log_id and log_id not in self.states:
                self._add(log)
                return True
        return False

    def _add(self, log: Log) -> None:
        pos = (self.after or {}).get(log.name, 0)
        self.states[log.name] = _LogState(log, pos)
        if pos:
            self.positions[log.name] = pos

    def _live_item(self, log_id: str, body: bytes) -> Item | None:
        if log_id not in self.states and not self._matches_live(log_id):
            return None
        try:
            ev = orjson.loads(body)
        except ValueError:
            return None
        if not isinstance(ev, dict) or not isinstance(ev.get("time"), str) or not self.filters.accepts(ev):
            return None
        return Item(log_id, body, ev, None)

    def _matches_live(self, log_id: str) -> bool:
        if self._live_set is None:
            from wardrik_cli.protocol.names import PatternSet

            self._live_set = PatternSet(self.live_patterns)
        return self._live_set.covers(log_id)  # the sender's rule too (follow.live)

    def _read_log(self, st: _LogState) -> Iterator[Item]:
        """Deliver what ``st.log`` holds past ``st.position``; following many logs, each file is
        open only while it is read (the descriptors a follower holds do not grow with them)."""
        before = st.position
        try:
            yield from self._read_log_open(st)
            if st.position > before and self._wants_activity() and not self._stopped:
                item = self._activity_item(st, before)
                if item is not None:
                    yield self._hand_out(item)
        finally:
            if st.view is not None and len(self.states) > KEEP_OPEN:
                st.view.release()

    def _wants_activity(self) -> bool:
        """Live activity.changed goes to followers registered for live events that want it."""
        types = self.filters.types
        return self._sub is not None and (types is None or ACTIVITY_CHANGED in types) \
            and ACTIVITY_CHANGED not in self.filters.exclude

    def _activity_item(self, st: _LogState, before: int) -> Item | None:
        """The activity.changed the events just read make, if they changed what the agent does."""
        if st.activity is None:
            from wardrik_cli.folding.activity import ActivityTracker

            st.activity = ActivityTracker(st.log)
        raw = st.activity.advance(before)
        if raw is None:
            return None
        body = raw.rstrip(b"\n")
        ev = orjson.loads(body)
        return Item(st.log.name, body, ev, None) if self.filters.accepts(ev) else None

    def _read_log_open(self, st: _LogState) -> Iterator[Item]:
        """Deliver what ``st.log`` holds past ``st.position``: reopen by sequence on a new file."""
        log = st.log
        try:
            pst = os.stat(log.path)
        except FileNotFoundError:
            if st.seen_file and not st.missing_warned:
                self.warn(f"{log.name}: the log was deleted; waiting for it to be written again")
                st.missing_warned = True
            return
        except OSError:
            return
        if st.view is None or pst.st_ino != st.view.ino:
            yield from self._reopen(st)
            if st.view is None:
                return
        elif (pst.st_size, pst.st_mtime_ns) == st.size_seen:
            return  # nothing new (the common case on every wake-up)
        st.size_seen = (pst.st_size, pst.st_mtime_ns)
        st.view.reacquire()
        fd = st.view.fd
        if fd is None:
            return  # gone between the stat and the open: the next wake-up sees it
        end, size = lines.complete_end(fd)
        if size < st.offset:
            # rewritten in place below where we were: find our place again by sequence
            yield from self._reopen(st)
            if st.view is None:
                return
            fd = st.view.fd
            assert fd is not None  # an open view
            end, size = lines.complete_end(fd)
        if end <= st.offset:
            return
        met: list[RecordedGap] = []
        if st.on_repeat is None:
            st.on_repeat = repeat_reporter(log.name, self.warn)
        for line in scan(st.view, st.offset, end, test=self.filters.line_test(), after_seq=st.position,
                         on_corrupt=self.on_corrupt, on_gap=gap_reporter(log, self.warn, met),
                         gap_from_start=st.position > 0, on_repeat=st.on_repeat):
            if met:  # events dropped at their source just before this line (a copy of a shipped log)
                for g in met:
                    raw, notice = gap_notice(log, st.view, g, line.time, self.deployment)
                    yield self._hand_out(Item(log.name, raw, notice, None))  # the line after it moves the position
                met.clear()
            st.offset = line.end
            ev = line.event
            if ev is not None and self.filters.accepts(ev):
                yield self._hand_out(Item(log.name, line.raw, ev, line.seq))
            else:
                st.position = line.seq
                st.last_id = ev.get("id") if ev is not None else line.raw[len(HEAD):len(HEAD) + 36].decode()
                self.positions[log.name] = line.seq
            if self._stopped:
                return
        st.offset = end  # past lines passed over too (already seen, or corrupt and reported once)

    def _reopen(self, st: _LogState) -> Iterator[Item]:
        log = st.log
        log.root.recheck_folders()  # a folder swapped for a link since it was first looked at is refused
        try:
            view = log.open()
        except NotRegular as e:
            if not st.refused_warned:
                st.refused_warned = True
                self.warn(f"{e}; not read (following goes on)")
            return
        st.refused_warned = False
        if view.fd is None:
            return
        had_file = st.seen_file
        was_missing = st.missing_warned
        st.close()
        st.view = view
        st.seen_file = True
        st.missing_warned = False
        if st.position > 0:
            verdict = _classify(view, st.position, st.last_id, replaced=had_file)
            if verdict == "recreated" or (verdict == "continue" and was_missing and st.last_id is None):
                self.warn(f"{log.name}: the log was deleted and recreated; reading it again from its start")
                st.position, st.last_id = 0, None
                self.positions[log.name] = 0
            elif verdict == "dropped":
                first = view.first_seq()
                ev = dropped_notice(log, view, st.position, first, self.deployment)
                st.position, st.last_id = first - 1, None
                self.positions[log.name] = first - 1  # before the hand-out: a cursor saved then is past it
                yield self._hand_out(Item(log.name, dumps_line(ev)[:-1], ev, None))
        elif had_file and was_missing:
            self.warn(f"{log.name}: the log was deleted and recreated; reading it again from its start")
        else:
            # A log first read while following (it began to match, or was empty at the start):
            # a reader at 0 is told of what compaction dropped before it got here, as `page` is
            try:
                reaches = window_reaches_dropped(view, 0, self.filters.since)
            except CorruptLedger:
                reaches = False  # a damaged first line: the read meets it and says so
            if reaches:
                first = view.first_seq()
                ev = dropped_notice(log, view, 0, first, self.deployment)
                st.position, st.last_id = first - 1, None
                self.positions[log.name] = first - 1  # before the hand-out: a cursor saved then is past it
                yield self._hand_out(Item(log.name, dumps_line(ev)[:-1], ev, None))
        st.offset = view.offset_after_seq(st.position)


def _tell(on_gap: OnGap | None, before: int, after: int) -> None:
    if on_gap is not None:
        on_gap(before, after)


def _tell_repeat(on_repeat: OnRepeat | None, off: int, seq: int, after: int) -> None:
    if on_repeat is not None:
        on_repeat(off, seq, after)


def _classify(view: LogView, position: int, last_id: str | None, *, replaced: bool = False) -> str:
    """Does this file continue the log we followed to ``position``?

    ``continue``: yes; ``dropped``: yes, but compaction dropped events past our position;
    ``recreated``: no (sequences went back, or another event holds our position, or the
    file was replaced by one that no compaction record vouches for)."""
    try:
        first_seq, last_seq = view.first_seq(), view.last_seq()
    except CorruptLedger:
        return "continue"  # let the reader meet the corruption and report it
    if last_seq < position:
        return "recreated"
    if first_seq > position + 1:
        return "dropped"
    if last_id is None:
        # We never saw the event at our position (we started from a cursor). A file that
        # replaced the one we had open is compaction's only when its watermark says so.
        if replaced and first_seq <= position and view.watermark() is None:
            return "recreated"
        return "continue"
    if first_seq > position:
        return "continue"
    fd = view.fd
    assert fd is not None  # an open view
    off = view.offset_after_seq(position - 1)
    item = lines.first_line(fd, view.end) if off == 0 else None
    if off != 0:
        for o, raw in lines.iter_lines(fd, off, view.end):
            item = (o, raw)
            break
    if item is None:
        return "continue"
    try:
        ev = decode_event(item[1])
    except ValueError:
        return "continue"
    if int(ev["sequence"]) == position and ev.get("id") != last_id:
        return "recreated"
    return "continue"


def tail_items(root: Any, logs_fn: LogsFn, *, after: Cursor | None = None, n: int = 10,
               follow: bool = False, filters: Filters | None = None, deployment: str = "local",
               on_corrupt: OnCorrupt = None, live: Sequence[str] | bool = False,
               warn: Warn | None = None, hangup_fd: int | None = None,
               poll_s: float | None = None, watch_step_ms: int | None = None) -> Follower:
    """The reusable follow: ``for item in tail_items(...)`` yields ``read.reader.Item``s.

    root: a ``store.layout.Root``. logs_fn(): the current list of ``store.log.Log`` to follow, called
    at the start and again when new log files appear (agents: the logs the patterns match,
    literal ids that do not exist yet included; audit: ``[Log.audit(root)]``).
    after: a decoded cursor to read on from (every event after it); else the last ``n``
    events (``n=0``: only what is written next). follow: keep following after the
    read-back. filters: ``reader.Filters`` (``events.dropped`` always passes).
    on_corrupt: called with a ``CorruptLedger`` to skip a corrupt line (default: raise).
    live: patterns to register for live events (writable roots only); False for none.
    warn: called with warning text. hangup_fd: end when this fd reports POLLERR/POLLHUP.
    The returned ``Follower`` has ``.cursor`` (past the last item), ``.stop()``, ``.close()``.
    """
    return Follower(root, logs_fn, after=after, n=n, follow=follow, filters=filters, deployment=deployment,
                    on_corrupt=on_corrupt, live=live, warn=warn, hangup_fd=hangup_fd,
                    poll_s=poll_s, watch_step_ms=watch_step_ms)


def agent_logs_fn(root: Any, patterns: list[str]) -> LogsFn:
    """logs_fn for agents' logs: every log the patterns match now, plus the literal ids."""
    from wardrik_cli.protocol.names import has_wildcards, validate_pattern

    for p in patterns:
        validate_pattern(p)
    literals = [p for p in patterns if not has_wildcards(p)]

    def logs() -> list[Log]:
        ids = set(root.match(patterns)) | set(literals)
        return [Log.agent(root, i) for i in sorted(ids)]
    return logs


def stream(root: Any, patterns: list[str], *, after: str | None = None, types: list[str] | None = None,
           deployment: str | None = None) -> Iterator[tuple[dict[str, Any], str]]:
    """Follow ``patterns`` for as long as you take from it: (event, cursor past it as text).

    With ``after`` (cursor text) it reads on from there; without, it starts at what is
    written next. Live events come too (the cursor does not move for them)."""
    from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor

    root.require()
    f = tail_items(root, agent_logs_fn(root, patterns), after=decode_cursor(after) if after else None, n=0, follow=True,
                   filters=Filters.build(types), deployment=root.deployment(deployment), live=patterns)
    try:
        for item in f:
            yield item.event, encode_cursor(f.cursor)
    finally:
        f.close()

