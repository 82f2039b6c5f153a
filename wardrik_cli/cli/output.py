"""Writing results in the three formats: one ``emit`` for every command.

``jsonl`` writes stored lines byte for byte (or one compact JSON object a line); ``json``
writes one document; ``pretty`` is handed to ``cli.render`` (the only code that imports
Rich). The default is ``pretty`` when stdout is a terminal, else the command's machine
format. Output goes to the invocation's stdout (``cli.context``) in blocks: a ``Batch``
collects lines and writes them 64 KiB at a time, whatever ``PYTHONUNBUFFERED`` says.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from types import TracebackType
from typing import Any, BinaryIO

import orjson

from wardrik_cli.cli.context import current

BLOCK = 1 << 16


class Format(str, Enum):  # noqa: UP042 - a StrEnum's members format differently (f"{fmt}")
    pretty = "pretty"
    jsonl = "jsonl"
    json = "json"


def choose(fmt: Format | None, machine: Format) -> Format:
    if fmt is not None:
        return Format(fmt)
    return Format.pretty if current().isatty() else machine


Lines = Iterable[bytes | Any]


def emit(fmt: Format, *, pretty: Callable[[], None], json: Any = None, jsonl: Lines | None = None) -> None:
    """Write a result in ``fmt``: ``json`` is the document (or a callable that writes it),
    ``jsonl`` the lines (stored bytes, or objects written as compact JSON), ``pretty`` the
    renderer to call. A format the command has no form for falls back to ``json``."""
    if fmt == Format.pretty:
        pretty()
    elif fmt == Format.jsonl and jsonl is not None:
        write_lines(jsonl)
    elif callable(json):
        json()
    else:
        write_json(json)
    current().flush_out()


def write_lines(lines: Lines) -> None:
    """Each item a line (stored bytes as they are, objects as compact JSON), written a block
    of ``BLOCK`` bytes at a time: one write per block, not per line."""
    out = current().stdout
    parts: list[bytes | bytearray] = []
    size = 0
    try:
        for line in lines:
            if not isinstance(line, (bytes, bytearray)):
                line = dumps(line)
            if len(line) >= BLOCK:  # a long line goes as it is: joining would copy it whole
                _write_joined(out, parts)
                out.write(line)
                out.write(b"\n")
                parts, size = [], 0
                continue
            parts.append(line)
            size += len(line)
            if size >= BLOCK:
                parts.append(b"")
                out.write(b"\n".join(parts))
                out.flush()
                parts, size = [], 0
    except BrokenPipeError:
        raise
    except BaseException:
        _write_joined(out, parts)  # what was read before an error is printed, then the error
        raise
    _write_joined(out, parts)


def _write_joined(out: BinaryIO, parts: list[bytes | bytearray]) -> None:
    if parts:
        parts.append(b"")
        out.write(b"\n".join(parts))
    out.flush()


def write_line(raw: bytes) -> None:
    out = current().stdout
    out.write(raw + b"\n")


def dumps(obj: Any, *, indent: bool = False) -> bytes:
    """JSON of what a command prints; an integer past 64 bits (a sum of token counts an agent
    wrote, each valid) is written as JSON writes any integer: orjson writes none that big, so
    such a value goes through the standard library, in the same layout."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:
        import json

        return json.dumps(obj, ensure_ascii=False, indent=2 if indent else None,
                          separators=None if indent else (",", ":")).encode()


def write_json(obj: Any, *, indent: bool = True) -> None:
    current().stdout.write(dumps(obj, indent=indent) + b"\n")


def write_events_json(raws: Iterable[bytes], next_cursor_fn: Callable[[], str]) -> None:
    """``{"events": [...], "next": "..."}`` streamed: stored lines go in as they are read. The
    document starts with its first event (or at the end): a read that fails before any event
    (a corrupt line) prints nothing, not half a document; one that fails after some closes
    the document on what was printed, with ``"next": null`` (no cursor: the read did not end,
    as a cursor file is left as it was), and the error follows on stderr (exit 1)."""
    from wardrik_cli.errors import WardrikError

    with Batch() as b:
        first = True
        try:
            for raw in raws:
                b.write(b'{"events": [\n  ' if first else b",\n  ")
                b.write(raw)
                first = False
        except WardrikError:
            if not first:
                b.write(b'\n], "next": null}\n')  # a valid document of what was read before it
            raise
        b.write(b"\n], " if not first else b'{"events": [], ')
        b.write(b'"next": ' + orjson.dumps(next_cursor_fn()) + b"}\n")


class Batch:
    """Bytes for stdout, written in blocks of ``BLOCK`` (and when the batch ends or is flushed)."""

    def __init__(self) -> None:
        self.out = current().stdout
        self.parts: list[bytes | bytearray] = []
        self.size = 0

    def write(self, data: bytes | bytearray) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= BLOCK:
            self.flush()

    def line(self, raw: bytes | bytearray) -> None:
        self.write(raw)
        self.write(b"\n")

    def flush(self) -> None:
        if self.parts:
            self.out.write(b"".join(self.parts))
            self.parts, self.size = [], 0
        self.out.flush()

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None or not issubclass(exc_type, BrokenPipeError):
            self.flush()
