"""Human output (``--format pretty``): the one rendering module every command uses.

Rich is imported inside the functions that need it, never at import time, so importing this
module costs nothing a non-pretty command would notice.

What it keeps, for every command alike:
- One event is one line, ``TIME  LOG  SEQ  TYPE  SUMMARY``: the time of day (a day line is
  printed first and whenever the day changes), the log id, the sequence (``~`` for a live
  event, ``–`` for a dropped notice), the short type in its family's colour (``STYLES``) and
  ``summary.summarize``. Time, log, sequence and type are never cut; the summary takes what
  is left of the terminal's width and is cut with an ellipsis.
- Times are UTC unless ``--local`` (``set_display(local=True)``); ``-v/--verbose`` adds each
  event's data under its line as highlighted JSON.
- Colour only on a terminal: ``--color auto`` (the default) lets Rich decide, and Rich
  honours ``NO_COLOR``; ``always`` forces colour (``NO_COLOR`` too), ``never`` turns it off.
- ``tail -f``: live ``message.delta``/``reasoning.delta`` text is streamed, as it arrives,
  on indented lines under the event line before it (wrapped at the terminal's width), and
  ``events.dropped`` stands out in red.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from wardrik_cli.protocol.catalogue import short_name
from wardrik_cli.cli.render.console import clock, console, day_of, display, short_time, tz_label
from wardrik_cli.cli.render.summary import delta_key, delta_text, family, is_live, summarize

if TYPE_CHECKING:
    from rich.pretty import Pretty

# One colour per event family (summary.family); render/fold.py uses the same ones.
STYLES = {
    "run": "bold green", "message": "cyan", "tool_call": "yellow", "input": "bright_blue",
    "trigger": "magenta", "audit": "bright_white", "dropped": "bold white on red", "activity": "dim",
    "other": "white",
    # kept for callers that still name the old families
    "reasoning": "cyan", "agent": "bright_white", "events": "bold white on red",
}
TYPE_WIDTH = 19  # the longest kept type, tool_call.completed / reasoning.completed


# ---------------------------------------------------------------------------
# event lines
# ---------------------------------------------------------------------------
def event_style(event: dict[str, Any]) -> str:
    return STYLES.get(family(str(event.get("type", ""))), "white")


def log_of(event: dict[str, Any]) -> str:
    src = str(event.get("source", ""))
    if "/agents/" in src:
        return src.split("/agents/", 1)[1]
    return "audit" if src.endswith("/audit") else src


class EventLines:
    """Prints events as aligned one-line rows; the same layout for page, tail, append, audit.

    Column widths grow to the widest value seen (``page`` measures its first rows before
    printing), so time, log, sequence and type are never cut; the summary is.
    """

    def __init__(self, c: Any = None, *, header: bool = False, log_width: int = 0, seq_width: int = 1,
                 type_width: int = 4) -> None:
        self.c = c if c is not None else console()
        self.header = header
        self.log_w, self.seq_w, self.type_w = log_width, seq_width, type_width
        self.day: str | None = None
        self.count = 0
        self.wide = False  # the date on every row, no day lines

    def measure(self, item: Any) -> None:
        ev = item.event
        self.log_w = max(self.log_w, len(str(item.log)))
        self.seq_w = max(self.seq_w, len(_seq_text(ev)))
        self.type_w = max(self.type_w, len(short_name(str(ev.get("type", "")))))

    def _header(self) -> None:
        from rich.text import Text

        h = Text(style="bold")
        h.append(f"{'time':<{19 if self.wide else 8}}")
        h.append(f" {'log':<{self.log_w}}")
        h.append(f" {'seq':>{self.seq_w}}")
        h.append(f" {'type':<{self.type_w}}")
        h.append("  summary")
        h.append(f"   times in {tz_label()}", style="dim")
        self._out(h)

    def _day_line(self, day: str) -> None:
        from rich.text import Text

        t = Text()
        t.append(f"{day} {tz_label()} ", style="bold")
        t.append("─" * max(0, self.c.width - len(day) - len(tz_label()) - 2), style="dim")
        self._out(t)

    def _out(self, text: Any) -> None:
        text.no_wrap = True
        text.truncate(self.c.width, overflow="ellipsis")
        self.c.print(text, no_wrap=True, crop=True, soft_wrap=False, overflow="ellipsis")

    def line(self, item: Any) -> Any:
        """The row for one item (``read.reader.Item``: .log, .event), as a Rich Text."""
        from rich.text import Text

        ev = item.event
        self.measure(item)
        typ = short_name(str(ev.get("type", "")))
        fam = family(typ)
        live = is_live(ev)
        t = Text()
        t.append(short_time(ev.get("time")) if self.wide else clock(ev.get("time")), style="dim")
        t.append(" ")
        t.append(f"{str(item.log):<{self.log_w}}", style="dim" if live else "bold")
        t.append(f" {_seq_text(ev):>{self.seq_w}} ", style="dim")
        t.append(typ, style=("dim " if live and fam != "activity" else "") + STYLES.get(fam, "white"))
        t.append(" " * (self.type_w - len(typ)) + "  ")
        summary = summarize(ev)
        if fam == "dropped":
            t.append(f"⚠ {summary}", style="bold red")
        else:
            t.append(summary, style="dim" if live else "")
        return t

    def print(self, item: Any) -> None:
        ev = item.event
        if self.header and self.count == 0:
            self._header()
        day = day_of(ev.get("time"))
        if day and day != self.day and not self.wide:
            self.day = day
            self._day_line(day)
        self._out(self.line(item))
        if display().verbose:
            self.c.print(data_json(ev), soft_wrap=False)
        self.count += 1


def _seq_text(ev: dict[str, Any]) -> str:
    seq = ev.get("sequence")
    if seq:
        try:
            return str(int(seq))
        except (TypeError, ValueError):
            return str(seq)
    return "–" if short_name(str(ev.get("type", ""))) == "events.dropped" else "~"


def data_json(event: dict[str, Any]) -> Any:
    """The event's data (and, for -v, its id and trace) as indented, highlighted JSON."""
    import json

    from rich.json import JSON
    from rich.padding import Padding

    data = event.get("data")
    shown: JSON | Pretty
    try:
        shown = JSON(json.dumps(data, ensure_ascii=False, default=str), indent=2)
    except (TypeError, ValueError):
        from rich.pretty import Pretty
        shown = Pretty(data)
    return Padding(shown, (0, 0, 0, 9))


def print_events(items: Iterable[Any], *, header: bool = True, c: Any = None, measure_first: int = 200) -> int:
    """Print items as rows, measuring the first ``measure_first`` for the column widths; the count."""
    lines = EventLines(c, header=header, type_width=4, seq_width=3 if header else 1)
    it = iter(items)
    first: list[Any] = []
    for item in it:
        first.append(item)
        if len(first) >= measure_first:
            break
    for item in first:
        lines.measure(item)
    # Sparse events (an audit log, a page across weeks) show the date on every row instead
    # of a day line between almost every two rows.
    days = {day_of(i.event.get("time")) for i in first}
    lines.wide = len(first) > 2 and len(days) > len(first) / 3
    for item in first:
        lines.print(item)
    for item in it:
        lines.print(item)
    return lines.count


def print_page(items: Iterable[Any], next_cursor_fn: Callable[[], str]) -> None:
    """``page`` and ``audit page``: the rows, then ``next: CURSOR`` last."""
    c = console()
    n = print_events(items, c=c)
    if not n:
        c.print("[dim]no events[/dim]")
    c.print(f"[dim]next:[/dim] {next_cursor_fn()}", soft_wrap=True)


class _Item:
    __slots__ = ("log", "raw", "event", "seq")

    def __init__(self, log: str, event: dict[str, Any]) -> None:
        self.log, self.raw, self.event = log, b"", event
        seq = event.get("sequence")
        self.seq = int(seq) if seq else None


def print_appended(events: list[dict[str, Any]]) -> None:
    """``append`` and ``audit record`` in pretty: the stored events as rows."""
    print_events([_Item(log_of(e), e) for e in events], header=False)


# ---------------------------------------------------------------------------
# tail
# ---------------------------------------------------------------------------
class FollowPrinter:
    """``tail`` in pretty: one row per event, live text streamed under its message.

    A ``message.delta``/``reasoning.delta`` does not get a row: its text is written as it
    arrives, on indented lines under the row before it, wrapped at the terminal's width;
    deltas of the same message continue the same text. Any other event ends the stream.
    ``events.dropped`` stands out in red. Every print is flushed at once.
    """

    INDENT = 9

    def __init__(self) -> None:
        self.c = console()
        self.lines = EventLines(self.c, type_width=TYPE_WIDTH, seq_width=2, log_width=12)
        self.stream: tuple[str, Any, str] | None = None  # (log, message id, type) of the open text stream
        self.col = 0

    def __call__(self, item: Any) -> None:
        ev = item.event
        typ = short_name(str(ev.get("type", "")))
        if typ in ("message.delta", "reasoning.delta") and not ev.get("sequence"):
            self._delta(item, typ)
        else:
            self.close()
            self.lines.print(item)
        self.c.file.flush()

    def _delta(self, item: Any, typ: str) -> None:
        from rich.cells import cell_len
        from rich.text import Text

        key = (item.log, delta_key(item.event), typ)
        style = "cyan" if typ == "message.delta" else "italic magenta"
        width = max(self.c.width, self.INDENT + 10)
        if self.stream != key:
            self.close()
            head = Text(" " * self.INDENT)
            label = f"{key[1]} " if key[1] is not None else ""
            head.append(f"{label}{'▸' if typ == 'message.delta' else '…'} ", style="dim")
            self.c.print(head, end="", soft_wrap=True)
            self.col = cell_len(head.plain)
            self.stream = key
        text = delta_text(item.event)
        out = Text()
        for ch in text:
            if ch == "\n":
                out.append("\n" + " " * self.INDENT)
                self.col = self.INDENT
                continue
            if ch == "\t" or ch < " ":
                ch = " "
            w = cell_len(ch)
            if self.col + w > width:
                out.append("\n" + " " * self.INDENT)
                self.col = self.INDENT
                if ch == " ":
                    continue
            out.append(ch, style=style)
            self.col += w
        self.c.print(out, end="", soft_wrap=True)

    def close(self) -> None:
        """End an open text stream with a newline (before another row, or at exit)."""
        if self.stream is not None:
            self.stream = None
            self.col = 0
            try:
                self.c.print()
                self.c.file.flush()
            except (OSError, ValueError):
                pass
