"""One log on disk, as readers see it: its lines decoded into events, its ends, and seeks.

Contract kept here:
- Readers never write: a ``LogView`` opens the file read-only and takes no lock.
- A view is a snapshot of the file's complete lines at open time (``end``); bytes past the
  last newline are a torn tail and are never decoded.
- A complete line that is not an event is ``CorruptLedger`` naming file, 1-based line and
  byte offset, unless the caller asked to skip corrupt lines (then ``on_corrupt`` is told).
- Sequences are sorted, so a seek by sequence is a bisection; times are sorted in logs this
  tool wrote, so a seek by time is a bisection whose answer is checked against its
  neighbours, falling back to a scan from the start when the check fails.
- The watermark (``.wardrik/watermarks/<log>@json``, written by compaction) says where the
  sequence goes on, and the last dropped line's hash, for a log whose every event was dropped.
  Which file a record describes (``LogView.match_watermark``):
  * a log file holding events: the record (or the one it replaced, ``previous``) whose
    ``next_sequence`` is the first event's sequence;
  * a log file holding no complete line: the top record when it says compaction dropped
    every event (``first_time_kept`` recorded as null: ``Watermark.emptied``), whatever the
    file's inode and mtime: an evidence copy (``cp -r``, tar: a new inode, a new mtime) or the
    file made again by an append keeps the count, since sequences never go back for a log id
    (the events between the record and a log deleted by hand are not known: those are the
    limit). Any other record (or ``previous``) applies to an empty file only when it names
    this very file (its inode, or its mtime: ``cp -a``), as a record of a compaction that
    kept events is about the file it wrote. A missing file has none.
  A follower sees an empty log made again as the log going on from the record (no event is
  missed or shown twice); one made again that holds events below the record's sequence is
  not described by it, so it is "recreated" (read from its start, after a warning).
- A watermark that is there but is not a record is said, never silently taken for none:
  one that is a link (or under a linked folder), a FIFO, a device or over
  ``MAX_RECORD_BYTES`` is never followed, waited on or read whole (``Root.read_state``) and
  reads as no record; a regular file that cannot be read or does not hold a record is
  damaged (``WatermarkFault.damaged``). Readers warn once per file and reason (``tell``)
  and read it as none; ``append`` into a log with no event refuses when the record is
  damaged (it cannot tell where the sequence goes on) and warns for the others.
- ``tell`` (warnings met below the reader's own, such as a damaged record) goes to the sink
  installed with ``use_warn`` in the running context (the CLI's ``warning:`` line), else to
  stderr.
"""
from __future__ import annotations

import itertools
import os
import re
import stat
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

from operator import itemgetter

import orjson

from wardrik_cli.store import lines
from wardrik_cli.store.fsutil import MAX_RECORD_BYTES, open_regular, read_capped
from wardrik_cli.errors import CorruptLedger, Failure, NotRegular
from wardrik_cli.protocol.names import AUDIT_NAME, validate_log_id
from wardrik_cli.store.layout import Root
from stringzilla import find as _sz_find

from wardrik_cli.store.search import count, find, rfind

AUDIT_STATE_KEY = "@audit"  # state-file name for the audit log; '@' is never in a log id


def decode_event(raw: bytes) -> dict[str, Any]:
    """A stored line as an event dict; ValueError saying why when it is not one."""
    try:
        event: dict[str, Any] = _loads(raw)
    except orjson.JSONDecodeError:
        if b"\x00" in raw:
            raise ValueError("line holds NUL bytes, not JSON") from None
        raise ValueError("not valid JSON") from None
    try:
        seq = event["sequence"]
        ok = type(seq) is str and len(seq) == 12 and seq.isascii() and seq.isdigit() \
            and type(event["type"]) is str and type(event["time"]) is str
    except (KeyError, TypeError):
        ok = False
    if not ok:
        if not isinstance(event, dict):
            raise ValueError("not a JSON object")
        raise ValueError("not an event: needs a 12-digit sequence, a type and a time")
    return event


def decode_all(raws: list[bytes]) -> tuple[list[str], list[str]] | None:
    """(sequences, times) of ``raws`` when every line is an event as ``decode_event`` judges
    one (its decoder and its checks), judged in C over the list, with no Python step per line;
    None when any is not (the caller then looks line by line, which says which and why). The
    unfiltered read (``read.whole``) and compaction's look at what it drops share it."""
    try:
        events = list(map(_loads, raws))
        seqs = list(map(_SEQ, events))
        # every one a string: join refuses anything else (and a line that is not an object
        # fails the lookups)
        digits = "".join(seqs)
        "".join(map(_TYPE, events))
        times = list(map(_TIME, events))
        "".join(times)
    except (ValueError, KeyError, TypeError):
        return None
    if not (digits.isascii() and digits.isdigit() and set(map(len, seqs)) <= _TWELVE):
        return None
    return seqs, times


_SEQ, _TYPE, _TIME = itemgetter("sequence"), itemgetter("type"), itemgetter("time")
_TWELVE = frozenset((12,))
_loads = orjson.loads
HEAD = b'{"specversion":"1.0","id":"'
_TYPE_KEY = b'","type":"'  # right after the 36-character id, at offset 63


def peek(raw: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(type, sequence, time) of a line in this tool's own shape, found by looking at bytes.

    Lines this tool writes have a fixed key order (specversion, id, type, source, subject,
    time, sequence, ...), and a quote inside a JSON string is always escaped, so the first
    ``"time":"`` after the type is the event's own. Returns None for any line not in that
    exact shape; such a line must be decoded and judged in full. A line in the shape is not
    proven valid JSON inside its data: readers use this only for lines they skip (filtered
    out), and ``wardrik check`` parses every line.

    A decoder keeps a repeated key's last value: a line with another ``"sequence"`` key past
    the one read here, another ``"time"`` key past the one read here, or a ``\\u00`` escape
    anywhere (which can spell a key's letters) is not in the shape, whatever its start says:
    read from bytes, such a line's sequence or time would not be the event's.
    """
    if raw[63:73] != _TYPE_KEY or not raw.startswith(HEAD) or raw[-2:] != b"}}" or count(raw, b'"specversion"') != 1:
        return None
    j = raw.find(b'"', 73)
    k = raw.find(b'","time":"', j)
    if j < 0 or k < 0:
        return None
    t = raw[k + 10:k + 37]
    if raw[k + 37:k + 51] != b'","sequence":"':
        return None
    seq = raw[k + 51:k + 63]
    if raw[k + 63:k + 64] != b'"' or not seq.isdigit():
        return None
    end = len(raw)
    if _sz_find(raw, b'"sequence"', k + 64, end) >= 0 or _sz_find(raw, b'"time"', k + 8, end) >= 0 \
            or _sz_find(raw, b"\\u00", 0, end) >= 0:
        return None  # a key given again, or one an escape may spell (see above)
    return raw[73:j], seq, t


_SOURCE_KEY = b'","source":"'
_JOIN = b"}}\n" + HEAD  # one line's end and the next one's start, as this tool writes lines


def block_shape(data: bytes, size: int, n_lines: int) -> tuple[tuple[bytes, bytes, bytes], tuple[bytes, bytes, bytes],
                                                             int] | None:
    """(``peek`` of the first line, of the last line, the last line's offset) when every one
    of the ``n_lines`` lines of ``data[:size]`` is in this tool's shape: both ends peek, and
    every newline but the last joins a line ending ``}}`` to one starting as ``HEAD`` (one
    byte count, no look at each line). None otherwise: look at the lines one by one."""
    last_start = rfind(data, b"\n", 0, size - 1) + 1
    last = peek(data[last_start:size - 1])
    first = peek(data[:find(data, b"\n")])
    if last is None or first is None or count(data, _JOIN, 0, size) != n_lines - 1:
        return None
    return first, last, last_start


def envelope(raw: bytes) -> dict[str, Any] | None:
    """id, type, source, time and sequence of a line in this tool's shape (``peek``), read
    from its bytes without decoding the line (whose data may be hundreds of megabytes);
    None for a line not in that shape. Readers use it for a log's first and last events:
    the lines they deliver are decoded, and so checked, when they are read."""
    p = peek(raw)
    if p is None:
        return None
    at = 73 + len(p[0])
    if raw[at:at + 12] != _SOURCE_KEY:
        return None
    end = raw.find(b'"', at + 12)
    source = raw[at + 12:end]
    if end < 0 or b"\\" in source:
        return None
    try:
        return {"id": raw[27:63].decode(), "type": p[0].decode(), "source": source.decode(),
                "time": p[2].decode(), "sequence": p[1].decode()}
    except UnicodeDecodeError:
        return None


def head_envelope(fd: int, start: int, head: lines.Head) -> dict[str, Any] | None:
    """``envelope`` of the long line at ``start`` from its ``head``, its last two bytes and one
    search of the rest (what ``peek`` checks of a whole line: no second ``"specversion"``, no
    ``"sequence"`` or ``"time"`` key past the ones read, no ``\\u00`` escape), without
    reading the line: a 200 MB line costs a search in place, not a 200 MB copy. ``envelope``
    finds each field by a forward search for bytes holding no ``}``, so in ``head + b"}}"``
    it finds them where the whole line has them, or not at all (None)."""
    if os.pread(fd, 2, head.stop - 2) != b"}}":
        return None
    env = envelope(head + b"}}")  # peek checked the head itself
    if env is None:
        return None
    past = head.find(b'","time":"', head.find(b'"', 73)) + 64  # past the sequence's closing quote
    if lines.find_any(fd, _AGAIN, start + min(past, len(head)), head.stop) >= 0:
        return None
    return env


_AGAIN = (b'"specversion"', b'"sequence"', b'"time"', b"\\u00")  # what must not come again past the envelope


def lines_before(fd: int, end: int, size: int) -> list[bytes]:
    """The complete lines in the ``size`` bytes before ``end`` (a line start), in one read; []
    when not one whole line fits in them. What a seek by time checks before its answer."""
    lo = max(end - size, 0)
    data = os.pread(fd, end - lo, lo)
    if lo > 0:
        data = data[data.find(b"\n") + 1:] if b"\n" in data[:-1] else b""
    return data[:-1].split(b"\n") if data else []


def line_time(raw: bytes) -> str | None:
    """A line's event time: from its bytes when it is in this tool's shape (``peek``; a long
    line's ``Head`` too), else decoded; None for a line that is not an event (or a head that
    is not in that shape)."""
    try:
        if isinstance(raw, lines.Head):
            p = peek(raw + b"}}")
            return p[2].decode() if p is not None else None
        p = peek(raw)
        return p[2].decode() if p is not None else str(decode_event(raw)["time"])
    except (ValueError, UnicodeDecodeError):
        return None


class Watermark:
    """A compaction record. ``previous`` is the record this one replaced: compaction writes
    the new record before it renames the new file in, so until the rename lands the old
    file is described by ``previous``. ``emptied``: the record says compaction dropped every
    event (no first kept event's time). ``open_run``: the trace id of the run open where the
    cut fell (its run.started may be among the events dropped), for the appender. ``source``:
    of an emptied log, the source its last event had (its readers' notices keep it)."""

    def __init__(self, inode: int, next_sequence: int, time: str | None = None, hash: str | None = None,
                 first_time_kept: str | None = None, mtime_ns: int | None = None,
                 previous: Watermark | None = None, emptied: bool = False, open_run: str | None = None,
                 source: str | None = None):
        self.inode, self.next_sequence, self.time, self.hash = inode, next_sequence, time, hash
        self.first_time_kept, self.mtime_ns, self.previous = first_time_kept, mtime_ns, previous
        self.emptied, self.open_run, self.source = emptied, open_run, source


class WatermarkFault:
    """Why a file at a log's watermark path is no record. ``damaged``: a regular file that
    cannot be read or holds no record (it may have said where the sequence goes on); else a
    file the tool never reads (a link, FIFO, device, or one over the cap)."""

    def __init__(self, path: Path, why: str, damaged: bool):
        self.path, self.why, self.damaged = path, why, damaged

    def message(self, log_name: str) -> str:
        what = f"{self.path} is damaged ({self.why})" if self.damaged else self.why
        return f"{what}; the compaction record of {log_name} is read as none"


_MAX_NEXT = 10 ** 12  # one past the last 12-digit sequence: a log full to its last sequence


def _parse_watermark(d: Any) -> Watermark | None:
    """A record from its decoded JSON, or None when it is not one: every field of the type
    its writers give it (``int(...)`` of a string or float is not accepted: a record of
    another shape is damage, not something to guess at)."""
    if not isinstance(d, dict):
        return None
    inode, nxt, mtime = d.get("inode"), d.get("next_sequence"), d.get("mtime_ns")
    if type(inode) is not int or type(nxt) is not int or not 1 <= nxt <= _MAX_NEXT \
            or not (mtime is None or type(mtime) is int):
        return None
    texts = [d.get(k) for k in ("time", "hash", "first_time_kept")]
    if not all(t is None or type(t) is str for t in texts):
        return None
    emptied = "first_time_kept" in d and d["first_time_kept"] is None
    run = d.get("open_run")
    if not (run is None or (type(run) is str and len(run) == 32 and _HEX32.fullmatch(run))):
        return None
    source = d.get("source")
    if not (source is None or (type(source) is str and len(source) <= 1024)):
        return None
    return Watermark(inode, nxt, texts[0], texts[1], texts[2], mtime, None, emptied, run, source)


_HEX32 = re.compile(r"[0-9a-f]{32}")


# -- warnings met below the reader (see the module's docstring) -----------------
_WARN: ContextVar[Callable[[str], None] | None] = ContextVar("wardrik_store_warn", default=None)
_TOLD: ContextVar[set[str] | None] = ContextVar("wardrik_store_told", default=None)


def use_warn(warn: Callable[[str], None] | None) -> None:
    """Send ``tell``'s warnings to ``warn`` (given the text, without ``warning: ``) in the
    running context; None: back to stderr."""
    _WARN.set(warn)


def tell(msg: str) -> None:
    """A warning about the tool's own files, once per text in the running context (a reader
    asks for a log's record several times, a follower on every wake-up)."""
    told = _TOLD.get()
    if told is None:
        told = set()
        _TOLD.set(told)
    if msg in told:
        return
    told.add(msg)
    warn = _WARN.get()
    if warn is not None:
        warn(msg)
        return
    # shown as text: control characters in a path are escaped, never obeyed by a terminal
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in msg)
    print(f"warning: {shown}", file=sys.stderr, flush=True)


TIME_SAMPLES = 32  # lines sampled before a bisected --since, to catch a log whose times are not sorted
TIME_WINDOW = 256 << 10  # and every line in this many bytes just before it (where skewed clocks disagree)


class Log:
    """A log under a root: an agent's (by id) or the deployment's audit log."""

    # slots: a read over tens of thousands of logs holds one each (an instance dict was 300 bytes)
    __slots__ = ("root", "name", "path", "state_key", "is_audit", "_watermark_path")

    def __init__(self, root: Root, name: str, path: Path, state_key: str, is_audit: bool = False):
        self.root, self.name, self.path, self.state_key, self.is_audit = root, name, path, state_key, is_audit
        self._watermark_path: Path | None = None

    @classmethod
    def agent(cls, root: Root, log_id: str) -> Log:
        validate_log_id(log_id)
        return cls(root, log_id, root.log_path(log_id), log_id)

    @classmethod
    def audit(cls, root: Root) -> Log:
        return cls(root, AUDIT_NAME, root.audit_path, AUDIT_STATE_KEY, is_audit=True)

    @property
    def lock_path(self) -> Path:
        return self.root.state_path("locks", self.state_key, ".lock")

    @property
    def watermark_path(self) -> Path:
        # made once: a sweep asks for it six times per log
        if self._watermark_path is None:
            self._watermark_path = self.root.state_path("watermarks", self.state_key, ".json")
        return self._watermark_path

    def exists(self) -> bool:
        """Something that is not a directory is at the log's path (``open`` refuses what is
        not a regular file, naming it)."""
        try:
            return not stat.S_ISDIR(os.lstat(self.path).st_mode)
        except OSError:
            return False

    def open(self) -> LogView:
        try:
            if not self.is_audit:
                self.root.check_folders(self.path)
            fd = open_regular(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return LogView(self, None)
        except OSError as e:
            raise Failure(f"cannot read {self.path}: {e.strerror}") from None
        return LogView(self, fd)

    def read_watermark(self) -> Watermark | None:
        """The compaction record, or None; a file there that is no record is told (``tell``)
        once and read as none (see the module's docstring)."""
        wm, fault = self.watermark_record()
        if fault is not None:
            tell(fault.message(self.name))
        return wm

    def watermark_record(self) -> tuple[Watermark | None, WatermarkFault | None]:
        """(the compaction record or None, why a file at its path is no record or None)."""
        path = self.watermark_path
        raw = self.root.read_state(path, MAX_RECORD_BYTES)
        if raw is None:
            # No record: missing, or something read_state never reads. Ask once more, for why
            # (the common case, no file, costs the one lstat).
            try:
                os.lstat(path)
            except FileNotFoundError:
                return None, None
            except OSError as e:
                return None, WatermarkFault(path, f"{path} cannot be looked at ({e.strerror})", False)
            try:
                raw = read_capped(path, MAX_RECORD_BYTES, what="compaction record")
            except FileNotFoundError:
                return None, None
            except NotRegular as e:
                return None, WatermarkFault(path, str(e), False)
            except OSError as e:
                return None, WatermarkFault(path, f"cannot be read: {e.strerror}", True)
        try:
            d = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None, WatermarkFault(path, "not valid JSON", True)
        wm = _parse_watermark(d)
        if wm is None:
            return None, WatermarkFault(path, "not a compaction record: it needs an integer inode and "
                                        "next_sequence from 1 to 10^12", True)
        # The record it replaced matters only while a sweep that died between its renames left
        # it: one of another shape is passed over, the top record being sound.
        wm.previous = _parse_watermark(d.get("previous"))
        return wm, None


_SLIM_FIRST = ("sequence", "time", "source")  # what readers use of a log's first event
_SLIM_LAST = ("sequence",)  # and of its last


class LogView:
    """An open, read-only snapshot of one log file (its complete lines at open time)."""

    # slots: a reader over tens of thousands of logs holds one view each
    __slots__ = ("log", "fd", "ino", "size", "end", "mtime_ns", "lenient", "ends_from_bytes", "sorted_by_time",
                 "first_was_damaged", "_first", "_last", "replaced")

    def __init__(self, log: Log, fd: int | None):
        self.log = log
        self.fd = fd
        if fd is None:
            self.ino, self.size, self.end, self.mtime_ns = None, 0, 0, None
        else:
            st = os.fstat(fd)
            self.ino, self.mtime_ns = st.st_ino, st.st_mtime_ns
            self.end, self.size = lines.complete_end(fd, st.st_size)
        self.lenient = False
        self.ends_from_bytes = False  # readers: first()/last() from the line's bytes (envelope)
        self.sorted_by_time = True  # False once a seek by time found the times out of order
        self.first_was_damaged = False  # set when a lenient first() stepped over damaged lines
        self._first: tuple[int, dict[str, Any]] | None = None
        self._last: tuple[int, dict[str, Any]] | None = None
        self.replaced = 0  # how often ``reacquire`` found another file: offsets into the old one are void

    # context manager ---------------------------------------------------------
    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def slim(self) -> None:
        """Keep only what readers use of the first and last events known (of the first, its
        sequence, time and source; of the last, its sequence): a reader over thousands of logs
        holds that of each, not the events whole. Call it once what else is wanted (the last
        event's id, say) has been taken."""
        for name, keys in (("_first", _SLIM_FIRST), ("_last", _SLIM_LAST)):
            got = getattr(self, name)
            if got is not None and len(got[1]) > len(keys):
                setattr(self, name, (got[0], {k: got[1][k] for k in keys if k in got[1]}))

    def release(self) -> None:
        """Close the file but keep what is known of it (``reacquire`` opens it again): a reader
        over thousands of logs keeps only a few open at once."""
        self.close()

    def reacquire(self) -> None:
        """Open the file again after ``release``. If it was replaced meanwhile (compaction's
        rename), the new file is taken as a new snapshot (``replaced`` counts up): readers seek
        in it by sequence, and tell the events dropped under them."""
        if self.fd is not None or self.ino is None:
            return
        try:
            fd = open_regular(self.log.path, os.O_RDONLY)
        except FileNotFoundError:
            self.ino, self.size, self.end, self.mtime_ns = None, 0, 0, None
            return
        st = os.fstat(fd)
        if st.st_ino != self.ino:
            self.ino, self.mtime_ns = st.st_ino, st.st_mtime_ns
            self.end, self.size = lines.complete_end(fd, st.st_size)
            self._first = self._last = None
            self.replaced += 1
        self.fd = fd

    def __enter__(self) -> LogView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # decoding ----------------------------------------------------------------
    def corrupt(self, offset: int, what: str) -> CorruptLedger:
        if self.fd is None:
            self.reacquire()  # released by a reader over many logs: the line number needs the file
        line = lines.count_lines_before(self.fd, offset) if self.fd is not None else None
        return CorruptLedger(str(self.log.path), line, offset, what)

    def decode(self, offset: int, raw: bytes) -> dict[str, Any]:
        try:
            return decode_event(raw)
        except ValueError as e:
            raise self.corrupt(offset, f"corrupt line ({e})") from None

    @property
    def torn_bytes(self) -> int:
        return self.size - self.end

    # ends --------------------------------------------------------------------
    def first(self) -> tuple[int, dict[str, Any]] | None:
        if self._first is None and self.fd is not None:
            if not self.lenient:
                item = lines.first_line(self.fd, self.end, self._longest)
                if item is not None:
                    self._first = (item[0], self._end_event(*item))
                    if isinstance(item[1], lines.Head) and item[1].stop + 1 == self.end and self._last is None:
                        # one long line is the whole log: its last event too, without a
                        # second search back through it for its start
                        self._last = self._first
            else:
                for off, raw in self.iter_raw(0):
                    try:
                        self._first = (off, self._end_event(off, raw, lenient=True))
                        break
                    except ValueError:
                        self.first_was_damaged = True
        return self._first

    def last(self) -> tuple[int, dict[str, Any]] | None:
        """The last complete event. A corrupt last line is an error, unless this view is
        lenient (the reader was asked to skip corrupt lines): then the last good one."""
        if self._last is None and self.fd is not None:
            for off, raw in lines.iter_lines_backward(self.fd, self.end, self._longest):
                try:
                    self._last = (off, self._end_event(off, raw, lenient=True))
                    if off == 0 and isinstance(raw, lines.Head) and self._first is None:
                        self._first = self._last  # one long line is the whole log (see first())
                    break
                except ValueError as e:
                    if not self.lenient:
                        raise self.corrupt(off, f"corrupt line ({e})") from None
        return self._last

    def _end_event(self, off: int, raw: bytes, lenient: bool = False) -> dict[str, Any]:
        """The first or last event: its envelope from bytes for a reader (``ends_from_bytes``),
        else decoded (ValueError when ``lenient``, else ``CorruptLedger``)."""
        if self.ends_from_bytes:
            if isinstance(raw, lines.Head):  # a long line's first bytes only (``_longest``)
                assert self.fd is not None  # a Head comes from the open file
                env = head_envelope(self.fd, off, raw)
                if env is None:  # not in this tool's shape: read whole and decoded, as any such line is
                    whole = lines.read_line_at(self.fd, off, self.end)
                    raw = whole[1] if whole is not None else b""  # gone since: judged as a bad line
            else:
                env = envelope(raw)
            if env is not None:
                return env
        return decode_event(raw) if lenient else self.decode(off, raw)

    @property
    def _longest(self) -> int | None:
        """Longest first or last line read whole: past it, a reader takes the envelope from the
        line's head (``head_envelope``), not from a copy of the whole line."""
        return lines.LONG if self.ends_from_bytes else None

    def watermark(self) -> Watermark | None:
        """The compaction record of this file (``match_watermark``); one that is there but no
        record is told and read as none (``Log.read_watermark``)."""
        return self.match_watermark(self.log.read_watermark())

    def match_watermark(self, top: Watermark | None) -> Watermark | None:
        """``top`` (the log's record) or the record it replaced, when it describes this file:
        it must agree with the first kept event; for a file with no complete line, ``top``
        says compaction emptied the log, or a record is about this very file (its inode, or
        its mtime: ``cp -a`` and ``rsync -a`` keep it). The rule, and why, is in the module's
        docstring. ``previous`` describes the old file while a compaction that died before its
        rename left the new record in place."""
        first = self.first()
        for wm in (top, top.previous if top else None):
            if wm is None:
                continue
            if first is not None:
                if int(first[1]["sequence"]) == wm.next_sequence:
                    return wm
            elif wm is top and wm.emptied and self.fd is not None and self.end == 0:
                return wm  # an emptied log's file, a copy of it, or the file made again
            elif self.ino is not None and (wm.inode == self.ino or (wm.mtime_ns is not None
                                                                     and wm.mtime_ns == self.mtime_ns)):
                return wm  # this very file, or a copy of it (cp -a, rsync -a keep the mtime)
        return None

    def first_seq(self) -> int:
        """Sequence of the first kept event; for an empty log, the next one to be written."""
        f = self.first()
        if f is not None:
            return int(f[1]["sequence"])
        wm = self.watermark()
        return wm.next_sequence if wm else 1

    def last_seq(self) -> int:
        """Highest sequence ever written (0 for none), even when compaction dropped it."""
        last = self.last()
        if last is not None:
            return int(last[1]["sequence"])
        wm = self.watermark()
        return wm.next_sequence - 1 if wm else 0

    # iteration and seeks -----------------------------------------------------
    def iter_raw(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        if self.fd is None:
            return iter(())
        return lines.iter_lines(self.fd, start, self.end)

    def decode_or_report(self, offset: int, raw: bytes,
                         on_corrupt: Callable[[CorruptLedger], None] | None) -> dict[str, Any] | None:
        """The event on this line; for a corrupt line, ``CorruptLedger`` unless the reader
        asked to skip (``on_corrupt`` is told, and None comes back)."""
        try:
            return decode_event(raw)
        except ValueError as e:
            err = self.corrupt(offset, f"corrupt line ({e})")
            if on_corrupt is None:
                raise err from None
            on_corrupt(err)
            return None

    def events(self, start: int = 0, *, on_corrupt: Callable[[CorruptLedger], None] | None = None,
               ) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
        """(offset, raw line, event) from ``start``; corrupt lines raise unless ``on_corrupt``."""
        for off, raw in self.iter_raw(start):
            event = self.decode_or_report(off, raw, on_corrupt)
            if event is not None:
                yield off, raw, event

    def offset_after_seq(self, seq: int) -> int:
        """Offset of the first line whose sequence is greater than ``seq``."""
        if self.fd is None or seq <= 0:
            return 0
        first = self.first()
        if first is None or int(first[1]["sequence"]) > seq:
            return 0
        return self._bisect(lambda e: int(e["sequence"]) > seq)

    def offset_at_time(self, t: str) -> int:
        """Offset of the first line whose time is at or after ``t`` (a stored time string).

        Found by bisection, then checked: every line in the ``TIME_WINDOW`` bytes before the
        answer and samples of the lines before that (``TIME_SAMPLES``, spread evenly) must all
        be earlier than ``t``. When one is not, the log's times are not sorted (another
        writer, a hand edit) and the answer is 0: the caller reads from the start, which is
        exact (``sorted_by_time`` is then False). So a log of up to ``TIME_WINDOW`` bytes is
        always checked whole; the limit: in a longer one, a short unsorted stretch more than
        ``TIME_WINDOW`` before the answer and between two samples is not seen."""
        self.sorted_by_time = True
        if self.fd is None:
            return 0
        off = self._bisect(lambda e: e["time"] >= t)
        if off == 0:
            return 0
        window = lines_before(self.fd, off, TIME_WINDOW)
        if not window:  # one line longer than the window ends at the answer: judged by its head
            window = [raw for _at, raw in itertools.islice(lines.iter_lines_backward(self.fd, off, lines.PROBE), 1)]
        step = max(off // TIME_SAMPLES, 1)
        samples = (lines.line_at_or_after(self.fd, pos, off) for pos in range(0, max(off - TIME_WINDOW, 0), step))
        for raw in itertools.chain(window, (found[1] for found in samples if found is not None)):
            when = line_time(raw)
            if when is None and isinstance(raw, lines.Head):
                continue  # a long line's head not in this tool's shape: the reader decodes it when it reads it
            if when is None:
                return 0  # a damaged line: the reader meets it from the start (its times may be in order)
            if when >= t:
                self.sorted_by_time = False
                return 0
        return off

    def later_from(self, off: int, t: str) -> bool:
        """Are the lines from ``off`` (a line start, where a read with ``--until t`` stopped)
        at or after ``t``, as far as a check sees: every line in the ``TIME_WINDOW`` bytes
        from ``off`` and samples of the rest (``TIME_SAMPLES``)? False when one is earlier (the
        times are out of order: the read must go on, judging each event by its time). The
        limit mirrors ``offset_at_time``'s: a short stretch out of order past the window and
        between two samples is not seen."""
        if self.fd is None or off >= self.end:
            return True
        data = os.pread(self.fd, min(TIME_WINDOW, self.end - off), off)
        cut = data.rfind(b"\n") + 1
        window = data[:cut - 1].split(b"\n") if cut else []
        if not window:  # one line longer than the window starts here: judged by its head
            window = [raw for _at, raw in itertools.islice(lines.iter_lines(self.fd, off, self.end), 1)]
        rest = off + max(cut, 1)
        step = max((self.end - rest) // TIME_SAMPLES, 1)
        samples = (lines.line_at_or_after(self.fd, pos, self.end) for pos in range(rest, self.end, step))
        for raw in itertools.chain(window, (found[1] for found in samples if found is not None)):
            when = line_time(raw)
            if when is not None and when < t:
                return False
        return True

    def _bisect(self, after: Callable[[dict[str, Any]], bool]) -> int:
        """A corrupt line is stepped over by the probes; one next to the answer, with no event
        between, is the answer (the reader meets it and reports it). Before: any corrupt line
        in the way made the answer 0, and a reader past it read the log again from its start,
        telling every event it passed over as out of order."""
        def is_after(raw: bytes) -> bool | None:
            try:
                return after(decode_event(raw))
            except ValueError:
                return None

        assert self.fd is not None  # callers check for an open file first
        return lines.bisect(self.fd, self.end, is_after, hold_unreadable=True)
