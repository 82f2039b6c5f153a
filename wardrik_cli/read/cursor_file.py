"""Cursor files: a reader's position kept in a file between runs.

Contract kept here: a cursor file holds one encoded cursor (``protocol.cursor``) and a
newline. It is replaced atomically (temp file, fsync, rename, fsync of the directory), so
a crash leaves the old cursor or the new one, never a mix. A missing file means "no
cursor yet"; an empty or unreadable one is refused (``BadCursor``), never taken as a start.
"""
from __future__ import annotations

from pathlib import Path
from collections.abc import Mapping

from wardrik_cli.errors import BadCursor, Failure
from wardrik_cli.protocol.cursor import Cursor, decode_cursor, encode_cursor


MAX_BYTES = 16 << 20  # a cursor names each log once: 100,000 logs fit many times over


def read_file(path: Path) -> Cursor | None:
    """The cursor saved in ``path``, or None when the file does not exist. A file that is empty
    or holds only blanks (made to be filled: ``mktemp``, ``echo > F``; this tool never leaves
    one so, since it writes by rename) is the start, before every event (``tail`` then gives
    every event after it, as for any cursor file that exists). Only a regular file of at most
    ``MAX_BYTES`` is read: a FIFO is never waited on, a device never read whole."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a link the user made is theirs
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadCursor(f"cannot read cursor file {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadCursor(f"cannot read cursor file {path}: not a regular file (a folder, a FIFO, a device)")
        if st.st_size > MAX_BYTES:
            raise BadCursor(f"cannot read cursor file {path}: {st.st_size:,} bytes, not a cursor "
                            f"(at most {MAX_BYTES:,})")
        data = os.read(fd, MAX_BYTES + 1)
    except OSError as e:
        raise BadCursor(f"cannot read cursor file {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    try:
        text = data[:MAX_BYTES].decode("utf-8")
    except UnicodeDecodeError:
        raise BadCursor(f"cannot read cursor file {path}: not UTF-8") from None
    if not data.strip():
        return {}  # made empty to be filled (``F=$(mktemp)``, ``echo > F``): the start, before every event
    try:
        return decode_cursor(text)
    except BadCursor as e:
        raise BadCursor(f"cursor file {path}: {e}") from None


def write_file(path: Path, cursor: Mapping[str, int]) -> None:
    """Replace ``path`` atomically (temp file, fsync, rename) with the encoded cursor."""
    from wardrik_cli.store.fsutil import write_atomic

    try:
        write_atomic(Path(path), (encode_cursor(cursor) + "\n").encode())
    except OSError as e:
        raise Failure(f"cannot write cursor file {path}: {e.strerror}") from None
