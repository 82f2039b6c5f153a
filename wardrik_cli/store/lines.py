"""Reading a ledger file by lines without loading it.

Contract kept here:
- A line is the bytes up to and including a ``\\n``. Whatever follows the last ``\\n`` (half
  a line, NUL bytes) is the torn tail: never yielded, never an error here.
- Every function reads only what it needs: forward iteration in large chunks from a byte
  offset, backward iteration from the end, and bisection over byte offsets, whose cost is
  O(log size) small reads.
- Offsets yielded are the offset of the first byte of each line.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator

CHUNK = 1 << 18  # 256 KiB: large enough to amortise a call, small enough to be reused memory
PROBE = 1 << 13
SCAN_THRESHOLD = 1 << 16


def iter_lines(fd: int, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) for each complete line from ``start`` (a line start)
    up to ``end`` (default: the file's size when each chunk is read)."""
    for off, block in iter_blocks(fd, start, end):
        for line in block.split(b"\n")[:-1]:
            yield off, line
            off += len(line) + 1


def iter_blocks(fd: int, start: int = 0, end: int | None = None, *,
                chunk: int = CHUNK) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) blocks of whole lines (each ends just after a newline), from ``start``,
    read ``chunk`` bytes at a time (see ``iter_spans``)."""
    for off, data, length in iter_spans(fd, start, end, chunk=chunk):
        yield off, (data if length == len(data) else data[:length])


def iter_spans(fd: int, start: int = 0, end: int | None = None, *,
               chunk: int = CHUNK, once: bool = False) -> Iterator[tuple[int, bytes, int]]:
    """(offset, data, length): ``data[:length]`` is a block of whole lines from ``start``;
    bytes past ``length`` are the start of the next line, read again with the next block
    (re-reading part of a line costs less than copying every block to cut it). ``once``: one
    block only (a merge reading a span of a log at a time).

    A line longer than a chunk is collected chunk by chunk and joined once, when its newline
    comes: reading it costs its length, not its length squared."""
    pos = start
    while True:
        want = chunk if end is None else min(chunk, end - pos)
        if want <= 0:
            return
        piece = os.pread(fd, want, pos)
        if not piece:
            return
        nl = piece.rfind(b"\n")
        if nl >= 0:
            yield pos, piece, nl + 1
            if once:
                return
            pos += nl + 1
            continue
        pending = [piece]  # a line longer than a chunk
        here = pos + len(piece)
        while True:
            want = chunk if end is None else min(chunk, end - here)
            more = os.pread(fd, want, here) if want > 0 else b""
            if not more:
                return  # no newline before the end: a torn tail, never yielded
            nl = more.find(b"\n")
            if nl >= 0:
                pending.append(more[:nl + 1])
                data = b"".join(pending)
                yield pos, data, len(data)
                if once:
                    return
                pos += len(data)
                break
            pending.append(more)
            here += len(more)


def iter_lines_backward(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines ending at or before ``end`` (which must be 0 or just past a ``\\n``), last first.

    Blocks are read backwards, growing from ``PROBE`` to ``CHUNK``. A line longer than a
    chunk is not grown a block at a time (that would copy it again at every block): its
    start is found first, then it is read whole, once."""
    pos = end  # buf holds the bytes [pos, pos + len(buf)); it ends with the newline of the next line
    buf = b""
    block = PROBE
    while pos > 0:
        if len(buf) > CHUNK:
            start = _line_start(fd, pos)
            line = os.pread(fd, pos - start, start) + buf
            yield start, line[:-1]
            pos, buf = start, b""
            continue
        n = min(block, pos)
        pos -= n
        buf = os.pread(fd, n, pos) + buf
        block = min(block * 2, CHUNK)
        j = len(buf) - 1  # index of the newline ending the line to yield next
        while True:
            i = buf.rfind(b"\n", 0, j)
            if i < 0:
                break
            yield pos + i + 1, buf[i + 1:j]
            j = i
        if pos == 0:
            if j > 0 or (j == 0 and buf[:1] == b"\n"):
                yield 0, buf[:j]
            return
        buf = buf[: j + 1]


def _line_start(fd: int, pos: int) -> int:
    """Offset just past the last newline before ``pos`` (0 if none), reading back without keeping."""
    scan = pos
    while scan > 0:
        n = min(CHUNK, scan)
        i = os.pread(fd, n, scan - n).rfind(b"\n")
        if i >= 0:
            return scan - n + i + 1
        scan -= n
    return 0


def complete_end(fd: int, size: int | None = None) -> tuple[int, int]:
    """(end of the last complete line, size): the torn tail is ``[end, size)``."""
    if size is None:
        size = os.fstat(fd).st_size
    pos = size
    while pos > 0:
        n = min(PROBE if pos == size else CHUNK, pos)
        data = os.pread(fd, n, pos - n)
        i = data.rfind(b"\n")
        if i >= 0:
            return pos - n + i + 1, size
        pos -= n
    return 0, size


def last_line(fd: int, end: int) -> tuple[int, bytes] | None:
    for item in iter_lines_backward(fd, end):
        return item
    return None


def first_line(fd: int, end: int) -> tuple[int, bytes] | None:
    return read_line_at(fd, 0, end)


def line_at_or_after(fd: int, pos: int, end: int) -> tuple[int, bytes] | None:
    """The first complete line starting at or after ``pos``, or None."""
    if pos <= 0:
        return first_line(fd, end)
    # Is pos a line start? Only if the byte before it is a newline.
    scan = pos - 1
    while scan < end:
        data = os.pread(fd, min(PROBE, end - scan), scan)
        if not data:
            return None
        i = data.find(b"\n")
        if i >= 0:
            start = scan + i + 1
            if start >= end:
                return None
            return read_line_at(fd, start, end)
        scan += len(data)
    return None


def read_line_at(fd: int, start: int, end: int) -> tuple[int, bytes] | None:
    """The complete line starting at ``start``, reading small blocks (probes must stay cheap)."""
    parts = []
    pos, block = start, PROBE
    while pos < end:
        data = os.pread(fd, min(block, end - pos), pos)
        if not data:
            return None
        i = data.find(b"\n")
        if i >= 0:
            parts.append(data[:i])
            return start, b"".join(parts)
        parts.append(data)
        pos += len(data)
        block = min(block * 2, CHUNK)
    return None


def bisect(fd: int, end: int, is_after: Callable[[bytes], bool | None]) -> int:
    """Offset of the first complete line for which ``is_after(line)`` is True (``end`` if
    none), assuming the predicate is False then True along the file. ``is_after`` returns
    None for a line it cannot read: a probe steps over such lines, and the final scan skips
    them, so a damaged line the caller does not need is never in the way."""
    lo, hi = 0, end
    while hi - lo > SCAN_THRESHOLD:
        mid = (lo + hi) // 2
        found = line_at_or_after(fd, mid, end)
        verdict = None
        while found is not None and found[0] < hi:
            verdict = is_after(found[1])
            if verdict is not None:
                break
            found = read_line_at(fd, found[0] + len(found[1]) + 1, end)
        if found is None or found[0] >= hi or verdict is None:
            hi = mid
            continue
        start, line = found
        if verdict:
            hi = start
        else:
            lo = start + len(line) + 1
    for off, line in iter_lines(fd, lo, end):
        if is_after(line):
            return off
    return end


def count_lines_before(fd: int, offset: int) -> int:
    """1-based line number of the line starting at ``offset`` (reads up to it; error paths only)."""
    n, pos = 1, 0
    while pos < offset:
        data = os.pread(fd, min(CHUNK, offset - pos), pos)
        if not data:
            break
        n += data.count(b"\n")
        pos += len(data)
    return n
