"""Views: what a fold folds a log into, and the built-in ones (state, timeline, activity).

The protocol (duck-typed, so any object will do):
- ``initial() -> state``: the state before any event.
- ``apply(state, event) -> state``: the state after one more event (oldest first). It may
  mutate ``state`` and return it. ``event`` is the stored event as a dict.
- optional ``types``: a set of full type names (``wardrik.tool_call.started``) the view
  reads. The fold then skips every other line without decoding it (a byte look at the
  line's ``"type"``), which is most of the cost of a fold. ``None`` means every event.
- optional ``finish(state, through) -> state``: called once when a fold ends, with the
  sequence of the last event read (applied or skipped); the ``state`` view sets
  ``applied_through`` there, so skipped lines still count.
- optional ``render(state)``: something Rich can print (or a string), for ``--format pretty``
  (the built-in views are drawn by the command line's renderer). A view whose ``initial``,
  ``apply``, ``finish`` or ``render`` raises ends the fold with one ``ViewFailed`` error
  naming the view (and the sequence), never a traceback.
- optional ``version``: a string that changes whenever the view's code changes what it
  computes. A checkpoint carries it; one with another version is discarded. A custom view
  without one gets the hash of its module's source file.

A state must be JSON (dicts, lists, strings, numbers, booleans, null) for a checkpoint to be
saved; a state that does not survive a JSON round trip unchanged is simply never saved.

Built-in views:
- ``state``: seed 000's fold (status, task, turns, tool_calls, answer, applied_through) over
  this format (``run.started`` .. ``run.completed``) and seed 000's ``{"seq","type","data"}``
  lines (``run.created``, ``model.responded``, ``tool.returned``, ``run.completed``); all but
  applied_through describe the latest run. CONTRACT.md fixes those six keys (seed 000's), so
  ``usage`` is a seventh only where the contract's later protocol puts usage: once a model
  call of the latest run reported ``data.usage`` or ``data.cost_usd``, ``usage`` holds
  ``input_tokens`` and ``output_tokens`` summed over the run's calls that reported them, and
  ``cost_usd``: their sum when every model call of the run gave one, else null (never a
  partial sum read as the run's cost). A log in seed 000's format, or whose latest run reports
  no usage, has exactly the six keys; the next ``run.started`` removes it.
- ``timeline``: runs and, inside each, model calls, tool calls and waits on a person, with
  their durations, in order. A model call's ``name`` is its ``model`` (from message.started,
  else null) and, when its message.completed reported ``data.usage``, it carries ``usage``:
  ``{"input_tokens", "output_tokens"}`` (each the reported count, or null when not given).
  It keeps the latest ``MAX_RUNS`` runs and the latest ``MAX_ITEMS`` items of each (counting
  what it left out), so its memory and its checkpoint stay bounded on a log of any length. A
  failed tool call (``tool_call.failed``) and a failed run (``run.failed``) carry ``error``:
  the short form of ``data.error.message`` (else ``data.error``), its first non-blank line
  cut at ``ERROR_CHARS`` characters, ending in ``…`` when anything was left out (the whole
  text stays in the event, at its ``seq``; keeping it here would unbound the state). It is
  the event's text as it is: whoever prints it for a person escapes it (the command line's
  renderer does).
- ``activity``: what the agent is doing now (CONTRACT.md, ``activity``).
Custom views are named ``module:name`` (``name`` may be dotted; a class is instantiated).
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from wardrik_cli.errors import BadView, Failure
from wardrik_cli.protocol.catalogue import dig, is_cost, is_count

P = "wardrik."
ERROR_CHARS = 120  # the longest error text a timeline row keeps


@runtime_checkable
class View(Protocol):
    def initial(self) -> Any: ...

    def apply(self, state: Any, event: dict[str, Any]) -> Any: ...


class ViewFailed(Failure):
    """A view raised while folding: names the view and the event's sequence."""


_g = dig  # event data by path, None where a step is not an object


def _data_of(event: dict[str, Any]) -> dict[str, Any]:
    """The event's data, or {} when it is not an object."""
    d = event.get("data")
    return d if isinstance(d, dict) else {}


def _seq_of(event: dict[str, Any]) -> int:
    s = event.get("sequence")
    if s is not None:
        return int(s)
    return int(event.get("seq") or 0)


def _duration_ms(start: str | None, end: str | None) -> float | None:
    """Milliseconds between two stored (or RFC 3339) times; None when either is missing."""
    if not isinstance(start, str) or not isinstance(end, str):
        return None
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round((b - a).total_seconds() * 1000, 3)


def error_text(data: dict[str, Any], limit: int = ERROR_CHARS) -> str | None:
    """The short form of an event's error: ``data.error.message`` (else ``data.error``, any
    JSON as text), its first non-blank line, stripped, cut at ``limit`` characters; ``…`` ends
    it when more was left out (a longer line, more lines). None when there is no error text."""
    err = data.get("error")
    msg = err.get("message") if isinstance(err, dict) and err.get("message") not in (None, "") else err
    if msg is None or msg == "" or msg == {}:
        return None
    if not isinstance(msg, str):
        try:
            msg = json.dumps(msg, ensure_ascii=False, separators=(", ", ": "), default=str)
        except (TypeError, ValueError, RecursionError):
            msg = f"(an error {type(msg).__name__} too deep to show)"
    rows = [r.strip() for r in msg.splitlines()]
    rows = [r for r in rows if r]
    if not rows:
        return None
    first = rows[0]
    if len(first) > limit:
        return first[:limit - 1].rstrip() + "…"
    return first + " …" if len(rows) > 1 else first


# ---------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------
class StateView:
    """Seed 000's fold, in both formats; a new run resets what describes the latest run."""

    name = "state"
    version = "state/2"  # /1 kept no usage
    # The events it reads; every other line is only counted (applied_through, via finish).
    types = frozenset({
        P + "run.started", P + "run.completed", P + "run.failed",
        P + "message.completed", P + "tool_call.completed", P + "tool_call.failed",
        # seed 000's names (its files are always decoded whole; listed for completeness)
        "run.created", "model.responded", "tool.returned", "run.completed",
    })

    def initial(self) -> dict[str, Any]:
        return {"status": "empty", "task": None, "turns": 0, "tool_calls": 0, "answer": None, "applied_through": 0}

    def apply(self, s: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
        t = e.get("type")
        data = _data_of(e)
        if t == P + "run.started" or t == "run.created":
            s.update(status="running", task=data.get("task"), turns=0, tool_calls=0, answer=None)
            s.pop("usage", None)
        elif t == P + "message.completed":
            s["turns"] += 1
            _add_run_usage(s, data)
        elif t == "model.responded":
            s["turns"] += 1
        elif t in (P + "tool_call.completed", P + "tool_call.failed", "tool.returned"):
            s["tool_calls"] += 1
        elif t == P + "run.completed" or t == "run.completed":
            s["status"], s["answer"] = "completed", data.get("answer")
        elif t == P + "run.failed":
            s["status"] = "failed"
            s["answer"] = None
        s["applied_through"] = _seq_of(e)
        return s

    def finish(self, s: dict[str, Any], through: int) -> dict[str, Any]:
        s["applied_through"] = through
        return s


def _add_run_usage(s: dict[str, Any], data: dict[str, Any]) -> None:
    """Add a message.completed's usage and cost into the state's ``usage`` (see the module's
    docstring); ``s["turns"]`` already counts this call."""
    usage, cost = data.get("usage"), data.get("cost_usd")
    u = s.get("usage")
    if u is None:
        if not isinstance(usage, dict) and not is_cost(cost):
            return  # no call of this run has reported usage yet: the contract's six keys
        # The first call to report: the run's earlier calls gave no cost, so no sum of costs
        # can be the run's unless this is its first call.
        u = s["usage"] = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0 if s["turns"] == 1 else None}
    if isinstance(usage, dict):
        for k in ("input_tokens", "output_tokens"):
            if is_count(usage.get(k)):
                u[k] += usage[k]
    if u["cost_usd"] is not None:
        u["cost_usd"] = round(u["cost_usd"] + cost, 9) if is_cost(cost) else None



# ---------------------------------------------------------------------------
# timeline
# ---------------------------------------------------------------------------
class TimelineView:
    """Runs, and the model calls, tool calls and waits inside them, with durations."""

    name = "timeline"
    version = "timeline/3"  # /1 kept no error text; /2 no model name nor usage
    MAX_RUNS = 200
    MAX_ITEMS = 2000
    types = frozenset({
        P + "run.started", P + "run.completed", P + "run.failed",
        P + "message.started", P + "message.completed",
        P + "tool_call.started", P + "tool_call.completed", P + "tool_call.failed",
        P + "input.requested", P + "input.received",
        "run.created", "model.responded", "tool.called", "tool.returned", "run.completed",
    })

    def __init__(self, max_runs: int | None = None, max_items: int | None = None):
        self.max_runs = max_runs or self.MAX_RUNS
        self.max_items = max_items or self.MAX_ITEMS

    def initial(self) -> dict[str, Any]:
        return {"runs": [], "earlier_runs": 0}

    # -- helpers -------------------------------------------------------------
    def _new_run(self, s: dict[str, Any], run_id: Any, e: dict[str, Any], task: Any, status: str) -> dict[str, Any]:
        run = {"run": run_id, "task": task, "status": status, "started": e.get("time"), "ended": None,
               "duration_ms": None, "seq": _seq_of(e), "items": [], "earlier_items": 0}
        s["runs"].append(run)
        if len(s["runs"]) > self.max_runs:
            del s["runs"][0]
            s["earlier_runs"] += 1
        return run

    def _current(self, s: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
        runs: list[dict[str, Any]] = s["runs"]
        if runs and runs[-1]["status"] in ("running", "outside a run"):
            return runs[-1]
        # Work outside any run (a host's tool call, a log cut by compaction mid-run).
        return self._new_run(s, None, e, None, "outside a run")

    def _add(self, run: dict[str, Any], item: dict[str, Any]) -> None:
        run["items"].append(item)
        if len(run["items"]) > self.max_items:
            del run["items"][0]
            run["earlier_items"] += 1

    def _close(self, run: dict[str, Any], kind: str, ident: Any, e: dict[str, Any], status: str, **extra: Any) -> bool:
        for item in reversed(run["items"]):
            if item["kind"] == kind and item["id"] == ident and item["status"] == "running":
                item["ended"] = e.get("time")
                item["duration_ms"] = _duration_ms(item["started"], item["ended"])
                item["status"] = status
                item.update(extra)
                return True
        return False

    def _open(self, s: dict[str, Any], e: dict[str, Any], kind: str, ident: Any, name: Any = None) -> None:
        run = self._current(s, e)
        self._add(run, {"kind": kind, "id": ident, "name": name, "status": "running", "started": e.get("time"),
                        "ended": None, "duration_ms": None, "seq": _seq_of(e)})

    def _end_run(self, s: dict[str, Any], e: dict[str, Any], status: str, error: str | None = None) -> None:
        run = self._current(s, e)
        run["status"], run["ended"] = status, e.get("time")
        if error is not None:
            run["error"] = error
        run["duration_ms"] = _duration_ms(run["started"], run["ended"])
        for item in run["items"]:
            if item["status"] == "running":
                item["status"] = "unfinished"

    # -- apply ---------------------------------------------------------------
    def apply(self, s: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
        t = e.get("type")
        d = _data_of(e)
        if t == P + "run.started" or t == "run.created":
            if s["runs"] and s["runs"][-1]["status"] == "running":
                self._end_run(s, e, "abandoned")  # a new run began without the last one ending
            self._new_run(s, _g(d, "run", "id"), e, d.get("task"), "running")
        elif t == P + "run.completed" or t == "run.completed":
            self._end_run(s, e, "completed")
        elif t == P + "run.failed":
            self._end_run(s, e, "failed", error_text(d))
        elif t == P + "message.started":
            model = d.get("model")
            self._open(s, e, "model", _g(d, "message", "id"), model if isinstance(model, str) else None)
        elif t == P + "message.completed":
            run = self._current(s, e)
            extra = _call_usage(d)
            if not self._close(run, "model", _g(d, "message", "id"), e, "completed", **extra):
                self._add(run, {"kind": "model", "id": _g(d, "message", "id"), "name": None, "status": "completed",
                                "started": None, "ended": e.get("time"), "duration_ms": None, "seq": _seq_of(e),
                                **extra})
        elif t == "model.responded":  # seed 000: a model response, no start event and no times
            self._add(self._current(s, e), {"kind": "model", "id": None, "name": d.get("stop_reason"),
                                            "status": "completed", "started": None, "ended": None,
                                            "duration_ms": None, "seq": _seq_of(e)})
        elif t == P + "tool_call.started":
            self._open(s, e, "tool", _g(d, "tool", "call", "id"), _g(d, "tool", "name"))
        elif t == "tool.called":
            self._open(s, e, "tool", d.get("id"), d.get("name"))
        elif t in (P + "tool_call.completed", P + "tool_call.failed", "tool.returned"):
            ident = _g(d, "tool", "call", "id") if t.startswith(P) else d.get("id")
            status = "failed" if t == P + "tool_call.failed" else "completed"
            err = error_text(d) if status == "failed" else None
            extra = {"error": err} if err is not None else {}
            run = self._current(s, e)
            if not self._close(run, "tool", ident, e, status, **extra):
                self._add(run, {"kind": "tool", "id": ident, "name": _g(d, "tool", "name") or d.get("name"),
                                "status": status, "started": None, "ended": e.get("time"), "duration_ms": None,
                                "seq": _seq_of(e), **extra})
        elif t == P + "input.requested":
            self._open(s, e, "wait", _g(d, "request", "id"))
        elif t == P + "input.received":
            run = self._current(s, e)
            if not self._close(run, "wait", _g(d, "request", "id"), e, "answered"):
                self._add(run, {"kind": "wait", "id": _g(d, "request", "id"), "name": None, "status": "answered",
                                "started": None, "ended": e.get("time"), "duration_ms": None, "seq": _seq_of(e)})
        return s



def _call_usage(d: dict[str, Any]) -> dict[str, Any]:
    """``{"usage": {"input_tokens", "output_tokens"}}`` of a message.completed that reported
    ``data.usage`` (a count the protocol refuses is null), else {}."""
    usage = d.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {"usage": {k: usage[k] if is_count(usage.get(k)) else None for k in ("input_tokens", "output_tokens")}}


# ---------------------------------------------------------------------------
# activity
# ---------------------------------------------------------------------------
class ActivityView:
    """What an agent is doing now: running tool calls, else the last thing it started that
    has not ended; the open run; how the last run ended.

    State:
    - ``tools``: the stored tool_call.started events still running, oldest first; a
      ``tool_call.completed``/``failed`` ends the one with its ``tool.call.id``.
    - ``open``: the stored message.started / input.requested events of the current run not
      ended yet, oldest first; ``message.completed`` ends the model call with its
      ``message.id``, ``input.received`` the wait with its ``request.id`` (matched by id, so a
      completion of another call ends nothing). At most ``MAX_OPEN`` are kept (the oldest go),
      so a log that never ends its calls keeps a bounded state.
    - ``last``: the last message.started / input.requested of the current run, ended or not:
      the contract's json ``doing`` when no tool call runs ("the last thing the agent
      started"), while a person's table shows only what is still ``open``.
    - ``run``: the open run (``id``: data.run.id, else its trace id; ``task``, cut at
      ``TASK_CHARS``; ``time``; ``seq``), None outside a run.
    - ``ended``: how the last run ended (``status`` completed, failed, or abandoned when a
      run.started came while it was open; ``time``; ``run``), None before any.
    - ``pending``: ids of messages received and not yet taken by a run.started, in order.
    """

    name = "activity"
    # /1 cleared a model call or wait when it completed; /2 kept it (and kept no run);
    # /3 ends calls by id and keeps the open run and the last run's end; /4 keeps the last
    # call started apart from the open ones (the json's doing, the contract's wording).
    version = "activity/4"
    MAX_OPEN = 32
    TASK_CHARS = 200
    types = frozenset({
        P + "run.started", P + "run.completed", P + "run.failed", P + "message.received",
        P + "message.started", P + "message.completed", P + "tool_call.started", P + "tool_call.completed",
        P + "tool_call.failed", P + "input.requested", P + "input.received",
    })

    def initial(self) -> dict[str, Any]:
        return {"tools": [], "open": [], "last": None, "run": None, "ended": None, "pending": []}

    def apply(self, s: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
        t = e.get("type")
        d = _data_of(e)
        if t == P + "tool_call.started":
            s["tools"].append(e)
        elif t == P + "tool_call.completed" or t == P + "tool_call.failed":
            cid = _g(d, "tool", "call", "id")
            s["tools"] = [x for x in s["tools"] if _g(x, "data", "tool", "call", "id") != cid]
        elif t == P + "message.started" or t == P + "input.requested":
            s["last"] = e
            s["open"].append(e)
            if len(s["open"]) > self.MAX_OPEN:
                del s["open"][0]
        elif t == P + "message.completed":
            s["open"] = _without(s["open"], P + "message.started", ("message", "id"), _g(d, "message", "id"))
        elif t == P + "input.received":
            s["open"] = _without(s["open"], P + "input.requested", ("request", "id"), _g(d, "request", "id"))
        elif t == P + "message.received":
            mid = _g(d, "message", "id")
            if mid is not None and mid not in s["pending"]:
                s["pending"].append(mid)
        elif t == P + "run.started":
            taken = _g(d, "run", "message_ids")
            if isinstance(taken, list) and taken:
                gone = set(x for x in taken if isinstance(x, str))
                s["pending"] = [m for m in s["pending"] if m not in gone]
            if s["run"] is not None:  # a new run began without the last one ending
                s["ended"] = {"status": "abandoned", "time": e.get("time"), "run": s["run"]["id"]}
            s["tools"], s["open"], s["last"] = [], [], None  # a new run: whatever the last one left is over
            s["run"] = {"id": _run_id(e), "task": _task(d.get("task"), self.TASK_CHARS), "time": e.get("time"),
                        "seq": _seq_of(e)}
        elif t == P + "run.completed" or t == P + "run.failed":
            run = s["run"]
            s["ended"] = {"status": "completed" if t == P + "run.completed" else "failed", "time": e.get("time"),
                          "run": run["id"] if run is not None else _run_id(e)}
            s["tools"], s["open"], s["last"], s["run"] = [], [], None, None
        return s


def _without(events: list[dict[str, Any]], etype: str, path: tuple[str, ...], ident: Any) -> list[dict[str, Any]]:
    """``events`` less the ones of type ``etype`` whose data at ``path`` is ``ident`` (a new list)."""
    return [x for x in events if not (x.get("type") == etype and _g(x.get("data"), *path) == ident)]


def _run_id(e: dict[str, Any]) -> str | None:
    """A run's id: data.run.id, else the trace id its events share (the contract makes them one)."""
    from wardrik_cli.protocol.envelope import trace_id_of

    rid = _g(_data_of(e), "run", "id")
    return rid if isinstance(rid, str) else trace_id_of(e)


def _task(task: Any, limit: int) -> str | None:
    """A run's task as text, cut at ``limit`` characters (the whole stays in the event)."""
    if task is None:
        return None
    text: str
    if isinstance(task, str):
        text = task
    else:
        try:
            text = json.dumps(task, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            return None
    return text if len(text) <= limit else text[:limit - 1] + "…"


def activity_of(state: dict[str, Any]) -> dict[str, Any]:
    """The contract's ``{"doing", "since", "pending"}`` from an activity view's state: the
    tool calls running, else the last thing the agent started in this run (a model call or
    a wait on a person, ended or not: the contract's words), empty once the run ends."""
    last = state.get("last")
    doing = list(state["tools"]) if state["tools"] else ([last] if last is not None else [])
    since = doing[0].get("time") if doing else None
    return {"doing": doing, "since": since, "pending": len(state["pending"])}


def activity_detail(state: dict[str, Any]) -> dict[str, Any]:
    """``activity_of`` plus what a person's table shows beside it (never in the json, whose
    keys the contract fixes): ``run`` (the open run, or None) and ``last_run`` (how the last
    run ended, or None)."""
    out = activity_of(state)
    # A person sees what is happening now: a model call that completed is not "doing" (the
    # run is shown instead); the json keeps the contract's last-started reading.
    doing = list(state["tools"]) if state["tools"] else state["open"][-1:]
    out["doing"], out["since"] = doing, (doing[0].get("time") if doing else None)
    run, ended = state.get("run"), state.get("ended")
    out["run"] = dict(run) if isinstance(run, dict) else None
    out["last_run"] = dict(ended) if isinstance(ended, dict) else None
    return out


from wardrik_cli.folding.usage import UsageView  # noqa: E402 - here, beside the registry it joins

BUILTIN = {"state": StateView, "timeline": TimelineView, "activity": ActivityView, "usage": UsageView}
BUILTIN_TYPES = frozenset(BUILTIN.values())


# ---------------------------------------------------------------------------
# loading a view by name
# ---------------------------------------------------------------------------
def is_view(obj: Any) -> bool:
    return callable(getattr(obj, "initial", None)) and callable(getattr(obj, "apply", None))


def load(spec: str, shun: Path | None = None) -> Any:
    """A view by name: ``state``, ``timeline``, ``activity`` or ``module:name``. BadView if not.

    ``module`` is looked for on the Python path, then in the current directory, unless that
    is ``shun`` or inside it (the root: nothing under a root is ever run as code, since a
    reviewer runs wardrik on roots others wrote). The current directory goes last on the
    path: a file there never stands in for a library."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    if ":" not in spec:
        raise BadView(f"unknown view {spec!r}: use state, timeline, activity, usage or MODULE:NAME "
                      "(e.g. myviews:Errors)")
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BadView(f"bad view {spec!r}: expected MODULE:NAME, e.g. myviews:Errors")
    # Like uvicorn and gunicorn, look for the module in the current directory too (last: a
    # file there never stands in for a library; and kept there, for what the view imports later).
    cwd = os.getcwd()
    shunned = _inside(Path(cwd), shun)
    if cwd not in sys.path and not shunned:
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            where = ("the Python path; not the current directory, which holds the data read (put the view "
                     "elsewhere, on PYTHONPATH)") if shunned else "the current directory and the Python path"
            raise BadView(f"view {spec!r}: no module named {module_name!r} (looked in {where})") from None
        raise BadView(f"view {spec!r}: importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    except Exception as e:  # the user's module raised while importing
        raise BadView(f"view {spec!r}: importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise BadView(f"view {spec!r}: module {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        if not is_view(obj):
            raise BadView(f"view {spec!r} is not a view: a view has initial() and apply(state, event)")
        try:
            obj = obj()
        except Exception as e:
            raise BadView(f"view {spec!r}: creating it failed: {type(e).__name__}: {e}") from None
    if not is_view(obj):
        raise BadView(f"view {spec!r} is not a view: a view has initial() and apply(state, event)")
    return obj


def _inside(path: Path, root: Path | None) -> bool:
    if root is None:
        return False
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return True  # cannot tell: not looked in


def name_of(view: Any, spec: str) -> str:
    if spec in BUILTIN:
        name: str = view.name  # every built-in view has one
        return name
    return spec


def version_of(view: Any, spec: str | None = None) -> str:
    """The view's ``version``, else a hash of its module's source (a code change discards checkpoints)."""
    v = getattr(view, "version", None)
    if isinstance(v, (str, int)) and not isinstance(v, bool):
        return str(v)
    module_name = spec.partition(":")[0] if spec and ":" in spec else type(view).__module__
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if path:
        try:
            with open(path, "rb") as f:
                return "src:" + hashlib.sha256(f.read()).hexdigest()[:16]
        except OSError:
            pass
    return "unversioned"


def types_of(view: Any) -> frozenset[str] | None:
    """The view's ``types`` with and without the prefix (``tool_call.started`` reads the stored
    ``wardrik.tool_call.started``; seed 000's names stay as they are); None: every event."""
    t = getattr(view, "types", None)
    if t is None:
        return None
    try:
        names = [str(x) for x in t]
    except TypeError:
        return None
    return frozenset(names) | frozenset(n if n.startswith(P) else P + n for n in names)
