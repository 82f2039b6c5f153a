"""``check`` and ``compact`` (Maintain panel): thin shells over ``store.check`` and ``store.retention``.

``check`` exits 1 on corruption, a gap or a broken chain (a torn tail is only a warning).
``compact`` exits 1 when any log could not be swept (the others still are), after its
report and one ``error:`` line per failed log.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.options import FormatOpt
from wardrik_cli.cli.output import Format, choose, emit, write_json
from wardrik_cli.errors import ExitCode


@app.command(rich_help_panel="Maintain")
def init(
    folder: Annotated[str | None, typer.Argument(
        metavar="[DIR]", help="The folder to make a root (the same as --root DIR).", show_default=False)] = None,
    retention: Annotated[str | None, typer.Option(
        "--retention", "-r", metavar="DURATION", help="What compact keeps by default: 30s, 90m, 12h, 7d, 4w.")] = None,
    max_bytes: Annotated[str | None, typer.Option(
        "--max-bytes", metavar="SIZE", help="compact's default size bound per agent log: 500M, 2G.")] = None,
) -> None:
    """Make a root: the folder (given by --root, or WARDRIK_ROOT, else this one) and its .wardrik/config.toml.

    On a folder that is already a root, only the settings given change (none given: nothing
    changes). --deployment NAME (the global option, before or after init) names the
    deployment in event sources. compact and audit record work only on a root; append makes
    one as it goes.

    Examples:

      wardrik --root /var/lib/wardrik init --deployment acme-prod --retention 30d --max-bytes 2G

      wardrik init --retention 7d

      wardrik init /var/lib/wardrik
    """
    from wardrik_cli.errors import BadInput
    from wardrik_cli.store.init import init_root
    from wardrik_cli.store.layout import Root

    inv = current()
    root = inv.root
    if folder is not None:
        if not folder:
            raise BadInput("init: DIR is empty")
        from wardrik_cli.cli.context import REMOTE_SCHEMES

        if folder.startswith(REMOTE_SCHEMES):
            raise BadInput(f"init writes a root, and {folder} is a remote root, which is read only: init works on a "
                           "local folder (remote roots are filled by `wardrik ship`)")
        if inv.root_arg is not None and os.path.abspath(str(inv.root_arg)) != os.path.abspath(folder):
            raise BadInput(f"init: two folders given, --root {inv.root_arg} and {folder}: give one")
        root = Root(Path(folder))
    made, changed = init_root(root, deployment=inv.deployment_arg, retention=retention, max_bytes=max_bytes)
    where = str(root.path)
    if made:
        inv.note(f"made the root {where}" + (f" ({', '.join(changed)} set)" if changed else ""))
    elif changed:
        inv.note(f"{where} is already a root; set {', '.join(changed)}")
    else:
        inv.note(f"{where} is already a root; nothing changed")


@app.command(rich_help_panel="Maintain")
def check(
    patterns: Annotated[list[str] | None, typer.Argument(
        metavar="[PATTERN...]", help="Logs to check (default: all, and the audit log).", show_default=False)] = None,
    fmt: FormatOpt = None,
) -> None:
    """Verify logs and the audit log: valid events, contiguous sequences, an unbroken audit chain.

    Prints each problem as FILE:LINE: BYTE-OFFSET: WHAT. Corruption, gaps and a broken chain
    exit 1; a torn tail is only a warning (a writer may be mid-line) and exits 0.

    Examples:

      wardrik check

      wardrik check 'acme/*' --format json
    """
    from wardrik_cli.read.reader import resolve_logs
    from wardrik_cli.store.check import ERROR, check_log
    from wardrik_cli.store.log import Log

    root = current().root
    logs = resolve_logs(root, patterns or ["*"])
    if not patterns:
        audit = Log.audit(root)
        if audit.exists():
            logs.append(audit)
    shown = choose(fmt, Format.jsonl)
    each: Iterable[Any] = logs
    if shown == Format.pretty:
        from wardrik_cli.cli.render.maintain import progress

        each = progress(logs, "checking")  # a bar on a terminal when the logs are big
    inv = current()
    problems = [p for log in each for p in check_log(log)]
    marker = root.unfinished_pull()
    if marker is not None:
        from wardrik_cli.store.check import Problem

        problems.insert(0, Problem(str(marker), 1, 0, "a pull into this root did not finish (killed part-way, or "
                                   "a log could not be pulled: the file says which): logs or events may be missing; "
                                   "pull again into a new folder"))
    strangers = inv.remote_mirror.report.strangers if inv.remote_mirror is not None else []
    if strangers:
        from wardrik_cli.remote.pull import safe_key
        from wardrik_cli.store.check import WARNING, Problem

        problems.insert(0, Problem(inv.remote_root_url or "", 1, 0, f"{len(strangers)} object(s) under the store are "
                                   f"not wardrik's (no log's segment, record or owner), e.g. {safe_key(strangers[0])}: "
                                   "left out of every read; if one was a segment, its log reads short", WARNING))
    for p in problems:
        p.file = inv.shown_path(p.file)  # a remote root's log, named by its URL, not by the mirror's path
    failed = any(p.severity == ERROR for p in problems)

    def pretty() -> None:
        from wardrik_cli.cli.render.maintain import print_check

        print_check(problems, logs)

    emit(shown, pretty=pretty,
         jsonl=[(f"{p}" if p.severity == ERROR else f"{p} (warning)").encode() for p in problems],
         json={"ok": not failed, "logs": len(logs), "problems": [p.to_json() for p in problems]})
    if failed:
        raise typer.Exit(ExitCode.FAILURE)


@app.command(rich_help_panel="Maintain")
def compact(
    retention: Annotated[str | None, typer.Option(
        "--retention", "-r", metavar="DURATION",
        help="Keep events newer than this: 30s, 90m, 12h, 7d, 4w "
             "(default: retention in .wardrik/config.toml, else 30d).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Report what would be dropped; change nothing.")] = False,  # -n is tail's --lines
    wait: Annotated[bool, typer.Option(
        "--wait", help="If another compact is running on this root, wait for it instead of skipping.")] = False,
    max_bytes: Annotated[str | None, typer.Option(
        "--max-bytes", metavar="SIZE",
        help="Then bound each agent's log to SIZE (500M, 2G), dropping its oldest events (default: "
             "max_bytes in .wardrik/config.toml, else no bound). The audit log is bounded by time only.")] = None,
    actor: Annotated[str | None, typer.Option(
        "--actor", metavar="P",
        help="Who sweeps, for the ledger.compacted audit record of a sweep that drops anything "
             "(default: user@host).")] = None,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Print nothing unless a log fails (exit 1) or input is bad (exit 2): for cron.")] = False,
    skip_corrupt: Annotated[bool, typer.Option(
        "--skip-corrupt", help="A line that is not an event in the part dropped is kept beside the log and "
                               "warned of, and the sweep exits 0 (without it: exit 1); a part to drop whose "
                               "sequence breaks (a line deleted or repeated by hand) is dropped anyway, said in a "
                               "note (without it: that log is not swept).")] = False,
    max_ship_lag: Annotated[str | None, typer.Option(
        "--max-ship-lag", metavar="DURATION",
        help="Let events older than this go even when a registered ship target has not stored them "
             "(default: keep them); the gap is recorded and the next ship writes it to the store.")] = None,
    fmt: FormatOpt = None,
) -> None:
    """Drop each log's prefix of events older than the retention (the audit log too).

    The root must have been made (`wardrik init`, or a first append): cron's working
    directory never becomes a root by mistake. -q prints nothing unless something fails.

    Made for cron: crash-safe (kill -9 leaves every log as it was or as it should be), safe
    while appenders, followers and another compact run (a second compact skips, or waits
    with --wait). Sequences go on after the highest ever written; readers whose position was
    dropped get one events.dropped saying how many they missed. Torn tails are cut, their
    bytes kept beside the log, and so are lines in the part dropped that are not events (exit 1
    unless --skip-corrupt). Exit 1 when any log could not be swept (the others still are).

    A ship target this root ships to (wardrik ship) holds back what it has not stored yet,
    like a replication slot: the log's row says how many events were kept for it, unless
    --max-ship-lag lets older ones go. With --root s3://BUCKET/PREFIX (or file:///PATH) the
    sweep runs on the shipped logs: a watermark per log first, then whole expired segments
    are deleted.

    Examples:

      0 * * * *  /path/to/.venv/bin/wardrik --root /var/lib/wardrik compact -q

      wardrik compact --retention 7d --dry-run

      wardrik --root s3://ledgers/fleet compact --retention 90d
    """
    from wardrik_cli.follow.live import cleanup_stale
    from wardrik_cli.store.retention import compact as do_compact
    from wardrik_cli.store.retention import resolve_max_bytes, resolve_retention

    inv = current()
    where = inv.root_arg or inv.settings.root or ""
    if str(where).startswith(("s3://", "file://")):
        _compact_remote(str(where), retention, dry_run, max_bytes, max_ship_lag, quiet, fmt)
        return
    root = inv.root
    root.require_made("compact")
    inv.deployment()  # a bad $WARDRIK_DEPLOYMENT is refused (naming it) before the sweep, not after it
    text, _ = resolve_retention(root, retention)
    if max_ship_lag is not None:
        from wardrik_cli.store.retention import parse_retention

        parse_retention(max_ship_lag)  # bad input before anything is touched (a lag of no time: refused)
    size = resolve_max_bytes(root, max_bytes)
    if actor is not None:
        from wardrik_cli.store.audit import validate_principal

        validate_principal(actor, "--actor")
    shown = choose(fmt, Format.json)
    progress = None
    if shown == Format.pretty and not quiet:
        from wardrik_cli.cli.render.maintain import SweepProgress

        progress = SweepProgress()
    try:
        result = do_compact(root, text, dry_run=dry_run, wait=wait, max_bytes=size, actor=actor, warn=inv.warn,
                            notice=(lambda m: None) if quiet else inv.warn,  # what was tidied: no failure
                            deployment=inv.deployment_given(),  # of the ledger.compacted it records
                            max_ship_lag=max_ship_lag, skip_corrupt=skip_corrupt,
                            on_start=progress.start if progress else None,
                            on_log=progress.advance if progress else None, tidy=cleanup_stale)
    finally:
        if progress:
            progress.stop()
    if result.skipped and not quiet and shown != Format.pretty:
        # another sweep is running: under --quiet that is a normal hour; pretty says it on stdout
        inv.warn(result.skipped)

    def pretty() -> None:
        from wardrik_cli.cli.render.maintain import print_sweep

        print_sweep(result)

    failed = result.failed
    damaged = result.damaged
    if not quiet:
        emit(shown, pretty=pretty, jsonl=[r.to_json() for r in result.logs],
             json=lambda: write_json(result.to_json(), indent=False))
    for r in result.logs:
        for note in r.notes:
            if not quiet or r in failed or (r in damaged and not skip_corrupt):
                inv.warn(f"{r.log}: {note}")
    if damaged and not skip_corrupt and not failed:
        n = sum(r.damaged for r in damaged)
        if result.dry_run:
            inv.message(f"error: {n} damaged line(s) are in the part that would be dropped; a sweep would keep "
                        "their bytes beside their logs (see the warnings; --skip-corrupt makes this a warning)")
        else:
            inv.message(f"error: {n} damaged line(s) were in the part dropped, their bytes kept beside their logs "
                        "(see the warnings; --skip-corrupt makes this a warning)")
        raise typer.Exit(ExitCode.FAILURE)
    if failed:
        for r in failed:
            inv.message(f"error: {r.log}: not swept: {r.error}")
        others = "; the others were" if len(failed) < len(result.logs) else ""
        inv.message(f"error: {len(failed)} of {len(result.logs)} log(s) could not be swept{others}")
        raise typer.Exit(ExitCode.FAILURE)



def _compact_remote(url: str, retention: str | None, dry_run: bool, max_bytes: str | None,
                    max_ship_lag: str | None, quiet: bool, fmt: Format | None) -> None:
    """``compact`` on a shipped root (``remote.compact``): one row per log, exit 1 when any failed."""
    from wardrik_cli.errors import BadInput
    from wardrik_cli.remote.compact import compact_remote
    from wardrik_cli.remote.stores import open_store
    from wardrik_cli.store.retention import parse_retention

    inv = current()
    if max_bytes is not None or max_ship_lag is not None:
        raise BadInput("--max-bytes and --max-ship-lag are for a local root; a shipped root is swept by time "
                       "(--retention)")
    if retention is None:
        raise BadInput("compact of a shipped root needs --retention (there is no config.toml to read it from)")
    delta = parse_retention(retention)
    store = open_store(url, inv.env)
    dep = None
    if inv.deployment_arg:
        from wardrik_cli.protocol.names import validate_deployment

        dep = validate_deployment(inv.deployment_arg)
    result = compact_remote(store, retention, delta, dry_run=dry_run, deployment=dep)
    shown = choose(fmt, Format.json)
    if not quiet:
        if shown == Format.pretty:
            def say(line: str) -> None:
                inv.stdout.write(line.encode() + b"\n")

            for r in result.logs:
                say(f"{r.log}{' (audit)' if r.kind == 'audit' else ''}: "
                         + (f"would drop {r.dropped}" if dry_run else f"dropped {r.dropped}")
                         + f" event(s) in {r.segments_deleted} segment(s), kept {r.kept}")
            say(f"{'would drop' if dry_run else 'dropped'} {result.dropped} event(s), kept {result.kept}, "
                     f"in {len(result.logs)} log(s) under {store.url} (cutoff {result.cutoff})")
        elif shown == Format.jsonl:
            for r in result.logs:
                write_json(r.to_json(), indent=False)
        else:
            write_json(result.to_json(), indent=False)
    for r in result.failed:
        inv.message(f"error: {r.log}: not swept: {r.error}")
    if result.failed:
        inv.message(f"error: {len(result.failed)} of {len(result.logs)} log(s) could not be swept; the others were")
        raise typer.Exit(ExitCode.FAILURE)
