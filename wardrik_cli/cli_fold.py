"""`fold` and `activity`: a thin shell over ``folding`` and ``activity`` (imported lazily)."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from .cli import CTX, FormatOpt, PatternsArg, SkipCorrupt, app, skip_corrupt_handler
from .output import Format


@app.command(rich_help_panel="Review")
def fold(
    log: str = typer.Argument(..., metavar="LOG", help="Log id, or a path to a .jsonl file anywhere (an evidence copy)."),
    view: str = typer.Option("state", "--view", "-v", metavar="VIEW",
                             help="state, timeline, activity, or MODULE:NAME (an object with initial() and apply(state, event))."),
    at: Optional[int] = typer.Option(None, "--at", metavar="SEQ", help="Stop after the event with this sequence."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Fold a log, oldest first, into a view: its state through the last event (or --at SEQ).

    Views: state (status, task, turns, tool_calls, answer of the latest run; a panel),
    timeline (runs, model calls, tool calls and waits with their durations; a tree),
    activity, or your own MODULE:NAME. A checkpoint under .wardrik/ makes the next fold
    read only the new events; one that no longer matches the log is discarded. Reads this
    format and seed 000's {"seq","type","data"} lines.

    Examples:

      wardrik fold acme/triage

      wardrik fold acme/triage --view timeline --at 120

      wardrik fold evidence/events.jsonl --format json | jq .state.status
    """
    from . import output
    from .folding import fold as do_fold, result_json, target
    from .views import Rendering, load

    v = load(view)  # --at < 0 is refused by the fold itself
    res = do_fold(target(CTX.root, log), v, view, at=at, on_corrupt=skip_corrupt_handler(skip_corrupt))
    fmt = output.choose(fmt, Format.json)
    if fmt == Format.pretty:
        from .render_fold import print_fold
        print_fold(res, Rendering(v, res.view, res.log, res.through))  # a render that fails: ViewFailed
    elif fmt == Format.jsonl:
        output.write_line(result_json(res))
    else:
        sys.stdout.buffer.write(result_json(res, indent=True) + b"\n")


@app.command(rich_help_panel="Watch")
def activity(
    patterns: list[str] = PatternsArg,
    watch: bool = typer.Option(False, "--watch", "-w", help="Keep a live table, updated as the logs change (Ctrl-C ends it)."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Show what each matched agent is doing now, for how long, and how many messages wait.

    doing: the tool calls running, else the last model call or wait on a person the run
    started; empty once the run ends. pending: messages received and not yet taken by a
    run. --watch keeps a live table that changes as the logs do (Ctrl-C ends it, exit 0);
    on a pipe it prints a JSON line at each change.

    Examples:

      wardrik activity 'acme/*'

      wardrik activity 'acme/*' --watch
    """
    from . import output
    from .activity import activities
    from .reader import resolve_logs

    on_corrupt = skip_corrupt_handler(skip_corrupt)
    fmt = output.choose(fmt, Format.json)
    if watch:
        _watch(patterns, fmt, on_corrupt)
        return
    acts = activities(resolve_logs(CTX.root, patterns), on_corrupt)
    _print_acts(acts, fmt)


def _print_acts(acts: dict, fmt: Format) -> None:
    from . import output
    if fmt == Format.pretty:
        from .render_fold import print_activities
        print_activities(acts)
    elif fmt == Format.jsonl:
        import orjson
        output.write_line(orjson.dumps(acts))
    else:
        output.write_json(acts)


def _watch(patterns: list[str], fmt: Format, on_corrupt) -> None:
    """Refresh when a matched log changes (watchfiles, else polling); Ctrl-C or SIGTERM end it (exit 0)."""
    import signal

    from .activity import activities
    from .layout import has_wildcards
    from .reader import resolve_logs

    root = CTX.root
    root.require()
    sys._wardrik_following = True  # type: ignore[attr-defined]  # main(): Ctrl-C here is a normal end

    def _term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)

    def snapshot() -> dict:
        # Literal names may not exist yet while watching: keep only what exists.
        pats = [p for p in patterns if has_wildcards(p) or root.log_path(p).is_file()]
        return activities(resolve_logs(root, pats), on_corrupt) if pats else {}

    def changes():
        try:
            from watchfiles import watch as wf_watch
        except ImportError:
            wf_watch = None
        if wf_watch is not None:
            try:
                for batch in wf_watch(root.path, debounce=100, step=50, rust_timeout=1000, yield_on_timeout=True,
                                      watch_filter=lambda _c, p: p.endswith(".jsonl") and "/.wardrik/" not in p):
                    yield bool(batch)
                return
            except (OSError, RuntimeError):
                pass  # no inotify here: poll instead
        import time
        last = None
        while True:
            sig = _poll_signature(root.path)
            yield sig != last
            last = sig
            time.sleep(0.5)

    last_acts = None
    try:
        if fmt == Format.pretty:
            from rich.live import Live
            from . import render
            from .render_fold import watch_table
            acts = snapshot()
            with Live(watch_table(acts), console=render.console(), auto_refresh=False) as live:
                for changed in changes():
                    if changed:
                        acts = snapshot()
                        live.update(watch_table(acts))
                    live.refresh()  # the "for" column ticks even when nothing changed
        else:
            import orjson
            for changed in _first_then(changes()):
                if changed:
                    acts = snapshot()
                    if acts != last_acts:
                        sys.stdout.buffer.write(orjson.dumps(acts) + b"\n")
                        sys.stdout.flush()
                        last_acts = acts
    except KeyboardInterrupt:
        return


def _first_then(it):
    yield True
    yield from it


def _poll_signature(path) -> tuple:
    import os
    sig = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if f.endswith(".jsonl"):
                try:
                    st = os.stat(os.path.join(dirpath, f))
                    sig.append((dirpath, f, st.st_size, st.st_mtime_ns, st.st_ino))
                except OSError:
                    pass
    return tuple(sorted(sig))
