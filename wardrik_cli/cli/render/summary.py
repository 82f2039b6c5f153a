"""One-line, plain-text summaries of events, per type, and each type's family.

No Rich here (``render`` colours what this module says). Contract:
- ``summarize(event)`` returns one line (no newline; a control character in it is shown as
  a visible escape, ``safe_text.flat``) that says what
  an event is about, most telling part first, so that cutting it at the terminal's width
  keeps what matters: a tool call's name and call id, a message's id, an answer's first
  words, the actor of an audit change, how many events a dropped notice stands for.
  It never raises, whatever the data holds (a reader may meet any stored line).
- ``family(type)`` is one of ``FAMILIES``: the colour group a type belongs to. Audit types
  (``agent.*``, ``trigger.created``/``trigger.deleted``, ``ledger.compacted``) are ``audit``, ``events.dropped`` is
  ``dropped``, ``reasoning.*`` goes with ``message``, ``activity.changed`` is ``activity``.
"""
from __future__ import annotations

from typing import Any

from wardrik_cli.cli.safe_text import flat
from wardrik_cli.protocol.catalogue import dig, short_name

FAMILIES = ("run", "message", "tool_call", "input", "trigger", "audit", "dropped", "activity", "other")
_AUDIT = frozenset({"agent.created", "agent.configured", "agent.forgotten", "trigger.created", "trigger.deleted",
                    "ledger.compacted"})


def family(type_name: str) -> str:
    s = short_name(str(type_name))
    if s in _AUDIT or s.startswith("agent."):
        return "audit"
    if s == "events.dropped":
        return "dropped"
    head = s.split(".", 1)[0]
    if head == "reasoning":
        return "message"
    return head if head in FAMILIES else "other"


def is_live(event: dict[str, Any]) -> bool:
    """Live events (deltas, progress, activity.changed) have no sequence; a dropped notice is not live."""
    return not event.get("sequence") and short_name(str(event.get("type", ""))) != "events.dropped"


def _data_of(event: dict[str, Any]) -> dict[str, Any]:
    """The event's data, or {} when it is not an object."""
    d = event.get("data")
    return d if isinstance(d, dict) else {}


_g = dig  # event data by path, None where a step is not an object


LONGEST = 8192  # characters of a value a one-line summary looks at: far more than any screen's line


def one_line(text: Any) -> str:
    """Any value as one line: whitespace runs (newlines, tabs) become one space. Only its first
    ``LONGEST`` characters are looked at (then `` …``): an event holding 200 MB of text is
    summarised as fast as a small one."""
    if text is None:
        return ""
    if not isinstance(text, str):
        import json
        try:
            text = json.dumps(text, ensure_ascii=False, separators=(", ", ": "), default=str)
        except (TypeError, ValueError):
            text = str(text)
        except RecursionError:  # nested deeper than Python's stack (orjson reads 1,024 levels)
            text = "[nested too deep to show; see -o jsonl]"
    cut = len(text) > LONGEST
    if cut:
        text = text[:LONGEST]
    # Whitespace runs become one space; every other control is shown escaped (``\x1b``),
    # never dropped: the rule of ``safe_text.flat``, the same for every line shown.
    return flat(text).strip(" ") + (" …" if cut else "")


def words(text: Any, n: int = 12) -> str:
    """The first ``n`` words of a value, with an ellipsis when there were more."""
    w = one_line(text).split(" ")
    w = [x for x in w if x]
    return " ".join(w[:n]) + (" …" if len(w) > n else "")


def _args(args: Any) -> str:
    if isinstance(args, dict) and args:
        return ", ".join(f"{k}={one_line(v)}" for k, v in args.items())
    return one_line(args) if args else ""


def _join(*parts: Any) -> str:
    return " · ".join(p for p in (one_line(x) for x in parts) if p)


def _count(n: Any) -> int | None:
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _usage(d: dict[str, Any]) -> str:
    """``1,204 in · 310 out · $0.0031`` from a message.completed's usage and cost (what is given)."""
    u = d.get("usage")
    parts = []
    if isinstance(u, dict):
        for key, label in (("input_tokens", "in"), ("output_tokens", "out")):
            n = _count(u.get(key))
            if n is not None:
                parts.append(f"{n:,} {label}")
    cost = d.get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        parts.append(f"${cost:.4f}")
    return " · ".join(parts)


def _tool(d: dict[str, Any]) -> str:
    name = one_line(_g(d, "tool", "name"))
    cid = one_line(_g(d, "tool", "call", "id"))
    if name and cid:
        return f"{name} ({cid})"
    return name or cid


def summarize(event: dict[str, Any]) -> str:
    try:
        return _summarize(event)
    except Exception:  # a summary must never stop a reader; show the data instead
        return words(event.get("data") if isinstance(event, dict) else event, 20)


def _summarize(event: dict[str, Any]) -> str:
    t = short_name(str(event.get("type", "")))
    d = _data_of(event)
    if t == "run.started":
        rid = one_line(_g(d, "run", "id"))[:8]
        ids = _g(d, "run", "message_ids")
        return _join(f"run {rid}" if rid else "run", f"task: {words(d['task'])}" if d.get("task") else "",
                     f"takes {', '.join(map(one_line, ids))}" if isinstance(ids, list) and ids else "")
    if t == "run.completed":
        return f"answer: {words(d.get('answer'))}" if d.get("answer") not in (None, "") else "completed"
    if t == "run.failed":
        return f"error: {words(_g(d, 'error', 'message') or d.get('error'))}"
    if t in ("message.delta", "reasoning.delta"):
        return _join(_g(d, "message", "id"), one_line(_delta_text(d)))
    if t == "message.received":
        sender = one_line(d.get("from"))
        return _join(_g(d, "message", "id"), f"from {sender}" if sender else "", words(d.get("text")))
    if t == "message.started":
        return _join(_g(d, "message", "id"), d.get("model"))
    if t in ("message.completed", "reasoning.completed"):
        stop = d.get("stop_reason")
        return _join(_g(d, "message", "id"), words(d.get("text") or _g(d, "message", "text")),
                     f"({stop})" if stop and t == "message.completed" else "", _usage(d))
    if t == "tool_call.started":
        return _join(_tool(d), _args(_g(d, "tool", "args") or d.get("args")))
    if t == "tool_call.completed":
        out = d.get("output", d.get("result"))
        return _tool(d) + (f" → {words(out)}" if out not in (None, "") else "")
    if t == "tool_call.failed":
        return _join(_tool(d), f"error: {words(_g(d, 'error', 'message') or d.get('error'))}"
                     if (_g(d, "error", "message") or d.get("error")) else "failed")
    if t == "tool_call.progress":
        return _join(_tool(d), words(d.get("message") or d.get("text") or d.get("progress")))
    if t == "input.requested":
        return _join(_g(d, "request", "id"), words(_g(d, "request", "prompt") or d.get("prompt") or d.get("text")))
    if t == "input.received":
        return _join(_g(d, "request", "id"), words(d.get("answer") or d.get("text")))
    if t == "trigger.fired":
        return _join(_g(d, "trigger", "name"), d.get("status"))
    if t == "ledger.compacted":
        logs = d.get("logs")
        if not isinstance(logs, dict):
            logs = {}
        total = sum(n for n in logs.values() if isinstance(n, int) and not isinstance(n, bool))
        # one log: "dropped 50 from acme/old"; several: the count per log, "acme/a 3, acme/b 9"
        items = list(logs.items())
        if len(items) == 1:
            shown = one_line(items[0][0])
        else:
            shown = ", ".join(f"{one_line(k)} {one_line(v)}" for k, v in items[:3])
            shown += f" +{len(items) - 3} logs" if len(items) > 3 else ""
        return _join(f"dropped {total} from {shown}", f"by {one_line(d.get('actor')) or '?'}")
    if t in _AUDIT:
        what = one_line(_g(d, "agent", "id") if t.startswith("agent.") else _g(d, "trigger", "name"))
        s = f"{what} by {one_line(d.get('actor')) or '?'}"
        via = d.get("assumed_by")
        if isinstance(via, list) and via:
            s += " via " + " → ".join(map(one_line, via))
        return s
    if t == "events.dropped":
        n = d.get("count")
        return (f"{n} event{'' if n == 1 else 's'} of {one_line(d.get('log'))} before this point "
                "{} not here (dropped by retention, or left out of a copy)".format("is" if n == 1 else "are"))
    if t == "activity.changed":
        doing = d.get("doing") or []
        what = doing_text(doing) if isinstance(doing, list) else one_line(doing)
        return _join(what or "idle", f"pending {d.get('pending', 0)}")
    return words(d, 20)


def _delta_text(d: dict[str, Any]) -> str:
    for k in ("delta", "text", "content"):
        v = d.get(k)
        if isinstance(v, str):
            return v
        if isinstance(v, dict) and isinstance(v.get("text"), str):
            return v["text"]
    return ""


def delta_text(event: dict[str, Any]) -> str:
    """The streamed text of a ``message.delta``/``reasoning.delta`` (newlines kept)."""
    d = _data_of(event)
    return _delta_text(d)


def delta_key(event: dict[str, Any]) -> Any:
    """What a delta streams into: its message id (None when the data names none)."""
    d = _data_of(event)
    return _g(d, "message", "id")


def doing_text(doing: list[Any]) -> str:
    """What an activity's ``doing`` list says in words: ``tool query_metrics (t1)``, ``model call m2``."""
    parts = []
    for e in doing:
        if not isinstance(e, dict):
            continue
        t = short_name(str(e.get("type", "")))
        d = _data_of(e)
        if t == "tool_call.started":
            parts.append(f"tool {_tool(d)}")
        elif t == "message.started":
            parts.append(_join(f"model call {one_line(_g(d, 'message', 'id'))}".strip(), d.get("model")))
        elif t == "input.requested":
            parts.append(_join("waiting on a person", _g(d, "request", "id")))
        else:
            parts.append(t)
    return ", ".join(parts)
