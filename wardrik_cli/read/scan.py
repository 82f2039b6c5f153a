"""The one block-scan loop: a log's lines in sequence order, decoding only what may be wanted.

Used by the reader (``page``, ``tail``'s read-back), the follower and the fold. Contract:
- ``scan(view, start, end)`` reads complete lines of ``[start, end)`` (``start`` a line
  start) in ``lines.CHUNK`` blocks (``lines.iter_spans``) (smaller when ``block`` says so: a read over many logs
  shares one budget) and yields ``Line``s. Lines at or before ``after_seq`` are passed
  over; the scan ends before the first line at or after ``until`` (a stored time) or past
  ``at`` (a sequence).
- ``test`` (a ``read.filters.LineTest``; ``wanted`` is the short form for types only): a line
  in this tool's own shape (``store.log.peek``) that the test rules out is not decoded; a run
  of such lines comes as one ``Line`` with ``event=None`` (standing for ``span`` lines) that
  only moves the caller's position. Lines the test lets through are decoded and yielded: the
  caller still judges them (``Filters.accepts``). When such lines are rare (at most one in
  ``SPARSE``, judged on each block) and every line of a block has the shape (a few
  whole-block byte counts say so), its sequences run on without a gap, and the block ends
  before ``until`` and ``at``, only the candidates are found, by searching the block for the
  test's bytes, and decoded: a rare match costs a byte search, not a look at every line.
- ``on_gap(before, after)``: told when the sequence jumps (``before`` read, ``after`` next,
  events in between missing): from the first line on, or from ``after_seq`` when
  ``gap_from_start`` (the caller's position is exact). The read goes on, and the next ``Line``
  is the one after the hole (a line passed over comes on its own, with its own time).
- A complete line that is not an event goes to ``decode`` (default: ``CorruptLedger``, or
  ``on_corrupt`` told and the line passed over); a custom ``decode`` may refuse otherwise.
- ``on_repeat(offset, seq, before)``: told of a line whose sequence is not above the one
  read before it in this scan (a repeated or out-of-order line: a damaged log), which is passed
  over; lines at or before ``after_seq`` ahead of the scan's first line are not (the caller
  may start early on purpose).
- Each ``Line`` says where the next one starts (``end``): a caller that stops keeps it.
- ``once``: read one block only (a merge takes a span of a log at a time).
- ``lazy`` (a test of types only: no needles): the dense path. In every block in this
  tool's shape whose sequences run on and that ends before ``until`` and ``at`` (as above,
  whatever share of its lines is wanted), the lines of a wanted type are found by a byte
  search for ``"<type>"`` (the value, quoted: at a line's type offset, right after ``HEAD``
  and a 36-byte id, or anywhere else, where it may be the event's own type in a line another
  tool wrote: a repeated key, spaces around a colon) and for ``\\u00`` (an escape may spell
  a type), and each is decoded whole, as any line handed out is (so a line that is not an
  event is reported as anywhere else), and judged by the caller. A family of wanted types
  (``wardrik.tool_call.``) whose every stored type is wanted is one search for
  ``"<family>``: a line of another type in it (a live type another tool stored) comes out
  too, and the caller judges its type, as it judges every event.
  Lines of other types in such a block are passed over, as by the sparse path; blocks not
  in shape are read line by line, as without ``lazy``.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Callable, Iterator

from wardrik_cli.errors import CorruptLedger
from wardrik_cli.protocol.catalogue import AUDIT, KEPT, catalogue
from wardrik_cli.read.filters import TYPE_ESCAPE, TYPE_VALUE_AT, LineTest
from wardrik_cli.store import lines
from wardrik_cli.store.log import LogView, block_shape, decode_event, peek
from wardrik_cli.store.search import count, rfind

from orjson import loads as _loads
from stringzilla import find as _sz_find

Decode = Callable[[int, bytes], dict[str, Any] | None]
OnGap = Callable[[int, int], None]
OnRepeat = Callable[[int, int, int], None]  # (offset, the line's sequence, the one read before it)
SPARSE = 3  # the block search is used when at most one line in SPARSE may be wanted


class Line(NamedTuple):
    offset: int  # of the line's first byte (of the last line, for a block's summary)
    raw: bytes  # the line without its newline (the block's last line, for a summary)
    seq: int
    time: str
    event: dict[str, Any] | None  # None: not decoded (ruled out): it only moves a position
    end: int  # where the next line starts
    span: int  # how many lines this stands for (a run passed over unread: more than 1)


# Lines are made with tuple.__new__ directly: a NamedTuple's own __new__ is Python code, and
# this is the hot loop.
_new = tuple.__new__


def scan(view: LogView, start: int, end: int, *, wanted: frozenset[bytes] | None = None,
         test: LineTest | None = None, after_seq: int = 0, until: str | None = None, at: int | None = None,
         on_corrupt: Callable[[CorruptLedger], None] | None = None, decode: Decode | None = None,
         on_gap: OnGap | None = None, gap_from_start: bool = False,
         block: int = lines.CHUNK, once: bool = False, lazy: bool = False,
         on_repeat: OnRepeat | None = None) -> Iterator[Line]:
    """The lines of ``view`` in ``[start, end)``, as the module docstring says."""
    fd = view.fd
    if fd is None or start >= end:
        return
    fast = decode is None  # the default: decode_event, and a bad line goes to decode_or_report
    if decode is None:
        def decode(off: int, raw: bytes) -> dict[str, Any] | None:
            return view.decode_or_report(off, raw, on_corrupt)
    if test is None and wanted is not None:
        test = LineTest(wanted, frozenset(), [])
    markers: list[bytes] = []
    searchable = False
    if test is not None:
        # Stored types always carry the prefix: only those can be the event's own type. A
        # line is found by its type's value, quoted, wherever it stands (a second "type" key,
        # spaces before a colon: lines another tool wrote), or by an escape that could spell it.
        if test.wanted is not None:
            markers = [b'"' + t + b'"' for t in test.wanted if t.startswith(b"wardrik.")]
        searchable = test.wanted is not None or bool(test.needles)
    picker = _picker(test.wanted) if lazy and test is not None and test.wanted is not None and not test.needles \
        else None
    pos = after_seq
    armed = gap_from_start and on_gap is not None  # is pos the sequence just before the next line?
    dense = False  # are candidates common? then line by line is cheaper than a search per hit
    for block_off, data, size in lines.iter_spans(fd, start, end, chunk=block, once=once, bare_long=True):
        # data[:size] is the block's whole lines; what follows is read again with the next block
        if size > len(data):  # one line longer than a block, read without its newline: no copy
            n_lines, block_lines = 1, [data]
        else:
            n_lines, block_lines = count(data, b"\n", 0, size), None
        if searchable and (not dense or picker is not None) and block_lines is None:
            assert test is not None
            summary = _in_shape(data, size, n_lines, until, at, pos, armed)
            if summary is not None:
                # The block's candidate lines (of a wanted type: ``_starts``; else holding the
                # test's bytes: ``_candidates``), decoded, in order: the hot loop of a filtered
                # read, inlined here (one generator per line, not two).
                starts = _starts(data, size, picker) if picker is not None else \
                    _candidates(data, size, test, markers)
                found = 0
                find_nl = data.find
                for s in starts:
                    e = find_nl(b"\n", s, size)  # a line is short: bytes' own memchr is enough
                    raw = data[s:e]
                    event: dict[str, Any] | None = None
                    if fast:  # decode_event inlined (its checks): one call per line, not three
                        try:
                            event = _loads(raw)
                            sq = event["sequence"]
                            seq = int(sq)  # passes strings and numbers only; len() refuses numbers
                            if (len(sq) != 12 or not sq.isascii() or not sq.isdigit()
                                    or type(event["type"]) is not str
                                    or type(event["time"]) is not str):
                                raise ValueError
                        except (ValueError, KeyError, TypeError):
                            event = None
                    if event is None:
                        event = decode(block_off + s, raw)  # says why (or raises); a custom decode's own word
                        if event is None:
                            continue
                        seq = int(event["sequence"])
                    if seq > pos:
                        pos = seq
                        found += 1
                        yield _new(Line, (block_off + s, raw, seq, event["time"], event, block_off + e + 1, 1))
                    elif on_repeat is not None and (armed or pos > after_seq):
                        on_repeat(block_off + s, seq, pos)
                if picker is None:
                    dense = found * SPARSE > n_lines
                last_seq, last_time, last_off, last_raw = summary
                if last_seq > pos:
                    pos = last_seq
                    yield _new(Line, (block_off + last_off, last_raw, last_seq, last_time, None,
                               block_off + size, n_lines))
                armed = on_gap is not None
                continue
        # Line by line (inlined: this is the hot loop of a fold and of an unfiltered page).
        # Lines passed over unread are not yielded one by one: a run of them comes as one
        # Line standing for them all, just before the next event or at the block's end.
        off = block_off
        skipped: tuple[int, bytes, int, str] | None = None
        n_skipped = 0
        decoded = 0
        for raw in block_lines or data.split(b"\n")[:n_lines]:
            here = off
            off += len(raw) + 1
            if test is not None:
                p = peek(raw)
                if p is not None and not test.line_may_match(p[0], raw):
                    seq = int(p[1])
                    if seq <= pos:
                        if on_repeat is not None and (armed or pos > after_seq):
                            on_repeat(here, seq, pos)
                        continue
                    t = p[2].decode()
                    if (until is not None and t >= until) or (at is not None and seq > at):
                        break
                    if armed and seq != pos + 1:
                        # A hole: the run passed over so far ends before it, and the line after it
                        # comes on its own, so what the caller does about the hole (an
                        # events.dropped for a recorded gap) goes at that line's place and time.
                        if skipped is not None:
                            yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, here, n_skipped))
                            skipped, n_skipped = None, 0
                        on_gap(pos, seq)  # type: ignore[misc]
                        pos = seq
                        yield _new(Line, (here, raw, seq, t, None, off, 1))
                        continue
                    pos, armed = seq, on_gap is not None
                    skipped, n_skipped = (here, raw, seq, t), n_skipped + 1
                    continue
            ev: dict[str, Any] | None
            if fast:
                try:
                    ev = decode_event(raw)  # inlined: one call per line, not three
                except ValueError:
                    ev = decode(here, raw)  # reports it (or raises), as the default decode does
            else:
                ev = decode(here, raw)
            if ev is None:
                continue
            seq = int(ev["sequence"])
            if seq <= pos:
                if on_repeat is not None and (armed or pos > after_seq):
                    on_repeat(here, seq, pos)  # a line repeated, or out of order: passed over, told
                continue
            t = ev["time"]
            if (until is not None and t >= until) or (at is not None and seq > at):
                break
            if skipped is not None:
                yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, here, n_skipped))
                skipped, n_skipped = None, 0
            if armed and seq != pos + 1:
                on_gap(pos, seq)  # type: ignore[misc]
            pos, armed = seq, on_gap is not None
            decoded += 1
            yield _new(Line, (here, raw, seq, t, ev, off, 1))
        else:
            if searchable:
                dense = decoded * SPARSE > n_lines
            if skipped is not None:
                yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, off, n_skipped))
            continue
        if skipped is not None:  # stopped at until/at: what was passed over before it still counts
            yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, here, n_skipped))
        return


def _in_shape(data: bytes, size: int, n_lines: int, until: str | None, at: int | None, pos: int,
              armed: bool) -> tuple[int, str, int, bytes] | None:
    """(last seq, last time, offset, raw) of the block's last line when the whole block
    (``data[:size]``, ``n_lines`` lines) is in this tool's shape, its sequences run on from its first line
    (from ``pos`` when ``armed``) one by one, and it ends before ``until`` and ``at``; else None."""
    shape = block_shape(data, size, n_lines)
    if shape is None:
        return None
    first, last, last_start = shape
    seq, first_seq = int(last[1]), int(first[1])
    if seq - first_seq != n_lines - 1 or first_seq <= pos or (armed and first_seq != pos + 1):
        return None  # a gap, a repeat or lines already read: line by line says which
    t = last[2].decode()
    if (until is not None and t >= until) or (at is not None and seq > at):
        return None
    last_raw = data[last_start:size - 1]
    return seq, t, last_start, last_raw


def _line_starts(data: bytes, size: int, needle: bytes) -> set[int]:
    """Starts of the lines of ``data[:size]`` that hold ``needle`` anywhere: a type's marker
    away from the type's offset may still be the event's own type (an id that is not 36
    characters, keys in another order, a repeated key: lines another tool wrote), so the line
    is decoded and judged rather than passed over."""
    starts: set[int] = set()
    add, back = starts.add, data.rfind  # a line is short: bytes' own backward search is enough
    i = _sz_find(data, needle, 0, size)
    while i >= 0:
        add(back(b"\n", 0, i) + 1)
        i = _sz_find(data, needle, i + 1, size)
    return starts


def _candidates(data: bytes, size: int, test: LineTest, markers: list[bytes]) -> list[int]:
    """Starts of the block's candidate lines, in order (the block is in shape: see _in_shape):
    a line holding a wanted type's marker (or an escape that could spell one), and each of the
    test's needles (or an escape that could hide one)."""
    cands: set[int] | None = None
    escaped: dict[bytes, set[int]] = {}  # an escape searched once, when types and needles both ask

    def with_escape(esc: bytes) -> set[int]:
        if esc not in escaped:
            escaped[esc] = _line_starts(data, size, esc)
        return escaped[esc]

    if test.wanted is not None:
        cands = set(with_escape(TYPE_ESCAPE)) if markers else set()
        for m in markers:
            cands |= _line_starts(data, size, m)
    if test.needles and (cands is None or cands):
        odd: set[int] = set()
        for esc in test.escapes:
            odd |= with_escape(esc)
        low = data[:size].lower() if test.lower else data
        for n in test.needles:
            hay = low if n.lower else data
            got = set(odd)
            for a in n.alternatives:
                got |= _line_starts(hay, size, a)
            cands = got if cands is None else cands & got
            if not cands:
                break
    return sorted(cands) if cands else []


def _picker(wanted: frozenset[bytes]) -> list[bytes] | None:
    """The bytes that begin a line's type value, quoted, when the line is of a wanted type
    (only prefixed types can be a stored line's own type); None when none can. A family (a
    type up to its last dot, ``"wardrik.tool_call.``) of several wanted types, whose every
    stored type is wanted, is one search for its prefix, not one per type: a line of another
    type in it (a live type another tool stored) is found too, and judged by the caller."""
    types = {t for t in wanted if t.startswith(b"wardrik.")}
    stored = [e.full.encode() for e in catalogue() if e.kind in (KEPT, AUDIT)]
    families: dict[bytes, list[bytes]] = {}
    for t in types:
        families.setdefault(t[:t.rindex(b".") + 1], []).append(t)
    markers = []
    for family, members in families.items():
        if len(members) > 1 and all(t in types for t in stored if t.startswith(family)):
            markers.append(b'"' + family)
        else:
            markers += [b'"' + t + b'"' for t in members]
    # A marker another one starts with finds nothing more: each line is then found once.
    return sorted(m for m in markers if not any(o != m and m.startswith(o) for o in markers)) or None


def _starts(data: bytes, size: int, picker: list[bytes]) -> list[int]:
    """Starts of the block's lines that hold one of ``picker``'s markers, or an escape that
    could spell one (``TYPE_ESCAPE``), in order, once each. The block is in shape (see
    _in_shape): every line starts with HEAD, so a marker found at its type value's offset from
    a line's start is that line's own type; one found elsewhere is most often in some data,
    but may be the line's own type when another tool wrote it (an id that is not 36
    characters, keys in another order, a repeated key, spaces around a colon), so its line is
    found too, and judged by the caller once decoded, as is a line with an escape."""
    at = TYPE_VALUE_AT - 1  # the value's opening quote
    starts: list[int] = []
    add = starts.append
    odd = False
    for m in picker:
        i = _sz_find(data, m, at, size)  # StringZilla itself, not store.search's wrapper: a call per hit
        while i >= 0:
            if i == at or data[i - at - 1] == 10:
                add(i - at)
            else:
                add(rfind(data, b"\n", 0, i) + 1)
                odd = True
            i = _sz_find(data, m, i + 1, size)
    i = _sz_find(data, TYPE_ESCAPE, 0, size)
    while i >= 0:
        add(rfind(data, b"\n", 0, i) + 1)
        odd = True
        i = _sz_find(data, TYPE_ESCAPE, i + 1, size)
    if odd:
        return sorted(set(starts))
    if len(picker) > 1:
        starts.sort()
    return starts
