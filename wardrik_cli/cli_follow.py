"""The ``tail`` command (Watch panel) and ``run_tail``, the printing half shared with ``audit tail``.

Contract kept here (the engine's is in ``follow``):
- Every event printed (jsonl: the stored line byte for byte; pretty: one line) is flushed,
  then the cursor past it is saved to ``--cursor-file`` (temp file + rename, so it is
  never half-written; fsynced when the command ends). Ctrl-C and SIGTERM are held off
  while an event is printed and its cursor saved, so a follower stopped and restarted
  with the same file resumes with no gap and no repeat.
- Ctrl-C, SIGTERM and a closed stdout (noticed while idle too) end a follow with exit 0.
- ``--exec CMD``: each event goes to ``sh -c CMD`` on stdin with the cursor past it in
  ``WARDRIK_CURSOR``; the cursor file moves on only after CMD exits 0. On failure the
  follow restarts from the last saved cursor after a backoff (0.5 s doubling to 30 s):
  at-least-once, so CMD should drop a repeat by the event's id.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import typer

from .cli import CTX, FormatOpt, PatternsArg, SkipCorrupt, app, skip_corrupt_handler, warn
from .output import Format

EXEC_BACKOFF_S = (0.5, 30.0)


class _Stopper:
    """SIGINT/SIGTERM become KeyboardInterrupt, but never in the middle of a held section."""

    def __init__(self) -> None:
        self.holding = 0
        self.pending = False
        self.installed = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handler)
        self._old[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._give_way)
        self.installed = True

    def uninstall(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        if self.holding:
            if self.pending:
                raise KeyboardInterrupt  # asked twice: stop now
            self.pending = True
            # A held section lasts microseconds unless stdout is blocked (nobody reads the
            # pipe): then give way after a second rather than never end.
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            return
        raise KeyboardInterrupt

    def _give_way(self, signum: int, frame: Any) -> None:
        if self.holding and self.pending:
            raise KeyboardInterrupt

    def __enter__(self) -> "_Stopper":
        self.holding += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.holding -= 1
        if not self.holding and self.pending:
            self.pending = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise KeyboardInterrupt


class CursorSaver:
    """Saves the cursor after each event: atomic (rename) each time, durable (fsync) at the end."""

    def __init__(self, path: Optional[Path]):
        self.path = Path(path) if path is not None else None
        self.last: Optional[dict] = None
        self.dirty = False

    def save(self, cursor: dict) -> None:
        if self.path is None:
            return
        from .cursor import encode
        from .errors import Failure

        self.last = dict(cursor)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, (encode(cursor) + "\n").encode())
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as e:
            raise Failure(f"cannot write cursor file {self.path}: {e.strerror}") from None
        self.dirty = True

    def finish(self, cursor: Optional[dict] = None) -> None:
        if self.path is None:
            return
        from .cursor import write_file

        if cursor is not None and cursor != self.last:
            self.last, self.dirty = dict(cursor), True
        if self.dirty and self.last is not None:
            write_file(self.path, self.last)  # temp, fsync, rename
            self.dirty = False


def _printer(fmt: Format) -> Callable[[Any], None]:
    if fmt == Format.pretty:
        from . import render
        return render.FollowPrinter()
    out = sys.stdout.buffer

    def write(item: Any) -> None:
        out.write(item.raw + b"\n")
        out.flush()
    return write


def run_tail(root: Any, logs_fn: Callable[[], list], *, after: Optional[dict], n: int, follow: bool,
             filters: Any, deployment: str, on_corrupt: Any = None, fmt: Optional[Format] = None,
             cursor_file: Optional[Path] = None, exec_cmd: Optional[str] = None,
             live: Sequence[str] | bool = False) -> None:
    """Print (or hand to ``--exec``) what ``follow.tail_items`` yields; the whole of a tail command.

    root: ``layout.Root``; logs_fn(): the current ``ledger.Log`` list (see ``follow.tail_items``);
    after: the decoded start cursor (from ``--after`` or an existing cursor file; None for the
    last ``n``); follow: ``-f``; filters: ``reader.Filters``; deployment: for dropped notices;
    on_corrupt: ``cli.skip_corrupt_handler(skip)``; fmt: ``--format`` as given (None: pretty
    on a terminal, else jsonl); cursor_file: ``--cursor-file``; exec_cmd: ``--exec``; live:
    patterns to receive live events for (False for the audit log). ``audit tail`` is::

        run_tail(root, lambda: [Log.audit(root)], after=start, n=n, follow=follow, filters=filters,
                 deployment=CTX.deployment(), on_corrupt=skip_corrupt_handler(skip), fmt=fmt,
                 cursor_file=cursor_file, exec_cmd=exec_cmd)
    """
    from . import output
    from .cursor import encode
    from .errors import BadInput
    from .follow import tail_items

    fmt = output.choose(fmt, Format.jsonl)
    if fmt == Format.json and follow:
        raise BadInput("--format json prints one document; with -f use jsonl (or pretty)")
    stopper = _Stopper()
    saver = CursorSaver(cursor_file)
    if follow:
        sys._wardrik_following = True  # type: ignore[attr-defined]  # Ctrl-C is a normal end (cli.main)
        stopper.install()
    hangup = _stdout_fd() if follow and exec_cmd is None else None
    kw = dict(n=n, follow=follow, filters=filters, deployment=deployment, on_corrupt=on_corrupt, live=live,
              warn=warn, hangup_fd=hangup)
    try:
        if exec_cmd is not None:
            _run_exec(root, logs_fn, after, kw, exec_cmd, saver, stopper)
            return
        f = tail_items(root, logs_fn, after=after, **kw)
        try:
            if fmt == Format.json:
                output.write_events_json((it.raw for it in f), lambda: encode(f.cursor))
                output.flush()
                saver.finish(f.cursor)
                return
            show = _printer(fmt)
            for item in f:
                with stopper:
                    show(item)
                    if item.seq is not None or item.event.get("type") == "wardrik.events.dropped":
                        saver.save(f.cursor)
            saver.finish(f.cursor)
        finally:
            f.close()
    except KeyboardInterrupt:
        if not follow:
            raise
        _quiet_stdout()  # output still buffered for a blocked reader is dropped, not waited on
    except BrokenPipeError:
        # the reader went away (`| head`): a normal end, like coreutils tail; Typer would say 1
        _quiet_stdout()
    finally:
        try:
            saver.finish()
        finally:
            stopper.uninstall()


def _quiet_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _stdout_fd() -> Optional[int]:
    try:
        return sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def _run_exec(root: Any, logs_fn: Any, after: Optional[dict], kw: dict, cmd: str, saver: CursorSaver,
              stopper: _Stopper) -> None:
    import subprocess

    from .cursor import encode
    from .follow import tail_items

    start = after
    delay = EXEC_BACKOFF_S[0]
    while True:
        f = tail_items(root, logs_fn, after=start, **kw)
        failed = False
        try:
            for item in f:
                env = dict(os.environ, WARDRIK_CURSOR=encode(f.cursor), WARDRIK_LOG=item.log)
                rc = subprocess.run(cmd, shell=True, input=item.raw + b"\n", env=env).returncode
                if rc != 0:
                    # Restart from the cursor saved before this event: it comes again.
                    start = saver.last if saver.last is not None else f.prev_cursor
                    warn(f"--exec exited {rc} on {item.event.get('id')}; retrying from the saved cursor in {delay:g}s")
                    failed = True
                    break
                delay = EXEC_BACKOFF_S[0]
                with stopper:
                    saver.save(f.cursor)
            else:
                saver.finish(f.cursor)
        finally:
            f.close()
        if not failed:
            return
        time.sleep(delay)
        delay = min(delay * 2, EXEC_BACKOFF_S[1])
        kw = dict(kw, n=0)


@app.command(rich_help_panel="Watch")
def tail(
    patterns: list[str] = PatternsArg,
    n: int = typer.Option(10, "-n", "--lines", min=0, help="Show the last N events first (0: only what is written next)."),
    follow: bool = typer.Option(False, "-f", "--follow", help="Keep following: every event as it is written, live ones too, new logs included."),
    after: Optional[str] = typer.Option(None, "--after", metavar="CURSOR", help="Start after this cursor (every event after it) instead of the last N."),
    cursor_file: Optional[Path] = typer.Option(None, "--cursor-file", metavar="FILE",
                                               help="Start from the cursor in FILE when it exists; save the cursor there after each event."),
    types: Optional[str] = typer.Option(None, "--types", "-t", metavar="T,..", help="Only these types, kept and live (events.dropped always comes)."),
    exec_cmd: Optional[str] = typer.Option(None, "--exec", metavar="CMD",
                                           help="Run `sh -c CMD` per event: the event on stdin, the cursor past it in "
                                                "$WARDRIK_CURSOR. The cursor file moves on only when CMD exits 0; on failure "
                                                "the listener retries from the saved cursor with backoff (at least once: "
                                                "drop repeats by event id)."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Show the last events across the matched logs, then (with -f) follow them as they are written.

    Between reading back and following no event is missed or shown twice. A half-written
    line is waited for; a compacted log is followed on (with an events.dropped if events
    you had not seen were dropped); a deleted and recreated log is read again from its
    start after a warning. Ctrl-C, SIGTERM or a closed pipe end it cleanly (exit 0).

    Examples:

      wardrik tail -f 'acme/*'

      wardrik tail -f 'acme/*' --types run.completed \\
        --cursor-file runs.cursor --exec ./on-run.sh
    """
    from .cli import load_cursor
    from .follow import agent_logs_fn
    from .reader import Filters, parse_types, resolve_logs

    filters = Filters.build(parse_types(types))
    start = load_cursor(after, cursor_file)
    root = CTX.root
    root.require()
    if follow:
        logs_fn = agent_logs_fn(root, patterns)
    else:
        resolve_logs(root, patterns)  # a literal id naming no log is an error without -f
        logs_fn = lambda: resolve_logs(root, patterns)  # noqa: E731
    run_tail(root, logs_fn, after=start, n=n, follow=follow, filters=filters, deployment=CTX.deployment(),
             on_corrupt=skip_corrupt_handler(skip_corrupt), fmt=fmt, cursor_file=cursor_file, exec_cmd=exec_cmd,
             live=patterns if follow else False)
