"""What a reader wants to see (``Filters``), and the byte tests that find it fast (``LineTest``).

Contract kept here:
- ``Filters.accepts(event)`` is the definition of a match, on the decoded event: types kept
  (``-t``) and not excluded (``-x``), time in ``[since, until)``, run id (the trace id of
  ``traceparent``) starting with ``run``, ``grep`` searching every string value anywhere in
  ``data`` (keys excluded), every ``--where`` holding. It judges stored lines only: the
  ``events.dropped`` notices a reader makes are handed out beside it and pass every filter;
  a stored line of that type (a hand-written one) is judged as any other.
- ``LineTest`` only ever rules lines *out*, and only when that is sure: a byte test on the
  stored line is a necessary condition of ``accepts``, never the definition. A needle is
  used only when it has no character JSON must escape (``"``, ``\\``, control characters),
  and a line holding an escape that could stand for a character of a needle (``\\u00`` for
  ASCII needles, ``\\u`` otherwise, ``\\/`` for a needle with a slash: a writer that escapes
  more than it must) is always decoded and judged in full.
- Bad input (a regex that does not compile, a ``--where`` that does not parse, a ``--run``
  that is not hex, an unknown type) is ``BadInput`` naming the option and the forms it takes.
- Event data is hostile and Python's ``re`` cannot be interrupted, so a regex (``--grep``,
  ``--where PATH~RX``) is searched with a bound on its time (``Matcher``): one that cannot
  backtrack (no repetition past a few ways through it, no backreference) by ``re``, whose
  work is then linear in the text; any other by the ``regex`` package, with a time budget
  per event (``MATCH_BUDGET_S``, plus ``MATCH_S_PER_CHAR`` for each character searched).
  Past it, ``PatternTooSlow`` (``BadInput``: the fix is a simpler pattern) names the option,
  the pattern, the log and the sequence. The pattern is compiled by ``re`` first (the syntax
  is Python's), and handed to ``regex`` written so that it reads it as ``re`` does (``{`` that
  is no repetition and ``[`` inside a set are escaped; ``regex`` would read fuzzy matching
  and POSIX classes there); ``\\w``, ``\\d``, ``\\s`` and case folding follow Unicode's
  definitions there, which differ from ``re``'s on some characters outside ASCII.
"""
from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from wardrik_cli.errors import BadInput
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import trace_id_of
from wardrik_cli.protocol.names import AUDIT_NAME, is_log_id

WHERE_OPS = ("!=", "<=", ">=", "=", "~", "<", ">")
_WHERE_RE = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(!=|<=|>=|=|~|<|>)\s?(.*)", re.S)
_WHERE_FORMS = "PATH OP VALUE, OP one of = != ~ < <= > >= (e.g. data.tool.name=bash, 'data.attempt >= 3')"
_HEX_RE = re.compile(r"[0-9a-f]{4,32}")
_TRACEPARENT_RE = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
_UNSAFE = re.compile(rb'["\\\x00-\x1f]')  # bytes JSON may write escaped: never in a needle
NEEDLE_MIN = 3  # shorter literals find too much to be worth a byte search
# A stored line in this tool's shape has its type's value at byte 73 (HEAD, a 36-byte id,
# ``","type":"``); a type is ASCII, so only a ``\u00`` escape can hide one of its letters.
TYPE_VALUE_AT = 73
TYPE_ESCAPE = b"\\u00"
# A regex that may backtrack gets this long per event (plus so much per character it searches:
# a long value takes longer) before it is refused as too slow for the data. `grep -E` takes
# milliseconds where Python's re takes centuries; a plain search of 200 MB takes under 1 s.
MATCH_BUDGET_S = 2.0
MATCH_S_PER_CHAR = 5e-8
SAFE_WAYS = 64  # a pattern with at most this many ways through it, none unbounded, runs on re


class PatternTooSlow(BadInput):
    """A ``--grep`` or ``--where ~`` regex that took too long on an event's data."""


# ---------------------------------------------------------------------------------------
# parsing what users type
# ---------------------------------------------------------------------------------------
def parse_types(values: Iterable[str] | str | None, option: str = "--types") -> list[str] | None:
    """``-t a,b -t c`` (repeatable, comma-separated) as full type names; None when not given."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    items = [t.strip() for v in values for t in v.split(",") if t.strip()]
    if not items:
        raise BadInput(f"{option} needs at least one type (see `wardrik types`)")
    out = []
    for t in items:
        try:
            out.append(lookup(t).full)
        except BadInput as e:
            raise BadInput(f"bad {option}: {e}") from None
    return out


def parse_run(text: str) -> str:
    """``--run``: at least 4 hex digits of a run id (its trace id), the full 32, or a whole
    traceparent; the lowercase prefix every matching run id starts with."""
    s = text.strip().lower()
    m = _TRACEPARENT_RE.fullmatch(s)
    if m:
        return m.group(1)
    if _HEX_RE.fullmatch(s):
        return s
    raise BadInput(f"bad --run {text!r}: use at least 4 hex digits of a run id (pretty output shows 8), "
                   "the full 32, or a traceparent (00-<run id>-<span>-01)")


def user_regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A regular expression a user typed: re.error for any pattern ``re`` cannot take (a
    repeat count past its limit is an OverflowError there, a nesting too deep a
    RecursionError), and the warnings ``re`` gives about a pattern (``[[``: a FutureWarning
    printed with a source path) are not printed: the pattern is taken as ``re`` reads it."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rx = re.compile(pattern, flags)
            _bounded_repeats(rx)
            return rx
    except (OverflowError, RecursionError, ValueError) as e:
        raise re.error(str(e) or type(e).__name__) from None


MAX_REPEAT_COUNT = 10_000  # a{n} past this: the time-bounded matcher would unroll it in memory (a{99999999}: gigabytes)


def _bounded_repeats(rx: re.Pattern[str]) -> None:
    """re.error when counted repeats (``{n}``, ``{n,m}``), nested ones multiplied, go past
    ``MAX_REPEAT_COUNT``."""
    from re import _parser  # type: ignore[attr-defined]

    repeats = (_parser.MAX_REPEAT, _parser.MIN_REPEAT, getattr(_parser, "POSSESSIVE_REPEAT", None))
    stack: list[tuple[Any, int]] = [(_parser.parse(rx.pattern, rx.flags), 1)]
    while stack:
        nodes, times = stack.pop()
        for op, av in nodes:
            if op in repeats:
                lo, hi, sub = av
                n = times * (lo if hi == _parser.MAXREPEAT else hi)
                if n > MAX_REPEAT_COUNT:
                    nested = " (nested counts multiplied)" if times > 1 else ""
                    raise re.error(f"a repeat count past {MAX_REPEAT_COUNT:,}{nested}")
                stack.append((sub, max(n, 1)))
            elif op is _parser.SUBPATTERN:
                stack.append((av[-1], times))
            elif op is _parser.BRANCH:
                stack.extend((b, times) for b in av[1])
            elif op in (_parser.ASSERT, _parser.ASSERT_NOT):
                stack.append((av[1], times))
            elif op is getattr(_parser, "ATOMIC_GROUP", None):
                stack.append((av, times))
            elif op is _parser.GROUPREF_EXISTS:
                stack.extend((x, times) for x in av[1:] if x is not None)


def compile_grep(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    try:
        return user_regex(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as e:
        raise BadInput(f"bad --grep {pattern!r}: {e} (a Python regular expression; "
                       "escape ( [ . * + ? with a backslash to match them literally)") from None


# ---------------------------------------------------------------------------------------
# searching with a bound on time
# ---------------------------------------------------------------------------------------
class _TimedOut(Exception):
    """A search ran past its budget (the caller names the option, the log and the sequence)."""


class Matcher:
    """A compiled user regex, searched with a bound on its time (see the module docstring).

    ``search(text, allowed)`` is True when ``text`` holds a match; ``allowed`` seconds are
    all it may take (``_TimedOut`` past them), only enforced when ``guarded`` (a pattern
    that can backtrack). ``texts`` are strings one of which every match holds (lower-cased
    when the pattern ignores case: then only ASCII text is ruled out by them), looked for
    before a guarded search: a plain ``in`` costs a tenth of a search with a timeout."""

    __slots__ = ("rx", "guarded", "texts", "lower", "plain", "_search")

    def __init__(self, rx: re.Pattern[str]):
        self.rx = rx
        self.guarded = not cannot_backtrack(rx)
        self.texts: tuple[str, ...] = ()
        self.lower = bool(rx.flags & re.IGNORECASE)
        # re's own search, for a pattern that cannot backtrack (None: a guarded one)
        self.plain: Callable[[str], Any] | None = None if self.guarded else rx.search
        if not self.guarded:
            self._search: Callable[..., Any] = rx.search
            return
        import regex  # only for a pattern that can backtrack: it costs start-up time

        flags = regex.VERSION0
        for name in ("IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII"):
            if rx.flags & getattr(re, name):
                flags |= getattr(regex, name)
        self._search = regex.compile(as_re_reads_it(rx.pattern, bool(rx.flags & re.VERBOSE)), flags).search
        self.texts = tuple(_required_texts(rx) or ())

    def ruled_out(self, text: str) -> bool:
        """``text`` holds none of ``texts``, so no match (False when there are none)."""
        if not self.texts:
            return False
        if self.lower:
            if not text.isascii():
                return False  # folding outside ASCII is not str.lower(): searched in full
            text = text.lower()
        for t in self.texts:
            if t in text:
                return False
        return True

    def search(self, text: str, allowed: float) -> bool:
        if not self.guarded:
            return self._search(text) is not None
        if self.ruled_out(text):
            return False
        return self.timed(text, allowed)

    def timed(self, text: str, allowed: float) -> bool:
        """The guarded search itself, in at most ``allowed`` seconds."""
        if allowed <= 0:
            raise _TimedOut
        try:
            return self._search(text, timeout=allowed) is not None
        except TimeoutError:
            raise _TimedOut from None


@functools.lru_cache(maxsize=64)
def matcher_of(rx: re.Pattern[str]) -> Matcher:
    return Matcher(rx)


def too_slow(option: str, pattern: str, event: dict[str, Any]) -> PatternTooSlow:
    """The error of a regex that ran past its budget on ``event``: one line naming the option,
    the pattern, the log (from the event's source, when it names one) and the sequence."""
    src = event.get("source")
    log = "a log"
    if isinstance(src, str):
        tail = src.rsplit("/agents/", 1)[-1] if "/agents/" in src else None
        if tail is not None and is_log_id(tail):
            log = tail
        elif src.endswith("/audit"):
            log = AUDIT_NAME
    seq = event.get("sequence")
    where = f"{log} at sequence {int(seq)}" if isinstance(seq, str) and seq.isdigit() else f"a live event of {log}"
    return PatternTooSlow(f"{option} {pattern!r} took too long on {where} (over {MATCH_BUDGET_S:g} s): "
                          "simplify it")


def cannot_backtrack(rx: re.Pattern[str]) -> bool:
    """Is ``re``'s work on any text at most linear in the text's length: no unbounded
    repetition, no backreference, and at most ``SAFE_WAYS`` ways through the pattern (the
    most it tries at each position)? Read from the parse tree; anything unknown: no."""
    import warnings

    try:
        from re import _parser  # type: ignore[attr-defined]

        with warnings.catch_warnings():  # re.compile gave the pattern's warnings already
            warnings.simplefilter("ignore")
            tree = _parser.parse(rx.pattern, rx.flags)
        return _ways(list(tree), _parser) is not None
    except Exception:  # noqa: BLE001 - a private module: any surprise means "may backtrack"
        return False


def _ways(items: list[Any], p: Any) -> int | None:
    """How many ways there are through ``items`` (a parse tree's sequence), or None when
    unbounded or more than ``SAFE_WAYS``."""
    total = 1
    for op, av in items:
        if op in (p.LITERAL, p.NOT_LITERAL, p.ANY, p.IN, p.AT):
            n: int | None = 1
        elif op is p.SUBPATTERN:
            n = _ways(list(av[-1]), p)
        elif op is p.ATOMIC_GROUP:
            n = _ways(list(av), p)
        elif op in (p.ASSERT, p.ASSERT_NOT):
            n = _ways(list(av[1]), p)
        elif op is p.BRANCH:
            n = 0
            for alt in av[1]:
                w = _ways(list(alt), p)
                if w is None:
                    return None
                n += w
        elif op in (p.MAX_REPEAT, p.MIN_REPEAT, p.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            inner = _ways(list(sub), p)
            if inner is None or hi is p.MAXREPEAT or hi > SAFE_WAYS:
                return None
            n = sum(inner ** k for k in range(lo, hi + 1))
        else:
            return None  # a backreference, a conditional, anything else
        if n is None:
            return None
        total *= max(n, 1)
        if total > SAFE_WAYS:
            return None
    return total


_RE_REPEAT = re.compile(r"\{[0-9]*(?:,[0-9]*)?\}")


def as_re_reads_it(pattern: str, verbose: bool) -> str:
    """``pattern`` (which ``re`` compiles) written so that the ``regex`` package reads it as
    ``re`` does: a ``{`` that ``re`` takes for a literal (not ``{m}``, ``{m,n}``, ``{,n}``,
    ``{m,}``) is escaped, as regex would read fuzzy matching there (``a{e<=1}``), and a ``[``
    inside a set is escaped, as regex would read a POSIX class there (``[[:digit:]]``)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_set = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("N{", i + 1) and (close := pattern.find("}", i + 3)) > 0:
                out.append(pattern[i:close + 1])  # a named character, \N{...}: its braces are its own
                i = close + 1
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_set:
            if c == "]":
                in_set = False
            out.append("\\[" if c == "[" else c)
            i += 1
            continue
        if c == "[":
            in_set = True
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1  # a "]" first in a set is a literal
            out.append(pattern[i:j])
            i = j
            continue
        if c == "(" and pattern.startswith("(?#", i):
            j = pattern.find(")", i)
            j = n if j < 0 else j + 1
            out.append(pattern[i:j])
            i = j
            continue
        if c == "#" and verbose:
            j = pattern.find("\n", i)
            j = n if j < 0 else j
            out.append(pattern[i:j])
            i = j
            continue
        if c == "{":
            m = _RE_REPEAT.match(pattern, i)
            if m is None or m.group() == "{}":
                out.append("\\{")
                i += 1
                continue
            out.append(m.group())
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Where:
    """One ``--where PATH OP VALUE``."""

    text: str
    path: tuple[str, ...]
    op: str
    value: str
    number: float | None = None  # for < <= > >= on anything but time
    regex: re.Pattern[str] | None = None  # for ~
    matcher: Matcher | None = field(default=None, repr=False, compare=False)  # ~'s search, bounded in time

    @classmethod
    def parse(cls, text: str) -> Where:
        m = _WHERE_RE.fullmatch(text)
        if not m or not m.group(1).strip("."):
            raise BadInput(f"bad --where {text!r}: expected {_WHERE_FORMS}")
        path_text, op, value = m.group(1), m.group(2), m.group(3).strip()
        glued = text[m.end(2):m.end(2) + 1]
        if op == "=" and glued and glued in "=~":
            # `==`, `=~`: another language's operator, not a value starting with one (a value
            # that does is written after a space: `data.x = =y`)
            raise BadInput(f"bad --where {text!r}: {op + glued!r} is not an operator; use one of "
                           f"{' '.join(WHERE_OPS)}")
        if value[:1] in "\"'" and len(value) >= 2 and value[-1] == value[0]:
            value = value[1:-1]  # a quoted value keeps its spaces
        path = tuple(path_text.split("."))
        if any(not p for p in path):
            raise BadInput(f"bad --where {text!r}: the path {path_text!r} has an empty part")
        if op == "~":
            try:
                rx = user_regex(value)
                return cls(text, path, op, value, regex=rx, matcher=matcher_of(rx))
            except re.error as e:
                raise BadInput(f"bad --where {text!r}: {e} (after ~ comes a Python regular expression)") from None
        if path == ("sequence",) and op != "~":
            # stored as 12 digits: compared as the number it is (``sequence>10``, ``sequence=7``)
            if not (value.strip().isascii() and value.strip().isdigit()):
                raise BadInput(f"bad --where {text!r}: sequence compares with a whole number, e.g. sequence>=100")
            return cls(text, path, op, value, number=int(value.strip()))
        if op in ("<", "<=", ">", ">="):
            if path == ("time",):
                from wardrik_cli.errors import BadTime
                from wardrik_cli.protocol.times import parse_time_arg

                try:
                    return cls(text, path, op, parse_time_arg(value))
                except BadTime as e:
                    raise BadTime(f"bad --where {text!r}: {e}") from None
            try:
                number = float(value)
            except ValueError:
                number = None
            if number is None or number != number or value.strip().lower() in ("inf", "-inf", "infinity", "nan"):
                raise BadInput(f"bad --where {text!r}: {op} compares numbers (or times, for `time`), "
                               f"and {value!r} is not a number")
            return cls(text, path, op, value, number=number)
        return cls(text, path, op, value)

    def holds(self, event: dict[str, Any]) -> bool:
        cur: Any = event
        for part in self.path:
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
                cur = cur[int(part)]
            else:
                return self.op == "!="  # a missing path matches only !=
        op = self.op
        if self.path == ("sequence",) and op != "~":
            if not (isinstance(cur, str) and cur.isascii() and cur.isdigit()):
                return op == "!="
            n = int(cur)
            if op in ("=", "!="):
                return (n == self.number) == (op == "=")
            return _compare(n, self.number, op)
        if op in ("=", "!=", "~"):
            if isinstance(cur, str):
                text = cur
            else:
                try:
                    text = orjson.dumps(cur).decode()
                except orjson.JSONEncodeError:
                    # nested deeper than JSON is written (a line written by hand: orjson reads
                    # 1,023 levels, writes 254): no text to compare, so not equal, no match
                    return op == "!="
            if op == "~":
                assert self.regex is not None
                m = self.matcher or matcher_of(self.regex)
                try:
                    return m.search(text, MATCH_BUDGET_S + len(text) * MATCH_S_PER_CHAR)
                except _TimedOut:
                    raise too_slow("--where", self.text, event) from None
            return (text == self.value) == (op == "=")
        if self.number is None:  # a time
            if not isinstance(cur, str):
                return False
            return _compare(cur, self.value, op)
        if isinstance(cur, bool) or not isinstance(cur, int | float):
            return False
        return _compare(cur, self.number, op)

    def needle(self) -> Needle | None:
        """Bytes every matching line holds (when not escaped), or None.

        ``=`` and ``~`` look at a value's text: a string as it is, anything else as orjson
        writes it compactly, which need not be how the line stores it (``1e3`` is read as
        ``1000.0``, ``[1, 2]`` as ``[1,2]``). So a text is a needle only when it cannot be
        part of such a rewriting (``_dump_safe``): then a match lies inside a string, or
        is ``true``/``false``/``null``, stored as they are."""
        if self.op == "=":
            if _looks_numeric(self.value) or not _dump_safe(self.value):
                return None
            b = _safe(self.value.encode())
            return Needle([b]) if b is not None else None
        if self.op == "~" and self.regex is not None:
            lits = required_literals(self.regex)
            if not lits or len(lits) != 1 or not _dump_safe(lits[0].decode()):
                return None
            return Needle(lits, lower=bool(self.regex.flags & re.IGNORECASE))
        return None


_STRUCTURE = frozenset(",:[]{}")
_NUMBER = frozenset("0123456789.eE+-")


def _dump_safe(text: str) -> bool:
    """Can ``text`` be found only where a line stores it as it is? It holds none of JSON's
    structure (so it never spans two tokens, between which a line may put spaces) and a
    character no number holds (so it is not inside a number, which a line may write in
    another form)."""
    return not any(c in _STRUCTURE for c in text) and any(c not in _NUMBER for c in text)


def _compare(a: Any, b: Any, op: str) -> bool:
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        return False


def _safe(needle: bytes) -> bytes | None:
    return needle if len(needle) >= NEEDLE_MIN and not _UNSAFE.search(needle) else None


def required_literals(rx: re.Pattern[str]) -> list[bytes] | None:
    """Byte strings one of which every match of ``rx`` contains (alternatives), lower-cased
    when the pattern ignores case; None when no such literal worth searching is known.

    Read from the regex's parse tree: a top-level sequence's longest run of literal
    characters (every match holds it), or a top-level alternation of pure literals."""
    texts = _required_texts(rx)
    if texts is None:
        return None
    out = []
    for t in texts:
        b = _safe(t.encode())
        if b is None:
            return None
        out.append(b)
    return out


def _required_texts(rx: re.Pattern[str]) -> list[str] | None:
    """``required_literals`` as text, before the byte search's own conditions (length, and
    no character JSON may escape)."""
    import warnings

    try:
        from re import _parser  # type: ignore[attr-defined]

        with warnings.catch_warnings():  # user_regex kept the pattern's warnings quiet already
            warnings.simplefilter("ignore")
            tree = _parser.parse(rx.pattern, rx.flags)
    except Exception:  # noqa: BLE001 - a private module: any surprise means no prefilter
        return None
    ignore = bool(tree.state.flags & re.IGNORECASE)
    lit, br = _parser.LITERAL, _parser.BRANCH

    def longest_run(items: Sequence[Any]) -> str:
        best, cur = "", []
        for op, av in items:
            if op is lit:
                cur.append(chr(av))
                continue
            if len("".join(cur)) > len(best):
                best = "".join(cur)
            cur = []
        return max(best, "".join(cur), key=len)

    items = list(tree)
    if len(items) == 1 and items[0][0] is br:
        alts = []
        for sub in items[0][1][1]:
            sub_items = list(sub)
            if not sub_items or any(op is not lit for op, _ in sub_items):
                return None
            alts.append("".join(chr(av) for _, av in sub_items))
        texts = alts
    else:
        texts = [longest_run(items)]
    out = []
    for t in texts:
        if not t:
            return None
        if ignore:
            if not t.isascii():
                return None  # Unicode case folding is not a byte search
            t = t.lower()
        out.append(t)
    return out


# ---------------------------------------------------------------------------------------
# the definition: Filters.accepts
# ---------------------------------------------------------------------------------------
@dataclass
class Filters:
    """What a reader wants to see (of stored events: the notices a reader makes pass it by).

    ``since``/``until`` are stored time strings (since inclusive, until exclusive); ``run`` a
    lowercase hex prefix of run ids; ``types``/``exclude`` full type names."""

    types: frozenset[str] | None = None
    since: str | None = None
    until: str | None = None
    run: str | None = None
    exclude: frozenset[str] = frozenset()
    grep: re.Pattern[str] | None = None
    where: tuple[Where, ...] = ()
    _test: LineTest | None = field(default=None, repr=False, compare=False)
    _grep: Matcher | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.grep is not None:
            self._grep = matcher_of(self.grep)  # once: accepts() runs per event

    @classmethod
    def build(cls, types: Iterable[str] | None = None, since: str | None = None,
              until: str | None = None, run: str | None = None, *, exclude: Iterable[str] | None = None,
              grep: str | None = None, ignore_case: bool = False, where: Iterable[str] = ()) -> Filters:
        """From what users type: type names with or without the prefix, a ``--run`` text,
        a ``--grep`` regex, ``--where`` texts (times already parsed)."""
        full = frozenset(lookup(t).full for t in types) if types else None
        ex = frozenset(lookup(t).full for t in exclude) if exclude else frozenset()
        return cls(full, since, until, parse_run(run) if run is not None else None, ex,
                   compile_grep(grep, ignore_case) if grep is not None else None,
                   tuple(Where.parse(w) for w in where))

    @property
    def only_times(self) -> bool:
        """True when nothing but the time window (or nothing at all) is asked for."""
        return (self.types is None and not self.exclude and self.run is None and self.grep is None
                and not self.where)

    def accepts(self, event: dict[str, Any]) -> bool:
        t = event.get("type")
        if self.types is not None and t not in self.types:
            return False
        if t in self.exclude:
            return False
        if self.since is not None and event["time"] < self.since:
            return False
        if self.until is not None and event["time"] >= self.until:
            return False
        if self.run is not None:
            tid = trace_id_of(event)
            if tid is None or not tid.startswith(self.run):
                return False
        g = self._grep
        if g is not None:
            if g.plain is not None:
                if not _grep_plain(g.plain, event.get("data")):
                    return False
            else:
                try:
                    if not _grep_guarded(g, event.get("data")):
                        return False
                except _TimedOut:
                    raise too_slow("--grep", g.rx.pattern, event) from None
        for w in self.where:
            if not w.holds(event):
                return False
        return True

    def line_test(self) -> LineTest | None:
        """The byte tests of these filters, for ``read.scan`` (None: every line is decoded)."""
        if self._test is None:
            self._test = LineTest.of(self)
        return self._test if self._test.active else None


def grep_data(rx: re.Pattern[str], data: Any) -> bool:
    """Does a string value anywhere in ``data`` (keys excluded) hold a match? Iterative: a
    deeply nested hostile document cannot exhaust the stack. A pattern that can backtrack
    has ``MATCH_BUDGET_S`` (and ``MATCH_S_PER_CHAR`` a character) for all of ``data``:
    ``PatternTooSlow`` past it."""
    m = matcher_of(rx)
    if m.guarded:
        try:
            return _grep_guarded(m, data)
        except _TimedOut:
            raise PatternTooSlow(f"--grep {rx.pattern!r} took too long on an event's data: simplify it") from None
    return _grep_plain(rx.search, data)


def _grep_plain(search: Callable[[str], Any], data: Any) -> bool:
    stack = [data]
    while stack:
        cur = stack.pop()
        if isinstance(cur, str):
            if search(cur) is not None:
                return True
        elif isinstance(cur, dict):
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return False


def _grep_guarded(m: Matcher, data: Any) -> bool:
    """``grep_data`` for a pattern that can backtrack: ``_TimedOut`` past the budget."""
    clock = time.monotonic
    deadline = clock() + MATCH_BUDGET_S
    texts = m.texts if len(m.texts) == 1 and not m.lower else None  # the usual case, inlined
    stack = [data]
    while stack:
        cur = stack.pop()
        if isinstance(cur, str):
            if texts is not None:
                if texts[0] not in cur:
                    continue
            elif m.ruled_out(cur):
                continue
            deadline += len(cur) * MATCH_S_PER_CHAR  # (the allowance is for text searched)
            if m.timed(cur, deadline - clock()):
                return True
        elif isinstance(cur, dict):
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return False


# ---------------------------------------------------------------------------------------
# the byte tests
# ---------------------------------------------------------------------------------------
class Needle:
    """Bytes a line must hold (one of ``alternatives``), searched in the lower-cased line
    when ``lower``; ``plain`` needles may be escaped in a line that uses \\u or \\/ escapes."""

    __slots__ = ("alternatives", "lower")

    def __init__(self, alternatives: Sequence[bytes], lower: bool = False):
        self.alternatives, self.lower = tuple(alternatives), lower

    def found(self, raw: bytes, low: bytes | None) -> bool:
        hay = low if self.lower and low is not None else raw
        return any(a in hay for a in self.alternatives)


# The characters outside ASCII that Python's case-insensitive matching takes for an ASCII
# letter (``re.compile("s", re.I).match("\u017f")``): a line holding one may match a needle
# searched lower-cased in bytes, which would never find it. (A test derives the table anew.)
FOLDS_TO_ASCII = {"i": ("\u0130", "\u0131"), "k": ("\u212a",), "s": ("\u017f",)}


def odd_escapes(needles: Sequence[Needle]) -> tuple[bytes, ...]:
    """The bytes that could hide a needle's in a line: ``\\u`` for a character a needle holds
    (``\\u00`` is enough when every needle is ASCII and matches case), ``\\/`` when a needle
    holds a slash, and, for a needle that ignores case, the UTF-8 of each character outside
    ASCII that case-insensitive matching takes for one of its letters (``FOLDS_TO_ASCII``).
    Other escapes (of quotes, backslashes, control characters) cannot: a needle holds none
    of those characters."""
    alts = [a for n in needles for a in n.alternatives]
    folded = [a for n in needles if n.lower for a in n.alternatives]
    out = [b"\\u00" if all(a.isascii() for a in alts) and not folded else b"\\u"]
    if any(b"/" in a for a in alts):
        out.append(b"\\/")
    for letter, chars in FOLDS_TO_ASCII.items():
        if any(letter.encode() in a for a in folded):
            out += [c.encode() for c in chars]
    return tuple(out)


class LineTest:
    """Byte-level tests a line must pass before it is decoded (see the module docstring).

    ``wanted``/``excluded``: full type names as bytes, judged on ``store.log.peek``'s type
    (lines in this tool's shape). ``needles``: all must be found (in a line free of odd
    escapes)."""

    __slots__ = ("wanted", "excluded", "needles", "lower", "active", "escapes")

    def __init__(self, wanted: frozenset[bytes] | None, excluded: frozenset[bytes], needles: list[Needle]):
        self.wanted, self.excluded, self.needles = wanted, excluded, needles
        self.escapes = odd_escapes(needles) if needles else ()
        self.lower = any(n.lower for n in needles)
        self.active = wanted is not None or bool(excluded) or bool(needles)

    @classmethod
    def of(cls, f: Filters) -> LineTest:
        needles: list[Needle] = []
        if f.grep is not None:
            lits = required_literals(f.grep)
            if lits:
                needles.append(Needle(lits, lower=bool(f.grep.flags & re.IGNORECASE)))
        if f.run is not None:
            needles.append(Needle([b"-" + f.run.encode()]))
        for w in f.where:
            n = w.needle()
            if n is not None:
                needles.append(n)
        wanted = frozenset(t.encode() for t in f.types) if f.types is not None else None
        return cls(wanted, frozenset(t.encode() for t in f.exclude), needles)

    def type_ok(self, t: bytes) -> bool:
        return (self.wanted is None or t in self.wanted) and t not in self.excluded

    def line_may_match(self, peeked_type: bytes, raw: bytes) -> bool:
        """False only when the line (in this tool's shape, ``peeked_type`` its type as
        ``store.log.peek`` reads it) cannot match. Its type rules it out only when no other
        type can be the event's: orjson keeps a repeated key's last value, so a second
        ``"type"`` key (spaces before its colon, any value) or a ``\\u00`` escape (which can
        spell a key's or a type's letters) sends the line to be decoded and judged."""
        if not self.type_ok(peeked_type) and raw.find(b'"type"', TYPE_VALUE_AT) < 0 and raw.find(TYPE_ESCAPE) < 0:
            return False
        return self.may_match(raw)

    def may_match(self, raw: bytes) -> bool:
        """False only when the line cannot match (its type is known from ``peek``)."""
        if not self.needles or any(e in raw for e in self.escapes):
            return True
        low = raw.lower() if self.lower else None
        return all(n.found(raw, low) for n in self.needles)
