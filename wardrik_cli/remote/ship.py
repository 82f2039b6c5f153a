"""``ship``: a root's logs to an object store, exactly once.

Contract kept here:
- What is shipped: each log's complete lines (never a torn tail; live events are never
  stored, so never shipped), byte for byte, as segments: runs of consecutive lines of one UTC
  day (by each event's ``time``) and at most ``SEGMENT_MAX`` bytes (a single longer line goes
  alone), keyed by their first sequence (``remote.keys``). Metadata: last sequence, sha256,
  the shipping root's id (random, made once in ``.wardrik/root-id``) and where that root is.
- Position: the last sequence of a log in the store. ``.wardrik/ship/<target>.json`` caches
  it with the key of the segment that ends there; the cache is believed only after that
  segment is read back from the store (ours, ending there). Without it, the position comes
  from the store: the log's keys are listed and shipping restarts at the newest segment,
  which the conditional create below then confirms. A listing that is stale only makes the
  shipper start earlier, never later.
- Owner: ``log=ID/owner`` in the store, made once with the conditional create, names the
  root that ships the log; a second root is refused (exit 1, naming both) before it writes
  anything, even when its segments' keys (their days) differ from the first root's.
- After local compaction (the first kept sequence moved on) shipping goes on from the
  position; if events after the position were dropped before they were shipped, the log is
  refused rather than leaving a gap in the store, unless the sweep recorded that gap
  (``compact --max-ship-lag``, ``store.ship_slots``): then the gap is written to the store
  (``remote.gaps``: ``log=ID/gaps/SSSSSSSSSSSS.json``, with the conditional create, keyed by
  its first sequence like a segment) and shipping goes on after it; the local record is
  cleared once the store's position is past it.
- Registration (a replication slot): before the first segment of a run is shipped,
  ``.wardrik/ship/<target>.slot.json`` records, durably, that this root ships to the target
  (with the deployment and the patterns shipped), and local ``compact`` then keeps every
  event the target has not stored (``store.retention``). ``--forget`` removes it.
- The position read from the store also follows the log's gap records and its remote
  retention watermark (``remote.compact``): a log whose old segments were deleted there
  goes on after the watermark, never shipping them again.

Exactly once, under kill -9 at any instant and any number of shippers at once: a segment is
written only by a conditional create (``Store.create``), so at most one object ever exists
per (log, first sequence), and it is never overwritten. A shipper whose create meets an
object reads its metadata: another root's is refused; ours must hash the same as the local
lines from that first sequence through its last, and the shipper goes on after it, so it
never writes a segment starting inside one that exists. Every segment a shipper writes starts
just after the last sequence of the one before it in the store (one it wrote or confirmed),
so the store holds each log contiguous: lines 1..n in order, none twice. The local log only
grows by whole lines and compaction only drops a prefix, so the lines a key names never
change; a process killed before its create landed left nothing, after it, a whole object
that the next shipper confirms. The cache and the listing only choose where to start trying.
"""
from __future__ import annotations

import hashlib
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from wardrik_cli.errors import BadInput, CorruptLedger, Failure, NoSuchLog, NotRegular, WardrikError
from wardrik_cli.protocol.names import AUDIT_NAME, has_wildcards
from wardrik_cli.remote import gaps as remote_gaps
from wardrik_cli.remote import keys
from wardrik_cli.remote.stores import BadKey, Meta, Store
from wardrik_cli.store import lines, ship_slots
from wardrik_cli.store.fsutil import fsync_dir, read_capped, write_all, write_atomic
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import _TYPE_KEY, HEAD, Log, LogView, decode_event, peek

SEGMENT_MAX = 64 << 20  # 64 MB: one PUT, no multipart upload
ROOT_ID_FILE = "root-id"
MAX_BACKOFF = 300.0  # seconds between tries of a store that stays unreachable under --follow


class LogRefused(Failure):
    """One log cannot be shipped (two roots, a diverged log, a gap, a corrupt line); the others still are."""


# ---------------------------------------------------------------------------
# the root's identity
# ---------------------------------------------------------------------------
def root_identity(root: Root) -> tuple[str, str]:
    """(root id, host:path) of this root; the id is made once (``.wardrik/root-id``), atomically."""
    p = root.tool_dir / ROOT_ID_FILE
    where = f"{socket.gethostname()}:{root.path.resolve()}"
    for _ in range(2):
        try:
            # never through a link, never waiting on a FIFO, never more than a line
            rid = read_capped(p, 1 << 10, what="root id file").decode("ascii").strip()
            if re.fullmatch(r"[0-9a-f]{32}", rid):
                return rid, where
            raise Failure(f"{p} does not hold a root id (32 hex digits); move it away to make a new one")
        except FileNotFoundError:
            pass
        except NotRegular as e:
            raise Failure(f"{e}; move it away to make a new one") from None
        except (OSError, UnicodeDecodeError) as e:
            raise Failure(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None
        tmp = p.with_name(f".{p.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
        try:
            root.state_dir(p)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                write_all(fd, os.urandom(16).hex().encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, p)  # never replaces: two shippers starting at once agree on one id
            except FileExistsError:
                pass
            fsync_dir(p.parent)
        except OSError as e:
            raise Failure(f"cannot make {p}: {e.strerror or e}") from None
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    raise Failure(f"cannot make {p}")


# ---------------------------------------------------------------------------
# what to ship
# ---------------------------------------------------------------------------
@dataclass
class Source:
    kind: str  # keys.AGENTS or keys.AUDIT
    name: str  # the log id, or "audit"
    log: Log


def sources(root: Root, patterns: list[str] | None) -> list[Source]:
    """Every agent log and the audit log (no patterns), or the agent logs the patterns match;
    a literal pattern naming no log (nor a folder of logs) is an error."""
    root.require()
    ids = root.match(patterns or ["*"])
    for p in patterns or ():
        if not has_wildcards(p) and p not in ids and not root.is_folder(p):
            raise NoSuchLog(f"no log {p!r} under {root.path}")
    found = [Source(keys.AGENTS, i, Log.agent(root, i)) for i in ids]
    if not patterns:
        audit = Log.audit(root)
        if audit.exists():
            found.append(Source(keys.AUDIT, AUDIT_NAME, audit))
    return found


# ---------------------------------------------------------------------------
# segments
# ---------------------------------------------------------------------------
@dataclass
class Segment:
    data: bytes
    first: int
    last: int
    day: str
    end: int  # offset just past the segment in the local file

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _seq_time(view: LogView, off: int, raw: bytes) -> tuple[int, str]:
    p = peek(raw)  # lines in this tool's shape: no JSON decode
    if p is not None:
        return int(p[1]), p[2].decode("ascii", "replace")
    try:
        ev = decode_event(raw)
    except ValueError as e:
        raise view.corrupt(off, f"corrupt line ({e}): not shipped") from None
    return int(ev["sequence"]), ev["time"]


def _day(view: LogView, off: int, seq: int, t: str) -> str:
    """The UTC day a line is filed under; a time that does not parse strictly (``keys.utc_day``:
    ``T24:00:00``, ``2026-02-30``) refuses the log, as a hole does: a segment filed under a day
    readers reject, or under the wrong day, would be acknowledged and then never served (or
    pruned away), and could never be replaced."""
    try:
        return keys.utc_day(t)
    except ValueError as e:
        raise LogRefused(f"{view.log.name}: sequence {seq}: {e}, line at byte {off} in the local log (see `wardrik "
                         "check`): not shipped; a segment is filed under the UTC day of its events") from None


def build_segment(view: LogView, off: int, limit: int = SEGMENT_MAX) -> Segment:
    """The segment of the local log starting at line offset ``off``: whole lines up to the
    view's end, at most ``limit`` bytes (one longer line goes alone), all of one UTC day."""
    assert view.fd is not None
    data = os.pread(view.fd, min(limit, view.end - off), off)
    cut = data.rfind(b"\n") + 1
    if cut == 0:  # a line longer than the limit: alone in its segment
        item = lines.read_line_at(view.fd, off, view.end)
        assert item is not None  # off is a line start before the view's end
        data = item[1] + b"\n"
        cut = len(data)
    first, t = _seq_time(view, off, data[:data.find(b"\n")])
    day = _day(view, off, first, t)
    # Every line's day is looked at (about 3 ms a MB): a log written by something other
    # than append may have times that go back and forth across midnight.
    pos, last = _cut_at_day(view, off, data, cut, day)
    return Segment(data[:pos] if pos < len(data) else data, first, last, day, off + pos)


_TIME_KEY, _SEQ_KEY = b'","time":"', b'","sequence":"'
# the stored form's time of day, after its date: hour 00-23 (a ``T24:00:00`` takes the slow,
# strict path, which refuses it), UTC
_UTC_HMS = re.compile(rb"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z")


def _cut_at_day(view: LogView, off: int, data: bytes, cut: int, day: str) -> tuple[int, int]:
    """(end of the run of lines of ``day`` from the block's start, last sequence in it).

    A line in this tool's shape has its day read where ``peek`` reads its time (the first
    ``","time":"`` after the type, followed by the sequence key), without copying the line,
    when its time of day is a valid UTC one (its date is then compared with ``day``, which
    passed the strict parse); any other line is decoded (``_seq_time``) and its time parsed
    strictly (``_day``)."""
    want = day.encode()
    pos, last_start, last_nl = 0, -1, -1
    while pos < cut:
        nl = data.index(b"\n", pos)
        k = data.find(_TIME_KEY, pos + 73, nl) if data.startswith(HEAD, pos) and \
            data.startswith(_TYPE_KEY, pos + 63) else -1
        if k > 0 and data.startswith(_SEQ_KEY, k + 37) and _UTC_HMS.fullmatch(data, k + 20, k + 37):
            d = data[k + 10:k + 20]
        else:
            try:
                d = _day(view, off + pos, *_seq_time(view, off + pos, data[pos:nl])).encode()
            except LogRefused:
                if last_start < 0:
                    raise
                break  # the lines before it still ship; the segment after them starts at it, refused
        if d != want:
            break
        last_start, last_nl, pos = pos, nl, nl + 1
    if last_start < 0:
        return 0, 0
    return pos, _seq_time(view, off + last_start, data[last_start:last_nl])[0]


def _hole(name: str, view: LogView, off: int, seg: Segment, before: int) -> str:
    """What is wrong with a segment whose sequences do not run on one by one from ``before``."""
    expect = before + 1
    pos = 0
    while pos < len(seg.data):
        nl = seg.data.index(b"\n", pos)
        seq = _seq_time(view, off + pos, seg.data[pos:nl])[0]
        if seq != expect:
            what = (f"sequence {expect} is missing (the next line is {seq})" if seq > expect
                    else f"sequence {seq} repeats or goes back after {expect - 1}")
            return (f"{name}: {what} in the local log, line at byte {off + pos} (see `wardrik check`): not "
                    "shipped; a stored segment must hold every sequence, once")
        expect, pos = seq + 1, nl + 1
    return f"{name}: the segment from sequence {seg.first} does not hold one line per sequence: not shipped"


def local_run(view: LogView, off: int, last: int) -> tuple[bytes, int] | None:
    """The local lines from ``off`` through the one whose sequence is ``last`` (reading past the
    view's snapshot: the log may have grown since), and the offset after them; None when the
    local log has no such run (it was rewritten, or is behind the store)."""
    assert view.fd is not None
    parts: list[bytes] = []
    for at, raw in lines.iter_lines(view.fd, off, None):
        seq, _ = _seq_time(view, at, raw)
        parts.append(raw)
        if seq >= last:
            return (b"\n".join(parts) + b"\n", at + len(raw) + 1) if seq == last else None
    return None


# ---------------------------------------------------------------------------
# the position cache
# ---------------------------------------------------------------------------
class PositionCache:
    """``.wardrik/ship/<hash of target>.json``: ``{"target", "logs": {D/kind/name: {"last", "key", "owner"}}}``.
    A cache only: every entry is checked against the store before it is used."""

    def __init__(self, root: Root, target: str):
        # store.ship_slots reads it too: the replication slot's confirmed positions
        self.root = root
        self.path = ship_slots.positions_path(root, target)
        self.target = ship_slots.normal_url(target)
        self.logs: dict[str, dict[str, Any]] = {}
        self.dirty = False
        try:
            d = orjson.loads(root.read_state(self.path, ship_slots.MAX_BYTES) or b"null")
            if isinstance(d, dict) and d.get("target") == self.target and isinstance(d.get("logs"), dict):
                self.logs = {k: v for k, v in d["logs"].items() if isinstance(v, dict)}
        except (OSError, ValueError):
            pass  # missing or damaged: the store says where to go on

    def get(self, ident: str) -> dict[str, Any] | None:
        return self.logs.get(ident)

    def put(self, ident: str, **entry: Any) -> None:
        self.logs[ident] = entry
        self.dirty = True

    def drop(self, ident: str) -> None:
        if self.logs.pop(ident, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.root.state_dir(self.path)
            write_atomic(self.path, orjson.dumps({"target": self.target, "logs": self.logs}), durable=False)
            self.dirty = False
        except (OSError, NotRegular):
            pass  # a cache: the next run finds its way from the store


# ---------------------------------------------------------------------------
# shipping
# ---------------------------------------------------------------------------
@dataclass
class LogShipped:
    log: str
    kind: str
    segments: int = 0
    events: int = 0
    bytes: int = 0
    confirmed: int = 0  # segments found already shipped (by this root)
    through: int = 0  # last sequence in the store
    gaps: list[tuple[int, int]] = field(default_factory=list)  # gaps written to the store
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "kind": self.kind, "segments": self.segments, "events": self.events,
                "bytes": self.bytes, "through": self.through,
                **({"gaps": [list(g) for g in self.gaps]} if self.gaps else {}),
                **({"error": self.error} if self.error else {})}


@dataclass
class ShipResult:
    logs: list[LogShipped] = field(default_factory=list)

    @property
    def failed(self) -> list[LogShipped]:
        return [r for r in self.logs if r.error]

    def to_json(self) -> dict[str, Any]:
        shipped = [r for r in self.logs if r.segments or r.error or r.gaps]
        return {"logs": [r.to_json() for r in shipped], "segments": sum(r.segments for r in self.logs),
                "events": sum(r.events for r in self.logs), "bytes": sum(r.bytes for r in self.logs)}


class Shipper:
    """Ships a root's logs to one store; keep one per process (it remembers positions it has
    confirmed, so ``--follow`` asks the store only about what is new)."""

    def __init__(self, root: Root, store: Store, deployment: str, *, warn: Callable[[str], None],
                 stop: Callable[[], bool] = lambda: False, segment_max: int = SEGMENT_MAX,
                 patterns: list[str] | None = None):
        root.require_made("ship")
        # its identity, registration and positions are kept under .wardrik/ (as append and
        # compact, refused on a read-only root before anything is written)
        root.require_writable("ship")
        was = ship_slots.registered_deployment(root, store.url)
        if was is not None and was[0] != deployment:
            # the store's keys hold the deployment: shipping as another one would store every
            # log again from its first event, each event twice in the fleet
            raise BadInput(f"this root ships to {store.url} as deployment {was[0]!r} (since {was[1] or '?'}), "
                           f"not {deployment!r}: its logs would be in the store twice; ship with --deployment "
                           f"{was[0]}, or run `wardrik ship --forget {store.url}` first to ship them anew as "
                           f"{deployment!r}")
        self.root, self.store, self.deployment = root, store, deployment
        self.patterns = list(patterns) if patterns else None
        self.registered = False
        self.gaps_done: dict[tuple[str, str], int] = {}  # logs whose local gap record the store now covers
        self.warn, self.stop, self.segment_max = warn, stop, segment_max
        self.root_id, self.where = root_identity(root)
        self.cache = PositionCache(root, store.url)
        self.known: dict[str, int] = {}  # positions this process confirmed in the store
        self.known_ino: dict[str, int | None] = {}  # the local file each was confirmed against
        self.retry_key: dict[str, str] = {}  # the store's newest key, tried again from the listing
        self.wm_hash: dict[str, str | None] = {}  # a position from the store's watermark: its last line's hash
        self.owned: set[str] = set()
        self.refused: dict[str, str] = {}  # logs refused for good (two roots): not tried again

    def ship(self, srcs: list[Source]) -> ShipResult:
        result = ShipResult()
        try:
            for src in srcs:
                if self.stop():
                    break
                row = LogShipped(src.name, src.kind)
                result.logs.append(row)
                ident = f"{self.deployment}/{src.kind}/{src.name}"
                if ident in self.refused:
                    continue
                try:
                    self._ship_log(src, ident, row)
                except (LogRefused, CorruptLedger, NotRegular, BadKey) as e:
                    # BadKey: a listing of this log's keys met one the client cannot take;
                    # the other logs' listings do not meet it
                    row.error = str(e)
                    if isinstance(e, LogRefused) and "two roots" in str(e):
                        self.refused[ident] = str(e)
        finally:
            self.cache.save()
            if self.gaps_done:
                ship_slots.clear_gaps(self.root, self.store.url, self.gaps_done)
                self.gaps_done = {}
        return result

    def _register(self) -> None:
        """The durable registration, once per process, before anything is shipped: from now
        on local compaction keeps what this target lacks."""
        if not self.registered:
            ship_slots.register(self.root, self.store.url, self.deployment, self.patterns)
            self.registered = True

    # -- one log -------------------------------------------------------------------
    def _prefix(self, src: Source) -> str:
        return keys.log_prefix(self.store.prefix, self.deployment, src.kind, src.name)

    def _ship_log(self, src: Source, ident: str, row: LogShipped) -> None:
        with src.log.open() as view:
            if view.fd is None:
                return
            view.ends_from_bytes = True
            last_local = view.last_seq()
            pos = self.known.get(ident)
            if pos is not None and self.known_ino.get(ident) != view.ino:
                pos = None  # another file now (compaction, or the log made again): confirm it anew
            if pos is not None and pos >= last_local:
                row.through = pos
                return  # nothing new since this process last confirmed the store
            first_local = view.first_seq()
            if pos is None:
                pos, cached = self._position(src, ident, first_local, view)
                if not cached:
                    self._own(src, ident)  # a confirmed cache entry is a segment of ours: we own the log
                if pos > last_local:
                    raise LogRefused(f"{src.name}: {self.store.url} holds it through sequence {pos}, shipped from "
                                     f"this root, but the local log ends at {last_local}: it was deleted and made "
                                     "again, or put back from an older copy; not shipped (its events would mix "
                                     "with the ones shipped before under these sequences: give it another log id)")
            self.known_ino[ident] = view.ino
            self._register()
            if pos + 1 < first_local:
                if pos > 0:
                    pos, _ = self._position(src, ident, first_local, view, from_store=True)  # the cache may be behind
                if pos + 1 < first_local:
                    pos = self._write_gaps(src, ident, pos, first_local, row)
                if pos + 1 < first_local and pos > 0:
                    raise LogRefused(f"{src.name}: events {pos + 1} to {first_local - 1} were compacted away here "
                                     f"before they were shipped to {self.store.url} (shipped through {pos}), and no "
                                     "sweep recorded it (compact --max-ship-lag does); refusing to leave a gap in "
                                     "the store")
            if pos == 0 and first_local > 1:
                self.warn(f"{src.name}: the store has none of this log and its first {first_local - 1} events were "
                          f"compacted away here; shipping from {first_local}")
                self._write_start(src, view, first_local)
            self._ship_from(src, ident, view, pos, row)

    def _own(self, src: Source, ident: str) -> None:
        """Make sure this root is the log's one shipper in the store (``log=ID/owner``)."""
        if ident in self.owned:
            return
        key = self._prefix(src) + "owner"
        body = orjson.dumps({"root_id": self.root_id, "root": self.where}) + b"\n"  # never empty: a ranged GET reads it
        mine = Meta(0, hashlib.sha256(body).hexdigest(), self.root_id, self.where)
        if not self.store.create(key, body, mine):
            theirs = self.store.read_meta(key)
            if theirs is not None and theirs.root_id != self.root_id:
                raise self._two_roots(src, theirs)
        self.owned.add(ident)

    def _two_roots(self, src: Source, theirs: Meta) -> LogRefused:
        return LogRefused(f"{src.name}: two roots ship this log id to {self.store.url}: root {theirs.root_id} "
                          f"({theirs.root}) and this root, {self.root_id} ({self.where}); a log has one writer: "
                          f"give one of them another --deployment, or another log id")

    def _position(self, src: Source, ident: str, first_local: int, view: LogView | None = None,
                  from_store: bool = False) -> tuple[int, bool]:
        """(the last sequence of this log in the store, whether the cache said so): the cache
        when the segment it names is ours and ends there and the local line at that sequence is
        still the one shipped (the hash the cache kept of it: a log deleted and made again has
        other lines under the same sequences), else from the store's listing."""
        entry = None if from_store else self.cache.get(ident)
        if entry is not None:
            try:
                last, key = int(entry["last"]), str(entry["key"])
            except (KeyError, TypeError, ValueError):
                last, key = -1, ""
            tail = entry.get("tail")
            mine = _line_hash(view, last) if view is not None and last > 0 else None
            if mine is not None and tail is not None and mine != tail:
                raise LogRefused(f"{src.name}: the local line at sequence {last} is not the one shipped to "
                                 f"{self.store.url}: the log was deleted and made again, or rewritten; not shipped "
                                 "(its events would mix with the ones shipped before: give it another log id)")
            meta = self.store.read_meta(key) if last > 0 and key.startswith(self._prefix(src)) \
                and (tail is not None or mine is None) else None
            if meta is not None and meta.root_id == self.root_id and meta.last == last:
                return last, True
            self.cache.drop(ident)  # not confirmed (or kept by a version that kept no hash): ask the store
        best: keys.Parsed | None = None
        others: list[remote_gaps.Other] = []
        for k in self.store.list_all(self._prefix(src)):
            p = keys.parse_key(self.store.prefix, k)
            if p is None:
                o = remote_gaps.parse_other(self.store.prefix, k)
                if o is not None and o.kind == src.kind and o.name == src.name and o.deployment == self.deployment:
                    others.append(o)
                continue
            if p.kind == src.kind and p.name == src.name and p.deployment == self.deployment \
                    and (best is None or p.first > best.first):
                best = p
        wm = remote_gaps.latest_watermark(self.store, others)
        pos = 0
        if best is not None and best.first >= first_local:
            pos = best.first - 1  # try it again: the conditional create confirms it against the local lines
            self.retry_key[ident] = best.key
            if view is not None and best.first > view.last_seq():
                # no local line to try it with: the store is ahead of the local log
                meta = self.store.read_meta(best.key)
                if meta is not None and meta.root_id == self.root_id:
                    pos = meta.last
        elif best is not None:
            meta = self.store.read_meta(best.key)
            if meta is None:
                pos = best.first - 1
            elif meta.root_id != self.root_id:
                raise self._two_roots(src, meta)
            else:
                pos = meta.last  # its lines are compacted away here: its metadata is all there is to go on
        if wm is not None and wm.next_sequence - 1 > pos:
            pos = wm.next_sequence - 1  # remote retention deleted what came before: never shipped again
            self.wm_hash[ident] = wm.hash
        return self._after_gaps(src, pos, others), False

    def _after_gaps(self, src: Source, pos: int, others: list[remote_gaps.Other]) -> int:
        """The position after the store's gap records that follow ``pos`` one after another."""
        for g in remote_gaps.gaps_of(self.store, others, pos + 1):
            if g.first != pos + 1:
                break
            if g.root_id != self.root_id:
                raise self._two_roots(src, Meta(g.last, "0" * 64, g.root_id, "?"))
            pos = g.last
        return pos

    def _write_start(self, src: Source, view: LogView, first_local: int) -> None:
        """The store gets none of this log's first events (compacted here before its first
        ship): its compaction record goes to the store as the log's watermark, as a remote
        sweep writes one, so remote readers and pulls know where it starts and that the events
        before were dropped (a log compacted to nothing was not there at all for them). Only
        from this tool's own record of the cut; without one, nothing is claimed."""
        wm = view.watermark()
        if wm is None or wm.next_sequence != first_local:
            return
        body = remote_gaps.watermark_body(first_local, wm.time, wm.hash, wm.first_time_kept, None,
                                          first_local - 1, None, self.where)
        key = remote_gaps.watermark_key(self._prefix(src), first_local)
        self.store.create(key, body, Meta(first_local - 1, hashlib.sha256(body).hexdigest(), self.root_id, self.where))

    def _write_gaps(self, src: Source, ident: str, pos: int, first_local: int, row: LogShipped) -> int:
        """Events ``pos + 1`` to ``first_local - 1`` are gone here: when a sweep recorded
        dropping them (``--max-ship-lag``), write that gap to the store; the new position."""
        kind, name = src.kind, src.name
        rec = ship_slots.read_gap(self.root, self.store.url, kind, name)
        while rec is not None and pos + 1 < first_local and rec.first <= pos + 1 and rec.last >= first_local - 1:
            first, last = pos + 1, first_local - 1
            key = remote_gaps.gap_key(self._prefix(src), first)
            body = orjson.dumps({"first": first, "last": last, "count": last - first + 1, "time": rec.time,
                                 "root_id": self.root_id, "root": self.where,
                                 "reason": "dropped at the source by compact --max-ship-lag before it was shipped"})
            if self.store.create(key, body + b"\n", Meta(last, hashlib.sha256(body + b"\n").hexdigest(),
                                                         self.root_id, self.where)):
                row.gaps.append((first, last))
                self.warn(f"{name}: events {first} to {last} were dropped here before they were shipped (compact "
                          f"--max-ship-lag); recorded as a gap in {self.store.url}")
                pos = last
            else:
                theirs = self.store.read_meta(key)  # another shipper of this root wrote it first
                if theirs is None:
                    raise Failure(f"{self.store.where(key)}: the store said it exists, then that it does not")
                if theirs.root_id != self.root_id:
                    raise self._two_roots(src, theirs)
                pos = theirs.last
            self.cache.put(ident, last=pos, key=key, owner=self.root_id)
            self.known[ident] = pos
        if rec is not None and pos >= rec.last:
            self.gaps_done[(kind, name)] = pos
        return pos

    def _ship_from(self, src: Source, ident: str, view: LogView, pos: int, row: LogShipped) -> None:
        off = view.offset_after_seq(pos)
        row.through = pos
        wm_hash = self.wm_hash.pop(ident, None)
        if off >= view.end and wm_hash is not None and self.cache.get(ident) is None \
                and _line_hash(view, pos, newline=True) == wm_hash:
            # Nothing to ship, and the store's position comes from its watermark (remote
            # retention deleted every segment), whose record of the last line it dropped is
            # the local line there: local compaction reads the position (without it, every
            # event of an idle log was held back for good). Only so: a position merely
            # guessed from a listing is confirmed by a segment's create first. No key: the
            # next ship asks the store again.
            self.cache.put(ident, last=pos, key="", owner=self.root_id, tail=None)
        while off < view.end and not self.stop():
            seg = build_segment(view, off, self.segment_max)
            if seg.first <= pos:
                raise LogRefused(f"{src.name}: sequence {seg.first} follows {pos} in the local log: not shipped")
            if (pos > 0 and seg.first != pos + 1) or seg.data.count(b"\n") != seg.last - seg.first + 1:
                # a line deleted or repeated by hand: a segment must hold one line per sequence
                # (readers refuse one that does not, for good: it can never be replaced)
                raise LogRefused(_hole(src.name, view, off, seg, pos if pos > 0 else seg.first - 1))
            key = keys.segment_key(self.store.prefix, self.deployment, src.kind, src.name, seg.day, seg.first)
            tried = self.retry_key.pop(ident, None)
            was = keys.parse_key(self.store.prefix, tried) if tried is not None and tried != key else None
            if tried is not None and was is not None and was.first == seg.first:
                # the local line at that sequence is of another day than the one shipped: not the same log
                raise LogRefused(f"{src.name}: {self.store.where(tried)} (shipped from this root) holds other events "
                                 f"than the local log from sequence {seg.first}: the log was deleted and made again, "
                                 "or rewritten; not shipped (give it another log id)")
            sha = seg.sha256
            if self.store.create(key, seg.data, Meta(seg.last, sha, self.root_id, self.where)):
                row.segments += 1
                row.events += seg.data.count(b"\n")
                row.bytes += len(seg.data)
                pos, off = seg.last, seg.end
            else:
                pos, off = self._confirm(src, view, key, seg, sha)
                row.confirmed += 1
            row.through = pos
            self.known[ident] = pos
            self.cache.put(ident, last=pos, key=key, owner=self.root_id, tail=_line_hash(view, pos))

    def _confirm(self, src: Source, view: LogView, key: str, seg: Segment, sha: str) -> tuple[int, int]:
        """A segment is already at ``key``: it must be this root's and hold exactly the local
        lines from its first sequence through its last. Returns (its last sequence, the local
        offset after it)."""
        theirs = self.store.read_meta(key)
        if theirs is None:
            raise Failure(f"{self.store.where(key)}: the store said it exists, then that it does not "
                          "(is something deleting segments?)")
        if theirs.root_id != self.root_id:
            raise self._two_roots(src, theirs)
        if theirs.last == seg.last and theirs.sha256 == sha:
            self.store.complete(key, seg.data)
            return seg.last, seg.end
        run = local_run(view, seg.end - len(seg.data), theirs.last) if theirs.last >= seg.first else None
        if run is None or hashlib.sha256(run[0]).hexdigest() != theirs.sha256:
            raise LogRefused(f"{src.name}: {self.store.where(key)} (shipped from this root) does not hold the local "
                             f"lines {seg.first} to {theirs.last}: the local log was rewritten, or a copy of this "
                             "root ships too (each root needs its own .wardrik/root-id)")
        self.store.complete(key, run[0])
        return theirs.last, run[1]


def _line_hash(view: LogView, seq: int, *, newline: bool = False) -> str | None:
    """sha256 of the local line holding sequence ``seq`` (without its newline; with it when
    ``newline``, as a compaction record hashes a line), or None when the local log does not
    hold it (compacted away, past its end, or damaged there)."""
    if view.fd is None or not view.first_seq() <= seq <= view.last_seq():
        return None
    off = view.offset_after_seq(seq - 1)
    item = lines.read_line_at(view.fd, off, view.end)
    if item is None:
        return None
    try:
        if _seq_time(view, off, item[1])[0] != seq:
            return None
    except (CorruptLedger, LogRefused):
        return None
    return hashlib.sha256(item[1] + b"\n" if newline else item[1]).hexdigest()


def ship_forever(shipper: Shipper, srcs: Callable[[], list[Source]], *, interval: float,
                 on_pass: Callable[[ShipResult], None], on_unreachable: Callable[[WardrikError, float], None],
                 sleep: Callable[[float], None] = time.sleep) -> None:
    """``ship --follow``: a pass every ``interval`` seconds until ``shipper.stop()``; an
    unreachable store is tried again with exponential backoff (1 s, doubling up to ``MAX_BACKOFF``),
    whatever the interval: a store that comes back is used again soon, one that stays down is
    not hammered."""
    from wardrik_cli.remote.stores import Unreachable

    backoff = 1.0
    while not shipper.stop():
        try:
            on_pass(shipper.ship(srcs()))
            backoff = 1.0
            wait = interval
        except Unreachable as e:
            wait = backoff
            on_unreachable(e, wait)
            backoff = min(backoff * 2, MAX_BACKOFF)
        sleep(wait)

