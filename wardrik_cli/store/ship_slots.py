"""Ship targets as replication slots: what local ``compact`` must keep until a target stored it.

Contract kept here (``.wardrik/ship/``, files named by ``target_key(URL)``):
- ``<key>.slot.json``, the registration: ``{"target", "deployment", "patterns", "registered"}``,
  written durably (fsync, rename, fsync the folder) by ``ship`` the first time it reaches a
  target, and again only when the deployment or the patterns it ships change (the patterns
  are the union of every run's; ``null`` means every agent log and the audit log).
  ``ship --forget URL`` removes it with the two files below.
- ``<key>.json``, the shipper's positions (``remote.ship.PositionCache``): per
  ``deployment/kind/name``, the last sequence the store holds, written only after the
  segment's conditional create succeeded or the segment was read back and verified. It is
  written without fsync, so after a power cut it may be older (compaction then holds back
  more) or unreadable (then it holds back everything until the next ship rebuilds it from
  the store): never newer than the store.
- ``<key>.gaps.json``, events ``compact --max-ship-lag`` dropped before they were shipped:
  per ``kind/name``, ``{"first", "last", "time"}`` (time: of the newest event dropped).
  Written durably *before* the sweep replaces the log (so a crash leaves a record of a drop
  that did not happen, never a drop without a record); read by the next ``ship``, which
  writes the gap to the store and then clears the entry. Read-modify-write under the lock
  ``.wardrik/locks/@ship-gaps.lock`` (compact and ship both change it).

Every file here is replaced through ``fsutil.write_atomic``, whose temp file is
``.<name>.<pid>-<8 hex>.tmp`` beside it (``ship``'s root id, ``.wardrik/root-id``, is made the
same way). A shipper killed mid-write leaves that temp; ``stale_temp`` picks those older
than ``STALE_TMP_S`` (a younger one may be a running shipper's), which ``compact`` removes.

The rule compaction keeps (``store.retention``): in a log a registered target covers, no
event after that target's position is dropped, unless ``--max-ship-lag`` lets it go, and
then the gap is recorded first. A registration that cannot be read holds back everything
(its target is unknown, so nothing it covers can be judged shipped).

Every file here is read with ``fsutil.read_capped`` (at most ``MAX_BYTES``; never through a
link, file or folder, never waiting on a FIFO): anything else is an unreadable file, so a
registration, or a ``ship/`` folder that is a link, holds back everything. Files are written
and removed only in folders checked not to be links (``Root.state_dir``).

This module is the store layer's side of ``ship`` (``remote`` is a higher layer): it never
talks to a store.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from wardrik_cli.errors import BadInput, Failure, NotRegular
from wardrik_cli.protocol.names import AUDIT_NAME, MAX_GLOBS, PatternSet, has_wildcards
from wardrik_cli.protocol.times import now
from wardrik_cli.store.fsutil import fsync_dir, read_capped, state_dirs, write_atomic
from wardrik_cli.store.layout import Root
from wardrik_cli.store.locking import locked

SHIP_DIR = "ship"
SLOT_SUFFIX, GAPS_SUFFIX, POSITIONS_SUFFIX = ".slot.json", ".gaps.json", ".json"
AGENTS, AUDIT = "agents", "audit"  # the kinds, as in the object keys (remote.keys)
GAPS_LOCK_KEY = "@ship-gaps"
ROOT_ID_NAME = "root-id"  # remote.ship's root id, in .wardrik/
MAX_BYTES = 256 << 20  # positions of a very large fleet; a file past this is unreadable (holds back)
STALE_TMP_S = 60.0  # as follow.live's temps: a write takes milliseconds; one this old is a dead writer's
_TMP_NAME = re.compile(r"\.(.+)\.[0-9]+-[0-9a-f]{8}\.tmp")


def normal_url(url: str) -> str:
    """One spelling per place a target names: ``S3://b//p/`` is ``s3://b/p``, ``file:///a//b/``
    is ``file:///a/b`` (the store's client takes them as one, so they are one registration;
    ``file:///`` stays as it is). Anything else is returned as given."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("s3", "file"):
        return url
    host, _, path = rest.partition("/")
    parts = [p for p in path.split("/") if p]
    if scheme.lower() == "s3":
        return f"s3://{host}" + "".join("/" + p for p in parts)
    return f"file://{host}/" + "/".join(parts)


def target_key(url: str) -> str:
    return hashlib.sha256(normal_url(url).encode()).hexdigest()[:16]


def ship_dir(root: Root) -> Path:
    return root.tool_dir / SHIP_DIR


def slot_path(root: Root, url: str) -> Path:
    return ship_dir(root) / f"{target_key(url)}{SLOT_SUFFIX}"


def positions_path(root: Root, url: str) -> Path:
    return ship_dir(root) / f"{target_key(url)}{POSITIONS_SUFFIX}"


def gaps_path(root: Root, url: str) -> Path:
    return ship_dir(root) / f"{target_key(url)}{GAPS_SUFFIX}"


def kind_of(is_audit: bool) -> str:
    return AUDIT if is_audit else AGENTS


@dataclass
class Slot:
    """One registered target, with the positions its shipper recorded."""
    target: str
    deployment: str
    patterns: list[str] | None  # None: every agent log and the audit log
    positions: dict[str, int] = field(default_factory=dict)  # "deployment/kind/name" -> last stored
    readable: bool = True
    _matcher: PatternSet | None = field(default=None, repr=False, compare=False)

    def covers(self, kind: str, name: str) -> bool:
        if self.patterns is None or not self.readable:
            return True
        if kind == AUDIT:
            return False  # patterns name agent logs; the audit log is shipped with "everything"
        if self._matcher is None:  # once per sweep, not once per log
            self._matcher = PatternSet(self.patterns)
        return self._matcher.covers(name)  # a log id, a folder of logs, or a glob

    def position(self, kind: str, name: str) -> int:
        """The last sequence of the log this target has confirmed storing (0: none)."""
        return self.positions.get(f"{self.deployment}/{kind}/{name}", 0)


def _load(path: Path) -> Any:
    try:
        return orjson.loads(read_capped(path, MAX_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, NotRegular):
        return ValueError  # there, but not readable (a link, a FIFO, too big: the same)


def load(root: Root) -> list[Slot]:
    """Every registered target (an unreadable registration holds back everything)."""
    try:
        state_dirs(ship_dir(root) / "x")  # a linked ship/ is not listed: its registrations are unknown
    except NotRegular as e:
        return [Slot(f"(unreadable registrations: {e})", "", None, readable=False)]
    try:
        names = sorted(n for n in os.listdir(ship_dir(root)) if n.endswith(SLOT_SUFFIX) and not n.startswith("."))
    except OSError:
        return []
    out: list[Slot] = []
    for n in names:
        d = _load(ship_dir(root) / n)
        if d is None:
            continue  # removed meanwhile (--forget)
        ok = isinstance(d, dict) and isinstance(d.get("target"), str) and isinstance(d.get("deployment"), str) \
            and (d.get("patterns") is None or (isinstance(d["patterns"], list)
                                               and all(isinstance(p, str) for p in d["patterns"])))
        if ok and d.get("patterns") is not None and PatternSet.too_many(d["patterns"]):
            ok = False  # no run of `ship` writes that many: planted, and each would cost every log swept
        if not ok:
            out.append(Slot(f"(unreadable registration {ship_dir(root) / n})", "", None, readable=False))
            continue
        slot = Slot(d["target"], d["deployment"], d.get("patterns"))
        # its positions beside it, by its own file's key (one an older version named by
        # another spelling of the target is still read)
        pos = _load(ship_dir(root) / (n[:-len(SLOT_SUFFIX)] + POSITIONS_SUFFIX))
        if isinstance(pos, dict) and isinstance(pos.get("logs"), dict):
            for ident, entry in pos["logs"].items():
                last = entry.get("last") if isinstance(entry, dict) else None
                if isinstance(last, int) and not isinstance(last, bool) and last >= 0:
                    slot.positions[str(ident)] = last
        out.append(slot)
    return out


def register(root: Root, url: str, deployment: str, patterns: list[str] | None) -> None:
    """Record (durably) that this root ships to ``url``; a no-op when the registration
    already says so. Raises Failure when it cannot be written (nothing is shipped then:
    compaction would not know to keep what the target lacks)."""
    url = normal_url(url)
    path = slot_path(root, url)
    old = _load(path)
    legacy = _other_spellings(root, url)
    # What it covers: the union of every run's patterns, those of a registration of the same
    # place under another spelling too (taken over below); None (everything) wins, as for one
    # removed meanwhile (read as nothing).
    covers: list[Any] = [patterns]
    if isinstance(old, dict) and old.get("target") == url:
        covers.append(old.get("patterns"))
    for key in legacy:
        d = _load(ship_dir(root) / (key + SLOT_SUFFIX))
        covers.append(d.get("patterns") if isinstance(d, dict) else None)
    merged: list[str] | None = None
    if all(isinstance(c, list) for c in covers):
        merged = sorted({p for c in covers for p in c})
        if PatternSet.too_many(merged):
            raise BadInput(f"a ship target covers at most {MAX_GLOBS} patterns with '*' or '?' (this one would cover "
                           f"{sum(1 for p in merged if has_wildcards(p))}): name a folder, or fewer globs")
    same = (not legacy and isinstance(old, dict) and old.get("target") == url
            and old.get("deployment") == deployment and merged == old.get("patterns"))
    if not same:
        doc = {"target": url, "deployment": deployment, "patterns": merged,
               "registered": old.get("registered") if isinstance(old, dict) and old.get("registered") else now()}
        try:
            root.state_dir(path)
            write_atomic(path, orjson.dumps(doc) + b"\n", durable=True)
        except NotRegular as e:
            raise Failure(f"cannot register the ship target: {e}; nothing shipped") from None
        except OSError as e:
            raise Failure(f"cannot register the ship target in {path}: {e.strerror or e}; nothing shipped") from None
    # A registration of the same place under another spelling (an older version's) goes, once
    # this one is durable: this one holds back what the target lacks from now on, and its
    # shipper records positions here; a gap record of it becomes this one's, unless there is one.
    for key in legacy:
        legacy_gaps = ship_dir(root) / (key + GAPS_SUFFIX)
        try:
            if legacy_gaps.exists() and not gaps_path(root, url).exists():
                os.replace(legacy_gaps, gaps_path(root, url))
            for suffix in (POSITIONS_SUFFIX, SLOT_SUFFIX):  # the registration last
                (ship_dir(root) / (key + suffix)).unlink(missing_ok=True)
        except OSError:
            pass  # left as it is: it holds back more than needed, never less


def registered_deployment(root: Root, url: str) -> tuple[str, str] | None:
    """(deployment, when registered) of this root's registration for ``url`` (under any
    spelling), None when there is none (or it cannot be read: ``register`` then writes it anew)."""
    url = normal_url(url)
    for path in (slot_path(root, url), *(ship_dir(root) / (k + SLOT_SUFFIX) for k in _other_spellings(root, url))):
        old = _load(path)
        if isinstance(old, dict) and isinstance(old.get("target"), str) and normal_url(old["target"]) == url \
                and isinstance(old.get("deployment"), str):
            return old["deployment"], str(old.get("registered") or "")
    return None


def _other_spellings(root: Root, url: str) -> list[str]:
    """Keys of registrations of ``url`` under another spelling (written by a version that kept
    ``S3://b//p`` and ``s3://b/p`` apart): the same place, files of another name."""
    url = normal_url(url)
    mine = target_key(url)
    try:
        names = os.listdir(ship_dir(root))
    except OSError:
        return []
    out = []
    for n in names:
        if n.endswith(SLOT_SUFFIX) and not n.startswith(".") and n[:-len(SLOT_SUFFIX)] != mine:
            d = _load(ship_dir(root) / n)
            if isinstance(d, dict) and isinstance(d.get("target"), str) and normal_url(d["target"]) == url:
                out.append(n[:-len(SLOT_SUFFIX)])
    return out


def forget(root: Root, url: str) -> list[Path]:
    """Remove the registration of ``url`` (under any spelling of it), its positions and gap
    records; the files removed."""
    removed: list[Path] = []
    d = ship_dir(root)
    others = [d / (k + suffix) for k in _other_spellings(root, url)
              for suffix in (SLOT_SUFFIX, POSITIONS_SUFFIX, GAPS_SUFFIX)]
    for p in (slot_path(root, url), positions_path(root, url), gaps_path(root, url), *others):
        state_dirs(p)  # NotRegular (a Failure) for a linked folder: nothing removed through it
        try:
            p.unlink()
            removed.append(p)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise Failure(f"cannot remove {p}: {e.strerror or e}") from None
    if removed:
        fsync_dir(removed[0].parent)
    return removed


def registered_targets(root: Root) -> list[str]:
    return [s.target for s in load(root)]


# ---------------------------------------------------------------------------
# gap records
# ---------------------------------------------------------------------------
@dataclass
class GapRecord:
    first: int
    last: int
    time: str | None


@contextmanager
def _gaps_locked(root: Root) -> Iterator[None]:
    with locked(root.state_path("locks", GAPS_LOCK_KEY, ".lock"), what="the ship gap records"):
        yield


def _read_gaps(path: Path) -> dict[str, dict[str, Any]]:
    d = _load(path)
    if isinstance(d, dict) and isinstance(d.get("logs"), dict):
        return {k: v for k, v in d["logs"].items() if isinstance(v, dict)}
    return {}


def read_gap(root: Root, url: str, kind: str, name: str) -> GapRecord | None:
    entry = _read_gaps(gaps_path(root, url)).get(f"{kind}/{name}")
    try:
        return GapRecord(int(entry["first"]), int(entry["last"]), entry.get("time")) if entry else None
    except (KeyError, TypeError, ValueError):
        return None


def record_gaps(root: Root, gaps: list[tuple[str, str, str, int, int, str | None]]) -> None:
    """Record (durably) gaps ``(target, kind, name, first, last, time)``, each merged with the
    log's pending gap for that target. Raises OSError, or NotRegular for a link among its
    folders (the caller drops nothing then)."""
    by_target: dict[str, list[tuple[str, str, int, int, str | None]]] = {}
    for url, kind, name, first, last, t in gaps:
        by_target.setdefault(normal_url(url), []).append((kind, name, first, last, t))
    with _gaps_locked(root):
        for url, items in by_target.items():
            path = gaps_path(root, url)
            logs = _read_gaps(path)
            for kind, name, first, last, t in items:
                old = logs.get(f"{kind}/{name}")
                if isinstance(old, dict) and isinstance(old.get("first"), int) and isinstance(old.get("last"), int):
                    first, last = min(first, old["first"]), max(last, old["last"])
                    if isinstance(old.get("time"), str) and (t is None or old["time"] > t):
                        t = old["time"]
                logs[f"{kind}/{name}"] = {"first": first, "last": last, "time": t, "recorded": now()}
            root.state_dir(path)
            write_atomic(path, orjson.dumps({"target": url, "logs": logs}) + b"\n", durable=True)


def clear_gaps(root: Root, url: str, through: dict[tuple[str, str], int]) -> None:
    """Drop the gap records the store now accounts for (the log's position there is at or
    past the gap's last event). Best effort: a record left behind only repeats a check."""
    path = gaps_path(root, url)
    if not path.exists():
        return
    try:
        with _gaps_locked(root):
            state_dirs(path)  # NotRegular (a Failure) for a linked folder: nothing written through it
            logs = _read_gaps(path)
            keep = {}
            for k, v in logs.items():
                kind, _, name = k.partition("/")
                if not (isinstance(v.get("last"), int) and through.get((kind, name), -1) >= v["last"]):
                    keep[k] = v
            if keep == logs:
                return
            if keep:
                write_atomic(path, orjson.dumps({"target": normal_url(url), "logs": keep}) + b"\n", durable=True)
            else:
                path.unlink()
                fsync_dir(path.parent)
    except (OSError, Failure):
        pass


def audit_kind_name(is_audit: bool, name: str) -> tuple[str, str]:
    return (AUDIT, AUDIT_NAME) if is_audit else (AGENTS, name)


def stale_temp(only: str | None = None, *, older_than: float = STALE_TMP_S) -> Callable[[os.DirEntry[str]], bool]:
    """A test for a temp file a killed shipper left (``write_atomic``'s, last changed more
    than ``older_than`` seconds ago; ``only``: of that file's name), for ``fsutil.remove_below``
    in ``.wardrik/ship/`` and, with ``ROOT_ID_NAME``, in ``.wardrik/``."""
    now_s = time.time()

    def pick(e: os.DirEntry[str]) -> bool:
        m = _TMP_NAME.fullmatch(e.name)
        if m is None or (only is not None and m.group(1) != only):
            return False
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            return False
        return now_s - st.st_mtime > older_than

    return pick
