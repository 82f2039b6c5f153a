"""The protocol: every event type wardrik knows, what kind it is, and what its data needs.

This module is the one place the catalogue is defined. Kinds:
- ``kept``: stored in an agent's log with a sequence;
- ``live``: delivered to followers, never stored, no sequence;
- ``audit``: stored in the deployment's audit log, written only by ``audit record``;
- ``reader``: made by the tool for a reader (``events.dropped``), never stored.
Types are accepted with or without the ``wardrik.`` prefix and always stored with it.
"""
from __future__ import annotations

import re
from typing import Any

from wardrik_cli.errors import BadEvent

PREFIX = "wardrik."
KEPT, LIVE, AUDIT, READER = "kept", "live", "audit", "reader"


class EventType:
    """One type of the catalogue: ``name`` is the short name (``run.started``), ``full`` the
    stored one. (A plain class: building dataclasses costs start-up time on every command.)"""

    __slots__ = ("name", "kind", "required", "optional", "summary", "full")

    def __init__(self, name: str, kind: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = (),
                 summary: str = ""):
        self.name, self.kind, self.required, self.optional, self.summary = name, kind, required, optional, summary
        self.full = PREFIX + name

    def __repr__(self) -> str:
        return f"EventType({self.full!r}, {self.kind!r})"


# The token counts ``message.completed`` may carry in ``data.usage``, by OpenTelemetry GenAI's
# names (``gen_ai.usage.<name>``); a dotted name is a nested object. input_tokens counts every
# input token, cached ones included; cache_read/cache_creation say how many of them were read
# from or written to the provider's cache; reasoning.output_tokens is part of output_tokens.
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read.input_tokens", "cache_creation.input_tokens",
                "reasoning.output_tokens")

_CATALOGUE = [
    EventType("run.started", KEPT, (), ("run.id", "run.message_ids", "task", "session.id"),
              "a run began; opens a new trace whose id is data.run.id (session.id: a conversation across runs)"),
    EventType("run.completed", KEPT, (), ("answer",), "the run ended with an answer"),
    EventType("run.failed", KEPT, ("error.message",), (), "the run ended in an error"),
    EventType("message.received", KEPT, ("message.id",), (), "a message arrived for the agent"),
    EventType("message.started", KEPT, ("message.id",), ("model",), "a model call began (model: provider:name)"),
    EventType("message.completed", KEPT, ("message.id",), tuple("usage." + k for k in USAGE_FIELDS) + ("cost_usd",),
              "a model call returned; usage: token counts (OpenTelemetry GenAI names), cost_usd: its price"),
    EventType("reasoning.completed", KEPT, ("message.id",), (), "the model finished reasoning"),
    EventType("tool_call.started", KEPT, ("tool.name", "tool.call.id"), (), "a tool call began"),
    EventType("tool_call.completed", KEPT, ("tool.call.id",), (), "a tool call returned"),
    EventType("tool_call.failed", KEPT, ("tool.call.id",), (), "a tool call failed"),
    EventType("input.requested", KEPT, ("request.id",), (), "the agent waits on a person"),
    EventType("input.received", KEPT, ("request.id",), (), "the person answered"),
    EventType("trigger.fired", KEPT, ("trigger.name",), (), "a trigger started work"),
    EventType("message.delta", LIVE, (), (), "streamed model text (live, never kept)"),
    EventType("reasoning.delta", LIVE, (), (), "streamed reasoning text (live, never kept)"),
    EventType("tool_call.progress", LIVE, (), (), "tool progress (live, never kept)"),
    EventType("activity.changed", LIVE, (), (), "what the agent is doing changed (live, never kept)"),
    EventType("agent.created", AUDIT, ("agent.id",), (), "an agent was created"),
    EventType("agent.configured", AUDIT, ("agent.id",), (), "an agent's configuration changed"),
    EventType("agent.forgotten", AUDIT, ("agent.id",), (), "an agent was forgotten"),
    EventType("trigger.created", AUDIT, ("trigger.name",), (), "a trigger was created"),
    EventType("trigger.deleted", AUDIT, ("trigger.name",), (), "a trigger was deleted"),
    EventType("ledger.compacted", AUDIT, ("logs",), ("retention", "max_bytes", "sweep", "started", "recovered"),
              "a retention sweep dropped events (logs: {log: dropped}, the audit log as .wardrik/audit); recorded by "
              "compact (sweep: its id; "
              "recovered: true when recorded by a later compact, started: when the interrupted sweep began)"),
    EventType("events.dropped", READER, ("log", "count"), (),
              "made for a reader: events it missed because retention dropped them"),
]
TYPES: dict[str, EventType] = {t.name: t for t in _CATALOGUE}
RUN_OPENERS = frozenset({PREFIX + "run.started"})
RUN_CLOSERS = frozenset({PREFIX + "run.completed", PREFIX + "run.failed"})
RUN_MARK = (PREFIX + "run.").encode()  # in every stored line of a run's start or end (a type spelt plainly)
DROPPED = PREFIX + "events.dropped"
_HEX32 = re.compile(r"[0-9a-f]{32}")


def short_name(type_name: str) -> str:
    return type_name[len(PREFIX):] if type_name.startswith(PREFIX) else type_name


def lookup(type_name: str) -> EventType:
    """The catalogue entry for a type given with or without its prefix; BadEvent if unknown."""
    t = TYPES.get(short_name(type_name))
    if t is None:
        import difflib  # error path only

        close = difflib.get_close_matches(short_name(type_name), list(TYPES), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see `wardrik types`)"
        raise BadEvent(f"unknown event type {type_name!r}{hint}")
    return t


def dig(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]...``, or None where a step is not an object (event data read
    by folds and renderers: any shape may come from a log another tool wrote)."""
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def get_path(data: Any, dotted: str) -> tuple[bool, Any]:
    cur = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def validate_data(t: EventType, data: Any) -> None:
    """Refuse data that is not an object or lacks a required field of its type."""
    if not isinstance(data, dict):
        raise BadEvent(f"data for {t.full} must be a JSON object, not {_json_kind(data)}")
    for path in t.required:
        present, value = get_path(data, path)
        if not present or value is None:
            raise BadEvent(f"{t.full} needs data.{path} (required: {', '.join('data.' + p for p in t.required)})")
    if t.name == "run.started":
        run = data.get("run")
        if run is not None and not isinstance(run, dict):
            raise BadEvent("data.run must be an object")
        run = run or {}
        if "id" in run and not (isinstance(run["id"], str) and _HEX32.fullmatch(run["id"]) and run["id"] != "0" * 32):
            raise BadEvent("data.run.id must be 32 lowercase hex digits, not all zero (it is the run's trace id)")
        ids = run.get("message_ids")
        if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            raise BadEvent("data.run.message_ids must be a list of strings")
        if "session" in data:
            session = data["session"]
            if not isinstance(session, dict):
                raise BadEvent(f"data.session must be an object such as {{\"id\": \"conv-42\"}}, "
                               f"not {_json_kind(session)}")
            if "id" in session and not (isinstance(session["id"], str) and session["id"]):
                raise BadEvent("data.session.id must be a non-empty string (the conversation the run belongs to)")
    elif t.name == "message.completed":
        if "usage" in data:
            validate_usage(data["usage"])
        if "cost_usd" in data and not is_cost(data["cost_usd"]):
            raise BadEvent(f"data.cost_usd must be a non-negative number of US dollars, not {_shown(data['cost_usd'])}")


def is_count(v: Any) -> bool:
    """A token count: a non-negative integer (JSON true/false are not numbers here)."""
    return type(v) is int and v >= 0


def is_cost(v: Any) -> bool:
    """A price in US dollars: a non-negative finite number (not a boolean, not a string)."""
    return type(v) in (int, float) and 0 <= v < float("inf")


def _usage_tree() -> dict[str, Any]:
    """``USAGE_FIELDS`` as nested keys: {"input_tokens": None, "cache_read": {"input_tokens": None}, ...}."""
    tree: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        head, _, leaf = name.rpartition(".")
        if head:
            tree.setdefault(head, {})[leaf] = None
        else:
            tree[leaf] = None
    return tree


_USAGE_TREE = _usage_tree()


def validate_usage(usage: Any) -> None:
    """Refuse a ``data.usage`` that is not exactly an object of ``USAGE_FIELDS`` (dotted names
    nested), each a non-negative integer; the message names the field."""
    known = ", ".join(USAGE_FIELDS)
    if not isinstance(usage, dict):
        raise BadEvent(f"data.usage must be an object of token counts ({known}), not {_json_kind(usage)}")
    for key, value in usage.items():
        if key not in _USAGE_TREE:
            raise BadEvent(f"data.usage.{key} is not a usage field (known: {known})")
        sub = _USAGE_TREE[key]
        if sub is None:
            if not is_count(value):
                raise BadEvent(f"data.usage.{key} must be a non-negative integer (a count of tokens), "
                               f"not {_shown(value)}")
            continue
        if not isinstance(value, dict):
            raise BadEvent(f"data.usage.{key} must be an object such as {{\"{next(iter(sub))}\": 120}}, "
                           f"not {_json_kind(value)}")
        for leaf, count in value.items():
            if leaf not in sub:
                raise BadEvent(f"data.usage.{key}.{leaf} is not a usage field (known: {known})")
            if not is_count(count):
                raise BadEvent(f"data.usage.{key}.{leaf} must be a non-negative integer (a count of tokens), "
                               f"not {_shown(count)}")


def _shown(v: Any) -> str:
    """A refused value as the message shows it: JSON, cut short."""
    import json  # error path only

    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = _json_kind(v)
    return text if len(text) <= 40 else text[:39] + "…"


def _json_kind(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(v), type(v).__name__)


def catalogue() -> list[EventType]:
    return list(_CATALOGUE)
