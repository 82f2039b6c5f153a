"""Reading a ledger file by lines without loading it.

Contract kept here:
- A line is the bytes up to and including a ``\\n``. Whatever follows the last ``\\n`` (half
  a line, NUL bytes) is the torn tail: never yielded, never an error here.
- Every function reads only what it needs: forward iteration in large chunks from a byte
  offset, backward iteration from the end, and bisection over byte offsets, whose cost is
  O(log size) small reads.
- A line longer than a chunk is read once, whole: its end is found first (``find``), then
  its bytes are read in one call, so it costs its length, not its length squared, and is
  held once, not as pieces and their join. Past ``LONG`` bytes that search reads windows of
  ``WINDOW`` bytes into one reused buffer and searches them (SIMD, ``store.search``): nothing
  it looks at is kept. The file is never mapped: a file truncated under a mapping ends its
  reader (SIGBUS, no error line), and a reader must survive whatever a writer does to a file.
- Offsets yielded are the offset of the first byte of each line.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import stringzilla as _sz  # store.search's SIMD search; called directly: it takes a buffer's memoryview too

CHUNK = 1 << 18  # 256 KiB: large enough to amortise a call, small enough to be reused memory
PROBE = 1 << 13
SCAN_THRESHOLD = 1 << 16
LONG = 1 << 18  # a search this far from its start reads windows: a line this long is rare and may be huge
WINDOW = 1 << 22  # 4 MiB read at a time into one buffer: the memory one long search holds


class Head(bytes):
    """The first bytes of a line longer than a caller's ``longest``, which asked for no more
    (a log's first or last line, whose envelope is at its start); ``stop`` is the offset of
    the line's newline."""
    stop: int


def _head(data: bytes, stop: int) -> Head:
    head = Head(data)
    head.stop = stop
    return head


def find(fd: int, needle: bytes, start: int, end: int | None = None) -> int:
    """Offset of the first ``needle`` in the file's bytes ``[start, end)`` (``end`` None: to
    the file's end), -1 if none. Nothing is kept: blocks grow from ``PROBE`` to ``CHUNK``, and
    past ``LONG`` bytes windows are read into one reused buffer (``_find_windows``)."""
    pos, block, keep = start, max(PROBE, 2 * len(needle)), len(needle) - 1
    while True:
        want = block if end is None else min(block, end - pos)
        if want < len(needle):
            return -1
        if pos - start >= LONG:
            return _find_windows(fd, needle, pos, end)
        data = os.pread(fd, want, pos)
        i = data.find(needle)
        if i >= 0:
            return pos + i
        if len(data) < want:
            return -1  # the file ends here
        pos += len(data) - keep  # a needle across two blocks is still found
        block = min(block * 2, CHUNK)


def find_any(fd: int, needles: tuple[bytes, ...], start: int, end: int) -> int:
    """Offset of the first of any of ``needles`` in the file's bytes ``[start, end)``, -1 if
    none: ``find`` for several needles in one pass over the bytes (each block or window is
    read once and searched for each)."""
    longest = max(len(n) for n in needles)
    keep = longest - 1
    pos, block = start, max(PROBE, 2 * longest)
    buf: bytearray | None = None
    view: memoryview | None = None
    try:
        while end - pos >= min(len(n) for n in needles):
            if pos - start >= LONG:  # a long line: windows read into one reused buffer
                if buf is None:
                    buf = bytearray(max(min(WINDOW, end - pos), longest))
                    view = memoryview(buf)
                assert view is not None
                want = min(len(buf), end - pos)
                n = os.preadv(fd, [view[:want]], pos)
                hits = [i for i in (int(_sz.find(view, x, 0, n)) for x in needles) if i >= 0]
            else:
                want = min(block, end - pos)
                data = os.pread(fd, want, pos)
                n = len(data)
                hits = [i for i in (data.find(x) for x in needles) if i >= 0]
                block = min(block * 2, CHUNK)
            if hits:
                return pos + min(hits)
            if n < want or pos + n >= end:
                return -1  # the file ends here, or the range does
            pos += n - keep  # a needle across two blocks is still found
        return -1
    finally:
        if view is not None:
            view.release()


def rfind(fd: int, needle: bytes, start: int, end: int) -> int:
    """Offset of the last ``needle`` in the file's bytes ``[start, end)``, -1 if none: ``find``
    backwards (blocks read back from ``end``, windows past ``LONG`` bytes)."""
    pos, block, keep = end, max(PROBE, 2 * len(needle)), len(needle) - 1
    while pos - start >= len(needle):
        if end - pos >= LONG:
            return _rfind_windows(fd, needle, start, pos)
        n = min(block, pos - start)
        data = os.pread(fd, n, pos - n)
        if len(data) < n:
            return -1  # the file is shorter than the caller's end: nothing to vouch for
        i = data.rfind(needle)
        if i >= 0:
            return pos - n + i
        pos = pos - n + keep
        block = min(block * 2, CHUNK)
    return -1


def _find_windows(fd: int, needle: bytes, pos: int, end: int | None) -> int:
    """``find`` over ``[pos, end)`` (None: the file's end), ``WINDOW`` bytes at a time read
    into one buffer; a needle across two windows is still found."""
    keep = len(needle) - 1
    buf = bytearray(WINDOW if end is None else max(min(WINDOW, end - pos), len(needle)))
    view = memoryview(buf)
    try:
        while end is None or end - pos >= len(needle):
            want = len(buf) if end is None else min(len(buf), end - pos)
            n = os.preadv(fd, [view[:want]], pos)
            if n < len(needle):
                return -1
            i = int(_sz.find(view, needle, 0, n))
            if i >= 0:
                return pos + i
            if n < want:
                return -1  # the file ends here
            pos += n - keep
        return -1
    finally:
        view.release()


def _rfind_windows(fd: int, needle: bytes, start: int, end: int) -> int:
    """``rfind`` over ``[start, end)``, ``WINDOW`` bytes at a time read back from ``end``."""
    keep = len(needle) - 1
    buf = bytearray(max(min(WINDOW, end - start), len(needle)))
    view = memoryview(buf)
    try:
        while end - start >= len(needle):
            lo = max(start, end - len(buf))
            n = os.preadv(fd, [view[:end - lo]], lo)
            if n < end - lo:
                return -1  # the file is shorter than the caller's end: nothing to vouch for
            i = int(_sz.rfind(view, needle, 0, n))
            if i >= 0:
                return lo + i
            if lo == start:
                break
            end = lo + keep
        return -1
    finally:
        view.release()


def _read(fd: int, start: int, stop: int) -> bytes | None:
    """The file's bytes ``[start, stop)`` in one read; None when the file no longer holds them."""
    data = os.pread(fd, stop - start, start)
    return data if len(data) == stop - start else None


read_exactly = _read  # for readers that find a line's ends themselves (read.backward)


def iter_lines(fd: int, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) for each complete line from ``start`` (a line start)
    up to ``end`` (default: the file's size when each chunk is read)."""
    for off, data, length in _spans(fd, start, end, CHUNK, False, False):
        if length > len(data):  # one long line, read without its newline: no copy to cut it off
            yield off, data
            continue
        # bytes past the last newline (the next line's start) are the last piece: dropped
        for line in data.split(b"\n")[:-1]:
            yield off, line
            off += len(line) + 1


def iter_blocks(fd: int, start: int = 0, end: int | None = None, *,
                chunk: int = CHUNK) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) blocks of whole lines (each ends just after a newline), from ``start``,
    read ``chunk`` bytes at a time (see ``iter_spans``)."""
    for off, data, length in iter_spans(fd, start, end, chunk=chunk):
        yield off, (data if length == len(data) else data[:length])


def iter_spans(fd: int, start: int = 0, end: int | None = None, *,
               chunk: int = CHUNK, once: bool = False, bare_long: bool = False) -> Iterator[tuple[int, bytes, int]]:
    """(offset, data, length): ``data[:length]`` is a block of whole lines from ``start``;
    bytes past ``length`` are the start of the next line, read again with the next block
    (re-reading part of a line costs less than copying every block to cut it). ``once``: one
    block only (a merge reading a span of a log at a time).

    A line longer than a chunk comes alone, read once (see the module docstring); with
    ``bare_long``, without its newline (``length`` is then ``len(data) + 1``), so that a caller
    can keep it as it is, with no copy to cut the newline off."""
    return _spans(fd, start, end, chunk, once, not bare_long)


def _spans(fd: int, start: int, end: int | None, chunk: int, once: bool,
           newline: bool) -> Iterator[tuple[int, bytes, int]]:
    """``iter_spans``; without ``newline``, a line longer than a chunk is read without its
    newline (``length`` is then ``len(data) + 1``)."""
    pos = start
    while True:
        want = chunk if end is None else min(chunk, end - pos)
        if want <= 0:
            return
        piece = os.pread(fd, want, pos)
        if not piece:
            return
        length = piece.rfind(b"\n") + 1
        if not length:  # a line longer than a chunk
            stop = find(fd, b"\n", pos + len(piece), end)
            if stop < 0:
                return  # no newline before the end: a torn tail, never yielded
            got = _read(fd, pos, stop + 1 if newline else stop)
            if got is None:
                return
            piece, length = got, stop + 1 - pos
        yield pos, piece, length
        if once:
            return
        pos += length


def iter_lines_backward(fd: int, end: int, longest: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Complete lines ending at or before ``end`` (which must be 0 or just past a ``\\n``), last first.

    Blocks are read backwards, growing from ``PROBE`` to ``CHUNK``. A line longer than a
    chunk is not grown a block at a time (that would copy it again at every block): its
    start is found first, then it is read whole, once; or, when it is longer than
    ``longest``, only its first ``PROBE`` bytes, as a ``Head``."""
    pos = end  # buf holds the bytes [pos, pos + len(buf)); it ends with the newline of the next line
    buf = b""
    block = PROBE
    while pos > 0:
        if len(buf) > CHUNK:
            stop = pos + len(buf) - 1  # the newline ending this line
            start = rfind(fd, b"\n", 0, pos) + 1
            if longest is not None and stop - start > longest:
                line: bytes | None = _head(os.pread(fd, min(PROBE, stop - start), start), stop)
            else:
                line = _read(fd, start, stop)
            if line is None:
                return
            yield start, line
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


def first_line(fd: int, end: int, longest: int | None = None) -> tuple[int, bytes] | None:
    return read_line_at(fd, 0, end, longest)


def line_at_or_after(fd: int, pos: int, end: int) -> tuple[int, bytes] | None:
    """The first complete line starting at or after ``pos``, or None."""
    if pos <= 0:
        return first_line(fd, end)
    # Is pos a line start? Only if the byte before it is a newline.
    nl = find(fd, b"\n", pos - 1, end)
    if nl < 0 or nl + 1 >= end:
        return None
    return read_line_at(fd, nl + 1, end)


def read_line_at(fd: int, start: int, end: int, longest: int | None = None) -> tuple[int, bytes] | None:
    """The complete line starting at ``start``: one small read (probes must stay cheap); for
    a longer line, its end is found, then it is read once. A line longer than ``longest``
    is not read: its first ``PROBE`` bytes come as a ``Head``."""
    want = min(PROBE, end - start)
    if want <= 0:
        return None
    data = os.pread(fd, want, start)
    i = data.find(b"\n")
    if i >= 0:
        return start, data[:i]
    if len(data) < want:
        return None
    stop = find(fd, b"\n", start + len(data), end)
    if stop < 0:
        return None
    if longest is not None and stop - start > longest:
        return start, _head(data, stop)
    line = _read(fd, start, stop)
    return None if line is None else (start, line)


def bisect(fd: int, end: int, is_after: Callable[[bytes], bool | None], *, hold_unreadable: bool = False) -> int:
    """Offset of the first complete line for which ``is_after(line)`` is True (``end`` if
    none), assuming the predicate is False then True along the file. ``is_after`` returns
    None for a line it cannot read: a probe steps over such lines, and the final scan skips
    them, so a damaged line the caller does not need is never in the way. ``hold_unreadable``:
    the final scan answers such a line when no line it can read comes between it and the
    answer (a reader starting there meets it, and says so; before the last line read as
    False it is not in the reader's way)."""
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
    held: int | None = None
    for off, line in iter_lines(fd, lo, end):
        verdict = is_after(line)
        if verdict:
            return off if held is None else held
        if verdict is None:
            if hold_unreadable and held is None:
                held = off
        else:
            held = None
    return end if held is None else held


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
