"""``stats`` (and, later, ``export otlp``): what agents cost and where the time went (issue 15).

Thin shells over the library (``folding.stats``); commands register themselves on ``app``
when this module is imported.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import build_filters, on_corrupt, patterns_or_all
from wardrik_cli.cli.options import Patterns, SkipCorrupt, Since, Until


class By(str, Enum):  # noqa: UP042 - as output.Format: a StrEnum's members format differently
    agent = "agent"
    run = "run"
    model = "model"
    tool = "tool"
    type = "type"


class StatsFormat(str, Enum):  # noqa: UP042
    pretty = "pretty"
    jsonl = "jsonl"
    json = "json"
    csv = "csv"


ByOpt = Annotated[By, typer.Option(
    "--by", metavar="KEY", case_sensitive=False,
    help="Group by agent (runs per log), run, model (model calls), tool (tool calls) or type (event counts).")]
StatsFormatOpt = Annotated[StatsFormat | None, typer.Option(
    "--format", "-o", "-F", metavar="FORMAT", case_sensitive=False,
    help="pretty (Rich, default on a terminal), json (default otherwise), jsonl (a group a line) or csv.")]


@app.command(rich_help_panel="Review")
def stats(
    patterns: Patterns = None,
    by: ByOpt = By.agent,
    since: Since = None,
    until: Until = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: StatsFormatOpt = None,
) -> None:
    """Count calls, failures, durations, tokens and cost per agent, run, model, tool or type.

    Per group: calls, failures, error rate, unended (started, no end in the window),
    p50/p95/max duration in seconds, input/output tokens and cost in US dollars. A tool
    call is a tool_call.started .. tool_call.completed/failed pair matched by tool.call.id
    in one log; a model call a message.started (its data.model) .. message.completed
    matched by message.id (one still open when its run fails is a failure); --by run and
    --by agent count runs, run.started .. run.completed/failed (failures: run.failed);
    --by type counts events. A call counts when its end is in the window (no duration if
    its start is not). Tokens are the message.completed data.usage sums. Cost is a call's
    data.cost_usd, else its usage times the model's price in .wardrik/config.toml
    ([prices."anthropic:claude-haiku-4-5"] input_per_mtok, output_per_mtok, optional
    cache_read_per_mtok, cache_creation_per_mtok), else unknown: a group's cost is blank
    unless every model call in it has one (never a guess). Percentiles are nearest-rank,
    exact up to 4,096 calls a group, then within 0.5%.

    Examples:

      wardrik stats 'acme/*' --by model

      wardrik stats --by tool --since yesterday -o csv > tools.csv

      wardrik stats --by run --since 2h -o json | jq '.groups[] | select(.failures > 0)'
    """
    from wardrik_cli.folding.stats import load_prices
    from wardrik_cli.folding.stats import stats as count_stats
    from wardrik_cli.read.reader import resolve_logs

    inv = current()
    filters = build_filters(since=since, until=until)
    logs = resolve_logs(inv.root, patterns_or_all(patterns))
    prices = load_prices(inv.root)
    result = count_stats(logs, by.value, deployment=inv.deployment(), since=filters.since, until=filters.until,
                         prices=prices, on_corrupt=on_corrupt(skip_corrupt), warn=inv.warn)
    for log, n in sorted(result.dropped.items()):
        inv.warn(f"{log}: {n} event{'s' if n != 1 else ''} in this window were dropped by retention "
                 "(wardrik compact); stats count the events kept")
    shown = fmt.value if fmt is not None else ("pretty" if inv.isatty() else "json")
    if shown == "pretty":
        from wardrik_cli.cli.render.costs import print_stats

        print_stats(result)
        inv.flush_out()
    elif shown == "csv":
        inv.stdout.write(_csv(result.by, result.rows))
        inv.flush_out()
    else:
        from wardrik_cli.cli.output import Format, emit

        emit(Format(shown), pretty=lambda: None, jsonl=result.rows, json=result.to_json())


def _csv(by: str, rows: list[dict[str, Any]]) -> bytes:
    """A header and a row a group; a null is an empty cell."""
    import csv
    import io

    from wardrik_cli.folding.stats import COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    names = (by, "log", *COLUMNS) if by == "run" else (by, *COLUMNS)
    w.writerow(names)
    for r in rows:
        w.writerow(["" if r[k] is None else r[k] for k in names])
    return buf.getvalue().encode()
