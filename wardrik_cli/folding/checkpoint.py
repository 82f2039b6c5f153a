"""Checkpoints: a saved fold (a view's state through a sequence) that makes the next fold read
only the suffix. A checkpoint is a cache and is never trusted: when it was not written by this
user's wardrik, or does not match the log, the fold starts from scratch, and the result is the
same either way.

Contract kept here:
- Where: ``<root>/.wardrik/checkpoints/<log id>@<view key>.json`` ('@' is never in a log id,
  so no two (log, view) pairs share a file). Only logs under a root have checkpoints; a
  ``.jsonl`` path outside one never does.
- What: ``{"checkpoint": 2, "log", "view", "version", "seq", "id", "offset", "inode",
  "size", "mtime_ns", "ctime_ns", "line_sha256", "first_seq", "first_sha256", "state"}``: the view's
  state after the event with sequence ``seq`` (whose ``id`` it was), ``offset`` the byte where
  the next line starts, ``inode``, ``size`` and ``mtime_ns`` the log file's when it was read,
  and the SHA-256 (hex) of the raw bytes (without the ``\n``) of that event's line and of the
  log's first line when it was taken; sealed (``store.seal``: ``"seal"``, its last member,
  an HMAC under a key of this user's kept outside any root).
- Believed only when its seal verifies: a checkpoint planted or edited under the root, one
  in an evidence copy or another user's root, is none (the state it holds is what a fold
  would report, and no match of the log's lines can vouch for it). Without a usable key no
  checkpoint is believed or saved; a fold still works, reading the whole log.
- Valid only when, besides its seal, all of these hold, checked in O(log n) small reads (the first line and the
  line ending at ``offset``, never the log): same view and view version; the same file (its
  inode: a rewrite by ``sed -i``, an editor or a compaction makes a new file, so the
  checkpoint is discarded and the fold starts again from the events kept); the first line
  has the same bytes and sequence; the line ending just before ``offset`` has the same bytes
  (so the same sequence and id; a truncation, or an in-place edit of that line, changes
  them). Anything unreadable, of another shape or version, or not matching is discarded,
  never trusted, and overwritten by the next save. A checkpoint that is a link (or under a
  linked folder), a FIFO, a device or over ``MAX_BYTES`` is none (``Root.read_state``): never
  followed, waited on or read whole; a state too big to be read back is not saved.
- A file of the same size as when the checkpoint was taken but written since (another
  mtime, or another ctime: an mtime put back with ``touch`` still changes it) was rewritten in
  place, not appended to (appends grow it): discarded.
- The limit: an in-place edit (same inode) of a line between the first and the checkpoint's
  own, keeping the checkpoint's line at the same offset, in a file that has also grown since
  (or whose mtime was put back) is not seen (catching it would mean reading the log, which a
  checkpoint exists to avoid). ``wardrik check`` verifies every
  line, and a fold without a checkpoint (delete ``.wardrik/checkpoints/``) folds them all.
- A valid checkpoint is only replaced by one at a higher sequence (the callers' rule).
- Writes are atomic (a temporary file beside it, then rename) and only on a writable root:
  on a read-only root (no write permission, or a copy with every write bit cleared) nothing
  is created, nor through a folder that is a link (``Root.state_dir``). A failed save is
  silent: a fold never fails because its cache cannot be kept.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from wardrik_cli.errors import NotRegular
from wardrik_cli.store import lines, seal
from wardrik_cli.store.fsutil import writable_dir, write_atomic
from wardrik_cli.store.log import Log, LogView, decode_event, envelope

FORMAT = 2  # 1 had no inode nor hashes: such checkpoints are discarded
MAX_BYTES = 64 << 20  # a checkpoint past this is not read (nor saved): the fold reads the log
SEAL_KIND = "checkpoint"  # what its seal says it is (``store.seal``): never taken for another cache


@dataclass
class Checkpoint:
    seq: int
    offset: int
    state: Any


def view_key(view_name: str) -> str:
    """A file-name-safe key for a view name (``state``, ``mymod:Errors`` -> ``mymod+Errors``)."""
    return "".join(c if c.isalnum() or c in "._-" else "+" for c in view_name)


def path_for(log: Log, view_name: str) -> Path:
    return log.root.state_path("checkpoints", log.state_key, "@" + view_key(view_name) + ".json")


def _writable_dir(p: Path) -> bool:
    if not p.exists():
        return True  # will be created under a parent that is checked
    return writable_dir(p)


def root_writable(log: Log) -> bool:
    """May a reader save a checkpoint here? Only in a writable root made by ``init`` or an
    append (it has ``.wardrik/``): a plain folder of logs (an evidence copy) is read, never
    made a root, which ``compact`` would then sweep."""
    root = log.root
    if not root.path.is_dir() or not _writable_dir(root.path) or not root.tool_dir.is_dir():
        return False
    for d in (root.tool_dir / "checkpoints", root.tool_dir):
        if d.exists():
            return _writable_dir(d)
    return True


def load(log: Log, lv: LogView, view_name: str, version: str) -> Checkpoint | None:
    """The checkpoint of this (log, view), if it is readable and matches the log now; else None."""
    raw = log.root.read_state(path_for(log, view_name), MAX_BYTES + seal.SEAL_BYTES)
    if raw is None or not seal.verify(SEAL_KIND, raw):
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    try:
        if not (isinstance(doc, dict) and doc.get("checkpoint") == FORMAT and doc.get("log") == log.name
                and doc.get("view") == view_name and doc.get("version") == version and "state" in doc):
            return None
        seq, offset, first_seq, inode = doc["seq"], doc["offset"], doc["first_seq"], doc["inode"]
        line_hash, first_hash, ident = doc["line_sha256"], doc["first_sha256"], doc["id"]
        if not all(type(x) is int for x in (seq, offset, first_seq, inode)) or seq < first_seq or offset <= 0:
            return None
    except (KeyError, TypeError):
        return None
    if lv.fd is None or lv.ino != inode or offset > lv.end:
        return None
    if doc.get("size") == lv.size and (doc.get("mtime_ns") != lv.mtime_ns or (
            doc.get("ctime_ns") is not None and doc.get("ctime_ns") != os.fstat(lv.fd).st_ctime_ns)):
        # written since without growing: rewritten in place, not appended to (an mtime put
        # back with touch still leaves a new ctime, which no one can set)
        return None
    first = lines.first_line(lv.fd, lv.end)
    if first is None or _sha256(first[1]) != first_hash or _seq_id(first[1])[0] != first_seq:
        return None
    if os.pread(lv.fd, 1, offset - 1) == b"\n":
        prev = lines.last_line(lv.fd, offset)
        if prev is not None and _sha256(prev[1]) == line_hash and _seq_id(prev[1]) == (seq, ident):
            return Checkpoint(seq, offset, doc["state"])
    return None


def _sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _seq_id(raw: bytes) -> tuple[int | None, Any]:
    # The same bytes were decoded when the checkpoint was saved; reading them again makes
    # the checkpoint's own fields (seq, id) agree with its hashes, whoever edited the file.
    # A line in this tool's shape gives them from its bytes: a 200 MB line is not decoded
    # (its hash already says it is the line that was).
    env = envelope(raw)
    if env is not None:
        return int(env["sequence"]), env["id"]
    try:
        e = decode_event(raw)
        return int(e["sequence"]), e.get("id")
    except (ValueError, KeyError, TypeError):
        return None, None


def save(log: Log, lv: LogView, view_name: str, version: str, seq: int, offset: int, last_raw: bytes,
         state_json: bytes) -> bool:
    """Save the state through ``seq`` (the line ``last_raw`` ending at ``offset``); False if not saved."""
    if seq <= 0 or not root_writable(log):
        return False
    first = lines.first_line(lv.fd, lv.end) if lv.fd is not None else None
    last_seq, last_id = _seq_id(last_raw)  # both lines were decoded by the fold that read them
    first_seq = _seq_id(first[1])[0] if first is not None else None
    if first is None or first_seq is None or lv.ino is None or last_seq != seq or lv.fd is None:
        return False
    first_fd = lv.fd
    head = orjson.dumps({"checkpoint": FORMAT, "log": log.name, "view": view_name, "version": version,
                         "seq": seq, "id": last_id, "offset": offset, "inode": lv.ino,
                         "size": lv.size, "mtime_ns": lv.mtime_ns, "ctime_ns": os.fstat(first_fd).st_ctime_ns,
                         "line_sha256": _sha256(last_raw), "first_seq": first_seq,
                         "first_sha256": _sha256(first[1])})
    body = head[:-1] + b',"state":' + state_json + b"}"
    if len(body) > MAX_BYTES:
        return False  # load would not read it back
    sealed = seal.seal(SEAL_KIND, body)
    if sealed is None:
        return False  # no usable key: a checkpoint that could not be believed is not written
    p = path_for(log, view_name)
    try:
        log.root.state_dir(p)
        # Not durable: a checkpoint lost or cut short by a crash is unreadable, hence discarded.
        write_atomic(p, sealed, durable=False, tmp=p.with_name(f"{p.name}.tmp-{os.getpid()}-{time.monotonic_ns()}"))
        return True
    except (OSError, NotRegular):
        return False
