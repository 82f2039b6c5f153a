"""Human output (``--format pretty``): the one rendering module every command uses.

Rich is imported inside the functions that need it, never at import time, so importing this
module costs nothing a non-pretty command would notice.

What it keeps, for every command alike:
- One event is one line, ``TIME  LOG  SEQ  TYPE  SUMMARY``: the time of day (a day line is
  printed first and whenever the day changes), the log id, the sequence (``~`` for a live
  event, ``–`` for a dropped notice), the short type in its family's colour (``STYLES``) and
  ``summary.summarize``. The summary takes what is left of the terminal's width and is cut
  with an ellipsis.
- Column widths: ``page``/``append`` measure their first rows, so time, log, sequence and type
  are never cut. ``tail`` (``fixed``) keeps them fixed from its start so rows never reflow:
  the log column is as wide as the widest id matched then (at least ``LOG_MIN``, at most a
  quarter of the screen, ``LOG_CAP``); a longer id is cut in its middle with an ellipsis, its
  end kept (``fit_log``); the sequence is right-aligned in ``SEQ_WIDTH``.
- Each log id has its own colour (``log_style``): a hash of the id into ``LOG_COLOURS``, so the
  same log has the same colour in every run, as stern does for pods.
- Times are UTC unless ``--local`` (``set_display(local=True)``); ``-v/--verbose`` adds each
  event's data under its line as highlighted JSON (data nested deeper than ``append`` allows,
  from a line written by hand, is shown cut at that depth: ``folding.deep``), clipped for the
  screen (``clip_for_screen``: so many keys, items, characters and values, then a line saying
  so), so that a 10 MB event costs what a small one does.
- Colour only on a terminal: ``--color auto`` (the default) lets Rich decide, and Rich
  honours ``NO_COLOR``; ``always`` forces colour (``NO_COLOR`` too), ``never`` turns it off.
- ``tail``'s screen (streamed text, one line per message) is ``render.streams``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from wardrik_cli.protocol.catalogue import short_name
from wardrik_cli.cli.render.console import clock, console, day_of, display, short_time, tz_label
from wardrik_cli.cli.render.summary import family, is_live, summarize

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
SEQ_WIDTH = 6  # tail's sequence column: up to 999999 without moving (a longer one widens it from then on)
LOG_MIN, LOG_CAP = 12, 32  # tail's log column: at least, and at most (never over a quarter of the width)
# Per-log colours: readable on dark and light backgrounds; no red (errors, dropped events) and
# no plain blue (too dark on black).
LOG_COLOURS = ("cyan", "green", "yellow", "magenta", "bright_blue", "bright_cyan", "bright_green", "bright_yellow",
               "bright_magenta")


# ---------------------------------------------------------------------------
# event lines
# ---------------------------------------------------------------------------
def event_style(event: dict[str, Any]) -> str:
    return STYLES.get(family(str(event.get("type", ""))), "white")


def log_style(log_id: str) -> str:
    """The colour of a log id: the same in every run and process (crc32, not the salted hash())."""
    import zlib

    return LOG_COLOURS[zlib.crc32(str(log_id).encode("utf-8", "surrogatepass")) % len(LOG_COLOURS)]


def fit_log(log_id: str, width: int) -> str:
    """``log_id`` padded to ``width``, or cut in its middle with an ellipsis, its end kept (the
    last segment tells logs of one folder apart)."""
    if len(log_id) <= width:
        return f"{log_id:<{width}}"
    if width < 2:
        return "…"[:width]
    end = (width - 1) - (width - 1) // 3
    return log_id[: width - 1 - end] + "…" + log_id[-end:]


def log_width(log_ids: Iterable[str], screen_width: int) -> int:
    """tail's fixed log column: the widest id matched at the start, within [LOG_MIN, cap]."""
    cap = max(LOG_MIN, min(LOG_CAP, screen_width // 4))
    return min(cap, max([LOG_MIN, *(len(i) for i in log_ids)]))


def log_of(event: dict[str, Any]) -> str:
    src = str(event.get("source", ""))
    if "/agents/" in src:
        return src.split("/agents/", 1)[1]
    return "audit" if src.endswith("/audit") else src


class EventLines:
    """Prints events as aligned one-line rows; the same layout for page, tail, append, audit.

    Column widths grow to the widest value seen (``page`` measures its first rows before
    printing), so time, log, sequence and type are never cut; the summary is. ``fixed``
    (``tail``): the widths given stay, so rows never reflow; a longer log id is cut
    (``fit_log``), a longer sequence widens its column from then on.
    """

    def __init__(self, c: Any = None, *, header: bool = False, log_width: int = 0, seq_width: int = 1,
                 type_width: int = 4, fixed: bool = False) -> None:
        self.c = c if c is not None else console()
        self.header = header
        self.fixed = fixed
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
        # a rule the stream can hold: an ASCII one where it is not Unicode (PYTHONIOENCODING=ascii),
        # rather than a row of escapes (\u2500) several screens wide
        rule = "─" if str(getattr(self.c, "encoding", "utf-8")).lower().startswith("utf") else "-"
        t.append(rule * max(0, self.c.width - len(day) - len(tz_label()) - 2), style="dim")
        self._out(t)

    def _out(self, text: Any) -> None:
        text.no_wrap = True
        text.truncate(self.c.width, overflow="ellipsis")
        self.c.print(text, no_wrap=True, crop=True, soft_wrap=False, overflow="ellipsis")

    def line(self, item: Any) -> Any:
        """The row for one item (``read.reader.Item``: .log, .event), as a Rich Text."""
        from rich.text import Text

        ev = item.event
        log = str(item.log)
        if self.fixed:
            self.seq_w = max(self.seq_w, len(_seq_text(ev)))
        else:
            self.measure(item)
        typ = short_name(str(ev.get("type", "")))
        fam = family(typ)
        live = is_live(ev)
        t = Text()
        t.append(f"{short_time(ev.get('time')):<19}" if self.wide else f"{clock(ev.get('time')):<8}", style="dim")
        t.append(" ")
        shown = fit_log(log, self.log_w) if self.fixed else f"{log:<{self.log_w}}"
        t.append(shown, style=("dim " if live else "bold ") + log_style(log))
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


# What ``-v`` shows of one event's data, at most: Rich highlights JSON token by token, at
# hundreds of bytes a token, so a 10 MB event (400,000 keys) took 2.27 GB. Past these bounds
# the data is clipped for the screen, saying so; ``-o jsonl`` prints the stored line whole.
VERBOSE_ITEMS = 200  # keys of one object, items of one array
VERBOSE_CHARS = 1000  # characters of one string or key (a row is cropped at the screen's width anyway)
VERBOSE_VALUES = 5000  # values in all (objects, arrays, strings, numbers ...)


def clip_for_screen(value: Any, *, items: int = VERBOSE_ITEMS, chars: int = VERBOSE_CHARS,
                    values: int = VERBOSE_VALUES, depth: int | None = None) -> tuple[Any, bool]:
    """(``value`` cut to what a screen can show, whether anything was cut).

    A copy holding at most ``items`` keys of an object (then a key ``"… N more keys"``) and
    items of an array (then ``"… N more items"``), strings and keys of at most ``chars``
    characters (then ``"… (N more characters)"``), ``values`` values in all (a container met
    once they are spent is ``"… (clipped)"``), and containers nested at most ``depth`` levels
    (``folding.deep.DEPTH``, append's limit; deeper ones are ``deep.TOO_DEEP``). Walked with a
    queue of its own, so no depth can exhaust Python's stack. ``value`` itself when nothing is cut."""
    from collections import deque

    from wardrik_cli.folding.deep import DEPTH, TOO_DEEP

    limit = DEPTH if depth is None else depth
    cut = False
    budget = values

    def leaf(v: Any) -> Any:
        nonlocal cut
        if isinstance(v, str) and len(v) > chars:
            cut = True
            return f"{v[:chars]}… ({len(v) - chars:,} more characters)"
        return v

    def container(v: Any, level: int) -> Any:
        nonlocal cut, budget
        if level > limit:
            cut = True
            return TOO_DEEP
        if budget <= 0:
            cut = True
            return "… (clipped)"
        copy: Any = {} if isinstance(v, dict) else []
        stack.append((v, copy, level))
        return copy

    top: Any
    # Level by level, first to last (a queue, not a stack): the budget goes to the outline of
    # the whole value and to its first items, not to the depths of its last one.
    stack: deque[tuple[Any, Any, int]] = deque()
    if isinstance(value, (dict, list)):
        top = container(value, 1)
    else:
        top = leaf(value)
    while stack:
        src, dst, level = stack.popleft()
        n = len(src)
        take = min(n, items, max(budget, 0))
        budget -= take
        if isinstance(src, dict):
            for i, (k, v) in enumerate(src.items()):
                if i >= take:
                    break
                dst[leaf(k) if isinstance(k, str) else k] = (
                    container(v, level + 1) if isinstance(v, (dict, list)) else leaf(v))
            if take < n:
                cut = True
                dst[f"… {n - take:,} more keys"] = "…"
        else:
            for v in src[:take]:
                dst.append(container(v, level + 1) if isinstance(v, (dict, list)) else leaf(v))
            if take < n:
                cut = True
                dst.append(f"… {n - take:,} more items")
    return (top, True) if cut else (value, False)


def data_json(event: dict[str, Any]) -> Any:
    """The event's data (and, for -v, its id and trace) as indented, highlighted JSON, clipped
    for the screen (``clip_for_screen``) with a line that says so."""
    import json

    from rich.console import Group
    from rich.json import JSON
    from rich.padding import Padding
    from rich.text import Text

    from wardrik_cli.folding.deep import too_deep

    data = event.get("data")
    # json.dumps and Rich recurse, and a hand-written line may nest 1,000 deep: such data is
    # cut at append's depth and shown compact, as indenting it would be wider than any screen
    deep = too_deep(data)
    data, clipped = clip_for_screen(data)
    shown: JSON | Pretty
    try:
        shown = JSON(json.dumps(data, ensure_ascii=False, default=str), indent=None if deep else 2)
        if deep:  # one long line: folded at the screen's width, not cut (the cut is what it shows)
            shown.text.no_wrap, shown.text.overflow = False, "fold"
        else:  # a row wider than the screen is cropped: an ellipsis says so
            shown.text.overflow = "ellipsis"
    except (TypeError, ValueError):
        from rich.pretty import Pretty
        shown = Pretty(data)
    if clipped:
        note = Text(f"(data clipped for the screen: at most {VERBOSE_ITEMS} keys or items a level, "
                    f"{VERBOSE_CHARS:,} characters a string, {VERBOSE_VALUES:,} values; -o jsonl shows it whole)",
                    style="dim")
        return Padding(Group(shown, note), (0, 0, 0, 9))
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


def print_appended(events: Iterable[dict[str, Any]]) -> None:
    """``append`` and ``audit record`` in pretty: the stored events as rows (taken one at a
    time: a batch's events are never all decoded at once)."""
    print_events((_Item(log_of(e), e) for e in events), header=False)
