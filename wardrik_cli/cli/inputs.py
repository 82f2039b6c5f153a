"""What users type, turned into values: ``--data`` arguments, JSON, cursors, ``--skip-corrupt``.

Every refusal is ``BadInput`` (exit 2) naming the option and what it takes.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


from wardrik_cli.cli.context import current
from wardrik_cli.errors import BadInput, CorruptLedger
from wardrik_cli.protocol.cursor import Cursor, decode_cursor

# orjson reads an integer past 64 bits as a float, silently changing it; such digit runs
# are rare, so only their inputs are parsed again (by the stdlib, exactly) to be sure.


MAX_ARG_BYTES = {"--data": 64 << 20, "--batch": 1 << 30}  # past these, `append --stream` is the way


def read_arg_bytes(value: str, what: str) -> bytes:
    """``@FILE`` reads a file, ``-`` reads stdin, anything else is the text itself (as given,
    bytes). What is read whole is bounded (``MAX_ARG_BYTES``): a device or an endless pipe is
    refused past the bound, never read until memory runs out."""
    limit = MAX_ARG_BYTES.get(what, 64 << 20)
    if value == "-":
        return _bounded(current().stdin.read(limit + 1), what, "standard input", limit)
    if value.startswith("@"):
        try:
            with open(value[1:], "rb") as f:
                return _bounded(f.read(limit + 1), what, repr(value[1:]), limit)
        except OSError as e:
            raise BadInput(f"cannot read {what} file {value[1:]!r}: {e.strerror}") from None
    return os.fsencode(value)


def _bounded(data: bytes, what: str, source: str, limit: int) -> bytes:
    if len(data) > limit:
        raise BadInput(f"{what} from {source} is over {limit:,} bytes; for more, pipe the events to "
                       "`wardrik append LOG --stream`")
    return data


def on_corrupt(skip: bool) -> Callable[[CorruptLedger], None] | None:
    """``--skip-corrupt``: warn about each corrupt line and read on; else None (stop there)."""
    if not skip:
        return None
    inv = current()

    def report(err: CorruptLedger) -> None:
        inv.warn(f"skipping {err}")
    return report


def load_cursor(after: str | None, cursor_file: Path | None) -> Cursor | None:
    """The start: ``--after`` when given, else the cursor file's cursor when it exists."""
    from wardrik_cli.read.cursor_file import read_file

    if after is not None:
        return decode_cursor(after)
    if cursor_file is not None:
        return read_file(cursor_file)
    return None


def patterns_or_all(patterns: list[str] | None) -> list[str]:
    """No pattern means every agent log (as ``check`` does)."""
    return list(patterns) if patterns else ["*"]


def build_filters(*, types: list[str] | None = None, exclude: list[str] | None = None, grep: str | None = None,
                  ignore_case: bool = False, where: list[str] | None = None, run: str | None = None,
                  since: str | None = None, until: str | None = None) -> Any:
    """``read.filters.Filters`` from the reading options as typed (times in the invocation's
    zone under ``--local``); every refusal names its option."""
    from wardrik_cli.errors import BadTime
    from wardrik_cli.protocol.times import parse_time_arg, parse_window
    from wardrik_cli.read.filters import Filters, parse_types

    inv = current()
    tz = inv.time_zone()
    for option, value in (("--since", since), ("--until", until)):
        if value is not None:
            try:
                parse_time_arg(value, tz=tz)
            except BadTime as e:
                raise BadTime(f"{option}: {e}") from None
    lo, hi = parse_window(since, until, tz=tz)
    if ignore_case and grep is None:
        raise BadInput("--ignore-case goes with --grep REGEX")
    return Filters.build(parse_types(types), lo, hi, run, exclude=parse_types(exclude, "--exclude-types"),
                         grep=grep, ignore_case=ignore_case, where=where or ())
