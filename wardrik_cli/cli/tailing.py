"""Printing a tail, shared by ``tail`` and ``audit tail`` (the engine is ``follow.follower``).

Contract kept here:
- Every event printed (jsonl: the stored line byte for byte; pretty: one line) is flushed,
  then the cursor past it is saved to ``--cursor-file`` (atomically each time, durably when
  the command ends). A tail without -f and without a cursor file writes in blocks. Ctrl-C
  and SIGTERM are held off while an event is printed and its
  cursor saved, so a follower stopped and restarted with the same file resumes with no gap
  and no repeat.
- Ctrl-C, SIGTERM and a closed stdout (noticed while idle too) end a follow with exit 0.
- ``--exec CMD`` is a ``follow.listener.Listener`` whose handler pipes each event to
  ``sh -c CMD`` with the cursor past it in ``WARDRIK_CURSOR``; the cursor file moves on only
  after CMD exits 0. On failure the listener restarts from the last saved cursor after a
  backoff (0.5 s doubling to 30 s): at-least-once, so CMD should drop a repeat by the
  event's id. Without ``-f`` it gives up after ``EXEC_RETRIES`` failures in a row (exit 1).
- CMD runs in a process group of its own (``follow.hook``). With ``--exec``, Ctrl-C, SIGTERM
  and SIGHUP (a closed terminal) stop the tail, with or without -f; one that comes while CMD
  runs is sent on to CMD's whole group, SIGKILL follows after a grace, and only then does
  the tail end: no hook outlives it, and the interrupted event, its cursor never saved,
  comes again on the next run. A follow ends with exit 0 as above; without -f, Ctrl-C is
  exit 130 and SIGTERM/SIGHUP end the tail as they would have (raised again once the hook
  is gone and the cursor is saved).
- ``tail -f`` of a pattern that matches no log yet says so once on stderr (``note: waiting
  for ...``, with the closest existing ids for a literal one, as ``tail`` without -f names
  them in its error) and follows on: the log is shown once it is written.
- Pretty output is ``render.streams.FollowPrinter`` (fixed columns, one line per streamed
  message); warnings go through it so they never land inside its region on a terminal.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from wardrik_cli.cli.context import Invocation, current
from wardrik_cli.cli.entry import interrupt, retry
from wardrik_cli.cli.output import Format, choose, write_events_json, write_lines
from wardrik_cli.errors import BadInput, Failure
from wardrik_cli.protocol.cursor import Cursor, encode_cursor
from wardrik_cli.read.reader import Filters, Item, OnCorrupt
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log

EXEC_BACKOFF_S = (0.5, 30.0)
EXEC_RETRIES = 3  # without -f: a command that fails this many times more ends the tail (exit 1)


class Stopper:
    """SIGINT/SIGTERM (and SIGHUP with ``hangup``) become KeyboardInterrupt, but never in the
    middle of a held section; ``signum`` is the last such signal received."""

    def __init__(self, *, hangup: bool = False) -> None:
        self.holding = 0
        self.pending = False
        self.signum: int | None = None
        self.hangup = hangup
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # an in-process run on another thread: the caller stops it
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handler)
        if self.hangup and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup's choice stands
            self._old[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._handler)
        self._old[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._give_way)

    @property
    def installed(self) -> bool:
        return bool(self._old)

    def uninstall(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        self.signum = signum
        if self.holding:
            if self.pending:
                raise KeyboardInterrupt  # asked twice: stop now
            self.pending = True
            # A held section lasts microseconds unless stdout is blocked (nobody reads the
            # pipe): then give way after a second rather than never end.
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            return
        interrupt(signum, frame)  # KeyboardInterrupt, unless in the middle of an import: then once it is over

    def _give_way(self, signum: int, frame: Any) -> None:
        if self.holding and self.pending:
            raise KeyboardInterrupt
        retry(signum, frame)  # a signal that came during an import

    def __enter__(self) -> Stopper:
        self.holding += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.holding -= 1
        if not self.holding and self.pending:
            self.pending = False
            if self._old:
                signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt


class CursorSaver:
    """Saves the cursor after each event: atomic (rename) each time, durable (fsync) at the end."""

    def __init__(self, path: Path | None):
        self.path = Path(path) if path is not None else None
        self.last: Cursor | None = None
        self.dirty = False

    def save(self, cursor: Cursor) -> None:
        if self.path is None:
            return
        from wardrik_cli.store.fsutil import write_atomic

        self.last = dict(cursor)
        try:
            write_atomic(self.path, (encode_cursor(cursor) + "\n").encode(), durable=False)
        except OSError as e:
            raise Failure(f"cannot write cursor file {self.path}: {e.strerror}") from None
        self.dirty = True

    def finish(self, cursor: Cursor | None = None) -> None:
        if self.path is None:
            return
        from wardrik_cli.read.cursor_file import write_file

        if cursor is not None and cursor != self.last:
            self.last, self.dirty = dict(cursor), True
        if self.dirty and self.last is not None:
            write_file(self.path, self.last)  # temp, fsync, rename, fsync the directory
            self.dirty = False


def _pretty(inv: Invocation, logs_fn: Callable[[], list[Log]]) -> Any:
    from wardrik_cli.cli.render.streams import FollowPrinter

    printer = FollowPrinter([lg.name for lg in logs_fn()], warn=inv.warn)  # the ids matched now size the log column
    inv.cleanups.append(printer.close)
    return printer


def _jsonl(inv: Invocation) -> Callable[[Item], None]:
    out = inv.stdout

    def write(item: Item) -> None:
        out.write(item.raw + b"\n")
        out.flush()
    return write


def close_log_ids(root: Root, log_id: str) -> list[str]:
    """Existing log ids close to ``log_id`` (a typo's likely meaning), closest first; the same
    rule as the error of ``read.reader.resolve_logs``."""
    import difflib

    return difflib.get_close_matches(log_id, list(root.iter_log_ids()), n=3, cutoff=0.8)


def note_waiting(root: Root, patterns: Sequence[str], note: Callable[[str], None]) -> None:
    """One ``note:`` per pattern that matches no log yet (tail -f waits for it; tail without -f
    refuses a literal one), so a typo is not a silent wait."""
    from wardrik_cli.protocol.names import has_wildcards

    for p in patterns:
        if root.match([p]):
            continue
        if has_wildcards(p):
            note(f"waiting for a log matching {p}; none exists yet")
        elif root.is_folder(p):
            note(f"waiting for a log under {p}; none exists yet")
        else:
            close = close_log_ids(root, p)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            note(f"waiting for {p}, which does not exist yet{hint}")


def run_tail(root: Root, logs_fn: Callable[[], list[Log]], *, after: Cursor | None, n: int, follow: bool,
             filters: Filters, deployment: str, on_corrupt: OnCorrupt = None, fmt: Format | None = None,
             cursor_file: Path | None = None, exec_cmd: str | None = None,
             live: Sequence[str] | bool = False) -> None:
    """Print (or hand to ``--exec``) what ``follow.tail_items`` yields: the whole of a tail command.

    logs_fn(): the current ``store.log.Log`` list (see ``follow.tail_items``); after: the
    decoded start cursor (None: the last ``n``); follow: ``-f``; live: patterns to receive
    live events for (False for the audit log).
    """
    from wardrik_cli.follow.follower import tail_items

    inv = current()
    shown = choose(fmt, Format.jsonl)
    if shown == Format.json and follow:
        raise BadInput("--format json prints one document; with -f use jsonl (or pretty)")
    if follow and live and not isinstance(live, bool):
        from wardrik_cli.protocol.names import MAX_GLOBS, PatternSet

        if PatternSet.too_many(list(live)):  # refused before anything is printed (see ``follow.live``)
            raise BadInput(f"a follower takes at most {MAX_GLOBS} patterns with '*' or '?' (live events are sent "
                           "by them): name a folder, or fewer globs")
    stopper = Stopper(hangup=exec_cmd is not None)
    saver = CursorSaver(cursor_file)
    if follow:
        inv.following = True
    if follow or exec_cmd is not None:  # without -f too, a signal must end a hook before the tail
        stopper.install()
    printer: Any = None
    n_shown = 0  # items shown (printed, and the cursor saved past them)
    stopped_at: Cursor | None = None  # where a stopped follow ended (see below)
    raise_again: int | None = None  # a signal that ends a tail without -f, once all is tidied
    try:
        if follow and live and not isinstance(live, bool):  # agents' logs, by pattern (not the audit log)
            note_waiting(root, live, inv.note)
        if shown == Format.pretty and exec_cmd is None:
            printer = _pretty(inv, logs_fn)
        kw: dict[str, Any] = dict(n=n, follow=follow, filters=filters, deployment=deployment, on_corrupt=on_corrupt,
                                  live=live, warn=printer.warn if printer is not None else inv.warn,
                                  poll_s=inv.settings.poll_s, watch_step_ms=inv.settings.watch_step_ms)
        if exec_cmd is not None:
            _run_exec(root, logs_fn, after, kw, exec_cmd, saver, stopper, inv)
            return
        f = tail_items(root, logs_fn, after=after, hangup_fd=inv.stdout_fd() if follow else None, **kw)
        if follow and cursor_file is not None:
            f.on_following = saver.save  # a follower killed before its first event restarts from here
        looping = False
        try:
            if shown == Format.json:
                write_events_json((it.raw for it in f), lambda: encode_cursor(f.cursor))
                saver.finish(f.cursor)
                return
            if shown == Format.jsonl and not follow and cursor_file is None:
                write_lines(it.raw for it in f)  # nothing waits on each line: written in blocks
                return
            show = printer if printer is not None else _jsonl(inv)
            looping = True
            for item in f:
                with stopper:
                    show(item)
                    n_shown += 1
                    if item.seq is not None or item.event.get("type") == "wardrik.events.dropped":
                        saver.save(f.cursor)
            saver.finish(f.cursor)
        finally:
            # Stopped (Ctrl-C, a closed pipe): the cursor is past every event read, filtered
            # ones too, unless the last one handed out was not shown (then just before it).
            if looping:
                stopped_at = f.cursor if f.handed == n_shown else f.prev_cursor
            f.close()
    except KeyboardInterrupt:
        if not follow:
            if stopper.installed and stopper.signum in (signal.SIGTERM, signal.SIGHUP):
                raise_again = stopper.signum  # not a Ctrl-C (exit 130): end as that signal would have
            raise
        inv.discard_out()  # output still buffered for a blocked reader is dropped, not waited on
    except BrokenPipeError:
        # the reader went away (`| head`): a normal end, like coreutils tail
        inv.discard_out()
    finally:
        try:
            saver.finish(stopped_at)
        finally:
            if printer is not None:
                printer.close()  # no write from its ticker after this (an error may be printed next)
            stopper.uninstall()
            if raise_again is not None:
                signal.raise_signal(raise_again)  # the disposition it had before: by default, the end


def _run_exec(root: Root, logs_fn: Callable[[], list[Log]], after: Cursor | None, kw: dict[str, Any], cmd: str,
              saver: CursorSaver, stopper: Stopper, inv: Invocation) -> None:
    """``--exec``: a listener whose handler runs ``sh -c CMD`` per event (see the module docstring)."""
    from wardrik_cli.follow.hook import Hook
    from wardrik_cli.follow.listener import Listener

    hook = Hook(cmd, stop_signal=lambda: stopper.signum)

    def handle(event: dict[str, Any], listener: Listener) -> bool:
        item = listener.item
        assert item is not None and listener.cursor is not None
        env = dict(inv.env, WARDRIK_CURSOR=listener.cursor, WARDRIK_LOG=item.log)
        rc = hook.run(item.raw + b"\n", env, guard=lambda: stopper)
        if rc != 0:
            failures[0] = rc
            return False
        with stopper:
            from wardrik_cli.protocol.cursor import decode_cursor

            saver.save(decode_cursor(listener.cursor))
        return True

    def on_error(_result: Any) -> None:
        item = listener.item
        if kw["follow"] and _reader_gone(inv.stdout_fd()):
            # the hooks write to our stdout, whose reader went away: each try fails (SIGPIPE);
            # a follow ends on a closed pipe, as it does while idle
            listener.stop()
            return
        inv.warn(f"--exec exited {failures[0]} on {item.event.get('id') if item else '?'}; "
                 f"retrying from the saved cursor in {listener.next_delay:g}s")

    failures = [0]
    live = list(kw["live"]) if kw["live"] and not isinstance(kw["live"], bool) else []
    listener = Listener(root, live, handle, cursor=lambda: encode_cursor(saver.last) if saver.last else None,
                        deployment=kw["deployment"], live=bool(live), on_error=on_error,
                        backoff=(inv.settings.exec_backoff_s, max(EXEC_BACKOFF_S[1], inv.settings.exec_backoff_s)),
                        logs_fn=logs_fn, filters=kw["filters"], start=after, n=kw["n"], follow=kw["follow"],
                        retries=None if kw["follow"] else EXEC_RETRIES, on_corrupt=kw["on_corrupt"],
                        warn=kw["warn"], poll_s=kw["poll_s"], watch_step_ms=kw["watch_step_ms"],
                        hangup_fd=inv.stdout_fd() if kw["follow"] else None)  # a closed pipe ends it, even idle
    if kw["follow"] and saver.path is not None:
        listener.on_following = saver.save  # a listener killed before its first event restarts from here
    end = listener.run()
    if end is not None:
        saver.finish(end)


def _reader_gone(fd: int | None) -> bool:
    """Does ``fd`` (our stdout) report that the reader of its pipe went away (POLLERR/POLLHUP)?"""
    if fd is None:
        return False
    import select

    p = select.poll()
    p.register(fd, 0)  # POLLERR/POLLHUP/POLLNVAL are always reported
    return any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _fd, ev in p.poll(0))
