"""The object-key layout of shipped ledgers (byte-exact; other tools query it as hive partitions).

Contract kept here: a segment of log ID is the object

    PREFIX/v1/deployment=D/kind=agents|audit/log=ID/day=YYYY-MM-DD/SSSSSSSSSSSS.jsonl

where ID is the log id with ``/`` written as ``~`` (never in a log id, so the mapping is
reversible), SSSSSSSSSSSS the 12-digit sequence of the segment's first line and the day the
UTC day of every event in it (a segment never crosses a day). The audit log is ``kind=audit``
with ``log=audit``. An empty PREFIX means the keys start at ``v1/``.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from wardrik_cli.protocol.names import AUDIT_NAME, is_log_id

AGENTS, AUDIT = "agents", "audit"
SEGMENT_SUFFIX = ".jsonl"
_KEY = re.compile(r"deployment=([a-z0-9][a-z0-9.-]{0,62})/kind=(agents|audit)/log=([^/]+)/"
                  r"day=(\d{4}-\d\d-\d\d)/(\d{12})\.jsonl")


def base(prefix: str) -> str:
    """``PREFIX/v1/`` (``v1/`` for an empty prefix)."""
    return f"{prefix.strip('/')}/v1/" if prefix.strip("/") else "v1/"


def log_prefix(prefix: str, deployment: str, kind: str, name: str) -> str:
    """Every key of one log starts with this (its day partitions are below it)."""
    return f"{base(prefix)}deployment={deployment}/kind={kind}/log={name.replace('/', '~')}/"


def segment_key(prefix: str, deployment: str, kind: str, name: str, day: str, first: int) -> str:
    return f"{log_prefix(prefix, deployment, kind, name)}day={day}/{first:012d}{SEGMENT_SUFFIX}"


class Parsed:
    """What a segment key says: deployment, kind, log name (``audit`` for the audit log), day, first sequence."""

    __slots__ = ("key", "deployment", "kind", "name", "day", "first")

    def __init__(self, key: str, deployment: str, kind: str, name: str, day: str, first: int):
        self.key, self.deployment, self.kind, self.name, self.day, self.first = key, deployment, kind, name, day, first


def parse_key(prefix: str, key: str) -> Parsed | None:
    """The segment a key names, or None for any other object under the prefix (never trusted)."""
    b = base(prefix)
    if not key.startswith(b):
        return None
    m = _KEY.fullmatch(key, len(b))
    if m is None:
        return None
    dep, kind, raw_id, day, seq = m.groups()
    name = raw_id.replace("~", "/")
    if kind == AUDIT:
        if name != AUDIT_NAME:
            return None
    elif "/" in raw_id or not is_log_id(name):
        return None
    try:
        datetime.strptime(day, "%Y-%m-%d")
    except ValueError:
        return None
    return Parsed(key, dep, kind, name, day, int(seq))


# RFC 3339 date-time, ASCII digits only; the ranges are checked by the calendar below
_RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
                      r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))", re.ASCII)


def utc_day(time: str) -> str:
    """The UTC day (``YYYY-MM-DD``) of an event's RFC 3339 time; ValueError saying why when it is none.

    Strict, because a segment is filed under this day for good and readers prune by it: a
    real calendar date (no ``2026-02-30``), hour 00-23 (no ``T24:00:00``, which the first ten
    characters would file under the day before the one it means), minute and second 00-59,
    an offset ``Z`` or ``+HH:MM``/``-HH:MM`` within 23:59, converted to UTC."""
    m = _RFC3339.fullmatch(time)
    if m is None:
        raise ValueError(f"time {time!r} is not RFC 3339 (YYYY-MM-DDTHH:MM:SS[.frac] and Z or an offset)")
    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    try:
        dt = datetime(y, mo, d, h, mi, sec, tzinfo=UTC)
    except ValueError:
        raise ValueError(f"time {time!r} is not a real date and time (a day its month has, hour 00-23, "
                         "minute and second 00-59)") from None
    sign, oh, om = m.group(7), m.group(8), m.group(9)
    if sign is not None:
        if int(oh) > 23 or int(om) > 59:
            raise ValueError(f"time {time!r} has an offset beyond 23:59")
        off = timedelta(hours=int(oh), minutes=int(om))
        try:
            dt = dt - off if sign == "+" else dt + off
        except OverflowError:
            raise ValueError(f"time {time!r} is outside the years 1 to 9999 in UTC") from None
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
