"""Pretty output of ``stats``: one table, a row a group, then what a blank cost means.

Columns that do not apply to the grouping are left out (tokens and cost for tools; failures
and durations for types). Group names come from the events: they are printed as Text, and
the console's sanitiser (``cli.safe_text``) shows any control in them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wardrik_cli.cli.render.console import console, duration
from wardrik_cli.cli.safe_text import flat

if TYPE_CHECKING:
    from wardrik_cli.folding.stats import StatsResult

NONE = "(none)"  # a group without a name: a call whose data gave none


def _secs(v: Any) -> str:
    return duration(v * 1000) if isinstance(v, (int, float)) else ""


def _int(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else ""


def _cost(v: Any) -> str:
    if not isinstance(v, (int, float)):
        return ""
    return f"${v:,.2f}" if v >= 100 else f"${v:,.4f}"


def _rate(v: Any) -> str:
    return f"{v * 100:.1f}%" if isinstance(v, (int, float)) else ""


def print_stats(result: StatsResult) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console()
    by = result.by
    timed, tokens = by != "type", by != "tool"
    window = "".join(f" {k} {v}" for k, v in (("since", result.since), ("until", result.until)) if v)
    if not result.rows:
        c.print(Text(f"nothing to count by {by}{window}", style="dim"))
        return
    unended = timed and any(r["unended"] for r in result.rows)  # a column of blanks says nothing
    per_run = by == "run"  # one run a row: its status and how long it took say it all
    headers = ["status", "took"] if per_run else ["events" if by == "type" else "runs" if by == "agent" else "calls"]
    if timed and not per_run:
        headers += ["failed", "error"] + (["unended"] if unended else []) + ["p50", "p95", "max"]
    if tokens:
        headers += ["in tok", "out tok", "cost"]
    names: list[Any] = []
    numbers: list[list[str]] = []
    unpriced = 0
    for r in result.rows:
        key = r[by]
        if by == "run" and isinstance(key, str):
            key = key[:8]  # as page shows a run, and as --run takes it
        names.append([Text(flat(key)) if isinstance(key, str) else Text(NONE, style="dim")]
                     + ([Text(str(r["log"] or ""))] if by == "run" else []))
        status = "failed" if r["failures"] else "completed" if r["calls"] else "unended"
        cells = [status, _secs(r["max_s"])] if per_run else [_int(r["calls"])]
        if timed and not per_run:
            cells += [_int(r["failures"]), _rate(r["error_rate"])]
            if unended:
                cells.append(_int(r["unended"]) if r["unended"] else "")
            cells += [_secs(r["p50_s"]), _secs(r["p95_s"]), _secs(r["max_s"])]
        if tokens:
            cells += [_int(r["input_tokens"]), _int(r["output_tokens"]), _cost(r["cost_usd"])]
            unpriced += r["unpriced"] or 0
        numbers.append(cells)
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1),
                  title=Text(f"by {by}{window}", style="dim"), title_justify="left")
    # Numbers are never cut; on a narrow terminal the names wrap instead.
    table.add_column(by, overflow="fold", min_width=8)
    if by == "run":
        table.add_column("log", overflow="fold", min_width=8)
    for i, name in enumerate(headers):
        width = max([len(name)] + [len(cells[i]) for cells in numbers])
        table.add_column(name, justify="right", no_wrap=True, min_width=width)
    for head, cells in zip(names, numbers, strict=True):
        styled = [Text(v, style="red" if headers[i] in ("failed", "status") and v not in ("", "0", "completed")
                       else "")
                  for i, v in enumerate(cells)]
        table.add_row(*head, *styled)
    c.print(table)
    if unpriced:
        c.print(Text(f"cost blank: {unpriced:,} model call{'s' if unpriced != 1 else ''} gave no data.cost_usd and "
                     "have no price in .wardrik/config.toml ([prices.\"provider:model\"] input_per_mtok, "
                     "output_per_mtok); a partial sum is never shown", style="dim"))
