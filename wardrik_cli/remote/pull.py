"""``pull``: a store's segments back into an evidence root on local disk.

Contract kept here:
- While it runs, ``DIR/.wardrik/pull-unfinished`` says so (removed, durably, once every log is
  written): a pull killed part-way leaves a root that ``check`` reports as unfinished (exit 1)
  and that a second pull into it names as such.
- The evidence root (``DIR``, new or empty) holds each pulled log as ``DIR/<log id>.jsonl``
  and the audit log as ``DIR/.wardrik/audit.jsonl``: the concatenation of the log's segments in
  sequence order, byte for byte. ``.wardrik/config.toml`` names the deployment when one was pulled.
- Every segment is checked before a byte of it is written: its bytes must hash to the sha256
  in its metadata and be whole lines whose first sequence is its key's and whose last is its
  metadata's, and it must follow the segment before it (first = previous last + 1). A
  segment that fails is reported (``BadSegment``, exit 1) and neither it nor anything after it
  in its log is written; the log's file holds the segments before it. A store object that
  wardrik never writes (``stores.Refused``: a link, FIFO or device in a folder store, a
  metadata, gap or watermark object over ``SMALL_MAX``) ends its log the same way, unread: a
  hostile store cannot make pull hang or exhaust memory. A folder claim whose bytes never
  came (a shipper died mid-segment) ends its log with a warning.
- ``since``: segments of days before the day of ``since`` are not read, and a segment whose
  last event is before ``since`` is skipped; pulled logs then start at a segment boundary.
- Several deployments under one prefix: ``deployment`` picks one; without it a log id shipped
  by two deployments is refused (``BadInput``), before anything is written.
- Dropped events (``remote.gaps``): segments below the log's remote watermark (``compact``
  on the store) are never read; the pulled log starts at the first kept sequence, and gap
  records that follow the watermark (events dropped at the source before they were shipped)
  move that start on. The evidence root then gets the local compaction record for it
  (``.wardrik/watermarks/<log>@json``: first kept sequence, time and hash of the last line
  dropped), so its readers print ``events.dropped`` with the count and id a local
  compaction would give, and ``check`` verifies the audit chain from the watermark's hash. A
  gap record between two segments is not a dropped prefix: the evidence log holds the
  segments on both sides, and each gap record stepped over is written to the evidence root's
  record of recorded gaps (``store.recorded_gaps``: first, last, and the record's time),
  before pull returns. Its readers then give an ``events.dropped`` (data.count: the gap's
  events) at the hole's place instead of a sequence-gap warning, and ``check`` does not
  report it as damage. pull says (``warn``) which gaps it recorded.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wardrik_cli.errors import BadInput, Failure, NoSuchLog
from wardrik_cli.protocol.names import has_wildcards, pattern_covers, validate_pattern
from wardrik_cli.remote import gaps as remote_gaps
from wardrik_cli.remote import keys
from wardrik_cli.remote.stores import Refused, Store
from wardrik_cli.store.fsutil import fsync_dir, write_all, write_new
from wardrik_cli.store.layout import UNFINISHED_PULL, Root
from wardrik_cli.store.log import Log, decode_event, peek
from wardrik_cli.store.recorded_gaps import RecordedGap, write_gaps


class BadSegment(Failure):
    """A segment in the store whose bytes do not match its metadata."""


@dataclass
class LogPulled:
    log: str
    kind: str
    segments: int = 0
    events: int = 0
    bytes: int = 0
    first: int = 0
    last: int = 0
    dropped: int = 0  # events before the first pulled that the store no longer has (or never had)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # holes between segments (gap records)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "kind": self.kind, "segments": self.segments, "events": self.events,
                "bytes": self.bytes, "first": self.first, "last": self.last,
                **({"dropped": self.dropped} if self.dropped else {}),
                **({"gaps": [list(g) for g in self.gaps]} if self.gaps else {}),
                **({"error": self.error} if self.error else {})}


@dataclass
class PullResult:
    into: str
    deployment: str | None
    logs: list[LogPulled] = field(default_factory=list)

    @property
    def failed(self) -> list[LogPulled]:
        return [r for r in self.logs if r.error]

    def to_json(self) -> dict[str, Any]:
        return {"into": self.into, "deployment": self.deployment, "logs": [r.to_json() for r in self.logs],
                "segments": sum(r.segments for r in self.logs), "events": sum(r.events for r in self.logs),
                "bytes": sum(r.bytes for r in self.logs)}


def safe_key(key: str) -> str:
    """A store key as one printable, quoted line (a planted key may hold anything)."""
    return ascii(key[:300] + ("..." if len(key) > 300 else ""))


def prepare_into(into: Path) -> None:
    """DIR must be new or an empty folder (BadInput otherwise); made here."""
    try:
        if into.exists() or into.is_symlink():
            if not into.is_dir() or into.is_symlink():
                raise BadInput(f"--into {into}: not a folder")
            if any(into.iterdir()):
                if Root(into).unfinished_pull() is not None:
                    raise BadInput(f"--into {into}: holds a pull that did not finish (killed part-way, or a log "
                                   "could not be pulled): remove the folder and pull again")
                raise BadInput(f"--into {into}: not empty (pull makes a new evidence root: give a new or empty folder)")
        into.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot make {into}: {e.strerror or e}") from None


def _line_seq_time(raw: bytes) -> tuple[int, str]:
    p = peek(raw)
    if p is not None:
        return int(p[1]), p[2].decode("ascii", "replace")
    ev = decode_event(raw)
    return int(ev["sequence"]), ev["time"]


def check_segment(where: str, data: bytes, first: int, last: int, sha: str, day: str | None = None) -> tuple[str, str]:
    """(time of the first line, time of the last) of a segment that is what its key and metadata
    say (its first and last events of the key's UTC ``day``, as ``mirror.verify_segment`` checks)."""
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise BadSegment(f"{where}: its bytes do not match its sha256 (metadata {sha}, bytes {got}): not pulled")
    if not data.endswith(b"\n") or data.count(b"\n") != last - first + 1:
        # a line taken out (its hash made anew) leaves first and last as they were
        raise BadSegment(f"{where}: does not hold one whole line per sequence {first} to {last}: not pulled")
    try:
        s0, t0 = _line_seq_time(data[:data.index(b"\n")])
        s1, t1 = _line_seq_time(data[data.rfind(b"\n", 0, len(data) - 1) + 1:-1])
    except ValueError as e:
        raise BadSegment(f"{where}: a line that is not an event ({e}): not pulled") from None
    if s0 != first or s1 != last:
        raise BadSegment(f"{where}: holds sequences {s0} to {s1}, its key and metadata say {first} to {last}: "
                         "not pulled")
    if day is not None:
        for t in (t0, t1):
            try:
                got = keys.utc_day(t)
            except ValueError:
                got = "no valid time"
            if got != day:
                raise BadSegment(f"{where}: filed under day {day}, but holds an event of {got}: not pulled")
    return t0, t1


def pull(store: Store, into: Path, *, patterns: list[str] | None = None, since: str | None = None,
         deployment: str | None = None, warn: Callable[[str], None] = lambda m: None) -> PullResult:
    pats = [validate_pattern(p) for p in patterns or ()]
    seen: set[str] = set()  # agent logs the patterns name (a literal naming none is refused)
    since_day = keys.utc_day(since) if since else None
    start = keys.base(store.prefix) + (f"deployment={deployment}/" if deployment else "")
    # (deployment, kind, name) -> [(first, day, key)]
    found: dict[tuple[str, str, str], list[keys.Parsed]] = {}
    others: dict[tuple[str, str, str], list[remote_gaps.Other]] = {}
    strangers: list[str] = []  # objects under the prefix that wardrik never writes: left out, and said
    for key in store.list_all(start):
        p = keys.parse_key(store.prefix, key)
        o = remote_gaps.parse_other(store.prefix, key) if p is None else None
        if o is not None and o.what != "owner":
            kind, name = o.kind, o.name
        elif p is not None:
            kind, name = p.kind, p.name
        else:
            if o is None:
                strangers.append(key)
            continue
        # as readers read a pattern: a glob, a log id, or a folder of logs (``acme``)
        if kind == keys.AGENTS and pats and not any(pattern_covers(pat, name) for pat in pats):
            continue
        if kind == keys.AUDIT and pats:
            continue  # patterns name agent logs; the audit log comes with a pull of everything
        if kind == keys.AGENTS:
            seen.add(name)
        if o is not None:
            others.setdefault((o.deployment, kind, name), []).append(o)
            found.setdefault((o.deployment, kind, name), [])  # a log whose every segment was deleted
            continue
        assert p is not None
        if since_day is not None and p.day < since_day:
            continue
        found.setdefault((p.deployment, p.kind, p.name), []).append(p)
    for pat in pats:
        if not has_wildcards(pat) and not any(pattern_covers(pat, name) for name in seen):
            raise NoSuchLog(f"no log {pat!r} in {store.url} (patterns with * or ? may match nothing; a literal "
                            "id or folder must be there)")
    if pats:
        # A literal naming a log names that log only, beside a folder of that name (as readers read it)
        named = {name for name in seen if any(
            pattern_covers(pat, name) and (has_wildcards(pat) or name == pat or pat not in seen) for pat in pats)}
        found = {k: v for k, v in found.items() if k[1] != keys.AGENTS or k[2] in named}
        others = {k: v for k, v in others.items() if k[1] != keys.AGENTS or k[2] in named}
    if strangers:
        warn(f"{len(strangers)} object(s) under {store.url} are not wardrik's (no log's segment, record or owner) "
             f"and were left out, e.g. {safe_key(strangers[0])}")
    deployments = sorted({d for d, _, _ in found})
    by_log: dict[tuple[str, str], str] = {}
    for d, kind, name in sorted(found):
        other = by_log.setdefault((kind, name), d)
        if other != d:
            raise BadInput(f"log {name!r} was shipped by deployments {other!r} and {d!r} under {store.url}: "
                           "pick one with --deployment")
    prepare_into(into)
    # Until every log is written the evidence root says so: a pull killed part-way leaves a
    # root that check reports as unfinished, never one that looks complete.
    marker = into / ".wardrik" / UNFINISHED_PULL
    _write_new(marker, f"a pull from {store.url} into this folder started and has not finished\n".encode())
    result = PullResult(str(into), deployments[0] if len(deployments) == 1 else None)
    if len(deployments) == 1:
        _write_new(into / ".wardrik" / "config.toml", f'deployment = "{deployments[0]}"\n'.encode())
    evidence = Root(into)
    for (dep, kind, name), segs in sorted(found.items(), key=lambda kv: (kv[0][1] != keys.AGENTS, kv[0][2])):
        row = LogPulled(name, kind)
        result.logs.append(row)
        log = Log.audit(evidence) if kind == keys.AUDIT else Log.agent(evidence, name)
        try:
            _pull_log(store, segs, others.get((dep, kind, name), []), log, row, since, warn)
        except (BadSegment, Refused) as e:
            row.error = str(e)
    failed = [r for r in result.logs if r.error]
    marker.unlink()
    if failed:
        # a log that could not be pulled leaves the root unfinished too: check says so, never clean
        _write_new(marker, (f"a pull from {store.url} into this folder finished without {len(failed)} log(s): "
                            + "; ".join(f"{r.log}: {r.error}" for r in failed) + "\n").encode())
    fsync_dir(marker.parent)
    return result


def _pull_log(store: Store, segs: list[keys.Parsed], others: list[remote_gaps.Other], log: Log, row: LogPulled,
              since: str | None, warn: Callable[[str], None]) -> None:
    path = log.path
    wm = remote_gaps.latest_watermark(store, others)
    floor = wm.next_sequence if wm else 0
    segs = sorted((p for p in segs if p.first >= floor), key=lambda p: p.first)  # below it: never read
    gaps = {g.first: g for g in remote_gaps.gaps_of(store, others, floor)}
    # where the log starts: the watermark, moved on by the gap records that follow it
    start, drop_time, drop_hash = (floor, wm.time, wm.hash) if wm else (1, None, None)
    while start in gaps and not (segs and segs[0].first <= gaps[start].last):  # a segment wins over a gap
        g = gaps.pop(start)
        start, drop_time, drop_hash = g.last + 1, g.time, None
    if wm is None and start == 1 and segs and segs[0].first > 1 and since is None:
        # compacted before its first ship: the store never had its start (a remote read starts
        # there too); the evidence log starts at the store's first segment, with its record
        start, drop_time, drop_hash = segs[0].first, None, None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    first_time: str | None = None
    skipped: tuple[int, str, str] | None = None  # (last sequence, hash of its line, time) of what --since left out
    recorded: list[RecordedGap] = []  # the gap records stepped over between two pulled segments
    try:
        prev: int | None = None
        for p in segs:
            where = store.where(p.key)
            data, meta = store.read(p.key)
            if data is None:
                warn(f"{row.log}: {where} was claimed but its bytes never came (a shipper died mid-segment; the "
                     f"next ship completes it): pulled through {prev or 0}")
                break
            expect = start if prev is None else prev + 1
            hole = None
            stepped: list[RecordedGap] = []
            while expect in gaps and p.first > expect:
                g = gaps[expect]
                hole = (hole[0] if hole else g.first, g.last)
                stepped.append(RecordedGap(g.first, g.last, g.time))
                expect = g.last + 1
            if p.first != expect and not (prev is None and since is not None):
                raise BadSegment(f"{where}: starts at {p.first}, but the segment before it ended at {expect - 1}"
                                 + (" (segments overlap)" if p.first < expect else
                                    f" ({p.first - expect} events missing from the store)"))
            t0, t1 = check_segment(where, data, p.first, meta.last, meta.sha256, p.day)
            if since is not None and prev is None and t1 < since:
                last_line = data[data.rfind(b"\n", 0, len(data) - 1) + 1:]
                skipped = (meta.last, hashlib.sha256(last_line).hexdigest(), t1)
                continue  # wholly before --since: the pulled log starts at a later segment
            if hole is not None and prev is not None:
                row.gaps.append(hole)
                recorded.extend(stepped)
                warn(f"{row.log}: events {hole[0]} to {hole[1]} were dropped at the source before they were "
                     f"shipped (a gap record in {store.url}); recorded in the evidence root, whose readers get "
                     "an events.dropped there")
            write_all(fd, data)
            if prev is None:
                first_time = t0
            row.segments += 1
            row.events += data.count(b"\n")
            row.bytes += len(data)
            row.first = row.first or p.first
            row.last = prev = meta.last
        os.fsync(fd)
    finally:
        os.close(fd)
        if recorded:  # the holes written so far, even when a bad segment ends the log here
            write_gaps(log.root, log.state_key, recorded)  # durable: the evidence root is kept
    fsync_dir(path.parent)
    if start > 1 and (row.first == start or (row.first == 0 and not segs)):
        if drop_hash is None and log.is_audit and row.first:
            drop_hash = _prevhash(path)  # nothing before it to check it against: the chain goes on from it
        _write_record(log, start, drop_time, drop_hash, first_time)
        row.dropped = start - 1
    elif row.first > 1:
        # It starts later than the store's start: compacted before its first ship (the store
        # never had the start), or left out by --since. Either way the evidence root records
        # where it starts, as a compaction would, so its readers give an events.dropped and
        # `check` finds nothing wrong, rather than a missing start passed off as damage.
        h = skipped[1] if skipped is not None and skipped[0] == row.first - 1 else None
        t = skipped[2] if skipped is not None and skipped[0] == row.first - 1 else None
        if h is None and log.is_audit:
            h = _prevhash(path)  # nothing before it to check it against: the chain goes on from it
        _write_record(log, row.first, t, h, first_time)
        row.dropped = row.first - 1
    elif row.first == 0 and skipped is not None:
        # Every segment was older than --since: the log is empty here, and its record says
        # where it ends (as a compaction that dropped everything would), so its readers give an
        # events.dropped, a cursor from the source is taken, and an append would go on from it.
        _write_record(log, skipped[0] + 1, skipped[2], skipped[1], None)
        row.dropped = skipped[0]


def _prevhash(path: Path) -> str | None:
    """The ``prevhash`` of the first event in the file at ``path`` (an audit log), if any."""
    with open(path, "rb") as f:
        line = f.readline(1 << 20)
    try:
        ev = decode_event(line.rstrip(b"\n"))
    except ValueError:
        return None
    h = ev.get("prevhash")
    return h if isinstance(h, str) else None


def _write_record(log: Log, next_seq: int, drop_time: str | None, drop_hash: str | None,
                  first_time: str | None) -> None:
    """The local compaction record of a pulled log that starts at ``next_seq`` (``store.replace``'s
    format: readers accept it because the first event's sequence is ``next_seq``, or, for an
    empty log, because the inode and mtime are the file's)."""
    import orjson

    st = os.stat(log.path)
    rec = {"inode": st.st_ino, "mtime_ns": st.st_mtime_ns, "next_sequence": next_seq, "time": drop_time,
           "hash": drop_hash, "first_time_kept": first_time}
    _write_new(log.watermark_path, orjson.dumps(rec))  # durable, its directory entry too


def _write_new(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_new(path, data, durable=True)
