"""Events a log is known to be missing in its middle: dropped at their source before they were
shipped (``compact --max-ship-lag``), recorded beside a pulled or mirrored copy of the log.

A local log can only lose a prefix (its compaction record says so); a copy pulled from object
storage can also lack a run of events between two segments, when the shipping root recorded a
gap instead of storing them. ``pull`` and the mirror behind ``--root s3://...`` write what the
store's gap records say here, and readers turn such a hole into an ``events.dropped`` at its
place in the read instead of a warning about a damaged log.

Contract kept here:
- The file is ``.wardrik/gaps/<log>@gaps.json``: ``{"gaps": [{"first", "last", "time"}, ...]}``
  (first and last: the missing sequences, inclusive; time: the newest dropped event's time, or
  null when the store did not say). Written whole and atomically, only by copies of remote logs.
- ``read_gaps`` never fails nor waits: a missing, unreadable or malformed file (or entry), a
  link (or a file under a linked folder), a FIFO or anything not a regular file, or a file
  over ``MAX_BYTES``, reads as no record (``Root.read_state``), so the hole is reported as a
  sequence gap, the honest default; a time that is not an RFC 3339 time reads as none (the
  notice is then dated by the event after the hole). ``write_gaps`` writes (or removes) only
  in folders that are not links (``NotRegular`` names one).
- ``covered`` accounts for a hole with the records inside it, including one that began
  before the hole's first missing sequence (a cursor that stopped inside a recorded gap),
  clipped to the hole; never with a record that reaches an event the log holds.
- A record is trusted by readers (a copy of a shipped log is missing those events), never by
  ``check`` in silence, and never for the audit log (see ``store.check``).
- ``any_recorded(root)`` is one ``stat``: a reader over many logs looks for records only when
  the root has some.
"""
from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

import orjson

from wardrik_cli.store.fsutil import state_dirs, write_atomic
from wardrik_cli.store.layout import Root

KIND = "gaps"
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})")
NAME = "gaps.json"
MAX_BYTES = 1 << 22  # a record file past this is not one wardrik wrote: read as none


@dataclass(frozen=True)
class RecordedGap:
    first: int
    last: int
    time: str | None


def older_than(gap: RecordedGap, since: str | None) -> bool:
    """Is every event of ``gap`` older than a reader's ``since`` (so its window never reaches
    them, and it is told nothing)? A gap of unknown time is not."""
    return since is not None and gap.time is not None and gap.time < since


def gaps_path(root: Root, state_key: str) -> Path:
    return root.state_path(KIND, state_key, NAME)


def any_recorded(root: Root) -> bool:
    """Does the root hold any gap record (so readers need to look for one per log)?"""
    return os.path.isdir(f"{root.path}/.wardrik/{KIND}")  # a string: a sweep asks three times per log


def read_gaps(root: Root, state_key: str) -> dict[int, RecordedGap]:
    """The log's recorded gaps by their first sequence ({} when it has none or the file is bad)."""
    # never a link followed nor a FIFO waited on (a planted one would hang every reader)
    data = root.read_state(gaps_path(root, state_key), MAX_BYTES)
    if data is None:
        return {}
    try:
        entries = orjson.loads(data)["gaps"]
    except (ValueError, KeyError, TypeError):
        return {}
    out: dict[int, RecordedGap] = {}
    if not isinstance(entries, list):
        return {}
    for e in entries:
        if not isinstance(e, dict):
            continue
        first, last, t = e.get("first"), e.get("last"), e.get("time")
        if type(first) is not int or type(last) is not int or not 1 <= first <= last:
            continue
        # the time becomes an event's: only a time as stored events carry one
        out[first] = RecordedGap(first, last, t if isinstance(t, str) and _TIME.fullmatch(t) else None)
    return out


def write_gaps(root: Root, state_key: str, gaps: list[RecordedGap], *, durable: bool = True) -> None:
    """Record the log's gaps (replacing any record; none: the file is removed). ``durable``
    False for a cache (the mirror), whose record is written again from its state."""
    path = gaps_path(root, state_key)
    if not gaps:
        state_dirs(path)  # NotRegular for a linked folder: nothing removed through it
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    root.state_dir(path)  # made one level at a time; NotRegular for a link among them
    body = {"gaps": [{"first": g.first, "last": g.last, "time": g.time} for g in sorted(gaps, key=lambda g: g.first)]}
    write_atomic(path, orjson.dumps(body), durable=durable)


def covered(gaps: dict[int, RecordedGap], before: int, after: int, firsts: list[int] | None = None
            ) -> tuple[list[RecordedGap], list[tuple[int, int]]]:
    """For a hole between sequences ``before`` and ``after`` (both read): the recorded gaps that
    fill it, in order, and the runs (first, last) no record covers, adjacent ones merged.
    ``firsts``: ``sorted(gaps)``, made once per log by a caller that meets many holes. Each step
    is a bisection: a hostile file of many records, and a log of many holes, cost their sizes,
    not their product."""
    if firsts is None:
        firsts = sorted(gaps)
    found: list[RecordedGap] = []
    rest: list[tuple[int, int]] = []
    at = before + 1
    while at < after:
        i = bisect_right(firsts, at)  # firsts[i - 1] <= at < firsts[i]
        g = gaps[firsts[i - 1]] if i else None
        if g is not None and at <= g.last < after:
            # a record from here, or from before here (the read began inside it): its part in the hole
            found.append(g if g.first == at else RecordedGap(at, g.last, g.time))
            at = g.last + 1
            continue
        # no record that fits covers this sequence: unrecorded up to the next record inside the hole
        nxt = min(firsts[i], after) if i < len(firsts) else after
        if rest and rest[-1][1] == at - 1:
            rest[-1] = (rest[-1][0], nxt - 1)
        else:
            rest.append((at, nxt - 1))
        at = nxt
    return found, rest
