"""Times and durations as wardrik writes and reads them.

Stored times are RFC 3339 UTC with exactly six fractional digits and ``Z``
(``2026-10-22T09:00:00.000000Z``): fixed width, so comparing the strings compares the
times, which is what lets readers bisect a log by time without parsing dates.

A ``--since``/``--until`` value (``parse_time_arg``) is one of: RFC 3339 (no offset means
UTC, or the given zone); ``now``; ``today`` or ``yesterday`` (that day's 00:00); a date
``2026-10-22`` (its 00:00); a clock time ``10:00`` or ``10:00:30`` (that time today); a
duration ago, ``15m``, ``1h30m``, ``2h ago``. Words are case-insensitive; duration units are
lower case only (``M`` would read as months to some).
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from datetime import time as clock_time

from wardrik_cli.errors import BadDuration, BadTime

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# One or more parts, a whole number and its unit each, spaces allowed between parts but not
# inside one (``1h30m``, ``2d 12h``; not ``5 d``): each part must end in a unit letter, so
# matching is linear in the text's length.
_DURATION_RE = re.compile(r"[0-9]+[smhdw](?:[ \t]*[0-9]+[smhdw])*")
_DURATION_PART = re.compile(r"([0-9]+)([smhdw])")
_CLOCK_RE = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,6}))?)?")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
# The shape ``datetime.fromisoformat`` is trusted with: an ISO 8601 date (also basic, 20261022,
# or a week, 2026-W43), then optionally T, t or a space and a time with its offset. Python
# takes any character between date and time, so ``20261022x1`` would pass without this.
_ISO_SHAPE = re.compile(r"[0-9]{4}-?(?:[0-9]{2}-?[0-9]{2}|W[0-9]{2}(?:-?[0-9])?)"
                        r"(?:[Tt ][0-9][0-9:.,]*(?:[Zz]|[+-][0-9:]+)?)?")

MAX_DURATION_S = 9999 * 366 * 86400
_SHOWN = 80  # characters of a bad value an error message repeats

_TIME_FORMS = ("use RFC 3339 (2026-10-22T09:00:00Z), a date (2026-10-22), a clock time today (10:00), "
               "now, today, yesterday, or a duration ago (15m, 1h30m, 2h ago)")


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


def _shown(text: object) -> str:
    """A value as an error message repeats it: quoted, escaped to one line, not too long."""
    s = repr(text)
    return s if len(s) <= _SHOWN else s[:_SHOWN - 3] + "..."


def _duration_seconds(text: str) -> int:
    """Seconds in a duration (``90m``, ``1h30m``, ``2d 12h``); ValueError with the reason if it is not one."""
    s = text.strip()
    if not _DURATION_RE.fullmatch(s):
        raise ValueError("use a whole number and a unit, e.g. 30s, 90m, 12h, 7d, 4w, or several, e.g. 1h30m")
    seconds, seen = 0, set()
    for digits, unit in _DURATION_PART.findall(s):
        if unit in seen:
            raise ValueError(f"unit {unit} given twice")
        seen.add(unit)
        digits = digits.lstrip("0") or "0"
        if len(digits) > 15:  # far past the bound, and int() refuses very long digit strings
            raise ValueError("longer than 9999 years")
        seconds += int(digits) * _UNITS[unit]
    if seconds > MAX_DURATION_S:
        raise ValueError("longer than 9999 years")
    return seconds


def parse_duration(text: str) -> timedelta:
    """``30s``, ``90m``, ``12h``, ``7d``, ``4w``, or several units at most once each (``1h30m``,
    ``2d12h``, ``1w 2d``); at most 9999 years; nothing else."""
    try:
        if not isinstance(text, str):
            raise ValueError("use a whole number and a unit, e.g. 30s, 90m, 12h, 7d, 4w, or several, e.g. 1h30m")
        return timedelta(seconds=_duration_seconds(text))
    except ValueError as e:
        raise BadDuration(f"bad duration {_shown(text)}: {e}") from None


def _clamped(make: Callable[[], datetime], base: datetime) -> str:
    """``make()`` as a stored time; past year 1 or 9999 (an extreme ``now``), the nearer end."""
    try:
        return format_dt(make())
    except OverflowError:
        return format_dt(datetime.min if base.year < 5000 else datetime.max)


def parse_time_arg(text: str, *, now_dt: datetime | None = None, tz: tzinfo | None = None) -> str:
    """A --since/--until value as a stored time string.

    ``now_dt`` is "now" (an aware datetime; naive means UTC; default the real now). ``tz`` is
    the zone of values without an offset (dates, clock times, RFC 3339 without one) and of
    "today" (None: UTC). Raises BadTime naming the value when it is none of the forms.
    """
    if not isinstance(text, str):
        raise BadTime(f"bad time {_shown(text)}: {_TIME_FORMS}")
    base = now_dt if now_dt is not None else datetime.now(UTC)
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    zone: tzinfo = tz if tz is not None else UTC
    s = text.strip()
    word = s.lower()

    if word == "now":
        return format_dt(base)
    if word in ("today", "yesterday"):
        back = 1 if word == "yesterday" else 0
        return _clamped(lambda: datetime.combine(base.astimezone(zone).date() - timedelta(days=back),
                                                 clock_time(), tzinfo=zone), base)

    ago = word.endswith("ago")
    span = s[:-3].rstrip() if ago else s
    if ago and not span:
        raise BadTime(f"bad time {_shown(text)}: {_TIME_FORMS}")
    if _DURATION_RE.fullmatch(span):
        try:
            delta = timedelta(seconds=_duration_seconds(span))
        except ValueError as e:
            raise BadTime(f"bad time {_shown(text)}: {e}") from None
        try:
            return format_dt(base - delta)
        except OverflowError:
            return format_dt(datetime.min)  # further back than any event
    if ago:  # "<something> ago" where the something is not a duration
        raise BadTime(f"bad time {_shown(text)}: {_TIME_FORMS}")

    if m := _CLOCK_RE.fullmatch(s):
        hh, mm, ss, frac = m.groups()
        try:
            at = clock_time(int(hh), int(mm), int(ss or 0), int((frac or "0").ljust(6, "0")))
        except ValueError as e:
            raise BadTime(f"bad time {_shown(text)}: {e}") from None
        return _clamped(lambda: datetime.combine(base.astimezone(zone).date(), at, tzinfo=zone), base)

    if m := _DATE_RE.fullmatch(s):
        try:
            day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError as e:
            raise BadTime(f"bad time {_shown(text)}: {e}") from None
        return format_dt(datetime.combine(day, clock_time(), tzinfo=zone))

    iso = s[:-1] + "+00:00" if s.endswith(("z", "Z")) else s
    try:
        if not _ISO_SHAPE.fullmatch(s):
            raise ValueError(s)
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise BadTime(f"bad time {_shown(text)}: {_TIME_FORMS}") from None
    return format_dt(dt if dt.tzinfo is not None else dt.replace(tzinfo=zone))


def parse_window(since: str | None, until: str | None, *, now_dt: datetime | None = None,
                 tz: tzinfo | None = None) -> tuple[str | None, str | None]:
    """``--since`` and ``--until`` (either may be None) as stored times, "now" taken once for both.

    Raises BadTime when the window holds no time at all (``since >= until``).
    """
    base = now_dt if now_dt is not None else datetime.now(UTC)
    lo = parse_time_arg(since, now_dt=base, tz=tz) if since is not None else None
    hi = parse_time_arg(until, now_dt=base, tz=tz) if until is not None else None
    if lo is not None and hi is not None and lo >= hi:
        raise BadTime(f"empty window: --since {lo} is not before --until {hi}")
    return lo, hi


class _ProcessLocal(tzinfo):
    """The process's own local time (its ``TZ``, else the system's), with the offset of each
    instant (summer time included), as ``datetime.astimezone()`` shows it. Outside the range
    the C library handles, the offset of the present."""

    @staticmethod
    def _now_offset() -> int:
        return time.localtime().tm_gmtoff

    def _wall_offset(self, dt: datetime) -> int:
        """The offset at a local wall-clock time (a time skipped or repeated by a change: mktime's choice)."""
        try:
            stamp = time.mktime((dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, 0, 0, -1))
            return time.localtime(stamp).tm_gmtoff
        except (OverflowError, ValueError, OSError):
            return self._now_offset()

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(seconds=self._now_offset() if dt is None else self._wall_offset(dt))

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return None

    def fromutc(self, dt: datetime) -> datetime:
        naive = dt.replace(tzinfo=None)
        try:
            off = time.localtime((naive - datetime(1970, 1, 1)).total_seconds()).tm_gmtoff
        except (OverflowError, ValueError, OSError):
            off = self._now_offset()
        return (naive + timedelta(seconds=off)).replace(tzinfo=self)

    def __repr__(self) -> str:
        return "local_zone(process)"


def local_zone(env: Mapping[str, str]) -> tzinfo | None:
    """The zone ``--local`` means for an invocation with environment ``env``: its ``TZ`` as a zone
    name (``Asia/Tokyo``, ``:Europe/Paris``), else (no ``TZ``, or not a zone name, like
    ``JST-9``) the process's local time. The renderer's ``--local`` shows the same zone."""
    name = env.get("TZ")
    if name:
        from zoneinfo import ZoneInfo

        try:
            return ZoneInfo(name[1:] if name.startswith(":") else name)
        except (ValueError, KeyError, OSError):
            pass
    return _ProcessLocal()
