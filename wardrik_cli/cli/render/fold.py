"""Pretty output of ``fold`` and ``activity`` (Rich, imported only inside these functions).

The state view is a key/value panel (values cut at the terminal's width, as seed 000's
printout cuts them), the timeline a tree of runs and what happened inside each (model calls,
tool calls, waits on a person, with durations; a failed run or tool call with its error text,
``— error: ...``), activity a table with one row per agent
(what it is doing, for how long, since when, how many messages wait). Colours and times
follow ``render`` (the event families' colours, UTC unless ``--local``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wardrik_cli.cli.render.console import ago, clock, console, day_of, duration, short_time, tz_label
from wardrik_cli.cli.render.events import STYLES
from wardrik_cli.cli.render.summary import doing_text, one_line
from wardrik_cli.folding.views import BUILTIN_TYPES as BUILTIN
from wardrik_cli.folding.views import ViewFailed, activity_of

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from wardrik_cli.folding.engine import FoldResult

_STATUS = {"completed": "green", "answered": "green", "running": "bold yellow", "failed": "bold red",
           "unfinished": "red", "abandoned": "red", "empty": "dim"}


def _dur(ms: Any) -> str:
    return duration(ms)


def state_panel(s: dict[str, Any]) -> Any:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    t = Table.grid(padding=(0, 2))
    key_width = max((len(str(k)) for k in s), default=5) if isinstance(s, dict) else 5
    t.add_column(style="bold", no_wrap=True, min_width=key_width)
    t.add_column(overflow="ellipsis", no_wrap=True)
    for k, v in s.items() if isinstance(s, dict) else []:
        if v is None:
            val = Text("–", style="dim")
        elif k == "status":
            val = Text(str(v), style=_STATUS.get(str(v), ""))
        else:
            val = Text(one_line(v))
        t.add_row(str(k), val)
    return Panel(t, title="state", title_align="left", expand=False, border_style="dim")


def _cut(text: Any) -> Any:
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def _error(text: Any, row: dict[str, Any]) -> None:
    """A failed row's error text (the timeline's short form), as one line; the console
    escapes whatever control is left (``cli.safe_text``)."""
    err = row.get("error")
    if err not in (None, ""):
        text.append(f"  — error: {one_line(err)}", style="red")


def timeline_tree(s: dict[str, Any]) -> Any:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text("timeline", style="bold"), guide_style="dim")
    if s.get("earlier_runs"):
        tree.add(Text(f"… {s['earlier_runs']} earlier run(s) not kept", style="dim"))
    for run in s.get("runs", []):
        head = Text()
        outside = run.get("status") == "outside a run"
        label = "outside a run" if outside else f"run {str(run.get('run') or '')[:8]}".strip()
        head.append(label, style=STYLES["run"])
        if not outside:
            head.append(f"  {run.get('status')}", style=_STATUS.get(str(run.get("status")), ""))
        if run.get("started"):
            head.append(f"  {short_time(run['started'])}", style="dim")
        if run.get("duration_ms") is not None:
            head.append(f"  {_dur(run['duration_ms'])}")
        _error(head, run)
        if run.get("task"):
            head.append(f"  {one_line(run['task'])}", style="italic")
        node = tree.add(_cut(head))
        if run.get("earlier_items"):
            node.add(Text(f"… {run['earlier_items']} earlier item(s) not kept", style="dim"))
        for it in run.get("items", []):
            kind = it.get("kind")
            style = {"model": STYLES["message"], "tool": STYLES["tool_call"], "wait": STYLES["input"]}.get(kind, "")
            line = Text()
            if it.get("started"):
                line.append(f"{clock(it['started'])}  ", style="dim")
            what = {"model": "model call", "tool": f"tool {it.get('name') or ''}".strip(),
                    "wait": "wait on a person"}.get(kind, str(kind))
            line.append(what, style=style)
            if it.get("id") is not None:
                line.append(f" {it['id']}", style="dim")
            line.append(f"  {it.get('status')}", style=_STATUS.get(str(it.get("status")), ""))
            if it.get("duration_ms") is not None:
                line.append(f"  {_dur(it['duration_ms'])}", style="bold" if kind == "wait" else "")
            _error(line, it)
            if it.get("seq"):
                line.append(f"  #{it['seq']}", style="dim")
            node.add(_cut(line))
    return tree


def _doing_text(doing: list[Any]) -> str:
    return doing_text(doing) or "idle"


def activity_panel(act: dict[str, Any]) -> Any:
    return activity_table({"": act})


def _since(t: str, now: datetime) -> str:
    """A time of day when it is today, else month-day and minutes: ``09:12:03``, ``11-29 22:10``."""
    today = day_of(now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    return clock(t) if day_of(t) == today else short_time(t)[5:16]


class _ActivityTable:
    """A table whose "for" column is computed when it is drawn, so a live display ticks."""

    def __init__(self, acts: dict[str, dict[str, Any]], title: str | None) -> None:
        self.acts, self.title = acts, title

    def __rich_console__(self, c: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        now = datetime.now(UTC)
        rows = []
        for log, a in self.acts.items():
            doing = a.get("doing") or []
            busy = bool(doing)
            tools = any(str(e.get("type", "")).endswith("tool_call.started") for e in doing if isinstance(e, dict))
            style = STYLES["tool_call"] if tools else STYLES["message"] if busy else "dim"
            pending = int(a.get("pending") or 0)
            rows.append((Text(str(log), style="bold"), Text(_doing_text(doing), style=style),
                         Text(ago(a["since"], now)) if a.get("since") else Text("–", style="dim"),
                         Text(_since(a["since"], now) if a.get("since") else "–", style="dim"),
                         Text(str(pending), style="bold yellow" if pending else "dim")))
        table = Table(title=self.title, box=None, header_style="bold", pad_edge=False, padding=(0, 1),
                      title_justify="left")
        # Every column but "doing" is as wide as its widest cell: only "doing" is ever cut.
        heads = ("log", "doing", "for", "since", "pending")
        widths = [max([len(h)] + [r[i].cell_len for r in rows]) for i, h in enumerate(heads)]
        rest = options.max_width - (sum(widths) - widths[1]) - 2 * (len(heads) - 1)
        for i, head in enumerate(heads):
            width = widths[i]
            if head == "doing":
                table.add_column(head, overflow="ellipsis", no_wrap=True, width=max(5, min(width, rest)))
            else:
                table.add_column(head, no_wrap=True, min_width=width,
                                 justify="right" if head in ("for", "pending") else "left")
        for r in rows:
            table.add_row(*r)
        yield table


def activity_table(acts: dict[str, dict[str, Any]], title: str | None = None) -> Any:
    return _ActivityTable(acts, title)


class _Title:
    def __str__(self) -> str:
        return f"activity at {clock(datetime.now(UTC).isoformat())} {tz_label()}  (Ctrl-C quits)"


def watch_table(acts: dict[str, dict[str, Any]]) -> Any:
    """``activity --watch``: the table under a title with the time it was drawn."""
    return _WatchTable(acts)


class _WatchTable(_ActivityTable):
    def __init__(self, acts: dict[str, dict[str, Any]]) -> None:
        super().__init__(acts, None)

    def __rich_console__(self, c: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(str(_Title()), style="dim")
        if not self.acts:
            yield Text("no logs matched yet", style="dim")
            return
        yield from super().__rich_console__(c, options)


BUILTIN_RENDERERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "state": state_panel, "timeline": timeline_tree, "activity": lambda s: activity_panel(activity_of(s)),
}


def watch_live(snapshot: Callable[[], dict[str, Any]], changes: Iterable[bool]) -> None:
    """``activity --watch`` on a terminal: the table redrawn at each change, and every tick."""
    from rich.live import Live

    acts = snapshot()
    with Live(watch_table(acts), console=console(), auto_refresh=False) as live:
        for changed in changes:
            if changed:
                acts = snapshot()
                live.update(watch_table(acts))
            live.refresh()  # the "for" column ticks even when nothing changed


def print_fold(result: FoldResult, view: Any) -> None:
    """``fold`` in pretty: a built-in view's panel or tree, a custom view's ``render``, else the state."""
    from rich.text import Text

    c = console()
    if type(view) in BUILTIN:
        shown = BUILTIN_RENDERERS[result.view](result.state) if result.view in BUILTIN_RENDERERS else None
    else:
        shown = Rendering(view, result.view, result.log, result.through).render(result.state)
    if shown is None:
        from rich.pretty import Pretty
        shown = Pretty(result.state)
    head = Text()
    head.append(str(result.log), style="bold")
    head.append(" folded into ")
    head.append(str(result.view), style="bold")
    head.append(f" through {result.through}", style="dim")
    c.print(head)
    c.print(shown)


def print_activities(acts: dict[str, dict[str, Any]]) -> None:
    c = console()
    if not acts:
        c.print("[dim]no logs matched[/dim]")
        return
    c.print(activity_table(acts))


class Rendering:
    """A view's ``render`` for ``--format pretty``, its failures made ``ViewFailed``: a
    ``render`` that raises, or returns what Rich cannot print, names the view and the
    sequence its state is through. Pass it where the view's ``render`` is looked up."""

    def __init__(self, view: Any, vname: str, log: str, through: int):
        self.view, self.vname, self.log, self.through = view, vname, log, through

    def render(self, state: Any) -> Any:
        """What the view's render gives, or None (no render: the printer's default applies)."""
        from rich.protocol import is_renderable

        fn = getattr(self.view, "render", None)
        if fn is None:
            return None
        where = f"view {self.vname!r} failed in render() of its state through sequence {self.through} of {self.log}"
        try:
            shown = fn(state)
        except Exception as e:
            raise ViewFailed(f"{where}: {type(e).__name__}: {e}") from None
        if shown is not None and not is_renderable(shown):
            raise ViewFailed(f"{where}: it returned a {type(shown).__name__}, which is not something Rich can print "
                             f"(return a string or a Rich renderable)")
        return shown
