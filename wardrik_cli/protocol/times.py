"""Times and durations as wardrik writes and reads them.

Stored times are RFC 3339 UTC with exactly six fractional digits and ``Z``
(``2026-10-22T09:00:00.000000Z``): fixed width, so comparing the strings compares the
times, which is what lets readers bisect a log by time without parsing dates.
"""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from wardrik_cli.errors import BadDuration, BadTime

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_RE = re.compile(r"([0-9]+)([smhdw])")


def format_ns(ns: int) -> str:
    """Nanoseconds since the epoch as a stored time string."""
    secs, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest // 1000:06d}Z"


def format_dt(dt: datetime) -> str:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        u = dt.astimezone(UTC)
    except OverflowError:  # an offset pushed it past year 1 or 9999
        u = (datetime.min if dt.year < 5000 else datetime.max).replace(tzinfo=UTC)
    # Four-digit years always: stored times compare as strings.
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}Z"


def now() -> str:
    return format_ns(time.time_ns())


def parse_duration(text: str) -> timedelta:
    """``30s``, ``90m``, ``12h``, ``7d``, ``4w``; nothing else."""
    m = _DURATION_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if not m:
        raise BadDuration(f"bad duration {text!r}: use a whole number and a unit, e.g. 30s, 90m, 12h, 7d, 4w")
    seconds = int(m.group(1)) * _UNITS[m.group(2)]
    if seconds > MAX_DURATION_S:
        raise BadDuration(f"bad duration {text!r}: longer than 9999 years")
    return timedelta(seconds=seconds)


MAX_DURATION_S = 9999 * 366 * 86400


def parse_time_arg(text: str, *, now_dt: datetime | None = None) -> str:
    """A --since/--until value (RFC 3339, no offset meaning UTC, or a duration ago) as a stored time string."""
    if _DURATION_RE.fullmatch(text.strip()):
        base = now_dt or datetime.now(UTC)
        try:
            return format_dt(base - parse_duration(text))
        except OverflowError:
            return format_dt(datetime.min)  # further back than any event
    s = text.strip()
    if s.endswith(("z", "Z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise BadTime(f"bad time {text!r}: use RFC 3339 (2026-10-22T09:00:00Z) "
                      "or a duration ago (15m, 2h, 3d)") from None
    return format_dt(dt)
