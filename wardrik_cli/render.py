"""Human output (``--format pretty``): the only module that imports Rich, and only when called.

Colours come from the event family, times are shown compactly, and every line is cut to
the terminal width. Colour only on a terminal; ``NO_COLOR`` and ``--color`` are honoured.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional

from .protocol import short_name
from .summary import family, summarize

STYLES = {
    "run": "bold green", "message": "cyan", "reasoning": "magenta", "tool_call": "yellow",
    "input": "bright_blue", "trigger": "bright_magenta", "agent": "bright_white", "events": "bold red",
    "activity": "dim",
}
_color_choice = "auto"


def set_color(choice: str) -> None:
    global _color_choice
    _color_choice = choice


def console(stderr: bool = False):
    from rich.console import Console

    kw: dict[str, Any] = {"stderr": stderr, "highlight": False}
    if _color_choice == "never" or (_color_choice == "auto" and os.environ.get("NO_COLOR")):
        kw["no_color"] = True
        kw["color_system"] = None
    elif _color_choice == "always":
        kw["force_terminal"] = True
    return Console(**kw)


def short_time(t: str) -> str:
    # 2026-10-22T09:00:03.123456Z -> 2026-10-22 09:00:03.123
    return f"{t[:10]} {t[11:23]}" if isinstance(t, str) and len(t) >= 23 else str(t)


def event_style(event: dict) -> str:
    return STYLES.get(family(str(event.get("type", ""))), "white")


def events_table(items: Iterable[Any], title: Optional[str] = None):
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, box=None, pad_edge=False, header_style="bold")
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("log", no_wrap=True)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("summary", overflow="ellipsis", no_wrap=True, ratio=1)
    n = 0
    for it in items:
        ev = it.event
        seq = ev.get("sequence")
        style = event_style(ev)
        table.add_row(short_time(ev.get("time", "")), it.log, str(int(seq)) if seq else "–",
                      Text(short_name(ev.get("type", "")), style=style), summarize(ev))
        n += 1
    return table, n


def print_page(items: Iterable[Any], next_cursor_fn) -> None:
    c = console()
    table, n = events_table(items)
    if n:
        c.print(table)
    else:
        c.print("[dim]no events[/dim]")
    c.print(f"next: {next_cursor_fn()}", soft_wrap=True)


def print_appended(events: list[dict]) -> None:
    from .reader import Item

    c = console()
    table, _ = events_table(Item(short_name(e.get("source", "").split("/agents/", 1)[-1]), b"", e,
                                 int(e["sequence"]) if e.get("sequence") else None) for e in events)
    c.print(table)


def print_types(types: list[Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console()
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("type", "kind", "required data", "optional data", "what it records"):
        table.add_column(col)
    for t in types:
        table.add_row(Text(t.full, style=STYLES.get(family(t.name), "white")), t.kind,
                      ", ".join(t.required) or "–", ", ".join(t.optional) or "–", t.summary)
    c.print(table)


def print_check(problems: list[Any], logs_checked: int) -> None:
    c = console()
    for p in problems:
        style = "red" if p.severity == "error" else "yellow"
        c.print(f"[{style}]{p.severity}[/{style}] {p}", soft_wrap=True, markup=True, highlight=False)
    errors = sum(1 for p in problems if p.severity == "error")
    warns = len(problems) - errors
    verdict = "[bold green]ok[/bold green]" if not errors else f"[bold red]{errors} error(s)[/bold red]"
    c.print(f"{verdict}: {logs_checked} log(s) checked" + (f", {warns} warning(s)" if warns else ""))


class FollowPrinter:
    """``tail`` in a terminal: one coloured line per event, cut to the terminal width.

    Kept events show their sequence; live ones (deltas, progress) show ``~`` and are dim,
    so a streaming answer reads as it arrives; ``events.dropped`` stands out in red.
    """

    def __init__(self) -> None:
        self.c = console()

    def __call__(self, item: Any) -> None:
        from rich.text import Text

        ev = item.event
        seq = ev.get("sequence")
        live = not seq and ev.get("type") != "wardrik.events.dropped"
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(short_time(ev.get("time", ""))[11:], style="dim")
        line.append(" ")
        line.append(str(item.log), style="bold" if not live else "dim")
        line.append(f" {int(seq)}" if seq else " ~", style="dim")
        line.append(" ")
        line.append(short_name(str(ev.get("type", ""))), style="dim " + event_style(ev) if live else event_style(ev))
        summary = summarize(ev)
        if summary:
            line.append("  " + summary, style="dim" if live else "")
        self.c.print(line, soft_wrap=False, crop=True)
        self.c.file.flush()
