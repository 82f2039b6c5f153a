"""Where pretty output goes and how it looks: the display of one invocation.

A ``Display`` holds what the global options chose (``--color``, ``--local``, ``-v``), the
text streams to write to and the environment Rich reads (``NO_COLOR``, ``COLUMNS``, ...).
The command line sets one per invocation (``use``); nothing here is process-wide, so many
invocations can run in one process (the tests do). Without one, the process's own streams
and environment are used.

Times: stored times are shown in UTC, or in local time under ``--local``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO


class Display:
    __slots__ = ("color", "local", "verbose", "out", "err", "env")

    def __init__(self, *, color: str = "auto", local: bool = False, verbose: bool = False,
                 out: TextIO | None = None, err: TextIO | None = None,
                 env: Mapping[str, str] | None = None):
        self.color, self.local, self.verbose = color, local, verbose
        self.out, self.err, self.env = out, err, env


_DISPLAY: ContextVar[Display] = ContextVar("wardrik_display")


def use(d: Display) -> None:
    """Make ``d`` the display of the current invocation (context)."""
    _DISPLAY.set(d)


def display() -> Display:
    d = _DISPLAY.get(None)
    if d is None:
        d = Display()
        _DISPLAY.set(d)
    return d


def console(stderr: bool = False) -> Any:
    """A Rich console on the display's stdout (or stderr), honouring ``--color``."""
    d = display()
    kw: dict[str, Any] = {"highlight": False,
                          "file": (d.err or sys.stderr) if stderr else (d.out or sys.stdout),
                          "_environ": dict(d.env if d.env is not None else os.environ)}
    if d.color == "never" or (d.color != "always" and kw["_environ"].get("NO_COLOR")):
        # NO_COLOR (no-color.org) asks for no colour; no style either: bold and dim are escapes
        # too, and a script that greps a terminal's output for them should find none
        kw["no_color"] = True
        kw["color_system"] = None
    elif d.color == "always":
        kw["force_terminal"] = True
        kw["no_color"] = False
    return _console_class()(**kw)


# The most columns and lines a console lays out for. Rich takes COLUMNS and LINES (and the
# terminal's own size) as they come; COLUMNS=1000000000 made every row a gigabyte of padding
# (10 s and 559 MB at 50,000,000; "out of memory" at 10^9). No terminal is wider or taller.
MAX_WIDTH = 1000
MAX_HEIGHT = 1000


def clamped(size: Any) -> Any:
    """A Rich ``ConsoleDimensions`` within ``MAX_WIDTH`` x ``MAX_HEIGHT`` (and at least 1 x 1)."""
    return size._replace(width=max(1, min(size.width, MAX_WIDTH)), height=max(1, min(size.height, MAX_HEIGHT)))


_CONSOLE_CLASS: Any = None


def bounded_console(base: Any) -> Any:
    """``base`` (a Rich Console class) as wardrik's consoles and Typer's help console both use
    it: a closed pipe raises BrokenPipeError (Rich would exit 1; for wardrik a reader going
    away is a normal end, see ``cli.app``), and the size, read on every use as Rich's is (a
    resized terminal is followed), is bounded (``clamped``): COLUMNS=1000000000 must not lay
    output out a gigabyte wide."""

    class _Bounded(base):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

        @property
        def size(self) -> Any:
            return clamped(base.size.fget(self))

        @size.setter
        def size(self, new_size: Any) -> None:
            base.size.fset(self, new_size)

    return _Bounded


def _console_class() -> Any:
    """Rich's Console, except that a closed pipe raises BrokenPipeError (Rich would exit 1;
    for wardrik a reader going away is a normal end, see ``cli.app``)."""
    global _CONSOLE_CLASS
    if _CONSOLE_CLASS is None:
        import rich.text
        from rich.console import Console

        from wardrik_cli.cli.safe_text import safe

        # Rich drops BEL, BS, CR, VT and FF from every Text it makes (rich.control's
        # strip_control_codes): a tool name "a\x07b" would show as "ab", hiding that the data
        # holds a control. The one rule (cli.safe_text) is to show every control as an escape,
        # and doing it where the Text is made means its width is measured as it is shown.
        rich.text.strip_control_codes = lambda text, *_: safe(text)  # type: ignore[attr-defined]

        class _Console(bounded_console(Console)):  # type: ignore[misc]
            def _render_buffer(self, buffer: Any) -> str:
                # The one place every printed string passes: controls in it are made
                # visible (cli.safe_text), and no hyperlink is ever emitted (wardrik makes
                # none; one could only come from markup smuggled in data).
                from rich.segment import Segment

                from wardrik_cli.cli.safe_text import safe

                clean = (
                    seg if control else Segment(safe(text), style.update_link(None) if style and style.link else style)
                    for seg in buffer for text, style, control in (seg,)
                )
                return str(super()._render_buffer(clean))

        _CONSOLE_CLASS = _Console
    return _CONSOLE_CLASS


# ---------------------------------------------------------------------------
# times
# ---------------------------------------------------------------------------
def _dt(t: Any) -> datetime | None:
    if not isinstance(t, str) or len(t) < 19:
        return None
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00") if t.endswith("Z") else t)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(_local_zone()) if display().local else dt.astimezone(UTC)


def _local_zone() -> Any:
    """The zone ``--local`` shows: the invocation's ``TZ`` when it is not the process's own (an
    in-process run given an environment of its own; a zone name like ``Asia/Tokyo``), else
    None, the process's local time."""
    env = display().env
    tz = env.get("TZ") if env is not None else None
    if not tz or tz == os.environ.get("TZ"):
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(tz[1:] if tz.startswith(":") else tz)
    except (ValueError, KeyError, OSError):  # not a zone name (a POSIX rule like JST-9): the process's
        return None


def tz_label() -> str:
    if not display().local:
        return "UTC"
    off = datetime.now(UTC).astimezone(_local_zone()).strftime("%z")
    return f"{off[:3]}:{off[3:]}" if off else "local"


def day_of(t: Any) -> str:
    dt = _dt(t)
    return dt.strftime("%Y-%m-%d") if dt else ""


def clock(t: Any, precise: bool = False) -> str:
    """``09:00:03`` (``09:00:03.123456`` when precise), in UTC or, with --local, local time."""
    dt = _dt(t)
    if dt is None:
        return str(t or "")[:8]
    return dt.strftime("%H:%M:%S.%f" if precise else "%H:%M:%S")


def short_time(t: Any) -> str:
    """``2026-10-22 09:00:03``: a date and time in one, for tables without day lines."""
    dt = _dt(t)
    return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else str(t or "")


def ago(t: Any, now: datetime | None = None) -> str:
    """How long since t, compactly: ``42s``, ``3m 12s``, ``2h 05m``, ``4d 3h``."""
    dt = _dt(t)
    if dt is None:
        return ""
    secs = int(((now or datetime.now(UTC)) - dt).total_seconds())
    return duration(max(secs, 0) * 1000.0)


def duration(ms: Any) -> str:
    if not isinstance(ms, (int, float)):
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d {h}h"


