"""Remote reads: a local mirror of a store's segments, synced before each read of ``--root s3://...``.

The readers (``page``, ``head``, ``tail``, ``fold``, ``activity``, ``check``, ``audit page``,
``sql``) run unchanged on a local root that mirrors the store, so a remote read gives the same
output, cursors and notice ids as the local root that shipped it, by construction.

Contract kept here:
- Where: ``CACHE/mirrors/<hash of (url, endpoint, deployment)>/``: ``root/`` (an ordinary
  root: ``root/<log id>.jsonl``, ``root/.wardrik/audit.jsonl``, ``config.toml`` naming the
  deployment, and compaction records), ``state.json`` (what each mirrored file holds) and
  ``lock``. The mirror is a cache: deleting it loses nothing, and a mirror whose state does
  not match its files (a sync killed part-way) is emptied and fetched again.
- One sync at a time: every change to a mirror is made holding an exclusive ``flock`` on
  ``lock`` (several commands sharing a mirror queue; the kernel drops a dead holder's lock).
  Readers of the mirror take no lock: a mirrored file only grows by whole verified segments,
  and when it must lose or gain a start (below) it is replaced by rename, so a reader that
  opened it keeps its snapshot.
- Nothing unverified is served: a segment's bytes must hash to the sha256 in its metadata,
  be whole lines from its key's first sequence through its metadata's last (one line per
  sequence), and follow what the mirror holds (first = last + 1). A segment that fails is
  ``BadSegment`` (exit 1) naming its key; it and everything after it in its log are never
  written to the mirror. ``check`` (``verify``) reads every segment again, and compares it
  with the mirrored bytes too: a segment changed in the store after it was mirrored is reported.
- Incremental: a sync lists the needed logs' keys and fetches only segments the mirror lacks.
  A reader that starts from a cursor needs each log only from the segment holding the
  cursor's next sequence (keys carry first sequences), so a page after a cursor near the end
  of a big log fetches one segment; such a mirror is *partial* and is completed (its earlier
  segments prepended) before any read that needs them. ``head`` needs only each log's last segment.
  ``sql`` on a remote root (``read.sql.scope``) needs only the logs its WHERE names, and of
  each only the segments from the first whose day is at or after its lower bound on time (a
  log with none: its last segment); so ``WHERE log = 'x'`` lists and fetches that log alone.
- Starts: a log whose store starts after sequence 1 (compacted before its first ship, or by
  a remote sweep) gets a compaction record (``.wardrik/watermarks/``) saying so, with the time
  and hash of the last dropped line when the mirror held it (for the audit log without it, the
  first line's prevhash: the chain is verified from there on), so readers give
  ``events.dropped`` as on the local root. When the store's first segment moves past what the
  mirror holds, the mirror drops the same prefix, as local compaction would. Gap records
  (``remote.gaps``: events the shipping root dropped before it shipped them,
  ``compact --max-ship-lag``) at the log's start move that start on, dated by the last one.
- Gap records between two segments: the mirrored file holds the segments on both sides of
  the hole, and the mirror's root records each gap stepped over (``store.recorded_gaps``:
  first, last, the record's time), so readers give an ``events.dropped`` at the hole's place,
  not a sequence-gap warning, and ``check`` does not report it. The record is written before
  the bytes after the hole (a reader never meets the hole unrecorded), kept in the state
  (``gaps``), grows as an incremental sync steps over new gaps, loses the gaps below a new
  start, and goes with the log's file.
- A log whose segments are all gone from the store (and that the sync's listing covered)
  leaves the mirror.
- The store is never written.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from wardrik_cli.errors import BadInput, Failure, NoSuchRoot
from wardrik_cli.protocol.names import (
    AUDIT_NAME, has_wildcards, is_deployment, pattern_regex, validate_deployment, validate_pattern,
)
from wardrik_cli.remote import gaps, keys
from wardrik_cli.remote.stores import FolderStore, Meta, S3Store, Store, bad_key
from wardrik_cli.store import lines
from wardrik_cli.store.fsutil import write_all, write_atomic
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, decode_event, peek
from wardrik_cli.store.recorded_gaps import RecordedGap, gaps_path, write_gaps

STATE_VERSION = 1
FETCH_AHEAD = 4  # segments fetched at once (obstore releases the GIL): a cold mirror fills at link speed
LOCK_WAIT_S = 900.0  # another command's sync of a big cold log may take minutes: wait for it, then reuse it


class BadSegment(Failure):
    """A segment in the store that is not what its key and metadata say: never served."""


class Need:
    """What one command reads, so that a sync fetches only that.

    ``patterns``: the agent logs (None: no agent log); ``audit``: the audit log too;
    ``after``: a cursor's positions (a log in it is needed from the segment holding
    position + 1; others from their start); ``ends``: only each log's last segment (``head``);
    ``verify``: read every segment again (``check``); ``since_day``: only segments of that UTC
    day (``YYYY-MM-DD``) and later, from the first such segment on (``sql``)."""

    __slots__ = ("patterns", "audit", "after", "ends", "verify", "since_day")

    def __init__(self, patterns: list[str] | None = None, *, audit: bool = False,
                 after: Mapping[str, int] | None = None, ends: bool = False, verify: bool = False,
                 since_day: str | None = None):
        self.patterns, self.audit, self.after = patterns, audit, dict(after or {})
        self.ends, self.verify, self.since_day = ends, verify, since_day


class SyncReport:
    """What a sync did (for tests, benchmarks and ``-v`` notes): segments and bytes fetched."""

    def __init__(self) -> None:
        self.listed = 0
        self.fetched = 0
        self.bytes = 0
        self.strangers: list[str] = []  # keys listed that are no segment, record or owner of wardrik's


def cache_dir(env: Mapping[str, str]) -> Path:
    """``$WARDRIK_CACHE``, else ``$XDG_CACHE_HOME/wardrik``, else ``~/.cache/wardrik``."""
    if env.get("WARDRIK_CACHE"):
        return Path(env["WARDRIK_CACHE"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "wardrik"
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".cache" / "wardrik"


def store_deployments(store: Store) -> list[str]:
    """The deployments shipped under the store's prefix (one delimited listing, not every key)."""
    base = keys.base(store.prefix)
    found: list[str] = []
    if isinstance(store, S3Store):
        try:
            got = store.obs.list_with_delimiter(store.s3, base)
        except store.obs.exceptions.InvalidPathError as e:
            raise bad_key(store.url, store.bucket, e) from None
        except Exception as e:  # noqa: BLE001 - obstore raises several kinds: each becomes one line
            raise store._fail(e, f"listing {base}") from None
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in got["common_prefixes"]]
    elif isinstance(store, FolderStore):
        if not store.path.is_dir():
            # a reader's root that is not there is bad input, as a local root that is not there
            raise NoSuchRoot(f"{store.url}: {store.path} is not a directory (mount the share, or give another URL)")
        try:
            names = os.listdir(store.path / base)
        except FileNotFoundError:
            names = []
        except OSError as e:
            raise Failure(f"{store.url}: cannot list {base}: {e.strerror or e}") from None
    else:  # another kind of store: every key, once
        names = sorted({"deployment=" + p.deployment for k in store.list(base)
                        if (p := keys.parse_key(store.prefix, k)) is not None})
    for n in names:
        if n.startswith("deployment="):
            found.append(n[len("deployment="):])
    # A folder under the prefix named as no deployment can be (``deployment=..``, planted) is no
    # deployment: it never makes every reader ask which one to read.
    return sorted({d for d in found if is_deployment(d)})


def open_mirror(url: str, env: Mapping[str, str], given: str | None, *,
                warn: Callable[[str], None] = lambda m: None) -> Mirror:
    """The mirror of the store at ``url`` (``given``: the deployment asked for, if any) in the
    cache folder ``env`` names."""
    from wardrik_cli.remote.stores import open_store

    store = open_store(url, env)
    deployment = choose_deployment(store, given)
    endpoint = "" if url.startswith("file://") else \
        env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT") or ""
    return Mirror(store, deployment, cache_dir(env), endpoint=endpoint, warn=warn)


def choose_deployment(store: Store, given: str | None) -> str:
    """``given`` (``--deployment`` or ``$WARDRIK_DEPLOYMENT``), else the one deployment under
    the prefix; several: BadInput naming them. An empty store mirrors as ``local``."""
    if given is not None:
        return validate_deployment(given)
    found = store_deployments(store)
    if len(found) > 1:
        raise BadInput(f"{store.url} holds the logs of several deployments ({', '.join(found)}): "
                       "pick one with --deployment")
    return found[0] if found else "local"


def _matcher(patterns: list[str]) -> Callable[[str], bool]:
    """A log id matched as ``Root.match`` would: a glob, or a literal naming the log or a folder of logs."""
    literal = [p for p in patterns if not has_wildcards(p)]
    rxs = [pattern_regex(p) for p in patterns if has_wildcards(p)]

    def match(name: str) -> bool:
        return any(name == p or name.startswith(p + "/") for p in literal) or any(rx.fullmatch(name) for rx in rxs)
    return match


def _literal_logs(patterns: list[str]) -> list[str] | None:
    """The log ids the patterns name, when none has a wildcard (each then listed alone); else None."""
    if any(has_wildcards(p) for p in patterns):
        return None
    return sorted(set(patterns))


# ---------------------------------------------------------------------------
# the mirror
# ---------------------------------------------------------------------------
class Mirror:
    """The mirror of one store (and deployment) in a cache folder."""

    def __init__(self, store: Store, deployment: str, cache: Path, *, endpoint: str = "",
                 warn: Callable[[str], None] = lambda m: None):
        self.store, self.deployment, self.warn = store, deployment, warn
        ident = "\0".join((store.url.rstrip("/"), endpoint, deployment))
        self.dir = cache / "mirrors" / hashlib.sha256(ident.encode()).hexdigest()[:32]
        self.root = Root(self.dir / "root")
        self.state_path = self.dir / "state.json"
        self.state: dict[str, dict[str, Any]] = {}
        self.report = SyncReport()
        self.gaps: dict[int, Any] = {}  # the gap records of the log being synced, by first sequence
        self._gap_read: dict[str, gaps.Gap | None] = {}  # gap objects read in this sync, by key

    # -- the lock and the state ---------------------------------------------------------
    def _lock(self) -> int:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise Failure(f"cannot make the mirror of {self.store.url} in {self.dir}: {e.strerror or e} "
                          "(set WARDRIK_CACHE to a folder of your own)") from None
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise Failure(f"timed out waiting for another wardrik syncing the mirror {self.dir}") from None
                time.sleep(0.02)

    def _load(self) -> None:
        """The state, checked against the files: a log whose file is not what the state says
        (a sync killed between writing it and saving the state) is forgotten and fetched again;
        no readable state at all empties the mirror (nothing in it can be vouched for)."""
        try:
            d = orjson.loads(self.state_path.read_bytes())
            ok = isinstance(d, dict) and d.get("version") == STATE_VERSION and isinstance(d.get("logs"), dict)
        except (OSError, ValueError):
            ok, d = False, {}
        if not ok:
            shutil.rmtree(self.root.path, ignore_errors=True)
            self.state = {}
        else:
            self.state = {k: v for k, v in d["logs"].items() if isinstance(v, dict)}
        for ident in list(self.state):
            st = self.state[ident]
            try:
                size = os.stat(self._log(ident).path).st_size
            except OSError:
                size = -1
            if size != st.get("size"):
                self._forget(ident)
        self.root.path.mkdir(parents=True, exist_ok=True)
        cfg = self.root.config_path
        want = f'deployment = "{self.deployment}"\n'.encode()
        try:
            same = cfg.read_bytes() == want
        except OSError:
            same = False
        if not same:
            cfg.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cfg, want, durable=False)

    def _save(self) -> None:
        write_atomic(self.state_path, orjson.dumps({"version": STATE_VERSION, "url": self.store.url,
                                                    "deployment": self.deployment, "logs": self.state}),
                     durable=False)  # a cache: a state lost with its files is fetched again

    def _log(self, ident: str) -> Log:
        kind, name = ident.split("/", 1)
        return Log.audit(self.root) if kind == keys.AUDIT else Log.agent(self.root, name)

    def _forget(self, ident: str) -> None:
        log = self._log(ident)
        for p in (log.path, log.watermark_path, gaps_path(self.root, log.state_key)):
            try:
                p.unlink()
            except OSError:
                pass
        self.state.pop(ident, None)

    # -- the sync -------------------------------------------------------------------------
    def sync(self, need: Need) -> Root:
        """Bring the mirror up to what ``need`` reads; the mirror's root. ``BadSegment`` when a
        needed segment is not what its metadata says (the logs before it are still synced)."""
        fd = self._lock()
        self._gap_read = {}  # a gap object is written once, but a remote sweep may delete it since
        try:
            self._load()
            bad: list[BadSegment] = []
            for (kind, name), segs, others in self._listing(need):
                ident = f"{kind}/{name}"
                if not segs and not any(o.what in ("watermark", "gaps") for o in others):
                    if ident in self.state:
                        self._forget(ident)  # gone from the store: it leaves the mirror too
                    continue
                try:
                    self._sync_log(ident, segs, others, need)
                except BadSegment as e:
                    bad.append(e)
                finally:
                    self._save()
            if bad:
                for other in bad[1:]:
                    self.warn(str(other))
                raise bad[0]
        finally:
            os.close(fd)
        return self.root

    def _listing(self, need: Need) -> Iterator[tuple[tuple[str, str], list[keys.Parsed], list[Any]]]:
        """((kind, name), that log's segments by first sequence, its other objects: watermarks and
        gap records) for every log the need covers, and every mirrored one the listing covered
        (with no segments: gone from the store)."""
        base = keys.base(self.store.prefix) + f"deployment={self.deployment}/"
        found: dict[tuple[str, str], tuple[dict[int, keys.Parsed], list[Any]]] = {}
        matched: Callable[[str], bool] = lambda name: False  # noqa: E731
        if need.patterns is not None:
            for p in need.patterns:
                validate_pattern(p)
            matched = _matcher(need.patterns)
            agents = base + f"kind={keys.AGENTS}/"
            # Stores list whole path segments: a literal id is its own folder of keys
            # (``log=acme~triage/``); a pattern, or a literal naming a folder of logs, lists them all.
            literal = _literal_logs(need.patterns)
            prefixes = [f"{agents}log={p.replace('/', '~')}/" for p in literal] if literal is not None else [agents]
            for prefix in prefixes:
                got = self._list_log_objects(prefix, keys.AGENTS, matched, found)
                if literal is not None and not got and agents not in prefixes:
                    prefixes.append(agents)  # a literal naming no log may name a folder of logs
        if need.audit:
            found.setdefault((keys.AUDIT, AUDIT_NAME), ({}, []))
            self._list_log_objects(keys.log_prefix(self.store.prefix, self.deployment, keys.AUDIT, AUDIT_NAME),
                                   keys.AUDIT, lambda name: name == AUDIT_NAME, found)
        for ident in list(self.state):
            kind, name = ident.split("/", 1)
            if (kind, name) not in found and ((kind == keys.AGENTS and matched(name)) or
                                              (kind == keys.AUDIT and need.audit)):
                found[(kind, name)] = ({}, [])
        for (kind, name), (by_first, others) in sorted(found.items()):
            yield (kind, name), [by_first[f] for f in sorted(by_first)], others

    def _list_log_objects(self, prefix: str, kind: str, matched: Callable[[str], bool],
                          found: dict[tuple[str, str], tuple[dict[int, keys.Parsed], list[Any]]]) -> int:
        """List ``prefix`` once: segments, and the watermarks and gap records beside them."""
        n = 0
        for k in self.store.list_all(prefix):
            p = keys.parse_key(self.store.prefix, k)
            if p is not None:
                if p.deployment == self.deployment and p.kind == kind and matched(p.name):
                    by_first, others = found.setdefault((p.kind, p.name), ({}, []))
                    if p.first in by_first and by_first[p.first].key != p.key:
                        others.append(_Duplicate(p.key, p.first))  # one first sequence under two days
                    else:
                        by_first[p.first] = p
                    n += 1
                continue
            o = gaps.parse_other(self.store.prefix, k)
            if o is None:
                self.report.strangers.append(k)  # left out; check says so (a segment renamed away?)
            elif o.what != "owner" and o.deployment == self.deployment and o.kind == kind and matched(o.name):
                found.setdefault((o.kind, o.name), ({}, []))[1].append(o)
                n += 1
        self.report.listed += n
        return n

    def _want(self, ident: str, segs: list[keys.Parsed], need: Need) -> int:
        """Index of the first segment this need reads."""
        name = ident.split("/", 1)[1]
        if need.verify:
            return 0
        if need.ends:
            return len(segs) - 1
        if need.since_day is not None:
            return next((j for j, s in enumerate(segs) if s.day >= need.since_day), len(segs) - 1)
        pos = need.after.get(name)
        if pos is None:
            return 0
        i = 0
        for j, s in enumerate(segs):
            if s.first <= pos + 1:
                i = j
        return i

    def _sync_log(self, ident: str, segs: list[keys.Parsed], others: list[Any], need: Need) -> None:
        log = self._log(ident)
        # The store's retention watermark (the highest): segments below it are left-overs of a
        # sweep that did not finish, never read; the log starts at its next sequence.
        wm = gaps.latest_watermark(self.store, others) if any(o.what == "watermark" for o in others) else None
        if wm is not None:
            segs = [s for s in segs if s.first >= wm.next_sequence]
        self.gaps = {o.seq: o for o in others if o.what == "gaps"}
        # Where the log starts: the watermark (else 1), moved on by the gap records that follow
        # it (a segment wins over a gap that overlaps it); with neither, the first segment.
        begin = (wm.next_sequence, wm.time, wm.hash) if wm is not None else (1, None, None)
        while (g := self._gap_at(begin[0])) is not None and not (segs and segs[0].first <= g.last):
            begin = (g.last + 1, g.time, None)
        rf = begin[0] if wm is not None or not segs else max(begin[0], segs[0].first)
        st = self.state.get(ident)
        if st is not None and st["first"] < rf:
            self._drop_before(ident, log, rf)  # the store's start moved on: drop what it dropped
            st = self.state[ident]
        start = self._want(ident, segs, need) if segs else 0
        if st is not None and segs and segs[start].first < st["first"]:
            upto = [s for s in segs[start:] if s.first < st["first"]]
            if not self._prepend(ident, log, upto, full=start == 0, after=rf - 1 if start == 0 else None):
                st = None  # the store's earlier segments do not lead into what the mirror holds: fetch again
        if st is None:
            self._forget(ident)
            first = rf if start == 0 else segs[start].first
            st = self.state[ident] = {"first": first, "last": first - 1, "size": 0, "full": start == 0, "segs": {}}
            _make_parent(log.path)
            os.close(os.open(log.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        self._check_listing(ident, st, segs, others)
        if need.verify:
            self._verify_mirrored(ident, log, [s for s in segs if s.first <= st["last"]])
        self._append(ident, log, [s for s in segs if s.first > st["last"]])
        self._record(ident, log, begin)

    def _check_listing(self, ident: str, st: dict[str, Any], segs: list[keys.Parsed], others: list[Any]) -> None:
        """What the store lists must still lead to what the mirror holds: a key starting inside
        the mirrored run that is not one of its segments (planted, or two segments of one
        first sequence under two days) overlaps it, and a mirrored segment no longer listed
        is missing from the store. Either is ``BadSegment``: a warm mirror never serves past
        what a cold one would refuse. Costs the listing the sync made anyway, no fetch."""
        held = st["segs"]
        for s in segs:
            if st["first"] <= s.first <= st["last"] and str(s.first) not in held:
                raise BadSegment(f"{self.store.where(s.key)}: starts at {s.first}, inside what the segments before "
                                 f"it hold (through {st['last']}) (segments overlap): not served")
        for o in others:
            if getattr(o, "what", None) == "duplicate":
                raise BadSegment(f"{self.store.where(o.key)}: a second segment starting at {o.seq} "
                                 "(segments overlap): not served")
        listed = {s.first for s in segs}
        gone = sorted(int(k) for k in held if int(k) not in listed and int(k) >= st["first"])
        if gone:
            first = gone[0]
            last = held[str(first)][0]
            n = last - first + 1
            raise BadSegment(f"{ident.split('/', 1)[1]}: the segment of sequences {first} to {last} is gone from "
                             f"{self.store.url} ({n} event{'s' if n != 1 else ''} missing from the store): not served")

    # -- fetching -------------------------------------------------------------------------
    def _fetch(self, segs: list[keys.Parsed]) -> Iterator[tuple[keys.Parsed, bytes | None, Meta]]:
        """Each segment's bytes and metadata, in order, a few fetched ahead."""
        if len(segs) <= 1:
            for s in segs:
                data, meta = self.store.read(s.key)
                self._count(data)
                yield s, data, meta
            return
        with ThreadPoolExecutor(FETCH_AHEAD) as pool:
            ahead: list[tuple[keys.Parsed, Future[tuple[bytes | None, Meta]]]] = []
            it = iter(segs)
            try:
                for s in it:
                    ahead.append((s, pool.submit(self.store.read, s.key)))
                    if len(ahead) >= FETCH_AHEAD:
                        break
                while ahead:
                    s, fut = ahead.pop(0)
                    data, meta = fut.result()
                    nxt = next(it, None)
                    if nxt is not None:
                        ahead.append((nxt, pool.submit(self.store.read, nxt.key)))
                    self._count(data)
                    yield s, data, meta
            finally:
                for _, fut in ahead:
                    fut.cancel()

    def _count(self, data: bytes | None) -> None:
        self.report.fetched += 1
        self.report.bytes += len(data or b"")

    def _checked(self, segs: list[keys.Parsed], after: int,
                 on_gap: Callable[[list[RecordedGap]], None]) -> Iterator[tuple[keys.Parsed, bytes, Meta]]:
        """The segments' verified bytes, each following the one before (the first follows ``after``),
        or the gap records that fill the hole before it (given to ``on_gap`` before the segment
        is yielded); stops (with a warning) at a folder claim whose bytes never came."""
        prev = after
        for s, data, meta in self._fetch(segs):
            where = self.store.where(s.key)
            if data is None:
                self.warn(f"{where} was claimed but its bytes never came (a shipper died mid-segment; its next "
                          f"ship completes it): read through {prev}")
                return
            filled = self._recorded_gaps(prev + 1, s.first - 1) if s.first > prev + 1 else []
            if filled:  # events the source dropped before shipping them: readers get events.dropped
                prev = s.first - 1
            if s.first != prev + 1:
                raise BadSegment(f"{where}: starts at {s.first}, but what comes before it ends at {prev}"
                                 + (" (segments overlap)" if s.first <= prev else
                                    f" ({s.first - prev - 1} events missing from the store)") + ": not served")
            verify_segment(where, data, s.first, meta, s.day)
            if filled:
                on_gap(filled)
            yield s, data, meta
            prev = meta.last

    def _gap_at(self, first: int) -> gaps.Gap | None:
        """The log's gap record starting at ``first`` (read from the store once per sync), if any."""
        o = self.gaps.get(first)
        if o is None:
            return None
        if o.key not in self._gap_read:
            self._gap_read[o.key] = gaps.read_gap(self.store, o.key, first)
        return self._gap_read[o.key]

    def _recorded_gaps(self, first: int, last: int) -> list[RecordedGap]:
        """The gap records (``ship`` after ``compact --max-ship-lag``) that together say events
        first..last were dropped at the source before they were shipped, in order; [] unless
        they fill exactly that run."""
        out: list[RecordedGap] = []
        at = first
        while at <= last:
            g = self._gap_at(at)
            if g is None or g.last > last:
                return []
            out.append(RecordedGap(g.first, g.last, g.time))
            at = g.last + 1
        return out

    def _set_gaps(self, ident: str, log: Log, rows: list[list[Any]]) -> None:
        """The log's recorded gaps in the state and in the mirror's root (``store.recorded_gaps``)."""
        st = self.state[ident]
        rows = sorted({r[0]: r for r in rows}.values(), key=lambda r: r[0])
        if rows == st.get("gaps", []):
            return
        write_gaps(self.root, log.state_key, [RecordedGap(f, la, t) for f, la, t in rows], durable=False)
        if rows:
            st["gaps"] = rows
        else:
            st.pop("gaps", None)

    def _add_gaps(self, ident: str, log: Log, found: list[RecordedGap]) -> None:
        self._set_gaps(ident, log, self.state[ident].get("gaps", []) + [[g.first, g.last, g.time] for g in found])
        self._save()

    def _append(self, ident: str, log: Log, segs: list[keys.Parsed]) -> None:
        st = self.state[ident]
        if not segs:
            return
        fd = os.open(log.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            for s, data, meta in self._checked(segs, st["last"], lambda found: self._add_gaps(ident, log, found)):
                write_all(fd, data)
                st["segs"][str(s.first)] = [meta.last, meta.sha256, st["size"]]
                st["size"] += len(data)
                st["last"] = meta.last
                self._save()  # after each segment: a sync killed part-way keeps what it verified
        finally:
            os.close(fd)

    def _prepend(self, ident: str, log: Log, segs: list[keys.Parsed], *, full: bool, after: int | None) -> bool:
        """Put the store's segments before what the mirror holds (a partial mirror made whole);
        False when they do not end just before it."""
        st = self.state[ident]
        parts: list[bytes] = []
        rows: dict[str, list[Any]] = {}
        size = 0
        base = segs[0].first - 1 if after is None else after
        last = base
        found: list[RecordedGap] = []
        for s, data, meta in self._checked(segs, base, found.extend):
            rows[str(s.first)] = [meta.last, meta.sha256, size]
            parts.append(data)
            size += len(data)
            last = meta.last
        if last != st["first"] - 1:
            return False
        if found:
            self._add_gaps(ident, log, found)  # recorded before the file that holds the holes
        old = log.path.read_bytes()
        _replace(log.path, b"".join(parts) + old)
        for k, row in st["segs"].items():
            rows[k] = [row[0], row[1], row[2] + size]
        st.update(first=base + 1, size=size + len(old), segs=rows, full=full)
        self._save()
        return True

    def _drop_before(self, ident: str, log: Log, rf: int) -> None:
        """Drop the mirrored lines before sequence ``rf`` (the store's first now), keeping the time
        and hash of the last one dropped for the compaction record, as local compaction does."""
        st = self.state[ident]
        with log.open() as view:
            cut = view.offset_after_seq(rf - 1) if view.fd is not None else 0
            last = lines.last_line(view.fd, cut) if view.fd is not None and cut > 0 else None
            rest = os.pread(view.fd, view.end - cut, cut) if view.fd is not None else b""
        if last is not None:
            ev = _decode(last[1])
            st["dropped"] = {"time": ev.get("time") if ev else None,
                             "hash": hashlib.sha256(last[1] + b"\n").hexdigest()}
        _replace(log.path, rest)
        rows = {k: [r[0], r[1], r[2] - cut] for k, r in st["segs"].items() if int(k) >= rf}
        self._set_gaps(ident, log, [g for g in st.get("gaps", []) if g[0] >= rf])  # a hole below the start is gone
        if rest == b"":
            st["last"] = max(st["last"], rf - 1)
        st.update(first=rf, size=len(rest), segs=rows, full=True)
        self._save()

    def _verify_mirrored(self, ident: str, log: Log, segs: list[keys.Parsed]) -> None:
        """``check``: the store's segments the mirror holds, read again: each must still be what
        its metadata says and what the mirror holds."""
        st = self.state[ident]
        mine = [s for s in segs if str(s.first) in st["segs"]]
        if not mine:
            return
        fd = os.open(log.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            for s, data, meta in self._fetch(mine):
                where = self.store.where(s.key)
                if data is None:
                    continue  # a claim completed later: the mirror has its bytes, verified when fetched
                verify_segment(where, data, s.first, meta, s.day)
                last, sha, off = st["segs"][str(s.first)]
                if sha != meta.sha256 or os.pread(fd, len(data), off) != data:
                    raise BadSegment(f"{where}: changed in the store since it was mirrored (sha256 was {sha}, "
                                     f"now {meta.sha256}): not served")
        finally:
            os.close(fd)

    def _record(self, ident: str, log: Log, begin: tuple[int, str | None, str | None] | None = None) -> None:
        """The compaction record of a log whose mirror starts where the store does, after sequence 1:
        the time and hash the store gives for this start (``begin``: its watermark's, or the
        last gap record's before it), else those of the last line the mirror dropped, else none known."""
        st = self.state[ident]
        path = log.watermark_path
        if not st["full"] or st["first"] <= 1:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            return
        dropped = st.get("dropped") or {}
        if begin is not None and begin[0] == st["first"]:
            dropped = {"time": begin[1], "hash": begin[2]}
        h = dropped.get("hash")
        first_time = None
        with log.open() as view:
            line = lines.first_line(view.fd, view.end) if view.fd is not None else None
            first_ev = _decode(line[1]) if line is not None else None
            ino, mtime = view.ino, view.mtime_ns
        if first_ev is not None:
            first_time = first_ev.get("time")
            if h is None and log.is_audit and isinstance(first_ev.get("prevhash"), str):
                h = first_ev["prevhash"]  # nothing before it to check it against: the chain goes on from it
        rec = {"inode": ino, "mtime_ns": mtime, "next_sequence": st["first"], "time": dropped.get("time"),
               "hash": h, "first_time_kept": first_time}
        body = orjson.dumps(rec)
        try:
            if path.read_bytes() == body:
                return
        except OSError:
            pass
        _make_parent(path)
        write_atomic(path, body, durable=False)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
class _Duplicate:
    """A second key for a log's segment of one first sequence (another day): never read."""

    what = "duplicate"

    def __init__(self, key: str, seq: int):
        self.key, self.seq = key, seq


def _seq(raw: bytes) -> int:
    p = peek(raw)
    if p is not None:
        return int(p[1])
    return int(decode_event(raw)["sequence"])


def _day_of(raw: bytes) -> str:
    """The UTC day of a line's event time (``keys.utc_day``), or what stands in for one that has none."""
    p = peek(raw)
    try:
        t = p[2].decode() if p is not None else decode_event(raw)["time"]
        return keys.utc_day(t)
    except (ValueError, UnicodeDecodeError):
        return "no valid time"


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        return decode_event(raw)
    except ValueError:
        return None


def verify_segment(where: str, data: bytes, first: int, meta: Meta, day: str | None = None) -> None:
    """``BadSegment`` unless ``data`` hashes to its metadata's sha256 and holds one whole line
    per sequence from ``first`` through the metadata's last, and its first and last events are
    of its key's UTC ``day`` (readers and ``sql`` find events by the day they are filed under).
    The limit: the lines between are not looked at for their day (a shipper never files a
    segment across days; one planted across days is served under its key's)."""
    got = hashlib.sha256(data).hexdigest()
    if got != meta.sha256:
        raise BadSegment(f"{where}: its bytes do not match its sha256 (metadata {meta.sha256}, bytes {got}): "
                         "not served")
    if not data.endswith(b"\n") or data.count(b"\n") != meta.last - first + 1:
        raise BadSegment(f"{where}: does not hold one whole line per sequence {first} to {meta.last}: not served")
    try:
        s0 = _seq(data[:data.index(b"\n")])
        s1 = _seq(data[data.rfind(b"\n", 0, len(data) - 1) + 1:-1])
    except ValueError as e:
        raise BadSegment(f"{where}: a line that is not an event ({e}): not served") from None
    if s0 != first or s1 != meta.last:
        raise BadSegment(f"{where}: holds sequences {s0} to {s1}, its key and metadata say {first} to {meta.last}: "
                         "not served")
    if day is not None:
        for raw in (data[:data.index(b"\n")], data[data.rfind(b"\n", 0, len(data) - 1) + 1:-1]):
            got_day = _day_of(raw)
            if got_day != day:
                raise BadSegment(f"{where}: filed under day {day}, but holds an event of {got_day}: not served")


def _make_parent(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)


def _replace(path: Path, data: bytes) -> None:
    """A mirrored file replaced whole (by rename: a reader that has it open keeps its snapshot)."""
    _make_parent(path)
    write_atomic(path, data, durable=False)


def keep_synced(mirror: Mirror, need: Need, *, interval: float, stop: Any,
                warn: Callable[[str], None]) -> None:
    """``tail -f`` and ``activity --watch`` on a remote root: sync the mirror every ``interval``
    seconds until ``stop`` (a ``threading.Event``) is set; the follower, watching the mirror's
    files, sees what a sync appends as it would an appender's lines. A store that does not
    answer is tried again with backoff (said once until it answers again); a bad segment is
    said once and its log is not read past it."""
    from wardrik_cli.errors import WardrikError
    from wardrik_cli.remote.stores import Unreachable

    said: set[str] = set()
    wait = interval
    while not stop.wait(wait):
        try:
            mirror.sync(need)
            wait = interval
            said.discard("unreachable")
        except Unreachable as e:
            if "unreachable" not in said:
                warn(f"{e}; trying again")
                said.add("unreachable")
            wait = min(max(wait * 2, interval), 300.0)
        except WardrikError as e:
            if str(e) not in said:
                warn(str(e))
                said.add(str(e))
            wait = interval
