"""Merging logs by time: many logs read side by side in flat memory, sorted in C, a batch at a time.

Contract kept here:
- ``merge_batches(sources, fill)`` yields lists of entries ``(key, log id, seq, raw, event)``;
  taken one after the other they are every entry of every source, ordered by (key, log id,
  seq), each log's entries in the order ``fill`` gives them (sequence order). ``key`` is the
  entry's time, made non-decreasing within its log (``keyed``: a log whose times go back is
  still read in sequence order).
- A source is filled a span at a time (``fill(source)`` returns its next entries, at least
  one unless it is done). Sources wait in a heap by how far they have been read (``low``:
  the time of the line a source starts at, then the key of the last entry filled): the one
  furthest behind is filled next, and every entry held whose key is below the lowest of them
  (the frontier) is final, since no source can bring anything earlier. So a log whose events
  all come later holds nothing until the frontier reaches them, and what is held is about a
  span per log being read, whatever the number of logs.
- Held entries are emitted in batches, sorted in one C-level sort: once what came in since the
  last batch is as much as what is held (and at least ``EMIT``), and at the end. The cost per
  entry is its share of one sort; the cost per span is a heap step.
- The consumer may stop at any entry: what was filled and not taken is dropped.
- A ``fill`` that raises (a corrupt line) first lets out every entry held below the frontier
  (what the merge would have emitted before that source's next entry), then the error.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

Entry = tuple[str, str, int, bytes | None, dict[str, Any] | None]

EMIT = 2048  # fewest new entries worth a sort


class Source:
    """One log in a merge: where its next span starts, whether it is done, and a lower bound
    of the key of its next entry (``low``)."""

    __slots__ = ("name", "offset", "seq", "exact", "done", "pending", "high", "low", "state")

    def __init__(self, name: str, offset: int, seq: int, exact: bool, low: str, state: Any = None):
        self.name, self.offset, self.seq, self.exact = name, offset, seq, exact
        self.done = False
        self.pending: list[Entry] = []  # unused by merge_batches (kept for callers' use)
        self.high = ""  # the highest time filled so far: keys never go back within a log
        self.low = low  # no entry still to come from this log has a lower key
        self.state = state

    def __lt__(self, other: Source) -> bool:
        return (self.low, self.name) < (other.low, other.name)


def merge_batches(sources: list[Source], fill: Callable[[Source], list[Entry]]) -> Iterator[list[Entry]]:
    """Batches of entries that, one after the other, are every entry of every source in
    (key, log id, seq) order (see the module docstring)."""
    # (low, name, source): names are unique, so a source is never compared
    heap = [(s.low, s.name, s) for s in sources if not s.done]
    heapq.heapify(heap)
    held: list[Entry] = []  # filled, not emitted: a sorted prefix, then new spans as they came
    fresh = 0  # entries added since the last sort
    while heap:
        low, name, s = heap[0]
        if fresh >= EMIT and fresh * 2 >= len(held):
            held.sort()  # (key, log id, seq): never equal, so raw and event are never compared
            fresh = 0
            i = bisect_left(held, (low,))  # every entry below the frontier is final
            if i:
                batch = held[:i]
                del held[:i]
                yield batch
        try:
            got = fill(s)
        except Exception:
            # what no source can come before any more is shown, then the error (a corrupt
            # line): the events before it in merge order are read, as in one log. This
            # source's next entry comes after its last one; another's at its low or later.
            held.sort()
            bound: tuple[Any, ...] = (low, name, s.seq + 1)
            for other_low, other_name, _ in heap[1:]:
                bound = min(bound, (other_low, other_name))
            i = bisect_left(held, bound)
            if i:
                yield held[:i]
            raise
        if got:
            held += got
            fresh += len(got)
            last = got[-1][0]
            if last > low:
                s.low = low = last
        if s.done:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (low, name, s))
    if held:
        held.sort()
        yield held


def keyed(s: Source, time: str) -> str:
    """The merge key of the next entry of ``s`` at ``time``: never below the log's last."""
    if time < s.high:
        return s.high
    s.high = time
    return time
