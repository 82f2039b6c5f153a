"""A shipped log's objects beside its segments: gap records and retention watermarks.

Contract kept here (keys under the log's prefix ``PREFIX/v1/deployment=D/kind=K/log=ID/``):
- ``gaps/SSSSSSSSSSSS.json``: events SSSSSSSSSSSS through the object's last sequence (in its
  metadata, like a segment's) were dropped at the source before they were shipped
  (``compact --max-ship-lag``). Written by ``ship`` with the conditional create, keyed by its
  first sequence like a segment, so two shippers at once store one; its body is JSON
  ``{"first", "last", "count", "time", "root_id", "root", "reason"}`` (time: of the newest
  event dropped). A segment always wins over a gap that overlaps it (two shippers, one of
  them reading the log from before the sweep, may both have written): its lines are the
  truth the gap only says is missing.
- ``watermark/SSSSSSSSSSSS.json``: remote retention (``remote.compact``) dropped everything
  before sequence SSSSSSSSSSSS; body ``{"next_sequence", "time", "hash", "first_time_kept",
  ...}`` (time and sha256 of the last line dropped, with its newline, as in a local
  compaction record; ``hash`` is null when a gap came just before the cut). Versioned by
  its key: a new watermark is a new object, written with the conditional create; the one
  with the highest sequence is the log's, and segments, gaps and watermarks below it are
  left-overs of a sweep that did not finish (never read, deleted by the next sweep).
- ``owner`` (``remote.ship``).

Every object of both kinds of store is listed, read in part and deleted through the
``Store`` interface (``list_all``, ``read_range``, ``delete``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from wardrik_cli.errors import Failure
from wardrik_cli.remote import keys
from wardrik_cli.remote.stores import SMALL_MAX, Meta, Store

GAPS, WATERMARK = "gaps/", "watermark/"
_OBJ = re.compile(r"deployment=([a-z0-9][a-z0-9.-]{0,62})/kind=(agents|audit)/log=([^/]+)/"
                  r"(?:(gaps|watermark)/(\d{12})\.json|owner)")


def gap_key(log_prefix: str, first: int) -> str:
    return f"{log_prefix}{GAPS}{first:012d}.json"


def watermark_key(log_prefix: str, next_sequence: int) -> str:
    return f"{log_prefix}{WATERMARK}{next_sequence:012d}.json"


def watermark_body(next_sequence: int, time: str | None, hash_: str | None, first_time_kept: str | None,
                   previous: int | None, dropped: int, cutoff: str | None, by: str) -> bytes:
    """A watermark object's bytes (``read_watermark`` reads them): a remote sweep's cut, or a
    local one ``ship`` records for a log the store never had the start of."""
    from wardrik_cli.protocol.times import now

    return orjson.dumps({"next_sequence": next_sequence, "time": time, "hash": hash_,
                         "first_time_kept": first_time_kept, "previous": previous, "dropped": dropped,
                         "cutoff": cutoff, "made": now(), "by": by}) + b"\n"


@dataclass
class Other:
    """A log's object that is not a segment: a gap, a watermark or the owner."""
    key: str
    deployment: str
    kind: str
    name: str
    what: str  # "gaps", "watermark" or "owner"
    seq: int


def parse_other(prefix: str, key: str) -> Other | None:
    b = keys.base(prefix)
    if not key.startswith(b):
        return None
    m = _OBJ.fullmatch(key, len(b))
    if m is None:
        return None
    dep, kind, raw_id, what, seq = m.groups()
    return Other(key, dep, kind, raw_id.replace("~", "/"), what or "owner", int(seq or 0))


def _whole_line(store: Store, key: str, last: bool) -> bytes | None:
    """The first or last line of a segment (with no newline), reading more when it is long."""
    n = 64 << 10
    while True:
        data = store.read_range(key, tail=n) if last else store.read_range(key, head=n)
        if data is None:
            return None
        if last:
            body = data[:-1] if data.endswith(b"\n") else data
            i = body.rfind(b"\n")
            if i >= 0 or len(data) < n:
                return body[i + 1:]
        else:
            i = data.find(b"\n")
            if i >= 0 or len(data) < n:
                return data[:i] if i >= 0 else data
        n *= 4


def last_line(store: Store, key: str) -> bytes | None:
    return _whole_line(store, key, True)


def first_line(store: Store, key: str) -> bytes | None:
    return _whole_line(store, key, False)


# ---------------------------------------------------------------------------
# what a log's objects say
# ---------------------------------------------------------------------------
@dataclass
class Gap:
    key: str
    first: int
    last: int
    time: str | None
    root_id: str


@dataclass
class RemoteWatermark:
    key: str
    next_sequence: int
    time: str | None
    hash: str | None
    first_time_kept: str | None


def read_json(store: Store, key: str) -> tuple[dict[str, Any], Meta] | None:
    """A small JSON object and its metadata; None when it is gone (or its bytes never came).
    One larger than ``SMALL_MAX`` is refused unread: something else wrote there."""
    try:
        data, meta = store.read(key, limit=SMALL_MAX)
    except Failure as e:
        if "listed but gone" in str(e):
            return None
        raise
    if data is None:
        return None
    try:
        doc = orjson.loads(data)
    except ValueError:
        raise Failure(f"{store.where(key)}: not JSON: something else wrote there") from None
    if not isinstance(doc, dict):
        raise Failure(f"{store.where(key)}: not a JSON object: something else wrote there")
    return doc, meta


def read_gap(store: Store, key: str, first: int) -> Gap | None:
    got = read_json(store, key)
    if got is None:
        return None
    doc, meta = got
    if meta.last < first:  # every loop that steps over gaps relies on a gap moving it on
        raise Failure(f"{store.where(key)}: not a wardrik gap record: its last sequence {meta.last} is before "
                      f"its first {first}")
    t = doc.get("time")
    return Gap(key, first, meta.last, t if isinstance(t, str) else None, meta.root_id)


def read_watermark(store: Store, key: str) -> RemoteWatermark | None:
    got = read_json(store, key)
    if got is None:
        return None
    doc, _ = got
    try:
        nxt = int(doc["next_sequence"])
    except (KeyError, TypeError, ValueError):
        raise Failure(f"{store.where(key)}: not a wardrik watermark (no next_sequence)") from None

    def text(k: str) -> str | None:
        v = doc.get(k)
        return v if isinstance(v, str) else None

    return RemoteWatermark(key, nxt, text("time"), text("hash"), text("first_time_kept"))


def latest_watermark(store: Store, others: list[Other]) -> RemoteWatermark | None:
    """The log's watermark: the one with the highest sequence (read from the store)."""
    marks = sorted((o for o in others if o.what == "watermark"), key=lambda o: o.seq, reverse=True)
    for o in marks:
        wm = read_watermark(store, o.key)
        if wm is not None:
            return wm
    return None


def gaps_of(store: Store, others: list[Other], since: int = 0) -> list[Gap]:
    """The log's gaps starting at or after ``since``, in sequence order (read from the store)."""
    out = []
    for o in sorted((o for o in others if o.what == "gaps" and o.seq >= since), key=lambda o: o.seq):
        g = read_gap(store, o.key, o.seq)
        if g is not None:
            out.append(g)
    return out
