"""The one block-scan loop: a log's lines in sequence order, decoding only what is wanted.

Used by the reader (``page``, ``tail``'s read-back), the follower and the fold. Contract:
- ``scan(view, start, end)`` reads complete lines of ``[start, end)`` (``start`` a line
  start) in ``lines.CHUNK`` blocks and yields ``Line``s. Lines at or before ``after_seq``
  are passed over; the scan ends before the first line at or after ``until`` (a stored
  time) or past ``at`` (a sequence).
- ``wanted`` (full type names as bytes, or None for every type): a line of another type
  in this tool's own shape (``store.log.peek``) is not decoded; a run of such lines comes
  as one ``Line`` with ``event=None`` (standing for ``span`` lines) that only moves the
  caller's position. When wanted lines are rare (at most one in ``SPARSE``, judged on the
  first block and then on what each block held) and every line of a block has that shape
  (a few whole-block byte counts say so) and the block ends before ``until`` and ``at``,
  only the wanted lines are found, by searching the block for their ``"type":"..."``, and
  decoded: the cost of a rare-type filter is a byte search, not a look at every line.
- A complete line that is not an event goes to ``decode`` (default: ``CorruptLedger``, or
  ``on_corrupt`` told and the line passed over); a custom ``decode`` may refuse otherwise.
- Each ``Line`` says where the next one starts (``end``): a caller that stops keeps it.
- ``release`` is called once the last block is in memory: a reader over many logs closes
  the file then, and keeps only a few open at once.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Callable, Iterator

from wardrik_cli.errors import CorruptLedger
from wardrik_cli.store import lines
from wardrik_cli.store.log import HEAD, LogView, peek

Decode = Callable[[int, bytes], dict[str, Any] | None]
_TYPE_AT = 36 + len(HEAD)  # the event's own "type" key follows its 36-character id
_JOIN = b'}}\n{"specversion":"1.0","id":"'
SPARSE = 3  # the block search is used when at most one line in SPARSE is wanted


class Line(NamedTuple):
    offset: int  # of the line's first byte (of the last line, for a block's summary)
    raw: bytes  # the line without its newline (the block's last line, for a summary)
    seq: int
    time: str
    event: dict[str, Any] | None  # None: not decoded (a type not wanted): it only moves a position
    end: int  # where the next line starts
    span: int  # how many lines this stands for (a run passed over unread: more than 1)


# Lines are made with tuple.__new__ directly: a NamedTuple's own __new__ is Python code, and
# this is the hot loop.
_new = tuple.__new__


def scan(view: LogView, start: int, end: int, *, wanted: frozenset[bytes] | None = None, after_seq: int = 0,
         until: str | None = None, at: int | None = None,
         on_corrupt: Callable[[CorruptLedger], None] | None = None,
         decode: Decode | None = None, release: Callable[[], None] | None = None) -> Iterator[Line]:
    """The lines of ``view`` in ``[start, end)``, as the module docstring says."""
    fd = view.fd
    if fd is None or start >= end:
        return
    if decode is None:
        def decode(off: int, raw: bytes) -> dict[str, Any] | None:
            return view.decode_or_report(off, raw, on_corrupt)
    # Stored types always carry the prefix: only those can be the event's own type.
    markers = [b'","type":"' + t + b'"' for t in wanted if t.startswith(b"wardrik.")] if wanted is not None else []
    pos = after_seq
    dense: bool | None = None  # are wanted lines common? judged on the first block, then on each
    for block_off, block in lines.iter_blocks(fd, start, end):
        if release is not None and block_off + len(block) >= end:
            release()  # the last block is in memory: the file is not needed any more
        look: Callable[[bytes], tuple[bytes, bytes, bytes] | None] | None = None
        if wanted is not None:
            # A byte search pays when the wanted lines are few; when they are many, line by
            # line (a byte look at each type) is cheaper than finding each hit. Which one is
            # judged on the first block and then on what each block turned out to hold.
            n_lines = block.count(b"\n")
            if dense is None:
                dense = sum(block.count(m) for m in markers) * SPARSE > n_lines
            summary = None if dense else _in_shape(block, n_lines, until, at)
            look = peek
            if summary is not None:
                found = 0
                for line in _hits(block, block_off, markers, pos, decode, until, at):
                    if line is None:
                        return
                    pos = max(pos, line.seq)
                    found += 1
                    yield line
                dense = found * SPARSE > n_lines
                last_seq, last_time, last_off, last_raw = summary
                if last_seq > pos:
                    pos = last_seq
                    yield _new(Line, (block_off + last_off, last_raw, last_seq, last_time, None,
                               block_off + len(block), n_lines))
                continue
            wanted_seen = 0
        else:
            wanted_seen = n_lines = 0
        # Line by line (inlined: this is the hot loop of a fold and of an unfiltered page).
        # Lines passed over unread are not yielded one by one: a run of them comes as one
        # Line standing for them all, just before the next event or at the block's end.
        off = block_off
        skipped: tuple[int, bytes, int, str] | None = None
        n_skipped = 0
        for raw in block.split(b"\n")[:-1]:
            here = off
            off += len(raw) + 1
            if look is not None:
                p = look(raw)
                if p is not None and p[0] not in wanted:  # type: ignore[operator]
                    seq, t = int(p[1]), p[2].decode()
                    if seq <= pos:
                        continue
                    if (until is not None and t >= until) or (at is not None and seq > at):
                        break
                    pos = seq
                    skipped, n_skipped = (here, raw, seq, t), n_skipped + 1
                    continue
            ev = decode(here, raw)
            if ev is None:
                continue
            seq = int(ev["sequence"])
            if seq <= pos:
                continue
            t = ev["time"]
            if (until is not None and t >= until) or (at is not None and seq > at):
                break
            if skipped is not None:
                yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, here, n_skipped))
                skipped, n_skipped = None, 0
            pos = seq
            wanted_seen += 1
            yield _new(Line, (here, raw, seq, t, ev, off, 1))
        else:
            if look is not None:
                dense = wanted_seen * SPARSE > n_lines
            if skipped is not None:
                yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, off, n_skipped))
            continue
        if skipped is not None:  # stopped at until/at: what was passed over before it still counts
            yield _new(Line, (skipped[0], skipped[1], skipped[2], skipped[3], None, here, n_skipped))
        return


def _in_shape(block: bytes, n_lines: int, until: str | None,
              at: int | None) -> tuple[int, str, int, bytes] | None:
    """(last seq, last time, offset, raw) of the block's last line when the whole block (of
    ``n_lines`` lines) is in this tool's shape and ends before ``until`` and ``at``; else None."""
    last_start = block.rfind(b"\n", 0, len(block) - 1) + 1
    last_raw = block[last_start:-1]
    last = peek(last_raw)
    if last is None or not block.startswith(HEAD):
        return None
    if block.count(_JOIN) != n_lines - 1 or block.count(b'"specversion"') != n_lines:
        return None
    seq, t = int(last[1]), last[2].decode()
    if (until is not None and t >= until) or (at is not None and seq > at):
        return None
    return seq, t, last_start, last_raw


def _hits(block: bytes, base: int, markers: list[bytes], pos: int, decode: Decode, until: str | None,
          at: int | None) -> Iterator[Line | None]:
    starts: set[int] = set()
    for m in markers:
        i = block.find(m)
        while i >= 0:
            line_start = block.rfind(b"\n", 0, i) + 1
            if i - line_start == _TYPE_AT:  # the event's own type, not a "type" inside its data
                starts.add(line_start)
            i = block.find(m, i + 1)
    for line_start in sorted(starts):
        line_end = block.index(b"\n", line_start)
        raw = block[line_start:line_end]
        ev = decode(base + line_start, raw)
        if ev is None:
            continue
        seq = int(ev["sequence"])
        if seq <= pos:
            continue
        if (until is not None and ev["time"] >= until) or (at is not None and seq > at):
            yield None
            return
        pos = seq
        yield _new(Line, (base + line_start, raw, seq, ev["time"], ev, base + line_end + 1, 1))
