"""``tail`` and ``activity`` (Watch panel): thin shells over ``follow`` and ``fold.activity``.

``activity --watch`` redraws when a matched log changes, woken by ``follow.wakeup`` (the
same wake-ups as ``tail -f``), and ends with exit 0 on Ctrl-C, SIGTERM or a closed pipe.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import orjson
import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import Invocation, current
from wardrik_cli.cli.inputs import build_filters, load_cursor, on_corrupt, patterns_or_all
from wardrik_cli.cli.options import (
    ExcludeTypes, FormatOpt, Grep, IgnoreCase, Lines, Patterns, RemoteInterval, Run, Since, SkipCorrupt, TailCursorFile,
    Types, Where,
)
from wardrik_cli.cli.output import Format, choose, emit
from wardrik_cli.errors import NoSuchRoot
from wardrik_cli.read.reader import OnCorrupt

WATCH_TICK_S = 1.0  # the "for" column ticks this often while nothing changes
GONE_POLL_S = 0.2  # a deleted root is looked for this often until it is made again


@app.command(rich_help_panel="Watch")
def tail(
    patterns: Patterns = None,
    n: Lines = 10,
    follow: Annotated[bool, typer.Option(
        "-f", "--follow",
        help="Keep following: every event as it is written, live ones too, new logs included.")] = False,
    after: Annotated[str | None, typer.Option(
        "--after", metavar="CURSOR",
        help="Start after this cursor (every event after it) instead of the last N.")] = None,
    cursor_file: TailCursorFile = None,
    types: Types = None,
    exclude: ExcludeTypes = None,
    grep: Grep = None,
    ignore_case: IgnoreCase = False,
    where: Where = None,
    since: Since = None,
    run: Run = None,
    exec_cmd: Annotated[str | None, typer.Option(
        "--exec", metavar="CMD",
        help="Run `sh -c CMD` per event: the event on stdin, the cursor past it in $WARDRIK_CURSOR. The cursor "
             "file moves on only when CMD exits 0; on failure the listener retries from the saved cursor with "
             "backoff (at least once: drop repeats by event id).")] = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
    interval: RemoteInterval = None,  # used where a remote root is opened (cli.context), not here
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
    from wardrik_cli.cli.tailing import run_tail
    from wardrik_cli.follow.follower import agent_logs_fn
    from wardrik_cli.read.reader import resolve_logs

    inv = current()
    patterns = patterns_or_all(patterns)
    filters = build_filters(types=types, exclude=exclude, grep=grep, ignore_case=ignore_case, where=where,
                            run=run, since=since)
    start = load_cursor(after, cursor_file)
    root = inv.root
    root.require()
    if follow:
        logs_fn = agent_logs_fn(root, patterns)
    else:
        resolve_logs(root, patterns)  # a literal id naming no log is an error without -f
        logs_fn = lambda: resolve_logs(root, patterns)  # noqa: E731
    run_tail(root, logs_fn, after=start, n=n, follow=follow, filters=filters, deployment=inv.deployment(),
             on_corrupt=on_corrupt(skip_corrupt), fmt=fmt, cursor_file=cursor_file, exec_cmd=exec_cmd,
             live=patterns if follow else False)


@app.command(rich_help_panel="Watch")
def activity(
    patterns: Patterns = None,
    watch: Annotated[bool, typer.Option(
        "--watch", "-w", help="Keep a live table, updated as the logs change (Ctrl-C ends it).")] = False,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
) -> None:
    """Show what each matched agent is doing now, for how long, and how many messages wait.

    doing (json): the tool calls running, else the model call or wait on a person the run
    started last, ended or not; empty once the run ends (the table shows only what is still
    open). pending: messages received and not yet taken by a run. The table also shows the
    open run when nothing else is open, and
    how the last run ended (completed, failed, abandoned) and when. --watch keeps a live
    table that changes as the logs do, its columns fixed for the session (Ctrl-C ends it,
    exit 0); on a pipe it prints a JSON line at each change.

    Examples:

      wardrik activity 'acme/*'

      wardrik activity 'acme/*' --watch
    """
    from wardrik_cli.folding.activity import activities, details
    from wardrik_cli.read.reader import resolve_logs

    inv = current()
    patterns = patterns_or_all(patterns)
    corrupt = on_corrupt(skip_corrupt)
    shown = choose(fmt, Format.json)
    if watch:
        _watch(inv, patterns, shown, corrupt)
        return
    logs = resolve_logs(inv.root, patterns)

    def pretty() -> None:
        from wardrik_cli.cli.render.fold import print_activities

        print_activities(details(logs, corrupt, inv.warn))  # the table adds the open run and the last run's end

    acts = None if shown == Format.pretty else activities(logs, corrupt, inv.warn)
    emit(shown, pretty=pretty, jsonl=[acts], json=acts)


def _watch(inv: Invocation, patterns: list[str], fmt: Format, corrupt: OnCorrupt) -> None:
    """Redraw at each change of a matched log; Ctrl-C, SIGTERM or a closed stdout end it (exit 0)."""
    from wardrik_cli.folding.activity import activities, details
    from wardrik_cli.follow.wakeup import GONE, HANGUP, NEW, Wakeups
    from wardrik_cli.protocol.names import has_wildcards
    from wardrik_cli.read.reader import resolve_logs

    root = inv.root
    root.require()
    inv.following = True
    if threading.current_thread() is threading.main_thread():
        from wardrik_cli.cli.entry import interrupt

        old = signal.signal(signal.SIGTERM, interrupt)  # KeyboardInterrupt, once any import is over

        def _restore() -> None:
            signal.signal(signal.SIGTERM, old)

        inv.cleanups.append(_restore)

    # The table shows the open run and the last run's end beside the contract's three keys;
    # a JSON line carries only those three, as `activity -F json` does.
    fold_all = details if fmt == Format.pretty else activities
    from wardrik_cli.cli.tailing import note_waiting

    note_waiting(root, patterns, inv.note)  # a name that matches nothing yet: said, not a silent wait

    def snapshot() -> dict[str, Any]:
        # Literal names may not exist yet while watching: keep only what exists.
        pats = [p for p in patterns if has_wildcards(p) or root.log_path(p).is_file() or root.is_folder(p)]
        try:
            return fold_all(resolve_logs(root, pats), corrupt) if pats else {}
        except NoSuchRoot:
            return {}  # deleted since the last look (without inotify, nothing said it): nothing to show

    wakeups = Wakeups(str(root.path.resolve()), step_ms=inv.settings.watch_step_ms, hangup_fd=inv.stdout_fd(),
                      warn=inv.warn)
    inv.cleanups.append(wakeups.close)
    tick = WATCH_TICK_S if wakeups.watching else (inv.settings.poll_s or 0.5)

    def changes() -> Iterator[bool]:
        """True when a matched log may have changed; ends when stdout's reader went away. A
        root deleted is waited for (said once), as ``tail -f`` waits; made again, it is
        watched anew and read at once."""
        gone = False
        while True:
            what = wakeups.wait(GONE_POLL_S if gone else tick)
            if what == HANGUP:
                return
            found = wakeups.check_root()
            if found == GONE or (gone and found is None):
                if not gone:
                    inv.warn(f"the root {root.path} was deleted; waiting for it to be made again")
                    gone = True
                wakeups.take_changes()
                continue
            if found == NEW:
                gone = False
            changed = found == NEW or bool(wakeups.take_changes()) or not wakeups.watching
            yield changed

    try:
        if fmt == Format.pretty:
            from wardrik_cli.cli.render.fold import watch_live

            watch_live(snapshot, changes())
        else:
            last = None
            for changed in _first_then(changes()):
                if changed:
                    acts = snapshot()
                    if acts != last:
                        inv.stdout.write(orjson.dumps(acts) + b"\n")
                        inv.stdout.flush()
                        last = acts
    except KeyboardInterrupt:
        return


def _first_then(it: Iterator[bool]) -> Iterator[bool]:
    yield True
    yield from it
