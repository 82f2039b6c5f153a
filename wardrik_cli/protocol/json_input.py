"""JSON given to wardrik to store (``--data``, ``--batch`` lines, ``append --stream`` lines).

Contract kept here: ``parse_json(raw, what)`` returns the value, or raises ``BadInput`` with
one sentence naming ``what`` (or none, when the caller names the input itself): bytes that
are not UTF-8, text that is not JSON, an integer that does not fit in 64 bits (orjson would
write it back as a float or refuse it: it is refused here, before anything is written), and
nesting too deep to check. ``item_fields(obj)`` checks the shape of one item, ``{"type",
"data"?, "subject"?, "traceparent"?}``, and returns those fields (``BadEvent``).
"""
from __future__ import annotations

import re
from typing import Any

import orjson

from wardrik_cli.errors import BadEvent, BadInput

ITEM_KEYS = frozenset({"type", "data", "subject", "traceparent"})
_LONG_DIGITS = re.compile(rb"\d{19,}")  # only such a run can be an integer past 64 bits


def parse_json(raw: bytes, what: str | None = None) -> Any:
    named = f"{what} is " if what else ""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{named}not UTF-8 (bad byte at offset {e.start})") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadInput(f"{named}not valid JSON: {e}") from None
    if _LONG_DIGITS.search(raw):
        _refuse_big_ints(raw, what)
    return value


def _refuse_big_ints(raw: bytes, what: str | None) -> None:
    import json

    def exact(digits: str) -> int:
        v = int(digits)
        if not -(1 << 63) <= v < (1 << 64):
            raise BadInput(f"{what + ': ' if what else ''}the integer {digits} does not fit in 64 bits; "
                           "store it as a string")
        return v

    try:
        json.loads(raw, parse_int=exact)
    except RecursionError:
        raise BadInput(f"{what + ' is ' if what else ''}nested too deeply") from None


def item_fields(obj: Any) -> tuple[str, Any, Any, Any]:
    """(type, data, subject, traceparent) of one item, its shape checked (the values are
    checked by ``store.append.make_item``)."""
    if not isinstance(obj, dict):
        raise BadEvent('not a JSON object (one item a line: {"type", "data", "subject"?, "traceparent"?})')
    unknown = set(obj) - ITEM_KEYS
    if unknown:
        raise BadEvent(f"unknown key(s) {', '.join(sorted(unknown))} (an item has type, data, subject, traceparent)")
    if not isinstance(obj.get("type"), str):
        raise BadEvent('missing "type"' if "type" not in obj else '"type" must be a string')
    return obj["type"], obj.get("data", {}), obj.get("subject"), obj.get("traceparent")
