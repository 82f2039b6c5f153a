"""Commands of the retention issue: ``compact`` and the ``audit`` group (record, page, tail).

Thin shells over ``retention`` and ``audit``; the library is imported inside each command so
that ``wardrik append`` does not pay for it.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from .cli import CTX, FormatOpt, SkipCorrupt, app, load_cursor, parse_json, read_arg_bytes, skip_corrupt_handler, warn
from .errors import ExitCode
from .output import Format

# ---------------------------------------------------------------------------
# compact
# ---------------------------------------------------------------------------


@app.command(rich_help_panel="Maintain")
def compact(
    retention: Optional[str] = typer.Option(None, "--retention", "-r", metavar="DURATION",
                                            help="Keep events newer than this: 30s, 90m, 12h, 7d, 4w "
                                                 "(default: retention in .wardrik/config.toml, else 30d)."),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Report what would be dropped; change nothing."),
    wait: bool = typer.Option(False, "--wait", help="If another compact is running on this root, wait for it "
                                                    "instead of skipping."),
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Drop each log's prefix of events older than the retention (the audit log too).

    Made for cron: crash-safe (kill -9 leaves every log as it was or as it should be), safe
    while appenders, followers and another compact run (a second compact skips, or waits
    with --wait). Sequences go on after the highest ever written; readers whose position was
    dropped get one events.dropped saying how many they missed. Torn tails are cut, their
    bytes kept beside the log. Exit 1 when any log could not be swept (the others still are).

    Examples:

      0 * * * *  wardrik --root /var/lib/wardrik compact --retention 30d

      wardrik compact --retention 7d --dry-run
    """
    from . import output
    from .retention import resolve_retention, sweep

    root = CTX.root
    root.require()
    text, _ = resolve_retention(root, retention)
    fmt = output.choose(fmt, Format.json)
    from .render import SweepProgress

    progress = SweepProgress() if fmt == Format.pretty and sys.stderr.isatty() else None
    try:
        result = sweep(root, text, dry_run=dry_run, wait=wait, warn=warn,
                       on_start=progress.start if progress else None,
                       on_log=progress.advance if progress else None)
    finally:
        if progress:
            progress.stop()
    if result.skipped:
        warn(result.skipped)
    if fmt == Format.json:
        output.write_json(result.to_json())
    elif fmt == Format.jsonl:
        import orjson
        for r in result.logs:
            output.write_line(orjson.dumps(r.to_json()))
    else:
        from .render import print_sweep
        print_sweep(result)
    for r in result.logs:
        for note in r.notes:
            warn(f"{r.log}: {note}")
    failed = result.failed
    if failed:
        output.flush()
        for r in failed:
            sys.stderr.write(f"error: {r.log}: not swept: {r.error}\n")
        sys.stderr.write(f"error: {len(failed)} of {len(result.logs)} log(s) could not be swept; the others were\n")
        raise typer.Exit(ExitCode.FAILURE)


# ---------------------------------------------------------------------------
# audit
# ---------------------------------------------------------------------------
AUDIT_HELP = """The deployment's audit log: who changed what, tamper-evident.

One log under ROOT/.wardrik/audit.jsonl, apart from the agents' logs; each event carries
its actor, who acted for them, and prevhash (the SHA-256 of the line before it), which
`wardrik check` verifies.

Examples:

  wardrik audit page --limit 20

  wardrik audit tail -f
"""
audit_app = typer.Typer(name="audit", help=AUDIT_HELP,
                        no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(audit_app, name="audit", rich_help_panel="Review")


@audit_app.command("record")
def audit_record(
    type_: str = typer.Argument(..., metavar="TYPE", help="agent.created, agent.configured, agent.forgotten, "
                                                          "trigger.created or trigger.deleted."),
    subject: str = typer.Argument(..., help="What changed, e.g. agents/acme/triage."),
    data: Optional[str] = typer.Option(None, "--data", "-d", metavar="JSON|@FILE|-", help="The change's data, a JSON object."),
    actor: Optional[str] = typer.Option(None, "--actor", metavar="PRINCIPAL", help="Who made the change (required)."),
    assumed_by: Optional[list[str]] = typer.Option(None, "--assumed-by", metavar="PRINCIPAL",
                                                   help="Who acted for the actor, first to last (repeat)."),
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Record a change in the audit log, with its actor and who acted for them.

    A principal is letters, digits and . _ : @ / + - (at most 200). Each event carries
    prevhash, the SHA-256 of the line before it, so `wardrik check` finds an edited line.

    Examples:

      wardrik audit record agent.created agents/acme/ops \\
        --data '{"agent": {"id": "acme/ops"}}' --actor alice@acme.io

      wardrik audit record agent.forgotten agents/acme/old \\
        --actor user:alice@acme.io --assumed-by role:ops \\
        --data '{"agent": {"id": "acme/old"}}'
    """
    from .audit import record

    payload = parse_json(read_arg_bytes(data, "--data"), "--data") if data is not None else {}
    root = CTX.root
    line = record(root, type_, subject, payload, actor, assumed_by or [], CTX.deployment_arg, warn=warn)
    from .cli import _print_appended
    _print_appended([line.rstrip(b"\n")], fmt)


@audit_app.command("page")
def audit_page(
    limit: int = typer.Option(100, "--limit", "-l", min=0, help="At most this many events (a dropped notice does not count)."),
    after: Optional[str] = typer.Option(None, "--after", metavar="CURSOR", help="Read on after this cursor (key: audit)."),
    cursor_file: Optional[Path] = typer.Option(None, "--cursor-file", metavar="FILE",
                                               help="Start from the cursor in FILE (when it exists and no --after); save the next one there."),
    types: Optional[str] = typer.Option(None, "--types", "-t", metavar="T,..", help="Only these types."),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME", help="Events at or after TIME (RFC 3339 or a duration ago)."),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME", help="Events before TIME."),
    run: Optional[str] = typer.Option(None, "--run", metavar="RUN_ID", help="Only the events of this trace."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Print audit events oldest first, and the cursor to read on.

    If retention dropped events before your position, an events.dropped comes first.

    Examples:

      wardrik audit page --since 7d

      wardrik audit page --limit 50 --format json | jq -r .next
    """
    from .cli import run_page
    from .ledger import Log

    start = load_cursor(after, cursor_file)
    run_page(lambda root: [Log.audit(root.require())], start, limit=limit, cursor_file=cursor_file, types=types,
             since=since, until=until, run=run, skip_corrupt=skip_corrupt, fmt=fmt)


@audit_app.command("tail")
def audit_tail(
    n: int = typer.Option(10, "-n", "--lines", min=0, help="The last N events (default: 10)."),
    follow: bool = typer.Option(False, "-f", "--follow", help="Then print every event as it is recorded."),
    after: Optional[str] = typer.Option(None, "--after", metavar="CURSOR", help="Every event after this cursor instead."),
    cursor_file: Optional[Path] = typer.Option(None, "--cursor-file", metavar="FILE",
                                               help="Start from the cursor in FILE when it exists; save it after each event."),
    types: Optional[str] = typer.Option(None, "--types", "-t", metavar="T,..", help="Only these types."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Print the last audit events (or every one after a cursor); with -f, keep following.

    Ctrl-C, SIGTERM or a closed pipe end a follow cleanly (exit 0).

    Examples:

      wardrik audit tail -n 20

      wardrik audit tail -f --types agent.forgotten,trigger.deleted
    """
    from .cli_follow import run_tail
    from .ledger import Log
    from .reader import Filters, parse_types

    root = CTX.root
    filters = Filters.build(parse_types(types))
    start = load_cursor(after, cursor_file)
    root.require()
    run_tail(root, lambda: [Log.audit(root)], after=start, n=n, follow=follow, filters=filters,
             deployment=CTX.deployment(), on_corrupt=skip_corrupt_handler(skip_corrupt), fmt=fmt,
             cursor_file=cursor_file)
