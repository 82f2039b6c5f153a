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

import atexit
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator, Optional

from .protocol import short_name
from .summary import delta_key, delta_text, family, is_live, summarize

# One colour per event family (summary.family); render_fold uses the same ones.
STYLES = {
    "run": "bold green", "message": "cyan", "tool_call": "yellow", "input": "bright_blue",
    "trigger": "magenta", "audit": "bright_white", "dropped": "bold white on red", "activity": "dim",
    "other": "white",
    # kept for callers that still name the old families
    "reasoning": "cyan", "agent": "bright_white", "events": "bold white on red",
}
TYPE_WIDTH = 19  # the longest kept type, tool_call.completed / reasoning.completed
PROGRESS_MIN_BYTES = 64 << 20  # a sweep this big gets a progress bar on a terminal

_color_choice = "auto"
_local = False
_verbose = False


def set_color(choice: str) -> None:
    global _color_choice
    _color_choice = choice


def set_display(*, local: Optional[bool] = None, verbose: Optional[bool] = None) -> None:
    """The global display options ``--local`` and ``-v/--verbose``."""
    global _local, _verbose
    if local is not None:
        _local = local
    if verbose is not None:
        _verbose = verbose


def console(stderr: bool = False):
    kw: dict[str, Any] = {"stderr": stderr, "highlight": False}
    if _color_choice == "never":
        kw["no_color"] = True
        kw["color_system"] = None
    elif _color_choice == "always":
        kw["force_terminal"] = True
        kw["no_color"] = False
    return _console_class()(**kw)


_CONSOLE_CLASS = None


def _console_class():
    """Rich's Console, except that a closed pipe raises BrokenPipeError (Rich would exit 1;
    for wardrik a reader going away is a normal end, see cli.main)."""
    global _CONSOLE_CLASS
    if _CONSOLE_CLASS is None:
        from rich.console import Console

        class _Console(Console):
            def on_broken_pipe(self) -> None:
                raise BrokenPipeError

        _CONSOLE_CLASS = _Console
    return _CONSOLE_CLASS


# ---------------------------------------------------------------------------
# times
# ---------------------------------------------------------------------------
def _dt(t: Any) -> Optional[datetime]:
    if not isinstance(t, str) or len(t) < 19:
        return None
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00") if t.endswith("Z") else t)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone() if _local else dt.astimezone(timezone.utc)


def tz_label() -> str:
    if not _local:
        return "UTC"
    off = datetime.now().astimezone().strftime("%z")
    return f"{off[:3]}:{off[3:]}" if off else "local"


def day_of(t: Any) -> str:
    dt = _dt(t)
    return dt.strftime("%Y-%m-%d") if dt else ""


def clock(t: Any, precise: bool = False) -> str:
    """``09:00:03`` (``09:00:03.123456`` when precise), in UTC or, with --local, local time."""
    dt = _dt(t)
    if dt is None:
        return str(t or "")[:8]
    return dt.strftime("%H:%M:%S.%f" if precise else "%H:%M:%S")


def short_time(t: Any) -> str:
    """``2026-10-22 09:00:03``: a date and time in one, for tables without day lines."""
    dt = _dt(t)
    return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else str(t or "")


def ago(t: Any, now: Optional[datetime] = None) -> str:
    """How long since t, compactly: ``42s``, ``3m 12s``, ``2h 05m``, ``4d 3h``."""
    dt = _dt(t)
    if dt is None:
        return ""
    secs = int(((now or datetime.now(timezone.utc)) - dt).total_seconds())
    return duration(max(secs, 0) * 1000.0)


def duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d {h}h"


# ---------------------------------------------------------------------------
# event lines
# ---------------------------------------------------------------------------
def event_style(event: dict) -> str:
    return STYLES.get(family(str(event.get("type", ""))), "white")


def log_of(event: dict) -> str:
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
        self.day: Optional[str] = None
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
        """The row for one item (``reader.Item``: .log, .event), as a Rich Text."""
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
        if _verbose:
            self.c.print(data_json(ev), soft_wrap=False)
        self.count += 1


def _seq_text(ev: dict) -> str:
    seq = ev.get("sequence")
    if seq:
        try:
            return str(int(seq))
        except (TypeError, ValueError):
            return str(seq)
    return "–" if short_name(str(ev.get("type", ""))) == "events.dropped" else "~"


def data_json(event: dict) -> Any:
    """The event's data (and, for -v, its id and trace) as indented, highlighted JSON."""
    import json

    from rich.json import JSON
    from rich.padding import Padding

    data = event.get("data")
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
    first: list = []
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


def print_page(items: Iterable[Any], next_cursor_fn) -> None:
    """``page`` and ``audit page``: the rows, then ``next: CURSOR`` last."""
    c = console()
    n = print_events(items, c=c)
    if not n:
        c.print("[dim]no events[/dim]")
    c.print(f"[dim]next:[/dim] {next_cursor_fn()}", soft_wrap=True)


def events_table(items: Iterable[Any], title: Optional[str] = None):
    """A Rich table of events (for embedding); ``print_events`` is what commands use."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, box=None, pad_edge=False, header_style="bold")
    for col, kw in (("time", {}), ("log", {}), ("seq", {"justify": "right"}), ("type", {})):
        table.add_column(col, no_wrap=True, **kw)
    table.add_column("summary", overflow="ellipsis", no_wrap=True, ratio=1)
    n = 0
    for it in items:
        ev = it.event
        table.add_row(short_time(ev.get("time")), str(it.log), _seq_text(ev),
                      Text(short_name(str(ev.get("type", ""))), style=event_style(ev)), summarize(ev))
        n += 1
    return table, n


class _Item:
    __slots__ = ("log", "raw", "event", "seq")

    def __init__(self, log: str, event: dict) -> None:
        self.log, self.raw, self.event = log, b"", event
        seq = event.get("sequence")
        self.seq = int(seq) if seq else None


def print_appended(events: list[dict]) -> None:
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
        self.stream: Optional[tuple] = None  # (log, message id, type) of the open text stream
        self.col = 0
        atexit.register(self.close)

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


# ---------------------------------------------------------------------------
# types, check, progress
# ---------------------------------------------------------------------------
def print_types(types: list[Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console()
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    table.add_column("type", no_wrap=True)
    table.add_column("kind", no_wrap=True, style="dim")
    table.add_column("data", ratio=1)
    table.add_column("what it records", ratio=1)
    for t in types:
        data = Text(", ".join(t.required))
        if t.optional:
            data.append((" " if t.required else "") + "[" + ", ".join(t.optional) + "]", style="dim")
        table.add_row(Text(t.name, style=STYLES.get(family(t.name), "white")), t.kind, data, t.summary)
    c.print(table)
    c.print("[dim]data: required fields, \\[optional ones]. Types are accepted with or without the "
            "'wardrik.' prefix and stored with it.[/dim]", highlight=False)


def progress(logs: list, what: str = "checking") -> Iterator[Any]:
    """Yield each log, with a progress bar on stderr when it is a terminal and the logs are big."""
    import sys

    sizes = []
    for lg in logs:
        try:
            sizes.append(lg.path.stat().st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield from logs
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn(what), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                   TextColumn("{task.description}"), console=console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("", total=total)
        for lg, size in zip(logs, sizes):
            bar.update(task, description=str(lg.name))
            yield lg
            bar.update(task, advance=size)


_HINTS = {
    "torn": "a writer may be mid-line; the next append cuts it (its bytes kept beside the log)",
    "corrupt": "readers stop here; --skip-corrupt reads past it",
    "chain": "the audit log was edited after it was written",
    "sequence": "events are missing or repeated",
}


def _hint(what: str) -> str:
    w = what.lower()
    if "torn" in w:
        return _HINTS["torn"]
    if "prevhash" in w or "chain" in w or "hash" in w:
        return _HINTS["chain"]
    if "corrupt" in w:
        return _HINTS["corrupt"]
    if "sequence" in w:
        return _HINTS["sequence"]
    return ""


def print_check(problems: list[Any], logs: Any) -> None:
    """``check`` in pretty: each problem (FILE:LINE: OFFSET: WHAT, with a hint), then a table per log.

    ``logs`` is the list of ``ledger.Log`` checked (or, from older callers, how many).
    """
    from rich.table import Table
    from rich.text import Text

    c = console()
    for p in problems:
        style = "bold red" if p.severity == "error" else "yellow"
        t = Text()
        t.append(f"{p.severity}: ", style=style)
        t.append(str(p))
        hint = _hint(p.what)
        if hint:
            t.append(f"  ({hint})", style="dim")
        c.print(t, soft_wrap=True)
    errors = sum(1 for p in problems if p.severity == "error")
    warns = len(problems) - errors
    n_logs = logs if isinstance(logs, int) else len(logs)
    if not isinstance(logs, int) and logs:
        by_file: dict[str, list] = {}
        for p in problems:
            by_file.setdefault(str(p.file), []).append(p)
        table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 2), title_justify="left")
        table.add_column("log", no_wrap=True)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column("result", no_wrap=True)
        for lg in logs:
            ps = by_file.get(str(lg.path), [])
            e = sum(1 for p in ps if p.severity == "error")
            w = len(ps) - e
            if e:
                res = Text(f"{e} error{'s' if e != 1 else ''}", style="bold red")
                if w:
                    res.append(f", {w} warning{'s' if w != 1 else ''}", style="yellow")
            elif w:
                res = Text(f"{w} warning{'s' if w != 1 else ''}", style="yellow")
            else:
                res = Text("ok", style="green")
            try:
                size = lg.path.stat().st_size
            except OSError:
                size = 0
            table.add_row(str(lg.name), size_text(size), res)
        if problems:
            c.print()
        c.print(table)
    verdict = Text("ok", style="bold green") if not errors else \
        Text(f"{errors} error{'s' if errors != 1 else ''}", style="bold red")
    verdict.append(f": {n_logs} log(s) checked" + (f", {warns} warning(s)" if warns else ""))
    c.print(verdict)


def size_text(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


# compact
class SweepProgress:
    """A Rich progress bar on stderr, shown only when the sweep is big enough to wait for."""

    def __init__(self) -> None:
        self.bar = None
        self.task = None

    def start(self, logs) -> None:
        sizes = {}
        for lg in logs:
            try:
                sizes[lg.name] = lg.path.stat().st_size
            except OSError:
                sizes[lg.name] = 0
        self.sizes = sizes
        total = sum(sizes.values())
        if total < PROGRESS_MIN_BYTES:
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("compacting"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                            TextColumn("{task.description}"), console=console(stderr=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task("", total=total)

    def advance(self, r) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=self.sizes.get(r.log, 0), description=r.log)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def print_sweep(result) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console()
    if result.skipped:
        c.print(f"[yellow]skipped[/yellow]: {result.skipped}")
        return
    title = f"{'dry run: would drop' if result.dry_run else 'dropped'} events before {result.cutoff} " \
            f"(retention {result.retention})"
    c.print(Text(title, style="bold"))  # above the table, not its title: a title wraps to the table's width
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col, just in (("log", "left"), ("dropped", "right"), ("kept", "right"), ("bytes before", "right"),
                      ("bytes after", "right"), ("", "left")):
        table.add_column(col, justify=just)
    for r in result.logs:
        note = Text(f"error: {r.error}", style="red") if r.error else \
            Text("times go backwards: prefix only", style="yellow") if r.notes else Text("")
        table.add_row(r.log, f"{r.dropped:,}", f"{r.kept:,}", size_text(r.bytes_before), size_text(r.bytes_after), note)
    before = sum(r.bytes_before for r in result.logs)
    after = sum(r.bytes_after for r in result.logs)
    table.add_row(Text("total", style="bold"), f"{result.dropped:,}", f"{result.kept:,}", size_text(before),
                  size_text(after), Text(f"{len(result.logs)} log(s)", style="dim"), end_section=False)
    c.print(table)
