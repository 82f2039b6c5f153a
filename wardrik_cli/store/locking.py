"""The per-log lock that orders every writer of a log, across processes.

Protocol: a writer takes an exclusive ``flock`` on a stable lock file under
``<root>/.wardrik/locks/`` (never on the log itself, which compaction replaces by rename),
and only then opens the log by path. Appenders and compaction take the same lock, so an
appender always writes to the file that is current, and sequences are assigned by exactly
one process at a time. The kernel drops the lock when its holder dies, kill -9 included.
Readers take no lock.

A lock file is never opened through a link, nor waited on as a FIFO: the folders from
``.wardrik`` down are made and checked one level at a time (``fsutil.state_dirs``) and the
file is opened with ``O_NOFOLLOW|O_NONBLOCK`` (``fsutil.open_regular``). A link, FIFO or
device there is ``NotRegular`` (exit 1) naming it, and nothing is created outside the root.
"""
from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wardrik_cli.errors import LockTimeout, NotRegular, WriteFailed
from wardrik_cli.store.fsutil import open_regular, state_dirs



def acquire(lock_path: Path, *, timeout: float | None = None, what: str = "log") -> int:
    """Take the lock, waiting up to ``timeout`` (default ``$WARDRIK_LOCK_TIMEOUT``); the fd
    whose closing releases it (the sweep holds a batch of these until its renames land)."""
    if timeout is None:
        from wardrik_cli.settings import Settings

        timeout = Settings.from_env().lock_timeout  # $WARDRIK_LOCK_TIMEOUT, read when a lock is taken
    fd = _open_lock(lock_path, what)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise WriteFailed(f"cannot lock {what}: {e.strerror}") from None
            if time.monotonic() >= deadline:
                raise LockTimeout(f"timed out after {timeout:g}s waiting for the lock on {what} ({lock_path})")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def locked(lock_path: Path, *, timeout: float | None = None, what: str = "log") -> Iterator[None]:
    fd = acquire(lock_path, timeout=timeout, what=what)
    try:
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _open_lock(lock_path: Path, what: str) -> int:
    """The lock file, made if missing: never through a link (``NotRegular`` names it)."""
    try:
        try:
            state_dirs(lock_path)
            return open_regular(lock_path, os.O_RDWR | os.O_CREAT, what="lock file")
        except FileNotFoundError:  # the first lock of a folder of logs
            state_dirs(lock_path, create=True)
            return open_regular(lock_path, os.O_RDWR | os.O_CREAT, what="lock file")
    except NotRegular as e:
        raise NotRegular(f"cannot take the lock for {what}: {e}") from None
    except OSError as e:
        raise WriteFailed(f"cannot take the lock for {what} ({lock_path}): {e.strerror}") from None


def check_lockable(lock_path: Path, what: str) -> None:
    """Could the lock be taken (its file opened: not a folder, a FIFO, a link; its folders
    there)? ``NotRegular``/``WriteFailed`` as ``acquire`` raises; nothing is waited for."""
    os.close(_open_lock(lock_path, what))


def try_lock(lock_path: Path, what: str = "compaction") -> int | None:
    """Take the lock without waiting; the fd to close, or None when someone holds it
    (``NotRegular``/``WriteFailed`` when its file cannot be had, as for ``acquire``)."""
    fd = _open_lock(lock_path, what)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except OSError:
        os.close(fd)
        return None
