"""Options the commands share, declared once (``Annotated`` aliases), so that a spelling, a
metavar or a help text is the same wherever the option appears."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wardrik_cli.cli.output import Format

FormatOpt = Annotated[Format | None, typer.Option(
    "--format", "-F", help="pretty (Rich, default on a terminal), jsonl or json.", case_sensitive=False)]
Patterns = Annotated[list[str], typer.Argument(
    metavar="PATTERN...", help="Log ids or globs: * any run of characters, ? one.", show_default=False)]
SkipCorrupt = Annotated[bool, typer.Option(
    "--skip-corrupt", help="Warn about a corrupt line and read past it instead of stopping.")]
Limit = Annotated[int, typer.Option(
    "--limit", "-l", min=0, metavar="N", help="At most this many events (a dropped notice does not count).")]
After = Annotated[str | None, typer.Option(
    "--after", metavar="CURSOR", help="Read on after this cursor.")]
PageCursorFile = Annotated[Path | None, typer.Option(
    "--cursor-file", metavar="FILE",
    help="Start from the cursor in FILE (when it exists and no --after); save the next one there.")]
TailCursorFile = Annotated[Path | None, typer.Option(
    "--cursor-file", metavar="FILE",
    help="Start from the cursor in FILE when it exists; save the cursor there after each event.")]
Types = Annotated[str | None, typer.Option(
    "--types", "-t", metavar="T,..",
    help="Only these types (with or without 'wardrik.'); events.dropped always comes.")]
Since = Annotated[str | None, typer.Option(
    "--since", metavar="TIME",
    help="Events at or after TIME: RFC 3339 (UTC if no offset) or a duration ago (15m, 2h, 3d).")]
Until = Annotated[str | None, typer.Option("--until", metavar="TIME", help="Events before TIME.")]
Run = Annotated[str | None, typer.Option(
    "--run", metavar="RUN_ID", help="Only the events of this run (its trace id).")]
Lines = Annotated[int, typer.Option(
    "-n", "--lines", min=0, metavar="N", help="Show the last N events first (0: only what is written next).")]
Follow = Annotated[bool, typer.Option(
    "-f", "--follow", help="Keep following: every event as it is written.")]
Data = Annotated[str | None, typer.Option(
    "--data", "-d", metavar="JSON|@FILE|-", help="The event's data, a JSON object (default: {}).")]
