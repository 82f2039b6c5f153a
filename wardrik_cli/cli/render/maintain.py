"""Pretty output of the maintenance commands and of ``types``: check, compact, progress bars.

Problems are printed as ``FILE:LINE: OFFSET: WHAT`` with a hint, then a table per log; a
sweep as a table per log and a total. Progress bars appear on stderr only when it is a
terminal and the logs are big enough to wait for (``PROGRESS_MIN_BYTES``).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from wardrik_cli.cli.render.console import console
from wardrik_cli.cli.render.events import STYLES
from wardrik_cli.cli.render.summary import family
from wardrik_cli.cli.safe_text import safe

if TYPE_CHECKING:
    from rich.console import JustifyMethod
    from rich.progress import Progress, TaskID

    from wardrik_cli.protocol.catalogue import EventType
    from wardrik_cli.store.check import Problem
    from wardrik_cli.store.log import Log
    from wardrik_cli.store.retention import LogResult, SweepResult

PROGRESS_MIN_BYTES = 64 << 20  # a sweep this big gets a progress bar on a terminal


def print_types(types: list[EventType]) -> None:
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


def progress(logs: list[Log], what: str = "checking") -> Iterator[Log]:
    """Yield each log, with a progress bar on stderr when it is a terminal and the logs are big."""
    sizes = []
    for lg in logs:
        try:
            sizes.append(lg.path.stat().st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    if total < PROGRESS_MIN_BYTES or not console(stderr=True).is_terminal:
        yield from logs
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn(what), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                   TextColumn("{task.description}"), console=console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("", total=total)
        for lg, size in zip(logs, sizes, strict=True):
            bar.update(task, description=str(lg.name))
            yield lg
            bar.update(task, advance=size)


_HINTS = {  # a torn tail's message says what to expect itself: no hint, so it is said once
    "corrupt": "readers stop here; --skip-corrupt reads past it",
    "chain": "the audit log was edited after it was written",
    "sequence": "events are missing or repeated",
}


def _hint(what: str) -> str:
    w = what.lower()
    if "torn" in w:
        return ""
    if "prevhash" in w or "chain" in w or "hash" in w:
        return _HINTS["chain"]
    if "corrupt" in w:
        return _HINTS["corrupt"]
    if "sequence" in w:
        return _HINTS["sequence"]
    return ""


def print_check(problems: list[Problem], logs: list[Log]) -> None:
    """``check`` in pretty: each problem (FILE:LINE: OFFSET: WHAT, with a hint), then a table of
    the ``logs`` checked."""
    from rich.table import Table
    from rich.text import Text

    c = console()
    for p in problems:
        style = "bold red" if p.severity == "error" else "yellow"
        t = Text()
        t.append(f"{p.severity}: ", style=style)
        t.append(safe(str(p), keep_newlines=False))  # one line: a break in a path is shown, not made
        hint = _hint(p.what)
        if hint:
            t.append(f"  ({hint})", style="dim")
        c.print(t, soft_wrap=True)
    errors = sum(1 for p in problems if p.severity == "error")
    warns = len(problems) - errors
    n_logs = len(logs)
    if logs:
        from wardrik_cli.cli.context import current

        shown = current().shown_path
        by_file: dict[str, list[Problem]] = {}
        for p in problems:
            by_file.setdefault(str(p.file), []).append(p)
        table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 2), title_justify="left")
        table.add_column("log", no_wrap=True)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column("result", no_wrap=True)
        for lg in logs:
            ps = by_file.get(shown(str(lg.path)), [])  # problems name a remote root's log by its URL
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
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.sizes: dict[str, int] = {}

    def start(self, logs: list[Log]) -> None:
        sizes: dict[str, int] = {}
        for lg in logs:
            try:
                sizes[lg.name] = lg.path.stat().st_size
            except OSError:
                sizes[lg.name] = 0
        self.sizes = sizes
        total = sum(sizes.values())
        if total < PROGRESS_MIN_BYTES or not console(stderr=True).is_terminal:
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(TextColumn("compacting"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                       TextColumn("{task.description}"), console=console(stderr=True), transient=True)
        bar.start()
        self.bar, self.task = bar, bar.add_task("", total=total)

    def advance(self, r: LogResult) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=self.sizes.get(r.log, 0), description=r.log)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def print_sweep(result: SweepResult) -> None:
    from rich.table import Table
    from rich.text import Text

    c = console()
    if result.skipped:
        c.print(Text.assemble(("skipped", "yellow"), f": {result.skipped}"))
        return
    title = f"{'dry run: would drop' if result.dry_run else 'dropped'} events before {result.cutoff} " \
            f"(retention {result.retention})"
    c.print(Text(title, style="bold"))  # above the table, not its title: a title wraps to the table's width
    table = Table(box=None, header_style="bold", pad_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("log", "left"), ("dropped", "right"), ("kept", "right"), ("bytes before", "right"), ("bytes after", "right"),
        ("", "left"))
    for col, just in columns:
        table.add_column(col, justify=just)
    for r in result.logs:
        note = Text(f"error: {r.error}", style="red") if r.error else \
            Text("; ".join(r.notes), style="yellow") if r.notes else Text("")  # what each note says
        name = f"{r.log} (the audit log)" if r.audit else r.log  # an agent log may be named audit too
        table.add_row(name, f"{r.dropped:,}", f"{r.kept:,}", size_text(r.bytes_before), size_text(r.bytes_after), note)
    before = sum(r.bytes_before for r in result.logs)
    after = sum(r.bytes_after for r in result.logs)
    table.add_row(Text("total", style="bold"), f"{result.dropped:,}", f"{result.kept:,}", size_text(before),
                  size_text(after), Text(f"{len(result.logs)} log(s)", style="dim"), end_section=False)
    c.print(table)
