"""``stats``: calls, failures, durations, tokens and cost per group, streamed over many logs.

What is counted (the definitions ``wardrik stats --help`` gives, and the tests check against a
brute-force count). Only events in the window count (``since`` inclusive, ``until``
exclusive, stored times). Starts and ends are matched within one log.

- ``tool``: a call is counted when its ``tool_call.completed`` or ``tool_call.failed`` is
  read; it is matched to the ``tool_call.started`` with the same ``data.tool.call.id`` read
  before it in the same log, which gives its duration (end time - start time) and its name
  (``data.tool.name`` of the start, else of the end). An end whose start was not read (before
  ``since``) counts, with no duration. failures: the ``tool_call.failed`` ends.
- ``model``: a model call is a ``message.started`` .. ``message.completed`` with the same
  ``data.message.id``, counted at its completion (duration as for tools). A model call's model
  (under every grouping: its price needs it) is its start's ``data.model``, else its
  completion's. A model call still open when its log's run
  ends in ``run.failed`` is counted then, as a failure (duration: start to the run's end),
  and as a model call with no cost (``unpriced``, under ``run`` and ``agent`` too).
- ``run``: one group per run whose start or end is in the window (its trace id, which is
  ``data.run.id``; ``log`` says where it ran); ``agent``: one group per log, whose calls are
  its runs. A run is counted when its ``run.completed`` or ``run.failed``
  is read (failures: ``run.failed``), timed from the ``run.started`` of the same trace read
  before it in the same log.
- ``type``: ``calls`` is the number of events of each type; durations and failures do not
  apply (null).
- ``unended``: starts read with no end in the window: still running, cut off by ``until``,
  left open when their log's run ended (or a new run began, for runs), or replaced by a
  start with the same id. They are in no other column.
- Tokens: the sums of ``data.usage.input_tokens`` and ``output_tokens`` of the
  ``message.completed`` events in the group (by its model, run, log; under ``type``, the
  ``message.completed`` row). ``tool`` groups have none (null).
- Cost of a model call: its ``data.cost_usd`` when the writer gave one; else its usage times
  the model's prices (``Prices``, from ``.wardrik/config.toml``): (input - cache_read -
  cache_creation) x input_per_mtok + cache_read x cache_read_per_mtok + cache_creation x
  cache_creation_per_mtok + output x output_per_mtok, per million tokens (input_tokens
  counts cached tokens too, as OpenTelemetry's gen_ai.usage.input_tokens does); else none
  (no usage, no price for its model, cached tokens with no cache price, or cache counts
  larger than the input). A group's ``cost_usd`` is the sum, rounded to 6 decimals, only when
  every model call in it has a cost; else null, and ``unpriced`` says how many have none.
  Never a guess. A sum past what a number holds (costs near 1e308 added up) is no answer
  either: null too, and ``StatsResult.overflowed`` names the group so the caller says why.
- Percentiles are nearest-rank (the value at rank ceil(p x n) of the sorted durations),
  exact up to ``Durations.EXACT`` values per group; past that a log-bucketed sketch answers
  within ``Durations.ALPHA`` (relative) of the exact value. ``max_s`` is always exact.

Memory: the accumulators of each group (a group per run under ``run``), the calls open now
in the log being read (at most ``MAX_OPEN``: past that the oldest is counted unended and
forgotten), and the reader's blocks. Each log is counted on its own, then added to the total
(``Counter.merge``); without a window, that count is kept as the log's checkpoint (see
``stats``), and the next count resumes from it. Values the protocol refuses (an event written by another tool) are not
counted: a token count that is not a non-negative integer, a cost that is not a number.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from wardrik_cli.errors import BadConfig, BadInput, CorruptLedger
from wardrik_cli.protocol.catalogue import PREFIX, is_cost, short_name
from wardrik_cli.protocol.envelope import trace_id_of
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log


BY = ("agent", "run", "model", "tool", "type")
MAX_OPEN = 100_000
# The read block of a log (at most; the reader's budget may say less): each log is read alone,
# and a smaller block and the events decoded from it stay in the CPU's caches (over 1 GB of
# logs, 64 KiB blocks counted ~4% faster than the reader's 256 KiB).
BLOCK = 64 << 10
COLUMNS = ("calls", "failures", "error_rate", "unended", "p50_s", "p95_s", "max_s", "input_tokens",
           "output_tokens", "cost_usd", "unpriced")

_RUN_STARTED, _RUN_COMPLETED, _RUN_FAILED = PREFIX + "run.started", PREFIX + "run.completed", PREFIX + "run.failed"
_MSG_STARTED, _MSG_COMPLETED = PREFIX + "message.started", PREFIX + "message.completed"
_TOOL_STARTED, _TOOL_COMPLETED, _TOOL_FAILED = (PREFIX + "tool_call.started", PREFIX + "tool_call.completed",
                                                PREFIX + "tool_call.failed")
# The types each grouping reads (None: every event); every other line is passed over undecoded.
READS: dict[str, frozenset[str] | None] = {
    "tool": frozenset({_TOOL_STARTED, _TOOL_COMPLETED, _TOOL_FAILED, _RUN_COMPLETED, _RUN_FAILED}),
    "model": frozenset({_MSG_STARTED, _MSG_COMPLETED, _RUN_COMPLETED, _RUN_FAILED}),
    "run": frozenset({_RUN_STARTED, _RUN_COMPLETED, _RUN_FAILED, _MSG_STARTED, _MSG_COMPLETED}),
    "agent": frozenset({_RUN_STARTED, _RUN_COMPLETED, _RUN_FAILED, _MSG_STARTED, _MSG_COMPLETED}),
    "type": None,
}


def check_by(by: str) -> str:
    if by not in BY:
        raise BadInput(f"--by {by!r}: use one of {', '.join(BY)}")
    return by


# ---------------------------------------------------------------------------------------
# prices
# ---------------------------------------------------------------------------------------
PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_creation_per_mtok")
PRICE_REQUIRED = PRICE_FIELDS[:2]


class Price:
    """US dollars per million tokens of one model (a plain class: no dataclass start-up cost)."""

    __slots__ = ("input", "output", "cache_read", "cache_creation")

    def __init__(self, input: float, output: float, cache_read: float | None = None,
                 cache_creation: float | None = None):
        self.input, self.output, self.cache_read, self.cache_creation = input, output, cache_read, cache_creation

    def cost(self, usage: dict[str, Any]) -> float | None:
        """The price of one call's ``data.usage``; None when it cannot be known exactly."""
        inp, out = _count(usage, "input_tokens"), _count(usage, "output_tokens")
        cr = _count(usage.get("cache_read"), "input_tokens")
        cc = _count(usage.get("cache_creation"), "input_tokens")
        if (cr and self.cache_read is None) or (cc and self.cache_creation is None) or cr + cc > inp:
            return None
        return ((inp - cr - cc) * self.input + cr * (self.cache_read or 0.0) + cc * (self.cache_creation or 0.0)
                + out * self.output) / 1_000_000


Prices = dict[str, Price]


def load_prices(root: Root) -> Prices:
    """The ``[prices."provider:name"]`` tables of ``.wardrik/config.toml`` ({} without one).
    ``BadConfig`` (exit 2) names the file and the key of anything missing, unknown or not a
    non-negative number."""
    return parse_prices(root.config_table().get("prices"), root.config_path)


def parse_prices(table: Any, where: Path | str) -> Prices:
    example = '[prices."anthropic:claude-haiku-4-5"] input_per_mtok = 1.0, output_per_mtok = 5.0'
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise BadConfig(f"{where}: prices must be a table of models, e.g. {example}")
    out: Prices = {}
    for model, spec in table.items():
        key = f'prices."{model}"'
        if not isinstance(spec, dict):
            raise BadConfig(f"{where}: {key} must be a table, e.g. {example}")
        for name in spec:
            if name not in PRICE_FIELDS:
                raise BadConfig(f"{where}: {key}.{name} is not a price (known: {', '.join(PRICE_FIELDS)})")
        values: dict[str, float | None] = {}
        for name in PRICE_FIELDS:
            if name not in spec:
                if name in PRICE_REQUIRED:
                    raise BadConfig(f"{where}: {key}.{name} is missing (US dollars per million tokens; "
                                    f"needed: {', '.join(PRICE_REQUIRED)})")
                values[name] = None
                continue
            v = spec[name]
            if not is_cost(v):
                raise BadConfig(f"{where}: {key}.{name} must be a non-negative number (US dollars per million "
                                f"tokens), not {v!r}")
            values[name] = float(v)
        inp, outp = values["input_per_mtok"], values["output_per_mtok"]
        assert inp is not None and outp is not None  # required, checked above
        out[str(model)] = Price(inp, outp, values["cache_read_per_mtok"], values["cache_creation_per_mtok"])
    return out


def _count(d: Any, key: str) -> int:
    v = d.get(key) if isinstance(d, dict) else None
    return v if type(v) is int and v >= 0 else 0  # is_count, spelled out for the type checker


def call_cost(data: dict[str, Any], model: Any, prices: Prices) -> float | None:
    """A model call's cost (its ``message.completed`` data): cost_usd, else usage x price, else None."""
    given = data.get("cost_usd")
    if given is not None and is_cost(given):
        return float(given)
    usage = data.get("usage")
    price = prices.get(model) if isinstance(model, str) else None
    if price is None or not isinstance(usage, dict):
        return None
    return price.cost(usage)


# ---------------------------------------------------------------------------------------
# durations
# ---------------------------------------------------------------------------------------
class Durations:
    """Durations (seconds) of one group: exact up to ``EXACT`` values, then a sketch of
    log-spaced buckets (relative accuracy ``ALPHA``: at most ~1,500 buckets from 1 us to a
    year), so a group's memory is bounded however many calls it has."""

    EXACT = 4096
    ALPHA = 0.005
    _GAMMA = (1 + ALPHA) / (1 - ALPHA)
    _LOG_GAMMA = math.log(_GAMMA)
    TINY = 1e-6  # at or below: the zero bucket (stored times have microseconds)

    __slots__ = ("values", "buckets", "zeros", "n", "max")

    def __init__(self) -> None:
        self.values: list[float] | None = []
        self.buckets: dict[int, int] = {}
        self.zeros = 0
        self.n = 0
        self.max: float | None = None

    def add(self, x: float) -> None:
        self.n += 1
        if self.max is None or x > self.max:
            self.max = x
        if self.values is not None:
            self.values.append(x)
            if len(self.values) > self.EXACT:
                values, self.values = self.values, None
                self._bucket_all(values)
            return
        self._bucket(x)

    def _bucket(self, x: float) -> None:
        if x <= self.TINY:
            self.zeros += 1
        else:
            i = math.ceil(math.log(x) / self._LOG_GAMMA)
            self.buckets[i] = self.buckets.get(i, 0) + 1

    def _bucket_all(self, values: list[float]) -> None:
        """``_bucket`` of each value, in one loop (a group's exact values going into the sketch)."""
        tiny, log_gamma, buckets = self.TINY, self._LOG_GAMMA, self.buckets
        ceil, ln = math.ceil, math.log
        for x in values:
            if x <= tiny:
                self.zeros += 1
            else:
                i = ceil(ln(x) / log_gamma)
                buckets[i] = buckets.get(i, 0) + 1

    def merge(self, o: Durations) -> None:
        """Add another group's durations: the same as adding its values after these, one by one."""
        if o.n == 0:
            return
        if self.max is None or (o.max is not None and o.max > self.max):
            self.max = o.max
        self.n += o.n
        if self.values is not None and o.values is not None and len(self.values) + len(o.values) <= self.EXACT:
            self.values.extend(o.values)
            return
        if self.values is not None:
            values, self.values = self.values, None
            self._bucket_all(values)
        if o.values is not None:
            self._bucket_all(o.values)
        else:
            self.zeros += o.zeros
            for i, k in o.buckets.items():
                self.buckets[i] = self.buckets.get(i, 0) + k

    def dump(self) -> list[Any]:
        return [self.values, sorted(self.buckets.items()), self.zeros, self.n, self.max]

    @classmethod
    def load(cls, d: Any) -> Durations:
        """What ``dump`` gave; ValueError for anything else (a checkpoint is checked whole
        when it is read, so that a damaged one is discarded, never met later by ``rows``)."""
        if not isinstance(d, list) or len(d) != 5:
            raise ValueError("durations: not a list of 5")
        x = cls()
        values, buckets, zeros, n, top = d
        if values is not None and (not isinstance(values, list) or len(values) > cls.EXACT):
            raise ValueError("durations: values")
        if not isinstance(buckets, list) or not all(isinstance(b, list) and len(b) == 2 for b in buckets):
            raise ValueError("durations: buckets")
        x.values = [_number(v) for v in values] if values is not None else None
        x.buckets = {_int(i): _count_of(k) for i, k in buckets}
        x.zeros, x.n = _count_of(zeros), _count_of(n)
        x.max = _number(top) if top is not None else None
        return x

    def quantile(self, p: float) -> float | None:
        """Nearest rank: the value at rank ceil(p x n) (exact, or the sketch's estimate of it)."""
        if self.n == 0:
            return None
        rank = max(1, math.ceil(p * self.n))
        if self.values is not None:
            return sorted(self.values)[rank - 1]
        seen = self.zeros
        if rank <= seen:
            return 0.0
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if rank <= seen:
                estimate = 2 * self._GAMMA ** i / (self._GAMMA + 1)
                return min(estimate, self.max) if self.max is not None else estimate
        return self.max


def _int(v: Any) -> int:
    """A JSON integer (not a boolean), else ValueError."""
    if type(v) is not int:
        raise ValueError(f"not an integer: {type(v).__name__}")
    return v


def _count_of(v: Any) -> int:
    """A non-negative JSON integer, else ValueError."""
    if _int(v) < 0:
        raise ValueError("a negative count")
    return v  # type: ignore[no-any-return]  # _int: an int


def _number(v: Any) -> float | int:
    """A finite JSON number (not a boolean), else ValueError."""
    if type(v) not in (int, float) or not math.isfinite(v):
        raise ValueError("not a finite number")
    return v  # type: ignore[no-any-return]  # checked just above


def seconds_between(start: str, end: str) -> float | None:
    """Seconds from one stored time to another (microsecond exact); None if either is not a time."""
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------------------
# groups
# ---------------------------------------------------------------------------------------
class Group:
    __slots__ = ("calls", "failures", "unended", "durations", "input_tokens", "output_tokens", "cost", "unpriced",
                 "first", "is_run", "log")

    def __init__(self, first: str, log: str | None = None) -> None:
        self.calls = self.failures = self.unended = 0
        self.durations = Durations()
        self.input_tokens = self.output_tokens = 0
        self.cost = 0.0
        self.unpriced = 0
        self.first = first  # the time it was first seen (runs are listed in this order)
        self.is_run = False
        self.log = log  # under --by run: the log the run is in

    def ended(self, failed: bool, took: float | None) -> None:
        self.calls += 1
        if failed:
            self.failures += 1
        if took is not None:
            self.durations.add(took)

    def model_call(self, data: dict[str, Any], model: Any, prices: Prices) -> None:
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.input_tokens += _count(usage, "input_tokens")
            self.output_tokens += _count(usage, "output_tokens")
        c = call_cost(data, model, prices)
        if c is None:
            self.unpriced += 1
        else:
            self.cost += c

    def merge(self, o: Group) -> None:
        """Add the same group's counts from another log (its first sighting stays this one's)."""
        self.calls += o.calls
        self.failures += o.failures
        self.unended += o.unended
        self.durations.merge(o.durations)
        self.input_tokens += o.input_tokens
        self.output_tokens += o.output_tokens
        self.cost += o.cost
        self.unpriced += o.unpriced
        self.is_run = self.is_run or o.is_run

    def dump(self) -> list[Any]:
        # A sum that overflowed is kept as "inf" (JSON has no infinity; orjson would write null)
        cost: Any = self.cost if math.isfinite(self.cost) else "inf"
        return [self.calls, self.failures, self.unended, self.durations.dump(), self.input_tokens,
                self.output_tokens, cost, self.unpriced, self.first, self.is_run, self.log]

    @classmethod
    def load(cls, d: Any) -> Group:
        """What ``dump`` gave; ValueError for anything else (see ``Durations.load``)."""
        if not isinstance(d, list) or len(d) != 11:
            raise ValueError("group: not a list of 11")
        first, is_run, log = d[8], d[9], d[10]
        if not isinstance(first, str) or type(is_run) is not bool or not (log is None or isinstance(log, str)):
            raise ValueError("group: first, is_run or log")
        g = cls(first, log)
        g.calls, g.failures, g.unended = _count_of(d[0]), _count_of(d[1]), _count_of(d[2])
        g.durations = Durations.load(d[3])
        g.input_tokens, g.output_tokens = _count_of(d[4]), _count_of(d[5])
        g.cost = math.inf if d[6] == "inf" else float(_number(d[6]))
        g.unpriced = _count_of(d[7])
        g.is_run = is_run
        return g

    def row(self, by: str, key: Any) -> dict[str, Any]:
        timed = by != "type"
        tokens = by != "tool" and (by != "type" or key == "message.completed")
        d = self.durations
        head: dict[str, Any] = {by: key, "log": self.log} if by == "run" else {by: key}
        return head | {
            "calls": self.calls,
            "failures": self.failures if timed else None,
            "error_rate": (self.failures / self.calls if self.calls else None) if timed else None,
            "unended": self.unended if timed else None,
            "p50_s": d.quantile(0.50) if timed else None,
            "p95_s": d.quantile(0.95) if timed else None,
            "max_s": d.max if timed else None,
            "input_tokens": self.input_tokens if tokens else None,
            "output_tokens": self.output_tokens if tokens else None,
            "cost_usd": (round(self.cost, 6) if self.unpriced == 0 and math.isfinite(self.cost) else None)
            if tokens else None,
            "unpriced": self.unpriced if tokens else None,
        }


class _Open:
    """Starts waiting for their end, by log and id, oldest first; at most ``limit`` per log
    (a log's table is kept as it empties, so a reader may hold it: ``of``)."""

    def __init__(self, on_evict: Callable[[Any], None], limit: int = MAX_OPEN):
        self.logs: dict[str, OrderedDict[Any, tuple[Any, str]]] = {}
        self.on_evict, self.limit = on_evict, limit

    def of(self, log: str) -> OrderedDict[Any, tuple[Any, str]]:
        """The starts open in ``log``: {id: (group, start time)}, oldest first."""
        mine = self.logs.get(log)
        if mine is None:
            mine = self.logs[log] = OrderedDict()
        return mine

    def __len__(self) -> int:
        return sum(len(mine) for mine in self.logs.values())

    def items(self) -> Iterator[tuple[str, Any, Any, str]]:
        """(log, id, group, start time) of every start open, each log's oldest first."""
        for log, mine in self.logs.items():
            for ident, (group, time) in mine.items():
                yield log, ident, group, time

    def put(self, log: str, ident: Any, group: Any, time: str) -> None:
        mine = self.of(log)
        old = mine.pop(ident, None)
        if old is not None:
            self.on_evict(old[0])  # replaced by a start with the same id: the first never ended
        mine[ident] = (group, time)
        if len(mine) > self.limit:
            _oid, (ogroup, _t) = mine.popitem(last=False)
            self.on_evict(ogroup)

    def pop(self, log: str, ident: Any) -> tuple[Any, str] | None:
        mine = self.logs.get(log)
        return mine.pop(ident, None) if mine is not None else None

    def drain(self, log: str) -> list[tuple[Any, str]]:
        """Every start open in ``log``, forgotten."""
        mine = self.logs.get(log)
        if not mine:
            return []
        got = list(mine.values())
        mine.clear()
        return got

    def forget(self, log: str) -> None:
        mine = self.logs.get(log)
        if mine:
            mine.clear()

    def rest(self) -> Iterator[Any]:
        for mine in self.logs.values():
            for group, _t in mine.values():
                yield group


def _ident(v: Any) -> Any:
    """A call or message id as a dict key: a string as it is, anything else by its JSON (an
    id written as an object by another tool must not stop the count)."""
    if isinstance(v, str) or v is None:
        return v
    import orjson

    try:
        return "json:" + orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(v)


def _key(v: Any) -> str | None:
    """A group's name from data: a string as it is; anything else (a number, an object) is
    no name (null): groups are names."""
    return v if isinstance(v, str) else None


# ---------------------------------------------------------------------------------------
# the count
# ---------------------------------------------------------------------------------------
class StatsResult:
    """``by``, the window and one row per group (``rows``), plus ``dropped``: {log: events
    that retention dropped inside the window} (not counted: they are gone)."""

    def __init__(self, by: str, since: str | None, until: str | None, rows: list[dict[str, Any]],
                 dropped: dict[str, int], overflowed: list[dict[str, Any]] | None = None):
        self.by, self.since, self.until, self.rows, self.dropped = by, since, until, rows, dropped
        # the rows whose cost_usd is null because their sum overflowed (not because a call had no cost)
        self.overflowed = overflowed or []

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "since": self.since, "until": self.until, "groups": self.rows}


class Counter:
    """Feed it events (``add(log, event)``) in each log's order; ``rows()`` gives the answer."""

    def __init__(self, by: str, prices: Prices | None = None, max_open: int = MAX_OPEN):
        self.by = check_by(by)
        self.prices = prices or {}
        self.groups: dict[Any, Group] = {}
        self.max_open = max_open
        self.open = _Open(self._unended, max_open)
        self.runs: dict[str, tuple[str, str]] = {}  # log -> (trace id, start time) of its open run
        # Under run, agent and type: the model of each model call open now (its price needs it).
        self.models = _Open(lambda _key: None, max_open)
        self.add = {"tool": self._tool, "model": self._model, "run": self._run, "agent": self._run,
                    "type": self._type}[by]

    def _group(self, key: Any, time: str, log: str | None = None) -> Group:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = Group(time, log)
        return g

    def _unended(self, key: Any) -> None:
        g = self.groups.get(key)
        if g is not None:
            g.unended += 1

    # -- reading a scan -------------------------------------------------------------------
    def read(self, log: str, lines: Iterable[Any], reads: frozenset[str] | None, since: str | None,
             until: str | None) -> Any:
        """Count a scan's ``Line``s of one log (``read.scan``: ``event`` None for lines passed
        over, else the line's event, decoded by orjson), keeping the events of the types
        read inside the window; the last Line (where the read ended), or None for none."""
        if self.by == "tool":
            return self._read_tool(log, lines, since, until)
        add = self.add
        line = None
        for line in lines:
            ev = line[4]
            if ev is None:
                continue  # passed over: not a type read
            t = ev["time"]
            if ((reads is not None and ev["type"] not in reads)
                    or (since is not None and t < since) or (until is not None and t >= until)):
                continue
            add(log, ev)
        return line

    # -- tool -------------------------------------------------------------------------------
    def _read_tool(self, log: str, lines: Iterable[Any], since: str | None, until: str | None) -> Any:
        """``read`` under ``tool``: ``tool_event`` of each event, inlined (the hot loop of
        ``stats --by tool``: every call's start and end). The events come from orjson, so a
        JSON object is exactly a ``dict`` and a subscript by a string passes only through
        objects: ``data.tool.call.id`` is taken by subscripts when it is a string, and any
        other event of a call (no such key, a value that is not an object, an id that is not
        a string) goes to ``tool_event`` itself."""
        kinds = _TOOL_KINDS
        groups = self.groups
        open_ = self.open
        mine = open_.of(log)  # kept by drain as it empties
        limit = open_.limit
        exact, tiny, log_gamma = Durations.EXACT, Durations.TINY, Durations._LOG_GAMMA
        ceil, ln = math.ceil, math.log
        fromiso = datetime.fromisoformat
        line = None
        for line in lines:
            ev = line[4]
            if ev is None:
                continue  # passed over: not a type read
            kind = kinds.get(ev["type"])
            t = ev["time"]
            if kind is None or (since is not None and t < since) or (until is not None and t >= until):
                continue
            if kind == 3:  # a run's end: the calls still open in its log never ended
                for name, _began in open_.drain(log):
                    self._unended(name)
                continue
            try:
                tool = ev["data"]["tool"]
                ident = tool["call"]["id"]
                if type(ident) is not str:
                    raise TypeError  # an id of another type: tool_event keys it by its JSON
            except (KeyError, TypeError):
                self.tool_event(log, ev["type"], t, _data(ev))
                continue
            if kind == 0:
                name = tool.get("name")
                if type(name) is not str:
                    name = None
                if name not in groups:
                    groups[name] = Group(t)
                if ident in mine:
                    open_.put(log, ident, name, t)  # replaces a start with the same id: counted unended
                    continue
                mine[ident] = (name, t)
                if len(mine) > limit:
                    _oid, (oname, _t) = mine.popitem(last=False)
                    self._unended(oname)
                continue
            got = mine.pop(ident, None)
            if got is None:
                name = tool.get("name")
                if type(name) is not str:
                    name = None
                g = groups.get(name)
                if g is None:
                    g = groups[name] = Group(t)
                g.calls += 1
                if kind == 2:
                    g.failures += 1
                continue
            name, began = got
            g = groups.get(name)
            if g is None:
                g = groups[name] = Group(t)
            g.calls += 1
            if kind == 2:
                g.failures += 1
            try:
                took = (fromiso(t) - fromiso(began)).total_seconds()
            except (TypeError, ValueError):
                continue
            dur = g.durations  # Durations.add, inlined (with _bucket): the same steps
            values = dur.values
            if values is not None and len(values) >= exact:
                dur.add(took)  # the last exact value: the values go into the sketch
                continue
            dur.n += 1
            if dur.max is None or took > dur.max:
                dur.max = took
            if values is not None:
                values.append(took)
            elif took <= tiny:
                dur.zeros += 1
            else:
                i = ceil(ln(took) / log_gamma)
                buckets = dur.buckets
                buckets[i] = buckets.get(i, 0) + 1
        return line

    def _tool(self, log: str, e: dict[str, Any]) -> None:
        self.tool_event(log, e.get("type"), e.get("time", ""), _data(e))

    def tool_event(self, log: str, t: Any, time: str, d: dict[str, Any]) -> None:
        """One event under ``tool``, given as its type, time and data (a dict)."""
        if t == _TOOL_STARTED or t == _TOOL_COMPLETED or t == _TOOL_FAILED:
            tool = d.get("tool")
            if isinstance(tool, dict):
                call = tool.get("call")
                ident = call.get("id") if isinstance(call, dict) else None
                if ident is not None and not isinstance(ident, str):
                    ident = _ident(ident)
            else:
                tool = ident = None
            if t == _TOOL_STARTED:
                name = _key(tool.get("name")) if tool is not None else None
                self._group(name, time)
                self.open.put(log, ident, name, time)
                return
            got = self.open.pop(log, ident)
            if got is not None:
                name, began = got
                took = seconds_between(began, time)
            else:
                name, took = (_key(tool.get("name")) if tool is not None else None), None
            self._group(name, time).ended(t == _TOOL_FAILED, took)
        elif t == _RUN_COMPLETED or t == _RUN_FAILED:
            for name, _began in self.open.drain(log):
                self._unended(name)

    # -- model ------------------------------------------------------------------------------
    def _model(self, log: str, e: dict[str, Any]) -> None:
        t, d, time = e.get("type"), _data(e), e.get("time", "")
        if t == _MSG_STARTED:
            model = _key(d.get("model"))
            self._group(model, time)
            self.open.put(log, _ident(_g(d, "message", "id")), model, time)
        elif t == _MSG_COMPLETED:
            got = self.open.pop(log, _ident(_g(d, "message", "id")))
            if got is not None:
                model, began = got
                if model is None:
                    model = _key(d.get("model"))
                took = seconds_between(began, time)
            else:
                model, took = _key(d.get("model")), None
            g = self._group(model, time)
            g.ended(False, took)
            g.model_call(d, model, self.prices)
        elif t == _RUN_FAILED:
            for model, began in self.open.drain(log):
                g = self._group(model, time)
                g.ended(True, seconds_between(began, time))
                g.unpriced += 1  # no usage, no cost_usd: what it cost is not known
        elif t == _RUN_COMPLETED:
            for model, _began in self.open.drain(log):
                self._unended(model)

    # -- run and agent ----------------------------------------------------------------------
    def _run(self, log: str, e: dict[str, Any]) -> None:
        t, time = e.get("type"), e.get("time", "")
        trace = trace_id_of(e)
        per_run = self.by == "run"
        if t == _MSG_STARTED or t == _MSG_COMPLETED:
            d = _data(e)
            model = self._model_of(log, t, d, time)
            if t == _MSG_COMPLETED:
                self._group((log, trace) if per_run else log, time, log).model_call(d, model, self.prices)
            return
        if t == _RUN_FAILED:  # its open model calls failed: what they cost is not known
            failed = sum(1 for _started in self.models.drain(log))
            if failed:
                self._group((log, trace) if per_run else log, time, log).unpriced += failed
        elif t == _RUN_COMPLETED:
            self.models.forget(log)  # the run is over: so are its model calls
        if t == _RUN_STARTED:
            old = self.runs.get(log)
            if old is not None:
                self._unended((log, old[0]) if per_run else log)  # a new run began: the last one never ended
            self.runs[log] = (trace or "", time)
            g = self._group((log, trace) if per_run else log, time, log)
            g.is_run = True
        elif t == _RUN_COMPLETED or t == _RUN_FAILED:
            open_run = self.runs.get(log)
            took = None
            if open_run is not None and open_run[0] == trace:
                del self.runs[log]
                took = seconds_between(open_run[1], time)
            g = self._group((log, trace) if per_run else log, time, log)
            g.is_run = True
            g.ended(t == _RUN_FAILED, took)

    # -- type -------------------------------------------------------------------------------
    def _type(self, log: str, e: dict[str, Any]) -> None:
        t = e.get("type")
        g = self._group(short_name(t) if isinstance(t, str) else None, e.get("time", ""))
        g.calls += 1
        if t == _MSG_STARTED or t == _MSG_COMPLETED:
            d = _data(e)
            model = self._model_of(log, t, d, e.get("time", ""))
            if t == _MSG_COMPLETED:
                g.model_call(d, model, self.prices)
        elif t == _RUN_COMPLETED or t == _RUN_FAILED:
            self.models.forget(log)  # the run is over: so are its model calls

    def _model_of(self, log: str, t: Any, d: dict[str, Any], time: str) -> str | None:
        """A model call's model (for its price): remembered at its start, told at its end."""
        ident = _ident(_g(d, "message", "id"))
        if t == _MSG_STARTED:
            model = _key(d.get("model"))
            self.models.put(log, ident, model, time)
            return model
        got = self.models.pop(log, ident)
        started = got[0] if got is not None else None
        return started if started is not None else _key(d.get("model"))

    # -- the answer -------------------------------------------------------------------------
    def finish(self) -> None:
        """The end of the read: what is still open counts as unended, and is forgotten."""
        for key in self.open.rest():
            self._unended(key)
        self.open = _Open(self._unended, self.max_open)
        for log, (trace, _t) in self.runs.items():
            self._unended((log, trace) if self.by == "run" else log)  # started, never ended in the window
        self.runs = {}
        self.models = _Open(lambda _key: None, self.max_open)

    def merge(self, other: Counter) -> None:
        """Add a finished count of other logs (``finish``): groups are sums, so the order of
        logs does not change the answer."""
        for key, g in other.groups.items():
            mine = self.groups.get(key)
            if mine is None:
                self.groups[key] = g
            else:
                mine.merge(g)

    def dump(self) -> dict[str, Any]:
        """The accumulators, open calls and open runs as JSON types (a stats checkpoint)."""
        return {"groups": [[list(k) if isinstance(k, tuple) else k, g.dump()] for k, g in self.groups.items()],
                "open": [list(it) for it in self.open.items()],
                "models": [list(it) for it in self.models.items()],
                "runs": [[lg, tr, t] for lg, (tr, t) in self.runs.items()]}

    def load(self, d: Any) -> None:
        """Take the state ``dump`` gave (of a count with the same ``by`` and prices). Anything
        else is ValueError (or KeyError, TypeError), raised here, before any of it is used:
        every key, count, time and group is checked for the type the count gives it, so a
        damaged checkpoint is discarded and the log counted from its start (``stats``)."""
        if not isinstance(d, dict):
            raise ValueError("not an object")
        key = self._load_key
        groups: dict[Any, Group] = {}
        for k, g in _pairs(d["groups"], 2):
            groups[key(k)] = Group.load(g)
        self.groups = groups
        for name in ("open", "models"):
            o: _Open = getattr(self, name)
            for lg, i, k, t in _pairs(d[name], 4):
                if not isinstance(lg, str) or not isinstance(t, str) or not (i is None or isinstance(i, str)):
                    raise ValueError(f"{name}: log, id or time")
                o.put(lg, i, key(k), t)
        runs: dict[str, tuple[str, str]] = {}
        for lg, tr, t in _pairs(d["runs"], 3):
            if not (isinstance(lg, str) and isinstance(tr, str) and isinstance(t, str)):
                raise ValueError("runs: log, trace or time")
            runs[lg] = (tr, t)
        self.runs = runs

    def _load_key(self, k: Any) -> Any:
        """A group's key as ``dump`` wrote it: (log, trace id or null) under ``run``, else a
        name or null (a log id under ``agent``); ValueError for anything else."""
        if self.by == "run":
            if (isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)
                    and (k[1] is None or isinstance(k[1], str))):
                return (k[0], k[1])
            raise ValueError("a run's key is not [log, trace]")
        if k is None or isinstance(k, str):
            return k
        raise ValueError("a group's key is not a name")

    def rows(self) -> list[dict[str, Any]]:
        self.finish()
        items = list(self.groups.items())
        if self.by in ("run", "agent"):
            items = [(k, g) for k, g in items if g.is_run or self.by == "agent"]
        if self.by == "run":  # keyed by (log, trace id): a run id is unique only within a log, strictly
            # (a run with no trace id, null, sorts before one with a trace id; None < str would raise)
            items.sort(key=lambda kg: (kg[1].first, kg[0][0], kg[0][1] is not None, kg[0][1] or ""))
            return [g.row(self.by, k[1]) for k, g in items]
        items.sort(key=lambda kg: (kg[0] is None, kg[0] or ""))
        return [g.row(self.by, k) for k, g in items]

    def overflowed(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``rows`` whose cost is null because the sum overflowed: every call had a cost."""
        if not any(not math.isfinite(g.cost) for g in self.groups.values()):
            return []
        return [r for r in rows if r["cost_usd"] is None and r["unpriced"] == 0]


def _data(e: dict[str, Any]) -> dict[str, Any]:
    d = e.get("data")
    return d if isinstance(d, dict) else {}


def _g(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _pairs(v: Any, n: int) -> list[list[Any]]:
    """``v`` when it is a list of lists of ``n`` items (a checkpoint's rows), else ValueError."""
    if not isinstance(v, list) or not all(isinstance(x, list) and len(x) == n for x in v):
        raise ValueError(f"not a list of {n}-item lists")
    return v


# What each type read under tool is to ``Counter._read_tool``: a call's start, end, failed end, or a run's end.
_TOOL_KINDS = {_TOOL_STARTED: 0, _TOOL_COMPLETED: 1, _TOOL_FAILED: 2, _RUN_COMPLETED: 3, _RUN_FAILED: 3}


def count(events: Iterable[tuple[str, dict[str, Any]]], by: str, prices: Prices | None = None) -> list[dict[str, Any]]:
    """The rows for ``(log, event)`` pairs given in each log's order (the window already applied)."""
    c = Counter(by, prices)
    add = c.add
    for log, e in events:
        add(log, e)
    return c.rows()


CHECKPOINT_VERSION = "1"  # of the accumulators' form: another version's checkpoints are discarded


def checkpoint_name(by: str) -> str:
    """The checkpoint's view name (``folding.checkpoint``): no fold view is called so."""
    return f"wardrik.stats.{by}"


def checkpoint_version(prices: Prices) -> str:
    """The version a stats checkpoint is kept under: this code's, and the prices its costs
    were counted with (a changed price table makes a new count)."""
    import hashlib

    import orjson

    table = {m: [p.input, p.output, p.cache_read, p.cache_creation] for m, p in prices.items()}
    digest = hashlib.sha256(orjson.dumps(table, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return f"{CHECKPOINT_VERSION}:{digest}"


def stats(logs: list[Log], by: str, *, deployment: str, since: str | None = None, until: str | None = None,
          prices: Prices | None = None, on_corrupt: Callable[[CorruptLedger], None] | None = None,
          warn: Callable[[str], None] | None = None, checkpoints: bool = True) -> StatsResult:
    """Stream the matched logs (each oldest first) into the rows of ``by``; ``since``/``until``
    are stored times.

    Checkpoints (``folding.checkpoint``: ``.wardrik/checkpoints/<log>@wardrik.stats.<by>.json``):
    without a window, each log's accumulators (its groups, the calls and runs open at its
    end) are saved after it is read, keyed by the log, ``by``, ``CHECKPOINT_VERSION`` and the
    prices; the next count reads only what was appended since. A checkpoint is a cache,
    checked as a fold's is (same file, same first line, the same line where it ends) and
    discarded when it does not match (a rewrite, a truncation, a compaction); it is never
    written on a read-only root, nor after a corrupt line was skipped (a count from scratch
    would stop there). With ``since`` or ``until`` none is read or written: a window's count
    is not a suffix of the last one. Warnings about gaps in what a checkpoint covers are not
    given again."""
    from wardrik_cli.folding import checkpoint as ckpt
    from wardrik_cli.read.reader import Filters, Reader
    from wardrik_cli.read.scan import scan

    import orjson

    check_by(by)
    reads = READS[by]
    prices = prices or {}
    filters = Filters(types=reads, since=since, until=until)
    test = filters.line_test()
    total = Counter(by, prices)
    dropped: dict[str, int] = {}
    keep = checkpoints and since is None and until is None
    vname = checkpoint_name(by)
    version = checkpoint_version(prices) if keep else ""
    # One log at a time, each into its own count: starts and ends pair within a log, and the
    # sums do not depend on the order logs come in, so no merge of the reads is needed, and a
    # log's count is what its checkpoint keeps. The reader places the read (its position
    # after a notice of dropped events, the seek to ``since``, gap warnings, corrupt lines
    # told once); the scan is read here directly, lazily (``read.scan``'s dense path): in a
    # block in this tool's shape only the lines of the types read are found, by a byte
    # search each, and decoded whole (a line read is checked as the reader checks it: one
    # that is not an event is reported, never counted). ``Counter.read`` then judges every
    # event as ``Filters.accepts`` would (its type, and the window, which the seek and
    # ``until`` keep only in a log whose times are sorted).
    for log in logs:
        with Reader([log], None, filters=filters, deployment=deployment, on_corrupt=on_corrupt, warn=warn) as reader:
            name = log.name
            for it in reader.notices():
                dropped[name] = int(_g(it.event, "data", "count") or 0)
            got = reader.start_of(log)
            if got is None:
                continue
            view, start, pos, exact = got
            c = Counter(by, prices)
            ck = ckpt.load(log, view, vname, version) if keep and log.root.path.is_dir() else None
            if ck is not None:
                try:
                    c.load(ck.state)
                    start, pos, exact = ck.offset, ck.seq, True
                except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                    c, ck = Counter(by, prices), None  # not this code's form: counted from scratch
            _accepts, tell_gap = reader.judge(name)
            skipped = gaps = 0
            told_reader = reader.on_corrupt

            def on_gap(before: int, after: int, tell: Any = tell_gap) -> None:
                nonlocal gaps
                gaps += 1  # no checkpoint past a gap: the next count reads it again, and says so again
                if tell is not None:
                    tell(before, after)

            def told(e: CorruptLedger, tell: Any = told_reader) -> None:
                nonlocal skipped
                skipped += 1
                tell(e)
            last = None
            while True:
                lines = scan(view, start, view.end, test=test, after_seq=pos, until=reader.scan_until(name),
                             on_corrupt=told if told_reader is not None else None, on_gap=on_gap,
                             gap_from_start=exact, block=min(reader.block, BLOCK), lazy=True)
                last = c.read(name, lines, reads, since, until) or last
                if last is not None:
                    start, pos, exact = last[5], last[2], True
                if not reader.read_on(name, view, start):  # times out of order past --until: read on
                    break
            if last is not None:
                last_raw, last_seq, last_end = last[1], last[2], last[5]
            if (keep and skipped == 0 and gaps == 0 and last is not None and last_seq > (ck.seq if ck else 0)
                    and log.root.path.is_dir()):
                try:
                    state = orjson.dumps(c.dump())
                except TypeError:  # a sum past 64 bits (orjson writes no bigger integer): counted, not kept
                    state = None
                if state is not None:
                    ckpt.save(log, view, vname, version, last_seq, last_end, last_raw, state)
            c.finish()
            total.merge(c)
    rows = total.rows()
    return StatsResult(by, since, until, rows, dropped, total.overflowed(rows))
