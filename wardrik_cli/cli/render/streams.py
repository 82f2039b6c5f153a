"""``tail`` in pretty: stored events as rows, streamed text as one line per message.

Contract kept here:
- Every event but a text delta is one row (``events.EventLines``, ``fixed``): the columns
  are set at the start (the log column from the ids matched then) and never reflow.
- ``message.delta``/``reasoning.delta`` get no row. Their text is gathered per (log, message
  id, type): a *stream*, however many agents stream at once. A stream ends when its log
  writes the message's ``message.completed`` (or, for reasoning, ``reasoning.completed``), when
  a run ends in that log, or after ``IDLE_S`` without a delta.
- On a terminal, the open streams are a region at the bottom of the output: one line each,
  labelled like a row (time of its last delta, log, ``~``, type, message id), showing the
  newest text, cut on the left to the terminal's width. Rows print above the region (it is
  erased and drawn again under them); a stream's line goes when the stream ends. At most
  ``MAX_LINES`` lines (and half the screen); more streams are counted on the last line.
  The region is left as it is when the tail ends, the cursor under it.
- Anywhere else (a pipe, a file, ``TERM=dumb``) nothing moves the cursor: a stream is printed
  as one row when it ends (after its day's line, as any row), its text from the start on one
  line, not cut at a width (its first ``KEEP`` characters, then how many more there were).
- Delta text goes through ``cli.safe_text.safe`` before it is measured and cut (whitespace
  runs become one space; other controls are shown escaped), and the console sanitises
  everything once more on the way out.
- Everything is written under one lock, in one write per change. A ticker thread, started
  with the first stream, ends idle streams; it writes with ``os.write`` on stdout's
  descriptor (never through Python's buffered stdout, whose lock it could otherwise hold at
  exit) and never receives signals, so Ctrl-C and SIGTERM still end the tail at once.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from wardrik_cli.cli.render.console import clock, console, day_of
from wardrik_cli.cli.render.events import SEQ_WIDTH, TYPE_WIDTH, EventLines, fit_log, log_style, log_width
from wardrik_cli.cli.render.summary import delta_key, delta_text
from wardrik_cli.cli.safe_text import flat as safe_flat
from wardrik_cli.cli.safe_text import safe
from wardrik_cli.protocol.catalogue import short_name

DELTAS = ("message.delta", "reasoning.delta")
ENDS = {"message.completed": DELTAS, "reasoning.completed": ("reasoning.delta",)}  # what each ends, by message id
RUN_ENDS = ("run.completed", "run.failed")  # end every stream of their log
IDLE_S = 15.0  # a stream with no delta for this long has ended (its writer died or never says so)
TICK_S = 1.0  # how often idle streams are looked for while nothing arrives
MAX_LINES = 12
KEEP = 4096  # characters kept of each stream's start and of its end: what a line can show

Key = tuple[str, Any, str]  # (log, message id, type)


class Stream:
    """The text of one message streamed so far (its first and last ``KEEP`` characters)."""

    __slots__ = ("log", "mid", "typ", "head", "tail", "size", "time", "touched")

    def __init__(self, log: str, mid: Any, typ: str) -> None:
        self.log, self.mid, self.typ = log, mid, typ
        self.head = self.tail = ""
        self.size = 0
        self.time: Any = None
        self.touched = 0.0

    def add(self, chunk: str, when: Any, now: float) -> None:
        if len(self.head) < KEEP:
            self.head += chunk[: KEEP - len(self.head)]
        self.tail = (self.tail + chunk)[-KEEP:]
        self.size += len(chunk)
        self.time, self.touched = when, now

    def start(self) -> str:
        """Its text from the start (all of it when short), flattened and sanitised."""
        return flat(self.head if self.size > KEEP else self.tail)

    def end(self) -> str:
        """Its newest text, flattened and sanitised."""
        return flat(self.tail)

    def label(self) -> str:
        mid = "" if self.mid is None else safe(str(self.mid), keep_newlines=False)[:24]
        return f"{mid} ▸ " if mid else "▸ "


def flat(text: str) -> str:
    """Text for one line: whitespace runs are one space, every other control shown escaped
    (``safe_text.flat``, the rule summaries follow too)."""
    return safe_flat(text)


def last_cells(text: str, width: int) -> str:
    """The end of ``text`` that fits in ``width`` cells, after an ellipsis when cut."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    out: list[str] = []
    used = 1  # the ellipsis
    for ch in reversed(text):
        w = cell_len(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "…" + "".join(reversed(out)).lstrip()


class FollowPrinter:
    """Prints tail's items (``read.reader.Item``s); see the module docstring.

    log_ids: the ids matched at the start (the log column's width); warn: writes a warning
    to stderr (``warn`` is the same, keeping the region whole around it); c: the Rich console;
    region: draw open streams in place (default: stdout is a terminal that can move the cursor).
    """

    def __init__(self, log_ids: Iterable[str] = (), *, warn: Callable[[str], None] | None = None,
                 c: Any = None, region: bool | None = None) -> None:
        self.c = c if c is not None else console()
        self.lines = EventLines(self.c, type_width=TYPE_WIDTH, seq_width=SEQ_WIDTH,
                                log_width=log_width(log_ids, self.c.width), fixed=True)
        self._warn = warn or (lambda msg: None)
        self.region = _can_move_cursor(self.c) if region is None else region
        self.streams: dict[Key, Stream] = {}  # in the order they started
        self.drawn = 0  # lines of the region on the screen now
        self._lock = threading.RLock()
        self._fd = _fileno(self.c.file)
        self._encoding = getattr(self.c.file, "encoding", None) or "utf-8"
        self._ticker: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- what comes in ---------------------------------------------------------------
    def __call__(self, item: Any) -> None:
        ev = item.event
        typ = short_name(str(ev.get("type", "")))
        with self._lock:
            now = time.monotonic()
            if typ in DELTAS and not ev.get("sequence"):
                key = (str(item.log), delta_key(ev), typ)
                st = self.streams.get(key)
                if st is None:
                    st = self.streams[key] = Stream(*key)
                st.add(delta_text(ev), ev.get("time"), now)
                self._show([], self._idle(now))
                self._start_ticker()
            else:
                self._show([item], self._ended_by(item, typ) + self._idle(now))

    def warn(self, msg: str) -> None:
        """A warning on stderr, kept apart from the region (both may be the same terminal)."""
        with self._lock:
            if self.region and self.drawn:
                self._write(self._capture(self._erase))
                self._warn(msg)
                self._write(self._capture(self._draw))
            else:
                self._warn(msg)

    def close(self) -> None:
        """Stop the ticker; the region stays on the screen as it was, the cursor under it."""
        self._stopping.set()
        th, self._ticker = self._ticker, None
        if th is not None and th is not threading.current_thread():
            th.join(timeout=2)  # a write blocked on a stopped terminal must not hold up the end

    # -- streams -------------------------------------------------------------------------
    def _ended_by(self, item: Any, typ: str) -> list[Stream]:
        """The streams a kept event ends: its message's, or every one of its log's when a run ends."""
        if item.seq is None or not self.streams:
            return []
        log = str(item.log)
        if typ in RUN_ENDS:
            keys = [k for k in self.streams if k[0] == log]
        elif typ in ENDS:
            mid = delta_key(item.event)
            keys = [k for k in self.streams if k[0] == log and k[2] in ENDS[typ] and (k[1] == mid or k[1] is None)]
        else:
            return []
        return [self.streams.pop(k) for k in keys]

    def _idle(self, now: float) -> list[Stream]:
        keys = [k for k, st in self.streams.items() if now - st.touched > IDLE_S]
        return [self.streams.pop(k) for k in keys]

    def _start_ticker(self) -> None:
        if self._ticker is None and not self._stopping.is_set():
            self._ticker = threading.Thread(target=self._tick, name="wardrik-streams", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stopping.wait(TICK_S):
            try:
                with self._lock:
                    if self._stopping.is_set():
                        return
                    ended = self._idle(time.monotonic())
                    if ended:
                        self._show([], ended)
            except (OSError, ValueError):
                return  # stdout is gone: the main thread finds out and ends the tail

    # -- output ----------------------------------------------------------------------------
    def _show(self, items: list[Any], ended: list[Stream]) -> None:
        def render() -> None:
            if self.region:
                self._erase()
            else:
                for st in ended:  # a pipe gets each message once, when it is whole, before what ended it
                    day = day_of(st.time)
                    if day and day != self.lines.day and not self.lines.wide:  # its day line first, as a row's
                        self.lines.day = day
                        self.lines._day_line(day)
                    # one line, not cut at a width: a file or a pipe has none to fit
                    self.c.print(self._stream_line(st, self.c.width, newest=False), soft_wrap=True)
            for item in items:
                self.lines.print(item)
            if self.region:
                self._draw()
        self._write(self._capture(render))

    def _capture(self, fn: Callable[[], None]) -> str:
        with self.c.capture() as cap:
            fn()
        return str(cap.get())

    def _write(self, text: str) -> None:
        if not text:
            return
        if self._fd is None:
            self.c.file.write(text)
            self.c.file.flush()
            return
        data = text.encode(self._encoding, "backslashreplace")
        while data:
            data = data[os.write(self._fd, data):]

    def _erase(self) -> None:
        from rich.control import Control
        from rich.segment import ControlType

        if self.drawn:
            up = [Control((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2))] * self.drawn
            self.c.control(Control(ControlType.CARRIAGE_RETURN), *up)
            self.drawn = 0

    def _draw(self) -> None:
        """One line per open stream (the most recently active ones, in the order they started)."""
        from rich.text import Text

        if not self.streams:
            return
        room = max(2, min(MAX_LINES, (self.c.height or 24) // 2))
        shown = list(self.streams.values())
        more = 0
        if len(shown) > room:
            keep = set(map(id, sorted(shown, key=lambda s: s.touched)[-(room - 1):]))
            more = len(shown) - len(keep)
            shown = [s for s in shown if id(s) in keep]
        width = max(20, self.c.width - 1)  # a line that filled the last column could wrap on some terminals
        out = [self._stream_line(st, width, newest=True) for st in shown]
        if more:
            out.append(Text(f"{'':8} … {more} more streaming", style="dim"))
        for t in out:
            t.truncate(width, overflow="ellipsis")
            self.lines._out(t)
        self.drawn = len(out)

    def _stream_line(self, st: Stream, width: int, *, newest: bool) -> Any:
        """A stream as a row: time, log, ``~``, type, then ``ID ▸ text`` in what is left."""
        from rich.cells import cell_len
        from rich.text import Text

        lines = self.lines
        reasoning = st.typ == "reasoning.delta"
        t = Text()
        t.append(f"{clock(st.time):<8}", style="dim")
        t.append(" ")
        t.append(fit_log(st.log, lines.log_w), style="bold " + log_style(st.log))
        t.append(f" {'~':>{lines.seq_w}} ", style="dim")
        t.append(f"{st.typ:<{lines.type_w}}  ", style="dim italic magenta" if reasoning else "dim cyan")
        t.append(st.label(), style="dim")
        style = "italic magenta" if reasoning else "cyan"
        if newest:
            t.append(last_cells(st.end(), max(1, width - cell_len(t.plain))), style=style)
        else:
            more = st.size - len(st.head) if st.size > KEEP else 0
            t.append(st.start() + (f"… ({more:,} more characters)" if more > 0 else ""), style=style)
        return t


def _can_move_cursor(c: Any) -> bool:
    """Cursor movement only on a real terminal: never on a pipe, even under ``--color always``."""
    try:
        tty = bool(c.file.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    return tty and bool(c.is_terminal) and not c.is_dumb_terminal


def _fileno(f: Any) -> int | None:
    try:
        fd = f.fileno()
        f.flush()  # whatever the text layer holds goes first
    except (AttributeError, ValueError, OSError):
        return None
    return fd if isinstance(fd, int) else None
