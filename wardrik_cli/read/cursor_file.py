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


def read_file(path: Path) -> Cursor | None:
    """The cursor saved in ``path``, or None when the file does not exist."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8"
        raise BadCursor(f"cannot read cursor file {path}: {why}") from None
    if not text.strip():
        raise BadCursor(f"cursor file {path} is empty (delete it to start from the beginning)")
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
