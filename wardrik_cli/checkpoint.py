"""Checkpoints: a saved fold (a view's state through a sequence) that makes the next fold read
only the suffix. A checkpoint is a cache and is never trusted: when it does not match the log
the fold starts from scratch, and the result is the same either way.

Contract kept here:
- Where: ``<root>/.wardrik/checkpoints/<log id>@<view key>.json`` ('@' is never in a log id,
  so no two (log, view) pairs share a file). Only logs under a root have checkpoints; a
  ``.jsonl`` path outside one never does.
- What: ``{"checkpoint": 1, "log", "view", "version", "seq", "id", "offset", "first_seq",
  "first_id", "state"}``: the view's state after the event with sequence ``seq`` (whose
  ``id`` it was), ``offset`` the byte where the next line starts, and the log's first kept
  event (sequence and id) when it was taken.
- Valid only when all of these hold, checked in O(log n) small reads: same view and view
  version; the log's first kept event is the same (sequence and id: compaction that dropped
  anything, or a rewrite, changes it); the event ending just before ``offset`` (or, when the
  file moved under it, the one found by bisection for ``seq``) has sequence ``seq`` and the
  same id (a truncation or a rewrite changes it). Anything unreadable, of another shape or
  version, or not matching is discarded, never trusted, and overwritten by the next save.
- Writes are atomic (a temporary file beside it, then rename) and only on a writable root:
  on a read-only root (no write permission, or a copy with every write bit cleared) nothing
  is created. A failed save is silent: a fold never fails because its cache cannot be kept.
"""
from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import orjson

from . import lines
from .fsutil import write_atomic
from .ledger import Log, LogView, decode_event

FORMAT = 1


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
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return True  # will be created under a parent that is checked
    except OSError:
        return False
    # os.access says yes to root on a chmod'ed copy; a directory with no write bit at all is
    # an evidence copy someone made read-only on purpose, so we honour that too.
    return os.access(p, os.W_OK) and bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def root_writable(log: Log) -> bool:
    root = log.root
    if not root.path.is_dir() or not _writable_dir(root.path):
        return False
    for d in (root.tool_dir / "checkpoints", root.tool_dir):
        if d.exists():
            return _writable_dir(d)
    return True


def load(log: Log, lv: LogView, view_name: str, version: str) -> Optional[Checkpoint]:
    """The checkpoint of this (log, view), if it is readable and matches the log now; else None."""
    p = path_for(log, view_name)
    try:
        doc = orjson.loads(p.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    try:
        if not (isinstance(doc, dict) and doc.get("checkpoint") == FORMAT and doc.get("log") == log.name
                and doc.get("view") == view_name and doc.get("version") == version and "state" in doc):
            return None
        seq, offset, first_seq = doc["seq"], doc["offset"], doc["first_seq"]
        ident, first_id = doc["id"], doc["first_id"]
        if not all(type(x) is int for x in (seq, offset, first_seq)) or seq < first_seq or offset <= 0:
            return None
    except (KeyError, TypeError):
        return None
    if lv.fd is None or offset > lv.end:
        return None
    try:
        first = lv.first()
    except Exception:  # a corrupt first line: let the fold from scratch meet and report it
        return None
    if first is None or int(first[1]["sequence"]) != first_seq or first[1].get("id") != first_id:
        return None
    if _event_ending_at(lv, offset, seq, ident):
        return Checkpoint(seq, offset, doc["state"])
    # The file moved under the hint (a torn tail cut, a compaction that kept everything):
    # find the sequence by bisection and check the event there.
    off = lv.offset_after_seq(seq)
    if off > 0 and _event_ending_at(lv, off, seq, ident):
        return Checkpoint(seq, off, doc["state"])
    return None


def _event_ending_at(lv: LogView, offset: int, seq: int, ident: Any) -> bool:
    if offset <= 0 or offset > lv.end or os.pread(lv.fd, 1, offset - 1) != b"\n":
        return False
    prev = lines.last_line(lv.fd, offset)
    if prev is None:
        return False
    try:
        e = decode_event(prev[1])
    except ValueError:
        return False
    return int(e["sequence"]) == seq and e.get("id") == ident


def save(log: Log, lv: LogView, view_name: str, version: str, seq: int, offset: int, last_raw: bytes,
         state_json: bytes) -> bool:
    """Save the state through ``seq`` (the line ``last_raw`` ending at ``offset``); False if not saved."""
    if seq <= 0 or not root_writable(log):
        return False
    try:
        first = lv.first()
        last = decode_event(last_raw)
    except Exception:
        return False
    if first is None or int(last["sequence"]) != seq:
        return False
    head = orjson.dumps({"checkpoint": FORMAT, "log": log.name, "view": view_name, "version": version,
                         "seq": seq, "id": last.get("id"), "offset": offset,
                         "first_seq": int(first[1]["sequence"]), "first_id": first[1].get("id")})
    body = head[:-1] + b',"state":' + state_json + b"}"
    p = path_for(log, view_name)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        # Not durable: a checkpoint lost or cut short by a crash is unreadable, hence discarded.
        write_atomic(p, body, durable=False, tmp=p.with_name(f"{p.name}.tmp-{os.getpid()}-{time.monotonic_ns()}"))
        return True
    except OSError:
        return False
