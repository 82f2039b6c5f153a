"""Typed errors of the library, and the exit code each one maps to.

The library raises these and never prints or exits; the CLI (``wardrik_cli.cli``) is the
one place that turns them into a single ``error: ...`` line and an exit code:
``ExitCode.USAGE`` (2) for bad input, ``ExitCode.FAILURE`` (1) for a failure of the world
(I/O, a corrupt ledger, a lock timeout).
"""
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2


class WardrikError(Exception):
    """Base of every error the library raises on purpose."""

    exit_code: ExitCode = ExitCode.FAILURE


class BadInput(WardrikError):
    """Input that can never work as given: fix the command, not the world."""

    exit_code = ExitCode.USAGE


class BadLogId(BadInput):
    pass


class BadPattern(BadInput):
    pass


class NoSuchLog(BadInput):
    pass


class NoSuchRoot(BadInput):
    pass


class BadCursor(BadInput):
    pass


class BadEvent(BadInput):
    """A type, data or attribute that the protocol refuses."""


class BadDuration(BadInput):
    pass


class BadTime(BadInput):
    pass


class BadConfig(BadInput):
    pass


class BadView(BadInput):
    pass


class Failure(WardrikError):
    """The command was right but the world said no."""


class CorruptLedger(Failure):
    """A complete line that is not an event. Names the file, line (1-based) and byte offset."""

    def __init__(self, path: str, line: int | None, offset: int, what: str):
        self.path, self.line, self.offset, self.what = str(path), line, offset, what
        where = f"{self.path}:{line if line is not None else '?'}: {offset}"
        super().__init__(f"{where}: {what}")


class NotRegular(Failure):
    """A log's path is a symlink, FIFO, socket, device or directory: never followed, read or waited on."""


class LockTimeout(Failure):
    pass


class WriteFailed(Failure):
    """A write or fsync failed part-way; ``written`` whole events are on disk, in sequence."""

    def __init__(self, message: str, written: int = 0, events: list[bytes] | None = None):
        super().__init__(message)
        self.written = written
        self.events = events or []


class ReadOnlyRoot(Failure):
    pass


class MissingExtra(WardrikError):
    """A feature whose dependency is an extra that is not installed (``extras.need``)."""
