"""Runs as OpenTelemetry traces: the spans behind ``wardrik export otlp`` (issue 15).

Contract kept here (the OpenTelemetry GenAI semantic conventions, built from the events):
- A run (``run.started`` .. ``run.completed``/``run.failed``) is an ``invoke_agent {log}``
  span whose trace id is the run's (its ``traceparent``'s, which ``data.run.id`` equals); a
  model call (``message.started`` .. ``message.completed``, matched by ``message.id``) a
  ``chat {model}`` span (CLIENT) with ``gen_ai.operation.name``, ``gen_ai.provider.name`` and
  ``gen_ai.request.model`` (from ``model``, ``provider:name``, on the call or else on its
  run), ``gen_ai.usage.*`` (every ``data.usage`` count, dotted names as written),
  ``gen_ai.response.finish_reasons`` (``finish_reason``/``stop_reason``) and
  ``wardrik.cost_usd``; a tool call (``tool_call.started`` .. ``completed``/``failed``, by
  ``tool.call.id``) an ``execute_tool {name}`` span with ``gen_ai.tool.name`` and
  ``gen_ai.tool.call.id``; a wait on a person (``input.requested`` .. ``input.received``, by
  ``request.id``) a ``wait_for_input`` span. A call's parent is the run open in its log when
  it started (when it shares that run's trace); outside a run a call is a root span.
- Failures: a failed tool call or run has status ERROR, ``error.type`` (``data.error.type``
  when it is a string, else ``_OTHER``) and the error's first line as the status message. A
  call still open when its run ends, and a run still open when the next ``run.started``
  comes, end there with status ERROR and ``error.type`` ``unfinished`` / ``abandoned``.
- Content (message text, the run's task and answer, tool arguments and results, a wait's
  prompt and answer) only with ``content=True`` (the conventions' default is none).
- Span ids are the first 8 bytes of SHA-256 over (log id, trace id, kind, the call's own
  id): the same span always gets the same id, whichever export sends it, so a repeat
  replaces it in a tracing backend, never duplicates it. (A call id used twice in one run
  gives one span id: the later call replaces the earlier.)
- A span is exported once its end is read, never before (OpenTelemetry has no open spans).
  An export starts after a position (a cursor) and/or at a time (``since``); it exports the
  spans whose end is after the position and at or after ``since``. So that a span which
  began before that start is still exported whole when it ends, each log is read from its
  last run boundary (``run.*`` line) before the start, found by reading back at most
  ``LOOKBACK`` bytes; what lies between is read only to know what was open. Farther back
  than that, calls open across the start are not exported (nor is anything whose start a
  compaction dropped). The next cursor is past every event read: with a cursor file, each
  span is sent once per successful export, and again (same ids) when one fails.
- Streaming: only the open run and open calls of the log being read are held, plus one
  batch of finished spans (``BATCH`` of them, grouped by log) waiting to be written.
- Times: a span's start and end are its events' times as nanoseconds since the epoch, which
  OTLP holds in an unsigned 64-bit integer (1970 to 2554). An event whose time cannot be
  converted (not a time, an offset past 24 hours, year 0, a time before 1970 or after 2554:
  ``check`` passes some of these, readers show them as written) still makes its span, with a
  ``warning:`` naming the log, the sequence and the time, and a fallback: the last time read
  before it in the same log that converted (a log's times never go back, so it is the
  nearest bound), else the first one read after it (a span with none: the epoch). It is not an
  error: the rest of the event is sound, and an error would stop every later export at
  that line for good (a ledger is never rewritten, and the cursor file does not advance).
  One warning per log at most names an event; more are counted in a second one.
- Values nested deeper than JSON text can be made of (a line written by hand; ``append``
  refuses data deeper than 128 levels) are cut: content attributes are the JSON of the
  value with what lies deeper than ``deep.DEPTH`` levels replaced by ``deep.TOO_DEEP`` (see
  ``folding.deep``), and ``gen_ai.usage.*`` names go no deeper than that either.
  A count that does not fit OTLP's signed 64-bit integer is not exported.
- Encodings: ``request_json`` is an ``ExportTraceServiceRequest`` in OTLP/JSON (ids as hex,
  enums as numbers, 64-bit integers as strings: the file exporter's line format);
  ``request_proto`` the same request as protobuf bytes (needs the ``otlp`` extra's
  ``opentelemetry-proto``). ``resource.service.name`` is the log id.
"""
from __future__ import annotations

import calendar
import gc
import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from wardrik_cli.errors import BadInput, CorruptLedger, Failure
from wardrik_cli.folding.deep import DEPTH, clip
from wardrik_cli.protocol.catalogue import PREFIX, dig, is_cost
from wardrik_cli.protocol.cursor import Cursor
from wardrik_cli.read.filters import Filters, parse_run
from wardrik_cli.read.reader import check_position, gap_warning, missing_start
from wardrik_cli.read.scan import scan
from wardrik_cli.store import lines
from wardrik_cli.store.log import Log, LogView, decode_event, peek

P = PREFIX
READS = frozenset(P + t for t in (
    "run.started", "run.completed", "run.failed", "message.started", "message.completed",
    "tool_call.started", "tool_call.completed", "tool_call.failed", "input.requested", "input.received"))
_BOUNDARIES = frozenset({(P + "run.started").encode(), (P + "run.completed").encode(), (P + "run.failed").encode()})
_RUN_MARK = b'"' + P.encode() + b"run."
LOOKBACK = 64 << 20  # bytes read back for a log's last run boundary before an export's start
BATCH = 512  # spans per request: small enough for any collector's default request limit

INTERNAL, CLIENT = 1, 3  # SpanKind
UNSET, ERROR = 0, 2  # StatusCode
SCOPE = "wardrik"

OnCorrupt = Callable[[CorruptLedger], None] | None


class ExportFailed(Failure):
    """Spans could not be written or sent (exit 1); nothing after the failure was claimed."""


def span_id(log: str, trace: str, kind: str, ident: str) -> str:
    """16 hex digits, stable: SHA-256 of (log, trace, kind, call id), first 8 bytes."""
    return hashlib.sha256(f"{log}\0{trace}\0{kind}\0{ident}".encode()).hexdigest()[:16]


class Span:
    """One span as OTLP has it; ``attrs`` are (key, value) with str/int/float/bool/list[str] values."""

    __slots__ = ("trace", "span", "parent", "name", "kind", "start", "end", "attrs", "status", "message")

    def __init__(self, trace: str, span: str, parent: str | None, name: str, kind: int, start: int,
                 attrs: list[tuple[str, Any]]):
        self.trace, self.span, self.parent, self.name, self.kind = trace, span, parent, name, kind
        self.start, self.end, self.attrs = start, start, attrs
        self.status, self.message = UNSET, ""


# ---------------------------------------------------------------------------------------
# times
# ---------------------------------------------------------------------------------------
_DAYS: dict[str, int] = {}


def time_ns(t: str) -> int:
    """Nanoseconds since the epoch of a stored time (``2026-10-22T09:00:00.000000Z``; other
    RFC 3339 forms through ``datetime``)."""
    if len(t) == 27 and t[19] == "." and t[26] == "Z" and t[10] == "T":
        day = _DAYS.get(t[:10])
        if day is None:
            if len(_DAYS) > 4096:
                _DAYS.clear()
            day = _DAYS[t[:10]] = calendar.timegm((int(t[:4]), int(t[5:7]), int(t[8:10]), 0, 0, 0)) * 1_000_000
        # hours, minutes, seconds and microseconds as one integer each: 09:00:00.300000
        return (day + int(t[11:13]) * 3_600_000_000 + int(t[14:16]) * 60_000_000 + int(t[17:19]) * 1_000_000
                + int(t[20:26])) * 1000
    from datetime import datetime

    dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return (calendar.timegm(dt.utctimetuple()) * 1_000_000 + dt.microsecond) * 1000


LATEST_NS = (1 << 64) - 1  # OTLP's times are fixed64: nanoseconds from 1970 to 2554


def otlp_ns(t: str) -> int | None:
    """``time_ns`` of a time OTLP can carry; None for one it cannot (not a time, an offset
    ``datetime`` refuses, year 0, before 1970 or past ``LATEST_NS``)."""
    try:
        ns = time_ns(t)
    except (ValueError, OverflowError):  # ValueError: int(), datetime; OverflowError: utctimetuple
        return None
    return ns if 0 <= ns <= LATEST_NS else None


# ---------------------------------------------------------------------------------------
# events -> spans, one log at a time
# ---------------------------------------------------------------------------------------
_g = dig  # event data by path, None where a step is not an object


def _id(d: dict[str, Any], key: str) -> Any:
    """``data.<key>.id`` (message.id, request.id), or None."""
    inner = d.get(key)
    return inner.get("id") if isinstance(inner, dict) else None


def _call_id(d: dict[str, Any]) -> Any:
    """``data.tool.call.id``, or None."""
    tool = d.get("tool")
    call = tool.get("call") if isinstance(tool, dict) else None
    return call.get("id") if isinstance(call, dict) else None


def _trace_of(event: dict[str, Any]) -> str | None:
    tp = event.get("traceparent")
    if isinstance(tp, str) and len(tp) == 55 and tp[2] == "-" and tp[35] == "-":
        return tp[3:35]
    return None


def _text(v: Any) -> str:
    """Content as an attribute's string: strings as they are, anything else as compact JSON;
    what orjson refuses (nesting past its 255 levels, an integer past 64 bits) goes through
    ``json``, cut at ``DEPTH`` levels (``deep.clip``): JSON still, never Python's repr."""
    if isinstance(v, str):
        return v
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        import json

        return json.dumps(clip(v), ensure_ascii=False, separators=(",", ":"), default=str)


def _messages(role: str, text: Any, finish: Any = None) -> str:
    """``gen_ai.input.messages``/``output.messages``: the conventions' JSON of one message."""
    msg: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": _text(text)}]}
    if finish is not None:
        msg["finish_reason"] = finish if isinstance(finish, str) else _text(finish)
    return orjson.dumps([msg]).decode()


def _error(span: Span, d: dict[str, Any], default: str = "_OTHER") -> None:
    from wardrik_cli.folding.views import error_text

    span.status = ERROR
    etype = _g(d, "error", "type")
    span.attrs.append(("error.type", etype if isinstance(etype, str) and etype else default))
    span.message = error_text(d, limit=1000) or ""


def _split_model(model: Any) -> tuple[str | None, str | None]:
    """``provider:name`` as (provider, name); a model without a colon has no provider."""
    if not isinstance(model, str) or not model:
        return None, None
    provider, sep, name = model.partition(":")
    return (provider, name) if sep and provider and name else (None, model)


INT64 = 1 << 63  # an OTLP intValue is a signed 64-bit integer


def _usage_attrs(attrs: list[tuple[str, Any]], usage: Any, prefix: str = "gen_ai.usage.", depth: int = 1) -> None:
    """Every count in ``usage`` as ``gen_ai.usage.<dotted name>``, objects at most ``DEPTH``
    levels deep (deeper ones are not counts the protocol has: passed over, not recursed into)."""
    if not isinstance(usage, dict) or depth > DEPTH:
        return
    for k, v in usage.items():
        if isinstance(v, dict):
            _usage_attrs(attrs, v, prefix + k + ".", depth + 1)
        elif type(v) is int and 0 <= v < INT64:
            attrs.append((prefix + k, v))


class LogSpans:
    """The state machine of one log: ``feed`` each event (oldest first), get the spans it ends.

    A span is handed out (appended to ``out``) when it ends, if ``wanted(end seq, end time)``."""

    def __init__(self, log: str, *, content: bool, wanted: Callable[[int, str], bool],
                 warn: Callable[[str], None] | None = None):
        self.log, self.content, self.wanted, self.warn = log, content, wanted, warn
        self.run: Span | None = None
        self.run_model: Any = None
        self.calls: dict[tuple[str, str], Span] = {}
        self.out: list[Span] = []
        self.last_ns: int | None = None  # the last time read in this log that converted
        self.bad_times = 0  # events whose time did not (see the module's contract)
        self.ns = 0  # the time of the event being fed (``_ns``), as its handler uses it
        self.unplaced = False  # an open span's start is UNKNOWN: the next time that converts is its

    def feed(self, e: dict[str, Any], seq: int) -> None:
        how = _HANDLERS.get(e.get("type"))  # type: ignore[arg-type]
        if how is None:
            return
        d = e.get("data")
        if not isinstance(d, dict):
            d = {}
        when = e.get("time")
        if isinstance(when, str):
            self.ns = self._ns(when, seq)  # before any state changes: the handlers read it
            how(self, e, d, seq, when)

    def _ns(self, when: str, seq: int) -> int:
        """The event's time for a span: converted, else the fallback (``UNKNOWN`` when
        there is none yet), with the warning the module's contract describes."""
        ns = otlp_ns(when)
        if ns is not None:
            self.last_ns = ns
            if self.unplaced:
                self._place(ns)
            return ns
        self.bad_times += 1
        if self.bad_times == 1 and self.warn is not None:
            shown = when if len(when) <= 40 else when[:39] + "…"
            instead = "the time before it" if self.last_ns is not None else "the first time after it"
            self.warn(f"{self.log}: event {seq}: time {shown!r} cannot be an OTLP time (nanoseconds from 1970 "
                      f"to 2554); its span takes {instead} (see `wardrik check`)")
        if self.last_ns is not None:
            return self.last_ns
        self.unplaced = True
        return UNKNOWN

    def _place(self, ns: int) -> None:
        """Give the open spans whose start is UNKNOWN the first time after it that converted."""
        for span in (self.run, *self.calls.values()):
            if span is not None and span.start == UNKNOWN:
                span.start = span.end = ns
        self.unplaced = False

    def done(self) -> None:
        """The log's read is over: the count of the times the first warning did not name."""
        if self.bad_times > 1 and self.warn is not None:
            more = self.bad_times - 1
            self.warn(f"{self.log}: {more:,} more event{'s' if more != 1 else ''} with a time that cannot be an "
                      "OTLP time; their spans took a fallback time too")

    def _model_started(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_started(e, "model", _id(d, "message"), d, when)

    def _model_ended(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_ended("model", _id(d, "message"), d, seq, when, failed=False)

    def _tool_started(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_started(e, "tool", _call_id(d), d, when)

    def _tool_ended(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_ended("tool", _call_id(d), d, seq, when, failed=e.get("type") == P + "tool_call.failed")

    def _wait_started(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_started(e, "wait", _id(d, "request"), d, when)

    def _wait_ended(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        self._call_ended("wait", _id(d, "request"), d, seq, when, failed=False)

    # -- runs ------------------------------------------------------------------------------
    def _run_started(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        if self.run is not None:  # a new run began without the last one ending
            self._end_run(self.run, seq, when, None, abandoned=True)
        trace = _trace_of(e)
        if trace is None:
            self.run = None
            return
        attrs: list[tuple[str, Any]] = [("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", self.log),
                                        ("wardrik.run.id", trace), ("wardrik.log", self.log)]
        session = _g(d, "session", "id")
        if isinstance(session, str) and session:
            attrs.append(("gen_ai.conversation.id", session))
        self.run_model = d.get("model")
        provider, name = _split_model(self.run_model)
        if provider:
            attrs.append(("gen_ai.provider.name", provider))
        if name:
            attrs.append(("gen_ai.request.model", name))
        if self.content and d.get("task") is not None:
            attrs.append(("gen_ai.input.messages", _messages("user", d["task"])))
        self.run = Span(trace, span_id(self.log, trace, "run", ""), None, f"invoke_agent {self.log}", INTERNAL,
                        self.ns, attrs)

    def _run_ended(self, e: dict[str, Any], d: dict[str, Any], seq: int, when: str) -> None:
        run = self.run
        if run is None:
            return  # its start is not in what was read: see the module's contract
        failed = e.get("type") == P + "run.failed"
        self._end_run(run, seq, when, d if failed else None, abandoned=False, answer=d.get("answer"))

    def _end_run(self, run: Span, seq: int, when: str, failed: dict[str, Any] | None, *, abandoned: bool,
                 answer: Any = None) -> None:
        end = self.ns
        for key, call in list(self.calls.items()):
            if call.parent == run.span:  # the run's calls still open end with it
                del self.calls[key]
                _end_at(call, end)
                call.status, call.message = ERROR, "the run ended before this call did"
                call.attrs.append(("error.type", "unfinished"))
                self._emit(call, seq, when)
        _end_at(run, end)
        if abandoned:
            run.status, run.message = ERROR, "a new run began before this one ended"
            run.attrs.append(("error.type", "abandoned"))
        elif failed is not None:
            _error(run, failed)
        elif self.content and answer is not None:
            run.attrs.append(("gen_ai.output.messages", _messages("assistant", answer)))
        self.run = None
        self._emit(run, seq, when)

    # -- calls -----------------------------------------------------------------------------
    def _call_started(self, e: dict[str, Any], kind: str, ident: Any, d: dict[str, Any], when: str) -> None:
        trace = _trace_of(e)
        if trace is None or ident is None:
            return
        cid = ident if isinstance(ident, str) else _text(ident)
        run = self.run
        parent = run.span if run is not None and run.trace == trace else None
        attrs: list[tuple[str, Any]]
        if kind == "model":
            model = d.get("model") or (self.run_model if parent is not None else None)
            provider, name = _split_model(model)
            attrs = [("gen_ai.operation.name", "chat")]
            if provider:
                attrs.append(("gen_ai.provider.name", provider))
            if name:
                attrs.append(("gen_ai.request.model", name))
            attrs.append(("wardrik.message.id", cid))
            span = Span(trace, span_id(self.log, trace, kind, cid), parent, f"chat {name}" if name else "chat",
                        CLIENT, self.ns, attrs)
        elif kind == "tool":
            tname = d["tool"].get("name")  # data.tool is an object: its call id was read
            tname = tname if isinstance(tname, str) else _text(tname)
            attrs = [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", tname),
                     ("gen_ai.tool.call.id", cid)]
            if self.content:
                args = _g(d, "tool", "args")
                for alt in (("tool", "arguments"), ("args",), ("arguments",)):
                    if args is None:
                        args = _g(d, *alt)
                if args is not None:
                    attrs.append(("gen_ai.tool.call.arguments", _text(args)))
            span = Span(trace, span_id(self.log, trace, kind, cid), parent, f"execute_tool {tname}", INTERNAL,
                        self.ns, attrs)
        else:
            attrs = [("wardrik.request.id", cid)]
            if self.content and d.get("prompt") is not None:
                attrs.append(("wardrik.input.prompt", _text(d["prompt"])))
            span = Span(trace, span_id(self.log, trace, kind, cid), parent, "wait_for_input", INTERNAL,
                        self.ns, attrs)
        self.calls[(kind, cid)] = span

    def _call_ended(self, kind: str, ident: Any, d: dict[str, Any], seq: int, when: str, *, failed: bool) -> None:
        if ident is None:
            return
        span = self.calls.pop((kind, ident if isinstance(ident, str) else _text(ident)), None)
        if span is None:
            return  # its start is not in what was read: see the module's contract
        _end_at(span, self.ns)
        attrs = span.attrs
        if kind == "model":
            _usage_attrs(attrs, d.get("usage"))
            finish = d.get("finish_reason", d.get("stop_reason"))
            if isinstance(finish, str) and finish:
                attrs.append(("gen_ai.response.finish_reasons", [finish]))
            cost = d.get("cost_usd")
            if is_cost(cost):
                attrs.append(("wardrik.cost_usd", float(cost)))  # type: ignore[arg-type]  # is_cost: a number
            if self.content and d.get("text") is not None:
                attrs.append(("gen_ai.output.messages", _messages("assistant", d["text"], finish)))
        elif kind == "tool":
            if failed:
                _error(span, d)
            elif self.content:
                result = d.get("output", d.get("result"))
                if result is not None:
                    attrs.append(("gen_ai.tool.call.result", _text(result)))
        elif self.content and d.get("answer") is not None:
            attrs.append(("wardrik.input.answer", _text(d["answer"])))
        self._emit(span, seq, when)

    def _emit(self, span: Span, seq: int, when: str) -> None:
        if self.wanted(seq, when):
            self.out.append(span)


UNKNOWN = -1  # a time that did not convert, with none before it: the next that converts (``_place``)


def _end_at(span: Span, end: int) -> None:
    """End ``span`` at ``end`` (never before its start). ``end`` is UNKNOWN only when no
    time of the log read so far converted, so then is the start: both are the epoch."""
    if end == UNKNOWN:
        end = max(span.start, 0)
    if span.start == UNKNOWN:
        span.start = end
    span.end = max(end, span.start)


# Which method each event type goes to (a dict: the hot loop's dispatch).
_HANDLERS: dict[str, Callable[[LogSpans, dict[str, Any], dict[str, Any], int, str], None]] = {
    P + "run.started": LogSpans._run_started, P + "run.completed": LogSpans._run_ended,
    P + "run.failed": LogSpans._run_ended, P + "message.started": LogSpans._model_started,
    P + "message.completed": LogSpans._model_ended, P + "tool_call.started": LogSpans._tool_started,
    P + "tool_call.completed": LogSpans._tool_ended, P + "tool_call.failed": LogSpans._tool_ended,
    P + "input.requested": LogSpans._wait_started, P + "input.received": LogSpans._wait_ended,
}


# ---------------------------------------------------------------------------------------
# where each log's read starts
# ---------------------------------------------------------------------------------------
def _seq_of_line(raw: bytes) -> int | None:
    p = peek(raw)
    if p is not None:
        return int(p[1])
    try:
        return int(decode_event(raw)["sequence"])
    except (ValueError, KeyError, TypeError):
        return None


def read_start(view: LogView, after: int, since: str | None, lookback: int = LOOKBACK) -> int:
    """The position (a sequence) to read a log from so that every span that ends after
    ``after`` (and at or after ``since``) is seen from its start: just before the last run
    boundary at or before the export's start, or the export's start itself when there is none
    within ``lookback`` bytes (0: the whole log)."""
    if view.fd is None:
        return after
    off = view.offset_after_seq(after) if after > 0 else 0
    if since is not None:
        off = max(off, view.offset_at_time(since))
    if off <= 0:
        return 0
    for start, raw in lines.iter_lines_backward(view.fd, off):
        if _RUN_MARK in raw:
            p = peek(raw)
            if p is not None and p[0] in _BOUNDARIES:
                return max(int(p[1]) - 1, 0)
            if p is None:
                try:
                    ev = decode_event(raw)
                except ValueError:
                    ev = None
                if ev is not None and ev.get("type", "").encode() in _BOUNDARIES:
                    return max(int(ev["sequence"]) - 1, 0)
        if off - start > lookback:
            got = lines.last_line(view.fd, off)
            seq = _seq_of_line(got[1]) if got is not None else None
            return max(after, seq if seq is not None else after)
    return 0


# ---------------------------------------------------------------------------------------
# encodings
# ---------------------------------------------------------------------------------------
def _any_json(v: Any) -> dict[str, Any]:
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_any_json(x) for x in v]}}
    return {"stringValue": _text(v)}


def _span_json(s: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": s.trace, "spanId": s.span}
    if s.parent:
        out["parentSpanId"] = s.parent
    out["name"] = s.name
    out["kind"] = s.kind
    out["startTimeUnixNano"] = str(s.start)
    out["endTimeUnixNano"] = str(s.end)
    out["attributes"] = [{"key": k, "value": {"stringValue": v} if type(v) is str else _any_json(v)}
                         for k, v in s.attrs]
    status: dict[str, Any] = {}
    if s.status:
        status["code"] = s.status
        if s.message:
            status["message"] = s.message
    out["status"] = status
    return out


def _resource_attrs(log: str, deployment: str) -> list[tuple[str, str]]:
    return [("service.name", log), ("service.namespace", deployment), ("wardrik.log", log)]


def deployment_of(source: Any) -> str | None:
    """The deployment an event's ``source`` names (``wardrik://D/agents/...``), else None."""
    if isinstance(source, str) and source.startswith("wardrik://"):
        d = source[len("wardrik://"):].split("/", 1)[0]
        return d if _DEPLOYMENT_RE.fullmatch(d) else None
    return None


_DEPLOYMENT_RE = re.compile(r"[a-z0-9][a-z0-9.-]{0,62}")


def request_json(batch: Mapping[str, list[Span]], deployment: str, version: str,
                 namespaces: Mapping[str, str] | None = None) -> bytes:
    """One ``ExportTraceServiceRequest`` as OTLP/JSON (compact, no newline). A log's
    ``service.namespace`` is the deployment its events name (``namespaces``, from ``export``),
    else ``deployment``."""
    ns = namespaces or {}
    return orjson.dumps({"resourceSpans": [
        {"resource": {"attributes": [{"key": k, "value": {"stringValue": v}} for k, v in
                                     _resource_attrs(log, ns.get(log, deployment))]},
         "scopeSpans": [{"scope": {"name": SCOPE, "version": version}, "spans": [_span_json(s) for s in spans]}]}
        for log, spans in batch.items() if spans]})


def request_proto(batch: Mapping[str, list[Span]], deployment: str, version: str,
                  namespaces: Mapping[str, str] | None = None) -> bytes:
    """One ``ExportTraceServiceRequest`` as protobuf bytes (the ``otlp`` extra); the
    namespaces as for ``request_json``."""
    ns = namespaces or {}
    from wardrik_cli.extras import need

    svc = need("opentelemetry.proto.collector.trace.v1.trace_service_pb2", "otlp")
    req = svc.ExportTraceServiceRequest()
    for log, spans in batch.items():
        if not spans:
            continue
        rs = req.resource_spans.add()
        for k, v in _resource_attrs(log, ns.get(log, deployment)):
            rs.resource.attributes.add(key=k).value.string_value = v
        ss = rs.scope_spans.add()
        ss.scope.name, ss.scope.version = SCOPE, version
        for s in spans:
            sp = ss.spans.add()
            sp.trace_id = bytes.fromhex(s.trace)
            sp.span_id = bytes.fromhex(s.span)
            if s.parent:
                sp.parent_span_id = bytes.fromhex(s.parent)
            sp.name, sp.kind = s.name, s.kind
            sp.start_time_unix_nano, sp.end_time_unix_nano = s.start, s.end
            for k, v in s.attrs:
                _set_any(sp.attributes.add(key=k).value, v)
            if s.status:
                sp.status.code = s.status
                sp.status.message = s.message
    data: bytes = req.SerializeToString()
    return data


def _set_any(av: Any, v: Any) -> None:
    if isinstance(v, str):
        av.string_value = v
    elif isinstance(v, bool):
        av.bool_value = v
    elif isinstance(v, int):
        av.int_value = v
    elif isinstance(v, float):
        av.double_value = v
    elif isinstance(v, list):
        for x in v:
            _set_any(av.array_value.values.add(), x)
    else:
        av.string_value = _text(v)


# ---------------------------------------------------------------------------------------
# where requests go
# ---------------------------------------------------------------------------------------
class FileSink:
    """OTLP JSON lines (the OpenTelemetry file exporter's format) on a binary stream; ``close``
    flushes (and fsyncs a file) so that a cursor saved after it never runs ahead of the file."""

    protocol = "http/json"

    def __init__(self, stream: IO[bytes], name: str, fsync: bool = True):
        self.stream, self.name, self.fsync = stream, name, fsync

    def send(self, body: bytes, spans: int) -> None:
        try:
            self.stream.write(body + b"\n")
        except OSError as e:
            raise ExportFailed(f"cannot write spans to {self.name}: {e.strerror or e}") from None

    def close(self) -> None:
        try:
            self.stream.flush()
            if self.fsync and stat.S_ISREG(os.fstat(self.stream.fileno()).st_mode):
                os.fsync(self.stream.fileno())  # a device, FIFO or pipe has nothing to sync (EINVAL)
        except OSError as e:
            raise ExportFailed(f"cannot write spans to {self.name}: {e.strerror or e}") from None


RETRY_STATUS = frozenset({429, 502, 503, 504})  # the ones OTLP/HTTP says to retry


class HttpSink:
    """OTLP/HTTP: each request POSTed to ``url``; a status that is not 2xx, or no answer, is
    ``ExportFailed`` (429/502/503/504 are tried up to ``attempts`` times, as OTLP says)."""

    def __init__(self, url: str, *, protocol: str = "http/protobuf", headers: Mapping[str, str] | None = None,
                 timeout: float = 10.0, gzip: bool = False, attempts: int = 3):
        self.url, self.protocol, self.headers = url, protocol, dict(headers or {})
        self.timeout, self.gzip, self.attempts = timeout, gzip, attempts

    def send(self, body: bytes, spans: int) -> None:
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/x-protobuf" if self.protocol == "http/protobuf"
                   else "application/json", "User-Agent": "wardrik-otlp", **self.headers}
        if self.gzip:
            import gzip

            body = gzip.compress(body, 6)
            headers["Content-Encoding"] = "gzip"
        for attempt in range(self.attempts):
            req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    resp.read()
                return
            except urllib.error.HTTPError as e:
                if e.code in RETRY_STATUS and attempt + 1 < self.attempts:
                    time.sleep(_retry_after(e.headers.get("Retry-After"), attempt))
                    continue
                detail = _body_hint(e)
                raise ExportFailed(f"{self.url} refused the spans: HTTP {e.code} {e.reason}{detail}") from None
            except (urllib.error.URLError, OSError, ValueError) as e:
                why = getattr(e, "reason", None) or e
                raise ExportFailed(f"cannot send spans to {self.url}: {why}") from None

    def close(self) -> None:
        pass


def _retry_after(value: str | None, attempt: int) -> float:
    try:
        return min(max(float(value), 0.0), 5.0) if value else 0.5 * (2.0 ** attempt)
    except ValueError:
        return 0.5 * (2.0 ** attempt)


def _body_hint(e: Any) -> str:
    try:
        text = e.read(200).decode("utf-8", "replace").strip().splitlines()
    except Exception:  # noqa: BLE001 - only a hint for the message
        return ""
    return f" ({text[0][:160]})" if text else ""


# ---------------------------------------------------------------------------------------
# the OTEL_EXPORTER_OTLP_* variables
# ---------------------------------------------------------------------------------------
def _env(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """(variable, value) of OTEL_EXPORTER_OTLP_TRACES_<name>, else OTEL_EXPORTER_OTLP_<name>."""
    for var in (f"OTEL_EXPORTER_OTLP_TRACES_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        v = env.get(var, "").strip()
        if v:
            return var, v
    return None


def traces_url(endpoint: str | None, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(url, where it came from): ``--endpoint`` (``/v1/traces`` appended when it has no
    path), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as it is), else
    OTEL_EXPORTER_OTLP_ENDPOINT (``/v1/traces`` appended, as the specification says); None
    when none is set."""
    from urllib.parse import urlsplit

    if endpoint is not None:
        url, origin = endpoint.strip(), "--endpoint"
        try:
            bare = urlsplit(url).path in ("", "/")
        except ValueError:
            bare = False  # refused below
        if bare:
            url = url.rstrip("/") + "/v1/traces"
    elif (got := _env(env, "ENDPOINT")) is not None:
        origin, url = got
        if origin == "OTEL_EXPORTER_OTLP_ENDPOINT":
            url = url.rstrip("/") + "/v1/traces"
    else:
        return None
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0 \
            and not any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url)
    except ValueError:  # a bracket left open, a port that is not a number
        ok = False
    if not ok:
        raise BadInput(f"bad {origin} {url!r}: an http:// or https:// URL, e.g. http://localhost:4318 "
                       "(OTLP/HTTP; /v1/traces is added to a URL without a path)")
    return url, origin


def http_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """Protocol, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables."""
    from urllib.parse import unquote

    out: dict[str, Any] = {"protocol": "http/protobuf", "headers": {}, "timeout": 10.0, "gzip": False}
    if (got := _env(env, "PROTOCOL")) is not None:
        var, v = got
        if v not in ("http/protobuf", "http/json"):
            raise BadInput(f"{var}={v!r}: wardrik sends OTLP over HTTP: http/protobuf (the default) or http/json"
                           + (" (gRPC is not supported; OTLP/HTTP listens on port 4318)" if v == "grpc" else ""))
        out["protocol"] = v
    if (got := _env(env, "HEADERS")) is not None:
        var, v = got
        for item in v.split(","):
            if not item.strip():
                continue
            k, sep, val = item.partition("=")
            if not sep or not k.strip():
                raise BadInput(f"bad {var}: {item.strip()!r} is not key=value (e.g. Authorization=Basic%20abc)")
            out["headers"][unquote(k.strip())] = unquote(val.strip())
    if (got := _env(env, "TIMEOUT")) is not None:
        var, v = got
        try:
            ms = float(v)
        except ValueError:
            ms = -1.0
        if not 0 < ms < float("inf"):
            raise BadInput(f"bad {var} {v!r}: milliseconds, e.g. 10000")
        out["timeout"] = ms / 1000
    if (got := _env(env, "COMPRESSION")) is not None:
        var, v = got
        if v not in ("gzip", "none"):
            raise BadInput(f"bad {var} {v!r}: gzip or none")
        out["gzip"] = v == "gzip"
    return out


# ---------------------------------------------------------------------------------------
# the export
# ---------------------------------------------------------------------------------------
@dataclass
class ExportResult:
    spans: int = 0
    runs: int = 0
    requests: int = 0
    logs: int = 0
    next: Cursor = field(default_factory=dict)


def _decoder(view: LogView, on_corrupt: OnCorrupt) -> Callable[[int, bytes], dict[str, Any] | None]:
    """``LogView.decode_or_report`` with its common case inlined (the hot loop): a line that
    parses as an object with a 12-digit sequence, a string type and time; anything else goes
    the full way (a ``CorruptLedger``, or ``on_corrupt``)."""
    loads = orjson.loads

    def decode(off: int, raw: bytes) -> dict[str, Any] | None:
        try:
            ev = loads(raw)
            seq = ev["sequence"]
            if len(seq) == 12 and seq.isdigit() and seq.isascii() and type(ev["type"]) is str \
                    and type(ev["time"]) is str:
                return ev  # type: ignore[no-any-return]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            pass
        return view.decode_or_report(off, raw, on_corrupt)
    return decode


def export(logs: Iterable[Log], after: Cursor | None, send: Callable[[Mapping[str, list[Span]]], None], *,
           deployment: str, run: str | None = None, since: str | None = None, content: bool = False,
           batch: int = BATCH, on_corrupt: OnCorrupt = None, warn: Callable[[str], None] | None = None,
           namespaces: dict[str, str] | None = None) -> ExportResult:
    """Read each log after ``after`` (see the module's contract), hand ``send`` batches of
    finished spans ({log: spans}), and return the counts and the next cursor (past every
    event read; keys of other logs carried over). ``send`` raising stops the export.
    ``namespaces`` is filled, before a log's first spans are sent, with the deployment its
    events name (their ``source``: the root that wrote them, not the one reading)."""
    res = ExportResult(next=dict(after or {}))
    pending: dict[str, list[Span]] = {}
    count = 0
    filters = Filters(types=READS, run=parse_run(run) if run is not None else None)

    def flush() -> None:
        nonlocal pending, count
        if count:
            send(pending)
            res.requests += 1
        pending, count = {}, 0

    # Most lines of a log are the types read here, so a byte look at each line to pass over
    # the others costs more than decoding those few; with --run, the byte test finds the run.
    test = filters.line_test() if filters.run is not None else None
    accepts = filters.accepts if filters.run is not None else None  # the types are the test's
    # The loop makes objects by the hundred thousand and no reference cycles: the cyclic
    # collector's passes over them cost a tenth of the time and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for log in logs:
            res.logs += 1
            pos = res.next.get(log.name, 0)
            with log.open() as view:
                view.lenient = on_corrupt is not None
                view.ends_from_bytes = True  # its lines are checked as they are read
                check_position(view, pos)
                start = read_start(view, pos, since) if (pos > 0 or since is not None) else 0

                def wanted(seq: int, when: str, _pos: int = pos) -> bool:
                    return seq > _pos and (since is None or when >= since)

                spans = LogSpans(log.name, content=content, wanted=wanted, warn=warn)
                out, feed = spans.out, spans.feed
                name = log.name
                on_gap = (lambda a, b, _n=name: warn(gap_warning(_n, a, b))) if warn is not None else None
                last = pos
                for line in scan(view, view.offset_after_seq(start), view.end, test=test, after_seq=start,
                                 decode=_decoder(view, on_corrupt), on_gap=on_gap,
                                 gap_from_start=start >= view.first_seq() - 1 or (start == 0 and missing_start(view))):
                    last = line.seq
                    ev = line.event
                    if ev is None or (accepts is not None and not accepts(ev)):
                        continue
                    if namespaces is not None and name not in namespaces:
                        d = deployment_of(ev.get("source"))
                        if d is not None:
                            namespaces[name] = d
                    feed(ev, last)
                    if out:
                        mine = pending.setdefault(name, [])
                        mine.extend(out)
                        res.spans += len(out)
                        res.runs += sum(1 for s in out if s.parent is None and s.name.startswith("invoke_agent "))
                        count += len(out)
                        out.clear()
                        if count >= batch:
                            flush()
                spans.done()
                res.next[name] = max(last, pos)
    finally:
        if collecting:
            gc.enable()
    flush()
    return res
