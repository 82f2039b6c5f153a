"""The unfiltered read's fast path: a span of a log whose every line is wanted, checked in C.

A read with no filter (``page --all``, the merge over many logs) must still decode every line
it hands out, to refuse one that is not an event; what it need not do is step through the
lines one by one in Python. ``whole_span`` reads one span and checks all of its lines at once.

Contract kept here:
- ``whole_span(view, offset, want, after_seq, exact, low, until)`` reads the complete lines of
  at most ``want`` bytes from ``offset`` (a line start) and returns ``(raws, times, first_seq,
  end)``: the lines without their newlines, their times, the first one's sequence (the others
  follow it one by one) and where the next line starts.
- It answers only when every line is an event as ``store.log.decode_event`` judges one (an
  object whose sequence is a 12-digit string and whose type and time are strings, valid JSON
  as orjson takes it), the sequences run on from ``after_seq + 1`` (when ``exact``; else from
  past ``after_seq``) one by one, the times never go back and none is below ``low``, and the
  span ends before ``until``.
- The check is ``store.log.decode_all``, ``decode_event``'s decoder and checks, so the two
  never disagree on a line; what is saved is the Python step per line (a ``Line`` made,
  yielded and taken apart), not the decoding. (msgspec, validating without building the
  line, decodes twice as fast here, but takes what orjson refuses, e.g. ``1e999``: parity
  would need a byte pass costing more than it saves.)
- Otherwise it returns None and has changed nothing: the caller reads the span with
  ``read.scan``, which says what is wrong (a corrupt line, a gap, times that go back) exactly as
  it does for any line. A line longer than the span is left to it too.
"""
from __future__ import annotations

import os

from wardrik_cli.store.log import LogView, decode_all


def whole_span(view: LogView, offset: int, want: int, after_seq: int, exact: bool, low: str,
               until: str | None) -> tuple[list[bytes], list[str], int, int] | None:
    """The span's lines, times, first sequence and end, when all of it is plainly wanted (see
    the module docstring); None otherwise."""
    fd = view.fd
    want = min(want, view.end - offset)
    if fd is None or want <= 0:
        return None
    data = os.pread(fd, want, offset)
    size = data.rfind(b"\n") + 1
    if size == 0:
        return None
    raws = data[:size - 1].split(b"\n")
    got = decode_all(raws)
    if got is None:
        return None
    seqs, times = got
    n = len(raws)
    first = int(seqs[0])
    if first <= after_seq or (exact and first != after_seq + 1) \
            or list(map(int, seqs)) != list(range(first, first + n)):
        return None  # a gap or a repeat: the line-by-line read says which
    if times[0] < low or (n > 1 and times != sorted(times)) or (until is not None and times[-1] >= until):
        return None  # times that go back (keys must not), or the window's end inside the span
    return raws, times, first, offset + size

