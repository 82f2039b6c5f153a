"""Pretty output of ``fold`` and ``activity`` (Rich, imported only inside these functions).

The state view is a key/value panel (values cut at the terminal's width, as seed 000's
printout cuts them), the timeline a tree of runs and what happened inside each (model calls,
tool calls, waits on a person, with durations; a model call with its tokens,
``1,204 in · 310 out``, and its model; a failed run or tool call with its error text,
``— error: ...``), activity a table with one row per agent
(what it is doing, or the open run when nothing else is open; for how long and since when,
from the event that began it; how the last run ended and when; how many messages wait).
Under ``activity --watch`` the table's columns are placed once for the session
(``ActivityLayout``: widths grow, never shrink), so a redraw never moves them. Colours and
times follow ``render`` (the event families' colours, UTC unless ``--local``).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wardrik_cli.cli.render.console import ago, clock, console, day_of, duration, short_time, tz_label
from wardrik_cli.cli.render.events import STYLES, fit_log
from wardrik_cli.cli.render.summary import doing_text, one_line
from wardrik_cli.cli.safe_text import flat
from wardrik_cli.folding.views import BUILTIN_TYPES as BUILTIN
from wardrik_cli.folding.views import ViewFailed, activity_detail

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
            text = one_line(v)
            # as seed 000's printout: a value past 60 characters is cut there, with "..."
            val = Text(text if len(text) <= STATE_VALUE_MAX else text[:STATE_VALUE_MAX] + "...")
        t.add_row(str(k), val)
    return Panel(t, title="state", title_align="left", expand=False, border_style="dim")


STATE_VALUE_MAX = 60  # CONTRACT: the state printout cuts values at 60 characters


def _cut(text: Any) -> Any:
    """A tree line kept to one line: a line break from an event's names or ids is a space, as
    in every one-line text (``safe_text.flat``), so no event can plant rows of its own."""
    text.no_wrap = True
    text.overflow = "ellipsis"
    plain = text.plain
    if not plain.isprintable():
        text.plain = _BREAKS.sub(" ", plain)  # one character for one: the styles stay in place
    return text


_BREAKS = re.compile(r"[\n\r\v\f\x85\u2028\u2029]")


def _error(text: Any, row: dict[str, Any]) -> None:
    """A failed row's error text (the timeline's short form), as one line; the console
    escapes whatever control is left (``cli.safe_text``)."""
    err = row.get("error")
    if err not in (None, ""):
        text.append(f"  — error: {one_line(err)}", style="red")


def _tokens(usage: Any) -> str:
    """A model call's tokens as a timeline row shows them: ``1,204 in · 310 out`` (a count
    not reported is left out)."""
    if not isinstance(usage, dict):
        return ""
    parts = [f"{usage[k]:,} {label}" for k, label in (("input_tokens", "in"), ("output_tokens", "out"))
             if type(usage.get(k)) is int]
    return " · ".join(parts)


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
            what = {"model": "model call", "tool": f"tool {_label(it.get('name') or '')}".strip(),
                    "wait": "wait on a person"}.get(kind, str(kind))
            line.append(what, style=style)
            if it.get("id") is not None:
                line.append(f" {_label(it['id'])}", style="dim")
            line.append(f"  {it.get('status')}", style=_STATUS.get(str(it.get("status")), ""))
            if it.get("duration_ms") is not None:
                line.append(f"  {_dur(it['duration_ms'])}", style="bold" if kind == "wait" else "")
            tokens = _tokens(it.get("usage"))
            if tokens:
                line.append(f"  {tokens}")
            _error(line, it)
            if it.get("seq"):
                line.append(f"  #{it['seq']}", style="dim")
            if kind == "model" and it.get("name"):  # last: a long model name is what a narrow terminal cuts
                line.append(f"  {one_line(it['name'])}", style="dim")
            node.add(_cut(line))
    return tree


def _label(v: Any) -> str:
    """A name or id from an event, as a label: a string as it is, anything else on one line
    (``one_line``: JSON, bounded; an f-string's repr of a value nested 1,000 deep would raise)."""
    return flat(v) if isinstance(v, str) else one_line(v)


def activity_panel(act: dict[str, Any]) -> Any:
    return activity_table({"": act})


def _since(t: str, now: datetime) -> str:
    """A time of day when it is today, else month-day and minutes: ``09:12:03``, ``11-29 22:10``."""
    today = day_of(now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    return clock(t) if day_of(t) == today else short_time(t)[5:16]


def _ago_short(t: Any, now: datetime) -> str:
    """How long ago, in its largest unit only (``12s``, ``3m``, ``5h``, ``4d``): a last-run
    cell stays short and changes its width only when the unit changes."""
    ms = _ms_since(t, now)
    if ms is None:
        return ""
    secs = int(ms // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _ms_since(t: Any, now: datetime) -> float | None:
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00")) if isinstance(t, str) else None
    except ValueError:
        return None
    if dt is None or dt.tzinfo is None:
        return None
    return max((now - dt).total_seconds(), 0.0) * 1000


def _run_text(run: dict[str, Any]) -> str:
    """An open run with nothing else open: ``run 0af76519 · Why is checkout slow?``."""
    rid = one_line(run.get("id"))[:8]
    task = one_line(run.get("task"))
    return f"run {rid}".strip() + (f" · {task}" if task else "")


# The activity table's columns, left to right: (name, header, right-aligned, least width).
# "doing" is first after the log so the eye finds it; "pending" last (a count, ragged right).
_COLUMNS = (("log", "log", False, 8), ("doing", "doing", False, 0), ("for", "for", True, 7),
            ("since", "since", False, 11), ("last", "last run", False, 17), ("pending", "pending", True, 7))
DOING_MIN = 20     # optional columns go before the doing column is cut below this
DOING_MAX = 72     # nor made wider than this in a watch (the rest of a wide terminal stays free)
SINCE_DOING = 40   # "since" (the clock time "for" already implies) shows only if doing keeps this much
GAP = 2            # spaces between columns


class ActivityLayout:
    """The activity table's column widths, kept for a session (``activity --watch``).

    Widths only grow, never shrink, so a redraw moves no column: "for", "since" and "last
    run" start wide enough for ``59m 59s``, ``11-29 22:10`` and ``completed 59m ago``; "log"
    is as wide as the logs matched at the start (a longer id matched later is cut to it);
    "log" is cut at a third of the terminal; "doing" takes the rest of the terminal up to
    ``DOING_MAX`` (cut with an ellipsis). When the terminal is too narrow, "since" goes first
    (while doing would get less than ``SINCE_DOING``), then "last run" (while less than
    ``DOING_MIN``). A new layout is worked out when the terminal's width changes. A one-off
    table (``fit=True``) sizes every column to its cells.
    """

    def __init__(self, fit: bool = False) -> None:
        self.fit = fit
        # A one-off table fits its cells; a session starts at the least widths, then grows.
        self.widths: dict[str, int] = {name: len(head) if fit else max(least, len(head))
                                       for name, head, _r, least in _COLUMNS}
        self.width_of_terminal: int | None = None
        self.logs_placed = False  # the log column sized to the first logs shown (a watch may start with none)
        self.shown: tuple[str, ...] = ()
        self.doing = 0

    def place(self, cells: list[dict[str, Any]], max_width: int) -> list[tuple[str, str, bool, int]]:
        """(name, header, right-aligned, width) of each column shown, for these rows."""
        grown = False
        for name, _head, _right, _least in _COLUMNS:
            if name == "doing":
                continue
            widest = max((c[name].cell_len for c in cells), default=0)
            if name == "log":
                widest = min(widest, max(12, max_width // 3))  # a long log id is cut, not doing
                if self.logs_placed and not self.fit:
                    continue  # a log matched later with a longer id is cut: the columns stay put
                self.logs_placed = bool(cells)
            if widest > self.widths[name]:
                self.widths[name], grown = widest, True
        widest_doing = max((c["doing"].cell_len for c in cells), default=0)
        if self.fit:
            grown = grown or widest_doing > self.widths["doing"]
            self.widths["doing"] = max(self.widths["doing"], widest_doing)
        if grown or max_width != self.width_of_terminal or not self.shown:
            self._lay_out(max_width)
        return [(n, h, r, self.doing if n == "doing" else self.widths[n]) for n, h, r, _l in _COLUMNS
                if n in self.shown]

    def _lay_out(self, max_width: int) -> None:
        self.width_of_terminal = max_width
        cap = self.widths["doing"] if self.fit else DOING_MAX
        shown = [n for n, _h, _r, _l in _COLUMNS]
        for optional, keep in (("since", SINCE_DOING), ("last", DOING_MIN)):
            if self._room(shown, max_width) < min(keep, cap):
                shown.remove(optional)
        self.shown = tuple(shown)
        # On a terminal too narrow for even DOING_MIN, doing takes what is left (the table
        # still fits); below a few cells the console crops the line.
        self.doing = max(min(cap, 5), min(cap, self._room(shown, max_width)))

    def _room(self, shown: list[str], max_width: int) -> int:
        """What is left for doing once the other shown columns and the gaps are placed."""
        return max_width - sum(self.widths[n] for n in shown if n != "doing") - GAP * (len(shown) - 1)


def _cells(log: str, a: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One row's cells: what it does (a tool call, a model call, a wait; else the open run;
    else idle), since when and for how long, how the last run ended, what waits."""
    from rich.text import Text

    doing = a.get("doing") or []
    run = a.get("run") if isinstance(a.get("run"), dict) else None
    tools = any(str(e.get("type", "")).endswith("tool_call.started") for e in doing if isinstance(e, dict))
    if doing:
        what = Text(doing_text(doing) or "idle", style=STYLES["tool_call"] if tools else STYLES["message"])
        began = a.get("since")
    elif run is not None:
        what, began = Text(_run_text(run), style=STYLES["run"]), run.get("time")
    else:
        what, began = Text("idle", style="dim"), None
    last = a.get("last_run") if isinstance(a.get("last_run"), dict) else None
    if last is not None:
        status = str(last.get("status"))
        when = _ago_short(last.get("time"), now)
        outcome = Text(f"{status} {when} ago" if when else status, style=_STATUS.get(status, ""))
    else:
        outcome = Text("–", style="dim")
    pending = int(a.get("pending") or 0)
    return {"log": Text(str(log), style="bold"), "doing": what,
            "for": Text(ago(began, now)) if began else Text("–", style="dim"),
            "since": Text(_since(began, now) if began else "–", style="dim"), "last": outcome,
            "pending": Text(str(pending), style="bold yellow" if pending else "dim")}


def _line(cells: list[Any], columns: list[tuple[str, str, bool, int]]) -> Any:
    """One table line: each cell cut (with an ellipsis) or padded to its column's width."""
    from rich.text import Text

    out = Text(no_wrap=True, overflow="ellipsis", end="\n")
    for i, (cell, (name, _h, right, width)) in enumerate(zip(cells, columns, strict=True)):
        c = cell.copy()
        if name == "log" and c.cell_len > width:
            # cut in its middle, its end kept: the last segment tells a folder's logs apart
            c = Text(fit_log(c.plain, width), style=c.style)
        c.truncate(width, overflow="ellipsis")
        c.align("right" if right else "left", width)
        if i:
            out.append(" " * GAP)
        out.append_text(c)
    out.rstrip()
    return out


class _ActivityTable:
    """A table whose "for" column is computed when it is drawn, so a live display ticks; its
    columns are placed by an ``ActivityLayout`` (a watch keeps one for the session)."""

    def __init__(self, acts: dict[str, dict[str, Any]], title: str | None,
                 layout: ActivityLayout | None = None) -> None:
        self.acts, self.title = acts, title
        self.layout = layout if layout is not None else ActivityLayout(fit=True)

    def __rich_console__(self, c: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        now = datetime.now(UTC)
        rows = [_cells(log, a, now) for log, a in self.acts.items()]
        columns = self.layout.place(rows, options.max_width)
        if self.title:
            yield Text(self.title)
        yield _line([Text(head, style="bold") for _n, head, _r, _w in columns], columns)
        for r in rows:
            yield _line([r[name] for name, _h, _r, _w in columns], columns)


def activity_table(acts: dict[str, dict[str, Any]], title: str | None = None,
                   layout: ActivityLayout | None = None) -> Any:
    return _ActivityTable(acts, title, layout)


class _Title:
    def __str__(self) -> str:
        return f"activity at {clock(datetime.now(UTC).isoformat())} {tz_label()}  (Ctrl-C quits)"


def watch_table(acts: dict[str, dict[str, Any]], layout: ActivityLayout | None = None) -> Any:
    """``activity --watch``: the table under a title with the time it was drawn; pass the
    session's ``layout`` so that every redraw keeps the same columns."""
    return _WatchTable(acts, layout if layout is not None else ActivityLayout())


class _WatchTable(_ActivityTable):
    def __rich_console__(self, c: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(str(_Title()), style="dim")
        if not self.acts:
            yield Text("no logs matched yet", style="dim")
            return
        yield from super().__rich_console__(c, options)

    def __init__(self, acts: dict[str, dict[str, Any]], layout: ActivityLayout) -> None:
        super().__init__(acts, None, layout)


BUILTIN_RENDERERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "state": state_panel, "timeline": timeline_tree, "activity": lambda s: activity_panel(activity_detail(s)),
}


def watch_live(snapshot: Callable[[], dict[str, Any]], changes: Iterable[bool]) -> None:
    """``activity --watch`` on a terminal: the table redrawn at each change, and every tick."""
    from rich.live import Live

    layout = ActivityLayout()  # one for the session: a redraw never moves a column
    acts = snapshot()
    with Live(watch_table(acts, layout), console=console(), auto_refresh=False) as live:
        for changed in changes:
            if changed:
                acts = snapshot()
                live.update(watch_table(acts, layout))
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
        shown = _as_json(result.state)
    head = Text()
    head.append(str(result.log), style="bold")
    head.append(" folded into ")
    head.append(str(result.view), style="bold")
    head.append(f" through {result.through}", style="dim")
    c.print(head)
    c.print(shown)


def _as_json(state: Any) -> Any:
    """A state with no renderer of its own, as ``-o json`` prints it (``folding.engine.state_json``),
    controls shown as escapes; Rich's pretty form of the Python value when JSON cannot hold it."""
    from rich.text import Text

    from wardrik_cli.cli.safe_text import safe
    from wardrik_cli.folding.engine import state_json

    text = state_json(state)
    if text is None:
        from rich.pretty import Pretty
        return Pretty(state)
    return Text(safe(text.decode()))


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
