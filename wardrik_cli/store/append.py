"""Appending events to a log: the only code that writes an agent's log.

Contract kept here, in order, for every append (one event or a whole batch):
1. Validate everything first (types, data, traceparents); a refused append touches nothing.
2. Take the log's lock (``locking``), then open the log by path (compaction may have
   replaced it; under the lock the path is current).
3. Every complete line must be an event (the verified note spares re-reading what an
   earlier append checked); if one does not parse the log is corrupt and nothing is written
   after it.
4. A torn tail (bytes after the last newline) is copied to ``<log>.jsonl.torn-<offset>-<ns>``
   beside the log and fsynced, then cut off, with a warning: nothing is thrown away unseen.
   It is cut only once the append is sure to go ahead (after steps 3 and 5 are checked), so
   a refused append leaves it. If its bytes cannot be kept, the append fails and nothing is cut.
5. Sequences continue from the last event (or the compaction watermark of an emptied
   log: ``store.log`` says which record applies; a damaged one refuses the append, since
   starting again at 1 would reuse sequences); times never go back; a run's events join its
   trace.
6. All lines go out in one ``write`` (looping only on short writes), then one fsync (and an
   fsync of the directory when the file was created) unless ``sync=False``.
7. On a failed write the whole lines already written stay, in sequence, and are reported
   (``WriteFailed.written``); the partial last line is a torn tail for the next append.
Only after step 6 does the caller print: printed means durable.
The note of the file last verified (``.wardrik/verified/<log>@json``) is a cache read with
``Root.read_state`` (a link, FIFO, device or oversized file is no note: never followed,
waited on or read whole) and written only in folders that are not links (``Root.state_dir``).
It is sealed (``store.seal``): a note this user's wardrik did not write (planted, edited, in
a copy) is none, and the whole log is verified; without a usable key no note is kept. It
names the file by inode, size, mtime and ctime: an edit in place that puts the mtime back
still changes the ctime, which no one can set.
"""
from __future__ import annotations

import os
import re
import sys
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, overload

import orjson

from wardrik_cli.store import lines, seal
from wardrik_cli.errors import BadEvent, CorruptLedger, Failure, NotRegular, WriteFailed
from wardrik_cli.store.fsutil import (MAX_RECORD_BYTES, fsync_dir, open_folder, open_regular, refuse_linked,
                                      write_atomic, write_new)
from wardrik_cli.protocol.envelope import (
    GENESIS_HASH, SEQ_WIDTH, Clock, RunTracker, agent_source, audit_source, build_event, dumps_line, parse_traceparent,
    trace_id_of,
)
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, LogView, Watermark, decode_event
from wardrik_cli.store.locking import locked
from wardrik_cli.protocol.catalogue import (
    AUDIT, KEPT, LIVE, RUN_CLOSERS, RUN_MARK, RUN_OPENERS, EventType, lookup, validate_data,
)

MAX_SEQUENCE = 10 ** SEQ_WIDTH - 1  # sequences are 12 digits, for ever
_TIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")

# How far back (bytes) to look for the run an appended event belongs to (see _open_run).
RUN_LOOKBACK_BYTES = 64 << 20


class AppendItem:
    """One event to append, validated (see ``make_item``)."""

    __slots__ = ("etype", "data", "subject", "traceparent")

    def __init__(self, etype: EventType, data: dict[str, Any], subject: str | None = None,
                 traceparent: str | None = None):
        self.etype, self.data, self.subject, self.traceparent = etype, data, subject, traceparent


MAX_DEPTH = 128  # data nested deeper is refused: every reader (and orjson, at 255) must take the event back


def _check_depth(data: Any) -> None:
    """Refuse data nested more than ``MAX_DEPTH`` deep (iteratively: no recursion to exhaust)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadEvent(f"data is nested more than {MAX_DEPTH} levels deep; flatten it")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def make_item(type_name: str, data: Any, subject: str | None = None, traceparent: str | None = None,
              *, kinds: tuple[str, ...] = (KEPT, LIVE)) -> AppendItem:
    etype = lookup(type_name)
    if etype.kind not in kinds:
        refusals = {AUDIT: "only `wardrik compact` records it" if etype.name == "ledger.compacted"
                    else "only `wardrik audit record` writes audit events",
                    "reader": "it is made by readers, never written"}
        where = refusals.get(etype.kind, f"{etype.kind} types are not allowed here")
        raise BadEvent(f"cannot append {etype.full}: {where}")
    validate_data(etype, data)
    _check_depth(data)
    if subject is not None and (not isinstance(subject, str) or not subject):
        raise BadEvent("subject must be a non-empty string")
    if subject is not None:
        try:
            subject.encode("utf-8")
        except UnicodeEncodeError:  # bytes that were not UTF-8 arrive from argv as lone surrogates
            shown = repr(subject.encode("utf-8", "surrogateescape"))[1:]
            raise BadEvent(f"bad subject {shown}: it is not valid UTF-8 text") from None
    if traceparent is not None:
        given_trace, _ = parse_traceparent(traceparent)
        run_id = (data.get("run") or {}).get("id") if etype.name == "run.started" else None
        if run_id and run_id != given_trace:
            raise BadEvent(f"data.run.id {run_id} and the --trace trace id {given_trace} disagree")
    return AppendItem(etype, data, subject, traceparent)


Warn = Callable[[str], None]


def _warn_stderr(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr)


def _makedirs_synced(path: Path, stop: Path, sync: bool) -> None:
    """Create ``path`` and missing parents; fsync each parent that gained an entry."""
    missing = []
    p = path
    while not p.is_dir():
        missing.append(p)
        if p == stop or p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            pass
        if sync:
            fsync_dir(d.parent)


def cut_torn_tail(fd: int, path: Path, end: int, size: int, *, sync: bool, warn: Warn, label: str,
                  dir_fd: int | None = None) -> Path | None:
    """Keep the bytes past the last newline beside the log, then truncate them off. ``dir_fd``:
    the log's folder (``fsutil.open_folder``), where the kept bytes are written by name."""
    if size <= end:
        return None
    torn = os.pread(fd, size - end, end)
    keep = path.with_name(f"{path.name}.torn-{end}-{time.time_ns()}")
    try:
        write_new(keep, torn, durable=True, like=os.fstat(fd), dir_fd=dir_fd)
    except OSError as e:
        try:
            os.unlink(keep if dir_fd is None else keep.name, dir_fd=dir_fd)
        except OSError:
            pass
        raise WriteFailed(f"{label}: found a torn tail of {size - end} bytes at byte {end} but could not keep "
                          f"its bytes ({e.strerror}); nothing was cut or written") from None
    os.ftruncate(fd, end)
    if sync:
        os.fsync(fd)
    what = "NUL bytes" if torn.strip(b"\x00") == b"" else "an incomplete line"
    warn(f"{label}: cut a torn tail ({what}, {size - end} bytes at byte offset {end}); its bytes are kept in {keep}")
    return keep


def _open_run(view: LogView, warn: Warn | None = None) -> str | None:
    """The trace id of the run open at the end of the log, if any.

    Walk back to the nearest run.started / run.completed / run.failed: only they decide (two
    neighbours sharing a trace prove nothing, since ``--trace`` gives loose events one). The
    appender's note usually answers first (see ``append``);
    this walk is for a log the note does not describe, and it is bounded by bytes
    (``RUN_LOOKBACK_BYTES``), not by a count of events: past the bound it says so and no
    run is assumed open.
    """
    if view.fd is None:
        return None
    found = open_run_before(view.fd, view.end)
    if found is _GAVE_UP:
        if warn is not None:
            warn(f"{view.log.name}: no run start or end in the last {RUN_LOOKBACK_BYTES >> 20} MB; "
                 "the new event starts a trace of its own")
        return None
    if found is _UNDECIDED:  # back at the file's start: the run open where compaction cut, if any
        wm = view.watermark()
        return wm.open_run if wm is not None else None
    return found if isinstance(found, str) else None


_GAVE_UP, _UNDECIDED = object(), object()


def open_run_before(fd: int, end: int, limit: int = RUN_LOOKBACK_BYTES) -> str | None | object:
    """The trace id of the run open at ``end`` (None: no run open), as ``_open_run`` walks
    back to it; ``_UNDECIDED`` when the walk reaches the file's start without knowing (the
    run open there decides), ``_GAVE_UP`` past ``limit`` bytes. Compaction records the answer
    at its cut in the log's record (``Watermark.open_run``)."""
    for off, raw in lines.iter_lines_backward(fd, end):
        if end - off > limit:
            return _GAVE_UP
        if RUN_MARK not in raw and (b"\\u" not in raw or _plain_type(raw)):
            continue  # not a run's start or end, and its type is not spelt with an escape
        try:
            e = decode_event(raw)
        except ValueError:
            return None
        t = e["type"]
        if t in RUN_OPENERS:
            return trace_id_of(e)
        if t in RUN_CLOSERS:
            return None
    return _UNDECIDED


_TYPE_AT = len(b'{"specversion":"1.0","id":"') + 36  # where this tool's lines spell their type


def _plain_type(raw: bytes) -> bool:
    """Is ``raw`` in this tool's shape with its type spelt without an escape? (Then a line
    without ``RUN_MARK`` is no run's start or end, whatever escapes its data holds.)"""
    if raw[_TYPE_AT:_TYPE_AT + 10] != b'","type":"':
        return False
    close = raw.find(b'"', _TYPE_AT + 10)
    return close > 0 and raw.find(b"\\", _TYPE_AT + 10, close) < 0


class StoredLines(Sequence[bytes]):
    """The lines one append wrote (each with its newline), held as the one buffer that was
    written: a line is copied out only when it is asked for, so a batch of a million events is
    in memory once, not as a list of lines and again as their join."""

    __slots__ = ("_buf", "_ends")

    def __init__(self, buf: bytearray, ends: array[int]):
        self._buf, self._ends = buf, ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._ends)))]
        n = len(self._ends)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return bytes(memoryview(self._buf)[self._ends[i - 1] if i else 0:self._ends[i]])

    def whole_before(self, done: int) -> int:
        """How many lines end at or before byte ``done`` of the buffer."""
        return bisect_right(self._ends, done)


def append(root: Root, log: Log, items: Sequence[AppendItem], *, deployment: str, sync: bool = True,
           warn: Warn = _warn_stderr, lock_timeout: float | None = None) -> Sequence[bytes]:
    """Append kept (or audit) items as whole lines; returns the stored lines, durable unless
    sync=False (a ``StoredLines``)."""
    if not items:
        return []
    for it in items:
        if it.etype.kind == LIVE:
            raise BadEvent(f"{it.etype.full} is live: it is delivered to followers, never stored or batched")
    label = log.name
    if not log.is_audit:
        root.check_folders(log.path)
    if not root.path.is_dir():
        _makedirs_synced(root.path, Path("/"), sync)
    else:
        root.require_writable("audit record" if log.is_audit else "append")
    with locked(log.lock_path, timeout=lock_timeout, what=label):
        # the log's folder (its missing levels made), held: a folder swapped for a link
        # meanwhile is never written through, nor made through
        try:
            dfd = open_folder(root.path, log.path.parent, create=True, sync=sync)
        except OSError as e:
            raise WriteFailed(f"cannot open {log.path.parent}: {e.strerror}") from None
        try:
            return _append_in(log, dfd, items, deployment, sync=sync, warn=warn, label=label)
        finally:
            os.close(dfd)


def _append_in(log: Log, dfd: int, items: Sequence[AppendItem], deployment: str, *, sync: bool, warn: Warn,
               label: str) -> StoredLines:
    """``append``'s work under the log's lock, in its folder ``dfd``."""
    name = log.path.name
    try:
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
        created = False
    except FileNotFoundError:
        created = True
    try:
        fd = open_regular(name, os.O_RDWR | os.O_APPEND | os.O_CREAT, dir_fd=dfd, shown=log.path)
    except OSError as e:
        raise WriteFailed(f"cannot open {log.path} for writing: {e.strerror}") from None
    try:
        refuse_linked(fd, log.path, "audit log" if log.is_audit else "log file")
        if created and sync:
            os.fsync(dfd)
        view = LogView(log, fd)  # its lines end before a torn tail, which is cut only once all is checked
        note = _verify_lines(log, view)
        last = view.last()
        if last is not None:
            next_seq, prev_time = int(last[1]["sequence"]) + 1, last[1]["time"]
            prev_hash = _sha256(_last_raw(fd, view.end) + b"\n") if log.is_audit else None
        else:
            try:
                wm = _emptied_log_record(log, view, warn, label)
            except Failure:
                if created:  # refused: leave no empty log behind either
                    try:
                        os.unlink(name, dir_fd=dfd)
                    except OSError:
                        pass
                raise
            next_seq = wm.next_sequence if wm else 1
            prev_time = wm.time if wm else None
            prev_hash = ((wm.hash if wm else None) or GENESIS_HASH) if log.is_audit else None
        _check_derived(view, last, next_seq, prev_time, len(items), label)
        if log.is_audit:
            tracker = RunTracker(None)
        elif note is not None and "trace" in note:
            tracker = RunTracker(note["trace"])  # the run open after the last append
        else:
            tracker = RunTracker(_open_run(view, warn))
        clock = Clock(prev_time)
        source = audit_source(deployment) if log.is_audit else agent_source(deployment, log.name)
        buf, ends = bytearray(), array("Q")
        for i, it in enumerate(items):
            data = dict(it.data)
            trace, span = tracker.trace_for(it.etype, data, it.traceparent)
            subject = it.subject if it.subject is not None else (
                f"agents/{log.name}" if not log.is_audit else "audit")
            event = build_event(etype=it.etype, data=data, source=source, subject=subject,
                                seq=next_seq + i, time_str=clock.next(), trace=trace, span=span,
                                prevhash=prev_hash if log.is_audit else None)
            line = dumps_line(event)
            if log.is_audit:
                prev_hash = _sha256(line)
            buf += line
            ends.append(len(buf))
        out = StoredLines(buf, ends)
        # Last before the write: a refused append (a corrupt line, a damaged record, a
        # sequence at its maximum) leaves the torn tail where it is; it writes nothing.
        cut_torn_tail(fd, log.path, view.end, view.size, sync=sync, warn=warn, label=label, dir_fd=dfd)
        _write_all(fd, buf, out, label, sync)
        _save_verified(log, fd, tracker.open_trace)
        return out
    finally:
        os.close(fd)


def _emptied_log_record(log: Log, view: LogView, warn: Warn, label: str) -> Watermark | None:
    """The compaction record that says where the sequence of a log with no complete line goes
    on (``LogView.match_watermark``). A damaged record refuses the append: the log's sequence
    may have gone far past 1, and starting again would reuse it; a file there that the tool
    never reads (a link, a FIFO) is no record, with a warning."""
    top, fault = log.watermark_record()
    if fault is not None:
        if fault.damaged:
            raise Failure(f"{label}: the log holds no event and its compaction record {fault.path} is damaged "
                          f"({fault.why}), so where its sequence goes on is not known; nothing was written "
                          "(restore the record, or remove it to start the log again at sequence 1)")
        warn(fault.message(label))
    return view.match_watermark(top)


def _check_derived(view: LogView, last: tuple[int, dict[str, Any]] | None, next_seq: int,
                   prev_time: str | None, count: int, label: str) -> None:
    """What the next lines are built from must itself be sound: never write a line that
    readers would call corrupt (a 13-digit sequence, a time copied from a malformed one)."""
    if prev_time is not None and not _TIME_RE.fullmatch(prev_time):
        offset = last[0] if last is not None else 0
        err = view.corrupt(offset, f"corrupt line (time {prev_time!r} is not RFC 3339 UTC with microseconds)")
        raise CorruptLedger(err.path, err.line, err.offset, f"{err.what}; refusing to append after it "
                            "(see `wardrik check`)")
    if next_seq + count - 1 > MAX_SEQUENCE:
        raise WriteFailed(f"{label}: the log is full: its sequences would pass {MAX_SEQUENCE} (12 digits); "
                          f"nothing was written")


def _sha256(data: bytes) -> str:
    import hashlib  # audit appends only; agents' appends do not pay for it at start-up

    return hashlib.sha256(data).hexdigest()


def _last_raw(fd: int, end: int) -> bytes:
    """The last complete line, which the caller has just decoded (``LogView.last``)."""
    found = lines.last_line(fd, end)
    assert found is not None, "the view's last event is on a complete line"
    return found[1]


VERIFIED_KIND = "verified"  # what the note's seal says it is (``store.seal``)


def _verified_path(log: Log) -> Path:
    return log.root.state_path("verified", log.state_key, ".json")


def _verify_lines(log: Log, view: LogView) -> dict[str, Any] | None:
    """Refuse to write after a complete line that is not an event, anywhere in the log.

    Reading the whole log on every append would make appends O(size), so the last append
    leaves a note of the file it verified (inode, size, mtime, ctime, and the run then open);
    when the file still matches the note, only lines past the noted size are checked. Any
    other change to the file (an edit, a rewrite, a compaction) voids the note and the whole
    file is checked once more, as does a note whose seal does not verify (see the module's
    docstring). Returns the note when it held.
    """
    assert view.fd is not None, "append's own view of the file it opened"
    st = os.fstat(view.fd)
    start, held = 0, None
    kept = log.root.read_state(_verified_path(log), MAX_RECORD_BYTES)
    try:
        if kept is not None and seal.verify(VERIFIED_KIND, kept):
            note = orjson.loads(kept)
            if (note["ino"], note["mtime_ns"], note["ctime_ns"], note["size"]) == \
                    (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, view.end) and type(note["size"]) is int:
                start, held = note["size"], note
    except (ValueError, KeyError, TypeError):
        pass
    # The highest sequence met, and where: the next is the last line's plus one, which must be
    # above every sequence the log holds (a line repeated or moved by hand at its end would
    # have the next append reuse one). A note that holds vouches for the whole file (its size
    # is the file's: no line follows), checked so when it was written: nothing to read then.
    top = top_off = last = 0
    for off, raw in lines.iter_lines(view.fd, start, view.end):
        try:
            last = int(decode_event(raw)["sequence"])
        except ValueError as e:
            err = view.corrupt(off, f"corrupt line ({e})")
            raise CorruptLedger(err.path, err.line, err.offset,
                                f"{err.what}; refusing to append after it (see `wardrik check`)") from None
        if last > top:
            top, top_off = last, off
    if last < top:
        err = view.corrupt(top_off, f"sequence {top} is above the last line's, {last} (a line repeated or moved "
                                    "by hand)")
        raise CorruptLedger(err.path, err.line, err.offset,
                            f"{err.what}; refusing to append: the next would reuse a sequence (see `wardrik check`)")
    return held


def _save_verified(log: Log, fd: int, open_trace: str | None) -> None:
    st = os.fstat(fd)
    path = _verified_path(log)
    note = seal.seal(VERIFIED_KIND, orjson.dumps({"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                                  "ctime_ns": st.st_ctime_ns, "trace": open_trace}))
    if note is None:
        return  # no usable key: a note that could not be believed is not kept
    try:
        log.root.state_dir(path)
        write_atomic(path, note, durable=False)
    except (OSError, NotRegular):
        pass  # only a cache: the next append verifies the whole file instead


def _write_all(fd: int, buf: bytearray, out: StoredLines, label: str, sync: bool) -> None:
    view = memoryview(buf)
    done = 0
    try:
        while done < len(buf):
            n = os.write(fd, view[done:])
            if n == 0:
                raise OSError(28, "No space left on device")
            done += n
    except OSError as e:
        whole = out.whole_before(done)
        sync_note = ""
        try:
            os.fsync(fd)
        except OSError as e2:
            sync_note = f"; fsync also failed ({e2.strerror})"
        raise WriteFailed(
            f"{label}: write failed after {whole} of {len(out)} events ({e.strerror}){sync_note}; "
            f"the {whole} written stay in sequence and the incomplete rest is a torn tail the next append cuts",
            whole, out[:whole]) from None
    if sync:
        try:
            os.fsync(fd)
        except OSError as e:
            raise WriteFailed(f"{label}: fsync failed ({e.strerror}); "
                              f"the {len(out)} events may not be durable") from None


def live_event(log: Log, item: AppendItem, *, deployment: str) -> bytes:
    """A live event as delivered: the stored shape without a sequence, never written."""
    from wardrik_cli.protocol.times import now
    data = dict(item.data)
    with log.open() as view:  # read-only: a live event joins the run open in the log
        try:
            open_trace = _open_run(view)
        except CorruptLedger:
            open_trace = None
    trace, span = RunTracker(open_trace).trace_for(item.etype, data, item.traceparent)
    event = build_event(etype=item.etype, data=data, source=agent_source(deployment, log.name),
                        subject=item.subject or f"agents/{log.name}", seq=None, time_str=now(),
                        trace=trace, span=span)
    return dumps_line(event)
