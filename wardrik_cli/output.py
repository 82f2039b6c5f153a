"""Writing results to stdout in the three formats, without importing Rich.

``jsonl`` writes stored lines byte for byte; ``json`` writes one document; ``pretty`` is
handed to ``render`` (the only module that imports Rich). The default is ``pretty`` on a
terminal and the command's machine format otherwise.
"""
from __future__ import annotations

import sys
from enum import Enum
from typing import Any, Iterable, Optional

import orjson


class Format(str, Enum):
    pretty = "pretty"
    jsonl = "jsonl"
    json = "json"


def choose(fmt: Optional[Format], machine: Format) -> Format:
    if fmt is not None:
        return Format(fmt)
    return Format.pretty if sys.stdout.isatty() else machine


def write_line(raw: bytes) -> None:
    b = sys.stdout.buffer
    b.write(raw)
    b.write(b"\n")


def write_json(obj: Any) -> None:
    b = sys.stdout.buffer
    b.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2))
    b.write(b"\n")


def write_events_json(raws: Iterable[bytes], next_cursor_fn) -> None:
    """``{"events": [...], "next": "..."}`` streamed: stored lines go in as they are read."""
    b = sys.stdout.buffer
    b.write(b'{"events": [')
    first = True
    for raw in raws:
        b.write(b"\n  " if first else b",\n  ")
        b.write(raw)
        first = False
    b.write(b"\n], " if not first else b"], ")
    b.write(b'"next": ' + orjson.dumps(next_cursor_fn()) + b"}\n")


def flush() -> None:
    sys.stdout.flush()
