"""File-system steps every writer shares: whole writes, atomic replacement, directory fsync.

Contract: ``write_atomic`` leaves ``path`` holding either its old bytes or all of the new
ones, never a mix: it writes a temp file in the same directory, optionally fsyncs it,
renames it over ``path`` and (when durable) fsyncs the directory so the rename itself
survives a crash. A non-durable write is for caches, where a lost update is only slower.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, durable: bool = True, tmp: Optional[Path] = None) -> None:
    """Replace ``path`` with ``data`` atomically. ``tmp`` names the temp file (default: a
    per-process dot-file beside ``path``); OSError propagates after the temp file is removed."""
    path = Path(path)
    tmp = tmp or path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def writable_dir(path: Path) -> bool:
    """May wardrik write under this directory? No on a read-only mount, and no on a
    directory with every write bit cleared: an evidence copy someone made read-only on
    purpose, which root (as these tools often run) could otherwise still write to."""
    import stat

    try:
        st = os.stat(path)
        vfs = os.statvfs(path)
    except OSError:
        return False
    if vfs.f_flag & os.ST_RDONLY or not os.access(path, os.W_OK):
        return False
    return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
