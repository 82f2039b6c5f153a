"""Pretty output of ``fold`` and ``activity`` (Rich, imported only inside these functions).

The state view is a key/value panel (values cut at the terminal's width, as seed 000's
printout cuts them), the timeline a tree of runs and what happened inside each, activity a
table with one row per agent. Colours follow ``render``'s event families.
"""
from __future__ import annotations

from typing import Any, Optional

from .render import STYLES, console, short_time


def _dur(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 60_000:.1f} min"


def state_panel(s: dict) -> Any:
    from rich.panel import Panel
    from rich.table import Table

    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True, min_width=max((len(str(k)) for k in s), default=5) if isinstance(s, dict) else 5)
    t.add_column(overflow="ellipsis", no_wrap=True)
    for k, v in s.items() if isinstance(s, dict) else []:
        t.add_row(str(k), "–" if v is None else str(v))
    return Panel(t, title="state", expand=False)


def timeline_tree(s: dict) -> Any:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text("timeline", style="bold"))
    if s.get("earlier_runs"):
        tree.add(Text(f"… {s['earlier_runs']} earlier run(s) not kept", style="dim"))
    for run in s.get("runs", []):
        head = Text()
        label = f"run {str(run.get('run') or '')[:8]}".strip() if run.get("status") != "outside a run" else "outside a run"
        head.append(label, style=STYLES["run"])
        head.append(f"  {run.get('status')}", style="red" if run.get("status") == "failed" else "")
        if run.get("started"):
            head.append(f"  {short_time(run['started'])}", style="dim")
        if run.get("duration_ms") is not None:
            head.append(f"  {_dur(run['duration_ms'])}")
        if run.get("task"):
            head.append(f"  {str(run['task'])[:80]}", style="italic")
        node = tree.add(head)
        if run.get("earlier_items"):
            node.add(Text(f"… {run['earlier_items']} earlier item(s) not kept", style="dim"))
        for it in run.get("items", []):
            kind = it.get("kind")
            style = {"model": STYLES["message"], "tool": STYLES["tool_call"], "wait": STYLES["input"]}.get(kind, "")
            line = Text()
            what = {"model": "model call", "tool": f"tool {it.get('name') or ''}".strip(),
                    "wait": "wait on a person"}.get(kind, str(kind))
            line.append(what, style=style)
            if it.get("id") is not None:
                line.append(f" {it['id']}", style="dim")
            line.append(f"  {it.get('status')}", style="red" if it.get("status") in ("failed", "unfinished") else "")
            if it.get("duration_ms") is not None:
                line.append(f"  {_dur(it['duration_ms'])}")
            if it.get("seq"):
                line.append(f"  #{it['seq']}", style="dim")
            node.add(line)
    return tree


def _doing_text(doing: list) -> str:
    parts = []
    for e in doing:
        t = str(e.get("type", ""))
        d = e.get("data") or {}
        if t.endswith("tool_call.started"):
            parts.append(f"tool {((d.get('tool') or {}).get('name'))}")
        elif t.endswith("message.started"):
            parts.append("model call")
        elif t.endswith("input.requested"):
            parts.append("waiting on a person")
        else:
            parts.append(t)
    return ", ".join(parts) if parts else "idle"


def activity_panel(act: dict) -> Any:
    return activity_table({"": act})


def activity_table(acts: dict[str, dict], title: Optional[str] = None) -> Any:
    from rich.table import Table

    table = Table(title=title, box=None, header_style="bold", pad_edge=False)
    table.add_column("log", no_wrap=True)
    table.add_column("doing", overflow="ellipsis", no_wrap=True, ratio=1)
    table.add_column("since", style="dim", no_wrap=True)
    table.add_column("pending", justify="right")
    for log, a in acts.items():
        table.add_row(log, _doing_text(a.get("doing", [])), short_time(a["since"]) if a.get("since") else "–",
                      str(a.get("pending", 0)))
    return table


def print_fold(result: Any, view: Any) -> None:
    c = console()
    render = getattr(view, "render", None)
    shown = render(result.state) if render is not None else None
    if shown is None:
        from rich.pretty import Pretty
        shown = Pretty(result.state)
    c.print(f"[bold]{result.log}[/bold] folded into [bold]{result.view}[/bold] through {result.through}")
    c.print(shown)


def print_activities(acts: dict[str, dict]) -> None:
    c = console()
    if not acts:
        c.print("[dim]no logs matched[/dim]")
        return
    c.print(activity_table(acts))
