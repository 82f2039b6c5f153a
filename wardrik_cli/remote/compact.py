"""Remote retention: ``wardrik --root s3://... compact --retention 90d`` (and ``file://``).

Contract kept here:
- Per log in the store (every deployment, or the one given), the longest run of its oldest
  units is dropped whose every event is older than the cutoff: a unit is a whole segment
  (never part of one; a segment is expired when its last event is before the cutoff, known
  from its day partition alone when the day ends before the cutoff, else from its last line)
  or a gap record (expired when its newest dropped event is). The first unit that is not
  expired ends the run, so nothing newer than the cutoff ever goes, and sequences stay a
  prefix cut, as in a local compaction.
- The log's watermark (``remote.gaps``: ``log=ID/watermark/SSSSSSSSSSSS.json``, SSSSSSSSSSSS
  the first sequence kept) records the cut: the time and sha256 of the last line dropped (for
  the audit log the chain goes on from that hash) and the first kept event's time. A log
  whose every segment goes keeps its sequence in its watermark, which ``ship`` reads when
  it has no segment left to go on from.
- ``pull`` of a log with a watermark starts at the first kept sequence and writes a local
  compaction record beside it, so readers of the evidence root print ``events.dropped`` with
  the count (and id) a local compaction of the same events would give.
- ``dry_run`` reads only.

Crash order, per log (a crash at any instant, or two sweeps at once, is safe):
1. list the log's objects; read the current watermark (highest key);
2. write the new watermark with the conditional create (``If-None-Match: *``; a key that
   exists already holds the same cut: segments never change, so it is the same watermark);
3. delete the expired segments oldest first, then gap records and older watermarks below
   the new one.
Readers and ``ship`` take the highest watermark and ignore every object below it, so a
sweep killed during step 3 leaves objects nobody reads, which the next sweep (step 3 for
everything below the current watermark) deletes; killed before step 2 completes, it
deleted nothing. Shippers only ever add units after the last one stored, never below a
cut, so a sweep and a shipper at once never lose or duplicate an event.
"""
from __future__ import annotations

import hashlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any


from wardrik_cli.errors import Failure, WardrikError
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.remote import keys
from wardrik_cli.remote.gaps import (Gap, Other, RemoteWatermark, first_line, gaps_of, last_line,
                                     latest_watermark, parse_other, read_gap, watermark_body, watermark_key)
from wardrik_cli.remote.stores import Meta, Store
from wardrik_cli.store.retention import SweepTotals
from wardrik_cli.store.log import decode_event, peek

SWEEP_ID = "wardrik-compact"  # the metadata's root id of a watermark (no root wrote it)


@dataclass
class RemoteLogResult:
    log: str
    kind: str
    deployment: str
    dropped: int = 0
    kept: int = 0
    segments_deleted: int = 0
    segments_kept: int = 0
    leftovers_deleted: int = 0
    first_kept: int | None = None
    error: str | None = None
    bytes_before: int = 0  # the log's segments' bytes before the sweep, and after it
    bytes_after: int = 0

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"log": self.log, "kind": self.kind, "deployment": self.deployment,
                             "dropped": self.dropped, "kept": self.kept, "bytes_before": self.bytes_before,
                             "bytes_after": self.bytes_after, "segments_deleted": self.segments_deleted,
                             "segments_kept": self.segments_kept}
        if self.first_kept is not None:
            d["first_kept"] = self.first_kept
        if self.leftovers_deleted:
            d["leftovers_deleted"] = self.leftovers_deleted
        if self.error:
            d["error"] = self.error
        return d


@dataclass
class RemoteSweep(SweepTotals):
    root: str
    cutoff: str
    retention: str
    dry_run: bool
    logs: list[RemoteLogResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "logs": [r.to_json() for r in self.logs], "dropped": self.dropped,
                "kept": self.kept, "cutoff": self.cutoff, "retention": self.retention, "dry_run": self.dry_run}


@dataclass
class _Unit:
    first: int
    last: int
    key: str
    day: str | None = None  # a segment's; None for a gap
    gap: Gap | None = None
    size: int = 0  # a segment's bytes (0 for a gap)


def _line_time(raw: bytes, where: str) -> str:
    p = peek(raw)
    if p is not None:
        return p[2].decode("ascii", "replace")
    try:
        t: str = decode_event(raw)["time"]
    except ValueError as e:
        raise Failure(f"{where}: a line that is not an event ({e}); not compacted") from None
    return t


def _next_day(day: str) -> str:
    d = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC) + timedelta(days=1)
    return format_dt(d)


def compact_remote(store: Store, retention: str, delta: timedelta, *, dry_run: bool = False,
                   deployment: str | None = None, now: datetime | None = None,
                   on_log: Callable[[RemoteLogResult], None] | None = None,
                   after_delete: Callable[[str], None] | None = None) -> RemoteSweep:
    """Sweep every log under the store's prefix (of ``deployment`` only, when given); a log
    that fails is recorded and the others are still swept. ``after_delete`` is told each key
    deleted (tests kill the sweep there)."""
    try:
        cutoff = format_dt((now or datetime.now(UTC)) - delta)
    except OverflowError:
        cutoff = format_dt(datetime.min)
    result = RemoteSweep(store.url, cutoff, retention, dry_run)
    start = keys.base(store.prefix) + (f"deployment={deployment}/" if deployment else "")
    segs: dict[tuple[str, str, str], list[keys.Parsed]] = {}
    others: dict[tuple[str, str, str], list[Other]] = {}
    for key in store.list_all(start):
        p = keys.parse_key(store.prefix, key)
        if p is not None:
            segs.setdefault((p.deployment, p.kind, p.name), []).append(p)
            continue
        o = parse_other(store.prefix, key)
        if o is not None:
            others.setdefault((o.deployment, o.kind, o.name), []).append(o)
    for ident in sorted(set(segs) | set(others), key=lambda i: (i[0], i[1] != keys.AGENTS, i[2])):
        dep, kind, name = ident
        row = RemoteLogResult(name, kind, dep)
        result.logs.append(row)
        try:
            _sweep_log(store, ident, segs.get(ident, []), others.get(ident, []), cutoff, dry_run, row, after_delete)
        except WardrikError as e:
            row.error = str(e)
        if on_log:
            on_log(row)
    return result


def _sweep_log(store: Store, ident: tuple[str, str, str], segs: list[keys.Parsed], others: list[Other],
               cutoff: str, dry_run: bool, row: RemoteLogResult, after_delete: Callable[[str], None] | None) -> None:
    dep, kind, name = ident
    wm = latest_watermark(store, others)
    floor = wm.next_sequence if wm else 0
    leftovers = [p.key for p in segs if p.first < floor] + \
        [o.key for o in others if o.what in ("gaps", "watermark") and o.seq < floor]
    units: list[_Unit] = []
    for p in sorted((p for p in segs if p.first >= floor), key=lambda p: p.first):
        meta = store.read_meta(p.key, size=True)
        if meta is None:
            continue  # deleted since the listing (another sweep)
        units.append(_Unit(p.first, meta.last, p.key, day=p.day, size=meta.size or 0))
    covered = [(u.first, u.last) for u in units]
    for g in gaps_of(store, others, floor):
        if not any(a <= g.last and g.first <= b for a, b in covered):  # a segment wins over a gap
            units.append(_Unit(g.first, g.last, g.key, gap=g))
    units.sort(key=lambda u: u.first)
    row.segments_kept = sum(1 for u in units if u.gap is None)
    expired: list[_Unit] = []
    last_time: str | None = None
    for u in units:
        if u.gap is not None:
            t = u.gap.time
            if t is None or t >= cutoff:
                break
        elif u.day is not None and _next_day(u.day) <= cutoff:
            t = None  # the whole day is before the cutoff: its last line is read only if it ends the cut
        else:
            raw = last_line(store, u.key)
            if raw is None:
                break  # gone meanwhile, or a folder claim whose bytes never came: keep what follows
            t = _line_time(raw, store.where(u.key))
            if t >= cutoff:
                break
        expired.append(u)
        last_time = t
    kept_units = units[len(expired):]
    row.kept = sum(u.last - u.first + 1 for u in kept_units if u.gap is None)
    row.bytes_before = sum(u.size for u in units)
    row.bytes_after = sum(u.size for u in kept_units)
    row.first_kept = kept_units[0].first if kept_units else (expired[-1].last + 1 if expired else floor or None)
    if not expired:
        if leftovers and not dry_run:
            _delete_all(store, leftovers, row, after_delete, leftover=True)
        return
    row.dropped = sum(u.last - u.first + 1 for u in expired if u.gap is None)
    row.segments_deleted = sum(1 for u in expired if u.gap is None)
    row.segments_kept -= row.segments_deleted
    cut = expired[-1]
    next_seq = cut.last + 1
    # a gap right after the cut that is not expired is kept as a gap: readers count it as
    # dropped either way, and the chain goes on from the last line the store ever had
    hash_: str | None = None
    if cut.gap is None:
        raw = last_line(store, cut.key)
        if raw is None:
            raise Failure(f"{store.where(cut.key)}: gone while it was swept; run compact again")
        hash_ = hashlib.sha256(raw + b"\n").hexdigest()
        last_time = last_time or _line_time(raw, store.where(cut.key))
    first_time_kept: str | None = None
    if kept_units and kept_units[0].gap is None:
        raw = first_line(store, kept_units[0].key)
        first_time_kept = _line_time(raw, store.where(kept_units[0].key)) if raw else None
    if dry_run:
        return
    body = watermark_body(next_seq, last_time, hash_, first_time_kept, wm.next_sequence if wm else None,
                          row.dropped, cutoff, socket.gethostname())
    log_prefix = keys.log_prefix(store.prefix, dep, kind, name)
    wkey = watermark_key(log_prefix, next_seq)
    meta = Meta(next_seq - 1, hashlib.sha256(body).hexdigest(), SWEEP_ID, f"compact@{socket.gethostname()}")
    if not store.create(wkey, body, meta):
        # the same cut by another sweep (or one that died after writing it): segments never
        # change, so it says what this one would
        if store.read_meta(wkey) is None:
            raise Failure(f"{store.where(wkey)}: the store said it exists, then that it does not")
    # step 3: only now does anything go
    _delete_all(store, [u.key for u in expired], row, after_delete)
    below = [o.key for o in others if o.what in ("gaps", "watermark") and o.seq < next_seq and o.key != wkey]
    _delete_all(store, sorted(set(leftovers) | set(below)), row, after_delete, leftover=True)


def _delete_all(store: Store, todo: list[str], row: RemoteLogResult, after_delete: Callable[[str], None] | None,
                leftover: bool = False) -> None:
    for key in todo:
        store.delete(key)
        if leftover and "/day=" in key:
            row.leftovers_deleted += 1
        if after_delete:
            after_delete(key)


def read_log_start(store: Store, others: list[Other]) -> tuple[RemoteWatermark | None, list[Gap]]:
    """(the log's watermark, its gaps at or after it): what pull and ship need to know
    beside the segments."""
    wm = latest_watermark(store, others)
    return wm, gaps_of(store, others, wm.next_sequence if wm else 0)


__all__ = ["compact_remote", "RemoteSweep", "RemoteLogResult", "read_log_start", "read_gap"]
