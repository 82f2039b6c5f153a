"""``page``, ``head``, ``fold`` and ``types`` (Review panel): thin shells over ``read`` and ``fold``.

``run_page`` is the whole of a page in every format, shared with ``audit page``: the events
(``json``: one document with ``next``; ``pretty``: rows, then ``next:``), then the cursor
file, written only after the events are printed.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import build_filters, load_cursor, on_corrupt, patterns_or_all
from wardrik_cli.cli.options import (
    After, ExcludeTypes, FormatOpt, Grep, IgnoreCase, Limit, PageCursorFile, Patterns, Run, Since, SkipCorrupt,
    Types, Until, Where,
)
from wardrik_cli.cli.output import Format, choose, emit, write_events_json, write_json, write_lines
from wardrik_cli.errors import WardrikError
from wardrik_cli.protocol.cursor import Cursor, encode_cursor
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log

if TYPE_CHECKING:
    from wardrik_cli.cli.context import Invocation
    from wardrik_cli.read.filters import Filters


@app.command(rich_help_panel="Review")
def page(
    patterns: Patterns = None,
    limit: Limit = 100,
    all_: Annotated[bool, typer.Option("--all", help="No limit: read to the end (streaming).")] = False,
    after: After = None,
    cursor_file: PageCursorFile = None,
    types: Types = None,
    exclude: ExcludeTypes = None,
    grep: Grep = None,
    ignore_case: IgnoreCase = False,
    where: Where = None,
    since: Since = None,
    until: Until = None,
    run: Run = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
) -> None:
    """Print events oldest first across every matched log, and the cursor to read on.

    Logs are interleaved by time. The next cursor moves past every event read, filtered
    or not, so paging with it never shows an event twice or skips one. Stopping at
    --limit with more to read says so on stderr (`note:`), with the cursor to read on.

    Examples:

      wardrik page acme -t tool_call.failed -t run.failed --since yesterday --all

      wardrik page 'acme/*' --grep 'pool exhausted' -i --where data.tool.name=bash

      wardrik page --run 901fe023 --limit 20 -F json | jq -r .next
    """
    from wardrik_cli.read.reader import resolve_logs

    filters = build_filters(types=types, exclude=exclude, grep=grep, ignore_case=ignore_case, where=where,
                            run=run, since=since, until=until)
    start = load_cursor(after, cursor_file)
    pats = patterns_or_all(patterns)
    run_page(lambda root: resolve_logs(root, pats), start, limit=None if all_ else limit, cursor_file=cursor_file,
             filters=filters, skip_corrupt=skip_corrupt, fmt=fmt)


def run_page(logs_of: Callable[[Root], list[Log]], start: Cursor | None, *, limit: int | None,
             cursor_file: Path | None, filters: Filters, skip_corrupt: bool, fmt: Format | None) -> None:
    """A page over ``logs_of(root)`` in the chosen format, then the cursor file, then (when it
    stopped at the limit with more to read) a ``note:`` with the cursor (page, audit page)."""
    from wardrik_cli.read.cursor_file import write_file
    from wardrik_cli.read.reader import Reader

    inv = current()
    logs = logs_of(inv.root)
    shown = choose(fmt, Format.jsonl)
    with Reader(logs, start, filters=filters, deployment=inv.deployment(), limit=limit,
                on_corrupt=on_corrupt(skip_corrupt), warn=inv.warn) as reader:
        def pretty() -> None:
            from wardrik_cli.cli.render.events import print_page

            print_page(iter(reader), lambda: encode_cursor(reader.next))

        emit(shown, pretty=pretty, jsonl=reader.raws(),
             json=lambda: write_events_json(reader.raws(), lambda: encode_cursor(reader.next)))
        if cursor_file is not None:
            write_file(cursor_file, reader.next)
        if reader.more:
            # the cursor stays last on the line (scripts take the last word); with a cursor file
            # the same command reads on, which is what its user will do
            again = "" if cursor_file is None else "run again to read on from the cursor file, or "
            inv.note(f"stopped at --limit {limit}; {again}read on with --after {encode_cursor(reader.next)}")


@app.command(rich_help_panel="Review")
def head(patterns: Patterns = None, fmt: FormatOpt = None) -> None:
    """Print the cursor at the end of every matched log (read only what comes after it).

    Later, `wardrik page PATTERN --after CURSOR` shows only what was written since. The
    cursor is printed alone in every format but json, which prints {"next": CURSOR}.

    Examples:

      cur=$(wardrik head 'acme/*')

      wardrik page 'acme/*' --after "$cur"
    """
    from wardrik_cli.read.reader import head as do_head
    from wardrik_cli.read.reader import resolve_logs

    logs = resolve_logs(current().root, patterns_or_all(patterns))
    cursor = encode_cursor(do_head(logs))
    if fmt == Format.json:
        write_json({"next": cursor}, indent=False)
    else:
        write_lines([cursor.encode()])


@app.command(rich_help_panel="Review")
def fold(
    log: Annotated[str, typer.Argument(
        metavar="LOG", help="Log id, or a path to a .jsonl file anywhere (an evidence copy).", show_default=False)],
    view: Annotated[str, typer.Option(
        "--view", metavar="VIEW",  # no short option: -v is --verbose everywhere
        help="state, timeline, activity, usage (tokens and cost summed), or MODULE:NAME "
             "(an object with initial() and apply(state, event)).")] = "state",
    at: Annotated[int | None, typer.Option(
        "--at", metavar="SEQ", help="Stop after the event with this sequence.")] = None,
    run: Run = None,
    since: Since = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
) -> None:
    """Fold a log, oldest first, into a view: its state through the last event (or --at SEQ).

    Views: state (status, task, turns, tool_calls, answer of the latest run; a panel),
    timeline (runs, model calls, tool calls and waits with their durations; a tree),
    activity, or your own MODULE:NAME. A checkpoint under .wardrik/ makes the next fold
    read only the new events; one that no longer matches the log is discarded. Reads this
    format and seed 000's {"seq","type","data"} lines. --run folds only that run's
    events, --since only those from then on (neither uses a checkpoint).

    Examples:

      wardrik fold acme/triage

      wardrik fold acme/triage --view timeline --run 901fe023

      wardrik fold evidence/events.jsonl --format json | jq .state.status
    """
    from wardrik_cli.folding.deep import TOO_DEEP
    from wardrik_cli.folding.engine import STATE_DEPTH, clip_state, fold_target, result_json, target
    import dataclasses

    from wardrik_cli.folding.views import ActivityView, activity_of, load

    inv = current()
    select = None
    lo = None
    hits = 0
    if run is not None or since is not None:
        filters = build_filters(run=run, since=since)
        lo = filters.since
        if run is not None:
            accepts = filters.accepts

            def select(event: dict[str, Any]) -> bool:
                nonlocal hits
                if accepts(event):
                    hits += 1
                    return True
                return False
    v = load(view, shun=_data_folder(inv, log))  # --at < 0 is refused by the fold itself
    res = fold_target(target(inv.root, log), v, view, at=at, on_corrupt=on_corrupt(skip_corrupt),
                      since=lo, select=select, warn=inv.warn)
    if run is not None and hits == 0:  # an empty state is the answer, but not a silent one
        inv.warn(f"{res.log}: no event of run {run} was folded (no such run{' in the window' if lo else ''}, "
                 "or it was dropped; see `wardrik page --run`)")

    def pretty() -> None:
        from wardrik_cli.cli.render.fold import print_fold

        print_fold(res, v)  # a render that fails: ViewFailed

    shown = choose(fmt, Format.json)
    if shown != Format.pretty and type(v) is ActivityView:
        # the activity view is shown as `activity` shows a log (the contract's doing, since,
        # pending), not as the state a fold carries from event to event
        res = dataclasses.replace(res, state=activity_of(res.state))
    if shown != Format.pretty and clip_state(res):  # as the pretty output cuts it, and says so
        inv.warn(f"the state of {res.log} holds values nested deeper than JSON is written ({STATE_DEPTH} "
                 f"levels): they are cut, each the string {TOO_DEEP!r} (the log keeps them whole)")
    emit(shown, pretty=pretty, jsonl=(result_json(res) for _ in (0,)),
         json=lambda: inv.stdout.write(result_json(res, indent=True) + b"\n"))


@app.command(rich_help_panel="Review")
def types(fmt: FormatOpt = None) -> None:
    """List the protocol: every event type, its kind and its required data fields.

    Kinds: kept (stored with a sequence), live (to followers only), audit (`audit record`),
    reader (made by wardrik for a reader).

    Example:

      wardrik types --format json | jq -r '.[] | select(.kind=="kept") | .type'
    """
    from wardrik_cli.protocol.catalogue import catalogue

    current().root.require()
    rows = [{"type": t.full, "kind": t.kind, "required": ["data." + r for r in t.required],
             "optional": ["data." + o for o in t.optional], "description": t.summary} for t in catalogue()]

    def pretty() -> None:
        from wardrik_cli.cli.render.maintain import print_types

        print_types(catalogue())

    emit(choose(fmt, Format.json), pretty=pretty, jsonl=rows, json=rows)


def _data_folder(inv: Invocation, log: str) -> Path | None:
    """The folder a fold reads (a log file's, or the root's): never a place to import a view from."""
    if log.endswith(".jsonl"):
        return Path(log).parent
    try:
        return Path(inv.root.path)
    except WardrikError:  # a root that cannot be used: the fold says so, after the view's own errors
        return Path(inv.root_arg or inv.settings.root or ".")
