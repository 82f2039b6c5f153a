"""Options the commands share, declared once (``Annotated`` aliases), so that a spelling, a
metavar or a help text is the same wherever the option appears."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wardrik_cli.cli.output import Format

FormatOpt = Annotated[Format | None, typer.Option(
    "--format", "-o", "-F", metavar="FORMAT", help="pretty (Rich, default on a terminal), jsonl or json.",
    case_sensitive=False)]
Patterns = Annotated[list[str] | None, typer.Argument(
    metavar="[PATTERN]...", show_default=False,
    help="Log ids, folders of logs, or globs (* any run of characters, ? one); none: every agent log.")]
SkipCorrupt = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Warn about a corrupt line and read past it instead of stopping.")]
def _count(value: int | None) -> int | None:
    # checked here rather than with min=0, whose help reads "N [x>=0]"
    if value is not None and value < 0:
        raise typer.BadParameter(f"{value} is below 0")
    return value


Limit = Annotated[int, typer.Option(
    "--limit", "-l", callback=_count, metavar="N", help="At most this many events (a dropped notice does not count).")]
After = Annotated[str | None, typer.Option(
    "--after", metavar="CURSOR", help="Read on after this cursor.")]
PageCursorFile = Annotated[Path | None, typer.Option(
    "--cursor-file", metavar="FILE",
    help="Start from the cursor in FILE (when it exists and no --after); save the next one there.")]
TailCursorFile = Annotated[Path | None, typer.Option(
    "--cursor-file", metavar="FILE",
    help="Start from the cursor in FILE when it exists; save the cursor there after each event.")]
Types = Annotated[list[str] | None, typer.Option(
    "--types", "-t", metavar="T,..",
    help="Only these types (with or without 'wardrik.'; repeatable); events.dropped always comes.")]
ExcludeTypes = Annotated[list[str] | None, typer.Option(
    "--exclude-types", "-x", metavar="T,..", help="Not these types (repeatable; live ones too).")]
Grep = Annotated[str | None, typer.Option(
    "--grep", "-g", metavar="REGEX",
    help="Only events with a string value anywhere in data (keys excluded) that holds a match.")]
IgnoreCase = Annotated[bool, typer.Option("--ignore-case", "-i", help="--grep ignores case.")]
Where = Annotated[list[str] | None, typer.Option(
    "--where", metavar="'PATH OP VALUE'",
    help="Only events where this holds (repeatable, all must): PATH dotted into the event "
         "(data.tool.name, subject), OP one of = != ~ < <= > >=.")]
Since = Annotated[str | None, typer.Option(
    "--since", metavar="TIME",
    help="Events at or after TIME: RFC 3339 (UTC if no offset, local under --local), 2026-10-22, "
         "10:00, now, today, yesterday, or a duration ago (15m, 1h30m, 2h ago).")]
Until = Annotated[str | None, typer.Option("--until", metavar="TIME", help="Events before TIME (as --since).")]
Run = Annotated[str | None, typer.Option(
    "--run", metavar="RUN_ID",
    help="Only this run's events: 4+ hex digits of its id (as shown, 8), the whole id, or a traceparent.")]
Lines = Annotated[int, typer.Option(
    "-n", "--lines", callback=_count, metavar="N", help="Show the last N events first (0: only what is written next).")]
Follow = Annotated[bool, typer.Option(
    "-f", "--follow", help="Keep following: every event as it is written.")]
Data = Annotated[str | None, typer.Option(
    "--data", "-d", metavar="JSON|@FILE|-", help="The event's data, a JSON object (default: {}).")]
RemoteInterval = Annotated[str | None, typer.Option(
    "--interval", metavar="DURATION",
    help="With -f on a remote root (--root s3://... or file://...): how often the store is polled "
         "(seconds or a duration: 0.5, 30s, 1m; default: $WARDRIK_REMOTE_INTERVAL, else 5).")]
