"""File-system steps every writer shares: whole writes, atomic replacement, directory fsync.

Contract: ``write_atomic`` (every file wardrik replaces goes through it) leaves ``path``
holding either its old bytes or all of the new ones, never a mix: it writes a temp file in
the same directory, optionally fsyncs it, renames it over ``path`` and (when durable) fsyncs
the directory so the rename itself survives a crash. A non-durable write is for caches,
where a lost update is only slower.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from wardrik_cli.errors import NotRegular


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open a log (or any file wardrik keeps under a root) only if it is a regular file.

    A symbolic link is never followed (``O_NOFOLLOW``: nothing is read or written outside
    the root through one), and a FIFO, socket or device is never waited on (``O_NONBLOCK``,
    then an ``S_ISREG`` check before any read, lock or write): ``NotRegular`` instead.
    FileNotFoundError and other OSErrors pass through."""
    import stat

    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(f"{path} is a symbolic link; wardrik never follows links to logs") from None
        raise
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st_mode) else "a FIFO" if stat.S_ISFIFO(st_mode) else \
            "a socket" if stat.S_ISSOCK(st_mode) else "a device" if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode) \
            else "not a regular file"
        raise NotRegular(f"{path} is {kind}, not a log file")
    return fd


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, durable: bool = True, tmp: Path | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: the one way wardrik replaces a file.

    The temp file is created beside ``path`` (``tmp``, default a dot-file named by the pid
    and a random token) with ``O_EXCL|O_NOFOLLOW``: a file or symlink planted at its name
    is never written through (a stale one is unlinked, the link itself, and the create tried
    once more). OSError propagates after the temp file is removed."""
    path = Path(path)
    tmp = tmp or path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            fd = os.open(tmp, flags, 0o644)
        except FileExistsError:
            os.unlink(tmp)  # left by a writer that died, or planted: never followed
            fd = os.open(tmp, flags, 0o644)
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
