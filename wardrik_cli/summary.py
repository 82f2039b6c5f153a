"""One-line, plain-text summaries of events, per type (no Rich here: render.py colours them)."""
from __future__ import annotations

from typing import Any

from .protocol import short_name

FAMILIES = ("run", "message", "reasoning", "tool_call", "input", "trigger", "agent", "events", "activity")


def family(type_name: str) -> str:
    s = short_name(type_name)
    return s.split(".", 1)[0]


def _g(data: Any, *path: str) -> Any:
    cur = data
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def _words(text: Any, n: int = 12) -> str:
    if not isinstance(text, str):
        return "" if text is None else str(text)
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def summarize(event: dict) -> str:
    t = short_name(str(event.get("type", "")))
    d = event.get("data") if isinstance(event.get("data"), dict) else {}
    if t == "run.started":
        parts = [f"run {str(_g(d, 'run', 'id') or '')[:8]}"]
        if d.get("task"):
            parts.append(f"task: {_words(d['task'])}")
        ids = _g(d, "run", "message_ids")
        if ids:
            parts.append(f"takes {', '.join(map(str, ids))}")
        return " · ".join(parts)
    if t == "run.completed":
        return f"answer: {_words(d.get('answer'))}" if d.get("answer") else "completed"
    if t == "run.failed":
        return f"error: {_words(_g(d, 'error', 'message'))}"
    if t.startswith("message.") or t.startswith("reasoning."):
        mid = _g(d, "message", "id") or ""
        extra = d.get("delta") or d.get("text") or _g(d, "message", "text") or d.get("model") or ""
        return f"{mid} {_words(extra)}".strip()
    if t.startswith("tool_call."):
        name = _g(d, "tool", "name")
        cid = _g(d, "tool", "call", "id")
        s = f"{name} ({cid})" if name else str(cid or "")
        if t == "tool_call.failed":
            err = _g(d, "error", "message") or d.get("error")
            if err:
                s += f" error: {_words(err)}"
        if t == "tool_call.progress" and d.get("message"):
            s += f" {_words(d.get('message'))}"
        return s
    if t.startswith("input."):
        s = str(_g(d, "request", "id") or "")
        prompt = _g(d, "request", "prompt") or d.get("prompt") or d.get("text")
        return f"{s} {_words(prompt)}".strip()
    if t == "trigger.fired":
        return f"{_g(d, 'trigger', 'name')}" + (f" · {d['status']}" if d.get("status") else "")
    if t.startswith("agent."):
        s = f"{_g(d, 'agent', 'id')} by {d.get('actor')}"
        if d.get("assumed_by"):
            s += " via " + " → ".join(map(str, d["assumed_by"]))
        return s
    if t.startswith("trigger."):
        return f"{_g(d, 'trigger', 'name')} by {d.get('actor')}"
    if t == "events.dropped":
        return f"missed {d.get('count')} events of {d.get('log')} (dropped by retention)"
    if t == "activity.changed":
        doing = d.get("doing") or []
        return f"doing {len(doing)} · pending {d.get('pending', 0)}"
    return _words(str(d), 8)
