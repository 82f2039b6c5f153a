"""Cursors: where a reader is, as text a script can keep.

Encoding (this is the format users store; changing it breaks every saved cursor):
URL-safe base64 without padding of compact JSON ``{log id: last sequence delivered}``
with keys sorted, e.g. ``eyJhY21lL3RyaWFnZSI6NDN9`` is ``{"acme/triage":43}``.

Decoding is strict: either base64 alphabet, padded or not, but nothing else; the JSON
must be exactly an object whose keys are log ids (or ``audit``), each once, and whose
values are non-negative integers (booleans and floats refused).
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping

import orjson

from wardrik_cli.errors import BadCursor
from wardrik_cli.protocol.names import is_log_id

Cursor = dict[str, int]
_B64_RE = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")


MAX_SEQUENCE = 999_999_999_999  # a stored sequence has 12 digits


def encode_cursor(cursor: Mapping[str, int]) -> str:
    raw = orjson.dumps(dict(cursor), option=orjson.OPT_SORT_KEYS)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _shown(text: str) -> str:
    """A cursor as an error shows it: a hostile one may be megabytes."""
    return repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(text):,} characters)"


def decode_cursor(text: str) -> Cursor:
    s = text.strip() if isinstance(text, str) else ""
    if not s or not _B64_RE.fullmatch(s):
        raise BadCursor(f"bad cursor {_shown(text)}: not base64")
    body = s.rstrip("=")
    if len(body) % 4 == 1 or (len(s) != len(body) and len(s) % 4 != 0):
        raise BadCursor(f"bad cursor {_shown(text)}: bad base64 length or padding")
    body = body.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise BadCursor(f"bad cursor {_shown(text)}: not base64") from None
    # A canonical encoding only: stray low bits in the last character mean trailing junk.
    if base64.b64encode(raw).decode().rstrip("=") != body:
        raise BadCursor(f"bad cursor {_shown(text)}: trailing bits after the data")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadCursor(f"bad cursor {_shown(text)}: not JSON inside") from None
    # a key given twice is collapsed by the decoder (the last one wins): a key and its
    # sequence hold exactly two quotes, so more quotes than keys twice means a repeat
    if not isinstance(obj, dict) or raw.count(b'"') != 2 * len(obj):
        raise BadCursor(f"bad cursor {_shown(text)}: not an object of log id to sequence, each once")
    for key, seq in obj.items():
        if not is_log_id(key):
            raise BadCursor(f"bad cursor: {key!r} is not a log id")
        # An integer that fits is checked against its log by the reader (past the end of a
        # matched log is refused there) and carried as it is for a log the patterns do not
        # match; one past 64 bits is read as a float, which no cursor can carry: named as too
        # big, not printed as 1e+23.
        if type(seq) is float and seq.is_integer() and seq > MAX_SEQUENCE:
            raise BadCursor(f"bad cursor: the sequence for {key!r} is past the largest a log holds "
                            f"({MAX_SEQUENCE}, 12 digits)")
        if type(seq) is not int or seq < 0:
            raise BadCursor(f"bad cursor: the sequence for {key!r} must be a non-negative integer, "
                            f"not {orjson.dumps(seq).decode()}")
    return obj
