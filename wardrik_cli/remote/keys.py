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
from datetime import UTC, datetime

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


def utc_day(time: str) -> str:
    """The UTC day (``YYYY-MM-DD``) of an event's RFC 3339 time; ValueError when it is none."""
    if len(time) >= 20 and time[-1] == "Z" and time[4] == "-" and time[10] == "T":
        return time[:10]  # the stored form: already UTC
    dt = datetime.fromisoformat(time.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError(f"time {time!r} has no offset")
    return dt.astimezone(UTC).strftime("%Y-%m-%d")
