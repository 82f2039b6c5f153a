"""Replacing logs by the part a sweep keeps of them, a batch at a time, crash-safe.

Contract kept here: whatever instant a sweep is killed at (kill -9, power loss), each log is
as it was or as it should be, its record (the watermark) describes it, and no acknowledged
event is lost; and the sweep pays one sync per batch of logs, not four fsyncs per log.

Crash order:
1. (the caller) under the per-root compaction lock, temporaries of a dead sweep are removed;
2. ``stage``, per log: the bulk of the kept bytes is copied, without the log's lock, into a
   dot-file beside the log (``.<name>.jsonl.compact.tmp``: same file system, never a log to
   any pattern); the log's lock (the appenders') is taken and held until step 6; the lines
   appended meanwhile are copied; a torn tail is cut (its bytes kept beside the log, synced
   at once: rare); the log's new record (new inode, first kept sequence, last dropped line's
   time and hash, first kept time, and as ``previous`` the record that describes the old
   file) is written to a dot-file beside the record (``.<record>.wm.tmp``), not synced;
3. ``Batch.commit``: the caller's intent for the batch is written (``before_renames``: the
   sweep's record of what the renames are about to drop, ``store.retention``), then every new
   file of the batch, logs and records and that intent, is made durable at once
   (``fsutil.sync_files``: one ``syncfs`` per file system; an fsync each for a small batch);
   an intent that cannot be written fails the batch, with nothing changed;
4. every record's temp is renamed over the record; each records directory is fsynced once;
5. every log's temp is renamed over the log; each log directory is fsynced once;
6. the locks are released. Appenders open a log by path under its lock, so they never write
   to a replaced file; readers holding the old file keep reading their snapshot.

Why that order is enough: a crash before step 4 leaves only temporaries (step 1 of the next
sweep removes them) and every log and record as it was. Nothing is renamed before every file
of its batch is durable, so no rename can land pointing at bytes that are lost; and no log is
renamed before its record's rename is durable, so a new log file is never without the record
that says where its sequence starts. A crash between steps 4 and 5 leaves records naming
inodes not yet in place; each carries the old file's record as ``previous``, which readers
and appenders use (``LogView.watermark`` tries both), and the next sweep starts again from
the old file. The intent written in step 3 is durable before step 4, so a cut that lands is
always named by a record its sweep leaves until the cut is in the audit log (``store.retention``).

Every file of the tool's read here (a record, the appender's note) is read by
``Root.read_state``: a link, a FIFO or device, or a file over its cap is no record, never
followed, waited on (with the locks held) or read whole; every one written is written in
folders checked not to be links (``Root.state_dir``): a link there fails that log (named),
and nothing is written or removed outside the root. A log's new file is made, the log opened
again, and the new file renamed over it by name in the log's folder held open
(``fsutil.open_folder``: each level opened without following a link), so a folder swapped for a
link mid-sweep leads nowhere.

A batch ends at ``BATCH_LOGS`` logs, ``BATCH_BYTES`` copied or ``BATCH_SECONDS`` after its
first lock was taken, whichever comes first, so an appender waits about one batch at most.
"""
from __future__ import annotations

import errno
import hashlib
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from wardrik_cli.errors import Failure, NotRegular, WardrikError
from wardrik_cli.store import lines
from wardrik_cli.store.fsutil import (MAX_RECORD_BYTES, fsync_dir, open_folder, refuse_linked, same_access, state_dirs,
                                      sync_files, write_atomic, write_new)
from wardrik_cli.store.locking import acquire
from wardrik_cli.store.log import Log, decode_event
from wardrik_cli.store import seal
from wardrik_cli.store.append import VERIFIED_KIND

TMP_SUFFIX = ".compact.tmp"  # a log's new file: ".<name>.jsonl.compact.tmp" beside the log
WM_TMP_SUFFIX = ".wm.tmp"  # a record's new file, beside the record
COPY_BLOCK = 1 << 20
BATCH_LOGS = 512
BATCH_BYTES = 64 << 20
BATCH_SECONDS = 0.5


def tmp_path(log: Log) -> Path:
    return log.path.with_name(f".{log.path.name}{TMP_SUFFIX}")


def wm_tmp_path(log: Log) -> Path:
    path = log.watermark_path
    return path.with_name(f".{path.name}{WM_TMP_SUFFIX}")


def copy_range(src: int, dst: int, start: int, end: int, dst_off: int) -> None:
    """Copy bytes [start, end) of ``src`` to ``dst`` at ``dst_off``, in the kernel when it can."""
    pos, out = start, dst_off
    use_cfr = hasattr(os, "copy_file_range")
    while pos < end:
        n = 0
        if use_cfr:
            try:
                n = os.copy_file_range(src, dst, end - pos, pos, out)
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
                    raise
                use_cfr = False
                continue
        else:
            data = os.pread(src, min(COPY_BLOCK, end - pos), pos)
            if data:
                view = memoryview(data)
                while view:
                    w = os.pwrite(dst, view, out + (len(data) - len(view)))
                    view = view[w:]
            n = len(data)
        if n == 0:
            raise Failure(f"the log shrank while it was copied (at byte {pos})")
        pos += n
        out += n


@dataclass
class Staged:
    """One log ready to be replaced: its new file and record written, its lock held."""
    log: Log
    lock_fd: int
    tmp: Path
    wm_tmp: Path
    old: os.stat_result
    old_end: int
    new_ino: int
    new_size: int
    new_mtime_ns: int
    bytes_before: int
    dropped: int
    kept: int
    next_seq: int  # the sequence the log starts at once replaced (its first kept, or the next to come)
    error: str | None = None
    # the damaged lines of the part dropped, kept beside the log (``store.retention``): removed
    # with the temporaries when the log is not replaced, for the log still holds them
    kept_beside: Path | None = None

    def discard(self, *, replaced: bool = False) -> None:
        try:
            os.unlink(self.wm_tmp)
        except OSError:
            pass
        try:
            dfd = open_folder(self.log.root.path, self.log.path.parent)
        except (OSError, NotRegular):
            return  # the folder is gone or a link now: nothing is removed through it
        try:
            for p in (self.tmp,) if replaced or self.kept_beside is None else (self.tmp, self.kept_beside):
                try:
                    os.unlink(p.name, dir_fd=dfd)
                except OSError:
                    pass
        finally:
            os.close(dfd)


def _last_event_before(fd: int, end: int, look: int = 1000) -> tuple[str | None, int | None, str | None]:
    """(time, sequence, source) of the last event before ``end``: a damaged line just before
    the cut (kept beside the log by the sweep) is passed over, up to ``look`` lines."""
    for _ in range(look):
        found = lines.last_line(fd, end)
        if found is None:
            break
        try:
            ev = decode_event(found[1])
            source = ev.get("source")
            return ev["time"], int(ev["sequence"]), source if isinstance(source, str) else None
        except ValueError:
            end = found[0]
    return None, None, None


CUT_RUN_LOOKBACK = 1 << 20  # bytes walked back from the run mark (a line naming a run's type
# that is none: text in an event's data) before the run open at the cut is given up on


def _open_run_at(log: Log, fd: int, ino: int, first_seq: int, cut: int, run_mark: int) -> str | None:
    """The trace id of the run open where the cut falls: an appender that walks back to the
    new file's start without meeting the run's start or end takes it from the record.
    ``run_mark``: the end of the last line before the cut that names a run's type (0: none),
    found as the part dropped was checked; the walk back starts there, not at the cut (the
    lines between are no run's start or end; one whose type is spelt with escapes is the
    limit). When it reaches the start undecided, the record that describes the old file says
    (a run open across two sweeps)."""
    if log.is_audit:
        return None
    from wardrik_cli.store.append import _GAVE_UP, _UNDECIDED, open_run_before

    found = open_run_before(fd, run_mark, CUT_RUN_LOOKBACK) if run_mark > 0 else _UNDECIDED
    if found is _UNDECIDED:
        top = log.read_watermark()
        for wm in (top, top.previous if top else None):
            if wm is not None and (wm.inode == ino or wm.next_sequence == first_seq):
                return wm.open_run
        return None
    return found if isinstance(found, str) and found is not _GAVE_UP else None


def _record(log: Log, old_ino: int, old_first_seq: int, new_ino: int, next_seq: int, last_dropped: bytes,
            dropped_time: str | None, first_kept: dict[str, Any] | None, new_mtime_ns: int,
            open_run: str | None = None, source: str | None = None) -> bytes:
    # inode and mtime identify the new file while it is empty (a copy keeps the mtime); the
    # hash is of the last line's bytes (the audit chain goes on from it).
    rec: dict[str, Any] = {"inode": new_ino, "mtime_ns": new_mtime_ns, "next_sequence": next_seq, "time": dropped_time,
                           "hash": hashlib.sha256(last_dropped + b"\n").hexdigest(),
                           "first_time_kept": first_kept["time"] if first_kept else None}
    if open_run is not None:
        rec["open_run"] = open_run
    if source is not None:  # an emptied log: its notices keep the source its events had
        rec["source"] = source
    raw = log.root.read_state(log.watermark_path, MAX_RECORD_BYTES)
    try:
        top = orjson.loads(raw) if raw is not None else None
    except ValueError:
        top = None
    if isinstance(top, dict):
        # Carry the record that describes the old file: the top one, or, after a sweep that
        # died between its two renames (steps 4 and 5), the one that sweep carried.
        older = top.pop("previous", None)
        if isinstance(older, dict) and not _describes(top, old_ino, old_first_seq) \
                and _describes(older, old_ino, old_first_seq):
            top = older
        rec["previous"] = top
    return orjson.dumps(rec)


def _describes(rec: dict[str, Any], ino: int, first_seq: int) -> bool:
    return rec.get("next_sequence") == first_seq or rec.get("inode") == ino


def stage(log: Log, fd: int, ino: int, cut: int, end0: int, first_seq: int, *, warn: Callable[[str], None],
          lock_timeout: float | None, after_bulk: Callable[[], None] | None = None, run_mark: int = 0,
          dir_fd: int) -> Staged:
    """Steps 2 of the crash order for one log whose bytes [cut, end) are kept: the new file
    and record written (not synced), the log's lock taken and held. Raises Failure/OSError
    with nothing left behind (temps removed, lock released). ``dir_fd``: the log's folder
    (``fsutil.open_folder``): the new file is made and the log opened again by name in it."""
    tmp, wm_tmp = tmp_path(log), wm_tmp_path(log)
    tfd = os.open(tmp.name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    lock_fd: int | None = None
    try:
        try:
            try:
                # the new file is the log: its appenders (another user, when cron sweeps as
                # root) must go on writing it, and a private log stays private
                same_access(tfd, os.fstat(fd), owner=True)
            except PermissionError:
                st0 = os.fstat(fd)
                raise Failure(f"cannot give the new file the log's owner (uid {st0.st_uid}, gid {st0.st_gid}): "
                              "not compacted (run compact as that user, or as root)") from None
            copy_range(fd, tfd, cut, end0, 0)  # the bulk, without the lock: appenders go on
            if after_bulk is not None:
                after_bulk()
            lock_fd = acquire(log.lock_path, timeout=lock_timeout, what=log.name)
            try:
                wfd = os.open(log.path.name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                raise Failure("the log was removed while it was swept") from None
            try:
                st1 = os.fstat(wfd)
                if st1.st_ino != ino:
                    raise Failure("the log was replaced while it was swept; run compact again")
                end1, size1 = lines.complete_end(wfd, st1.st_size)
                if end1 < end0:
                    raise Failure("the log shrank while it was swept; run compact again")
                copy_range(wfd, tfd, end0, end1, end0 - cut)  # what was appended meanwhile
                if size1 > end1:
                    from wardrik_cli.store.append import cut_torn_tail
                    refuse_linked(wfd, log.path)  # the cut is in place: never through another name
                    cut_torn_tail(wfd, log.path, end1, size1, sync=True, warn=warn, label=log.name, dir_fd=dir_fd)
                last_dropped = lines.last_line(wfd, cut)
                assert last_dropped is not None, "cut > 0: lines come before it"
                dropped_time, dropped_seq, dropped_source = _last_event_before(wfd, cut)
                open_run = _open_run_at(log, wfd, ino, first_seq, cut, run_mark)
            finally:
                os.close(wfd)
            st_new = os.fstat(tfd)
            first_line = lines.first_line(tfd, end1 - cut)
            last_line = lines.last_line(tfd, end1 - cut)
            first_kept: dict[str, Any] | None = None
            kept = 0
            try:
                if first_line is not None and last_line is not None:
                    first_kept = decode_event(first_line[1])
                    next_seq = int(first_kept["sequence"])
                    kept = int(decode_event(last_line[1])["sequence"]) - next_seq + 1
                else:
                    if dropped_seq is None:
                        raise ValueError("no event in the part dropped")
                    next_seq = dropped_seq + 1
            except ValueError as e:
                raise Failure(f"a line where the kept part starts or ends is not an event ({e}); "
                              "not compacted (see `wardrik check`)") from None
            record = _record(log, ino, first_seq, st_new.st_ino, next_seq, last_dropped[1], dropped_time,
                             first_kept, st_new.st_mtime_ns, open_run, None if first_kept else dropped_source)
            log.root.state_dir(wm_tmp)  # no link on the way: NotRegular names it, this log fails
            write_new(wm_tmp, record)
        finally:
            os.close(tfd)
    except BaseException:
        for p, dfd in ((tmp.name, dir_fd), (wm_tmp, None)):
            try:
                os.unlink(p, dir_fd=dfd)
            except OSError:
                pass
        if lock_fd is not None:
            os.close(lock_fd)
        raise
    return Staged(log, lock_fd, tmp, wm_tmp, st1, end1, st_new.st_ino, end1 - cut, st_new.st_mtime_ns,
                  size1, next_seq - first_seq, kept, next_seq)


def _batch_logs() -> int:
    # One lock fd is held per staged log: stay well inside the open-files limit.
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return BATCH_LOGS
    return max(1, min(BATCH_LOGS, (soft - 64) // 3))  # and at its commit, one fd per folder


class Batch:
    """Logs staged for replacement, committed together (steps 3 to 6).

    ``before_renames(staged)``, when given, is called at each commit before anything of the
    batch is synced or renamed: it writes what the renames are about to do and returns the
    files it wrote, made durable with the batch's own (step 3). If it raises (OSError,
    WardrikError), the batch fails with nothing changed."""

    def __init__(self, before_renames: Callable[[list[Staged]], list[Path]] | None = None) -> None:
        self.staged: list[Staged] = []
        self.copied = 0
        self.started = 0.0
        self.max_logs = _batch_logs()
        self.before_renames = before_renames

    def add(self, s: Staged) -> None:
        if not self.staged:
            self.started = time.monotonic()
        self.staged.append(s)
        self.copied += s.new_size

    def full(self) -> bool:
        return bool(self.staged) and (len(self.staged) >= self.max_logs or self.copied >= BATCH_BYTES
                                      or time.monotonic() - self.started >= BATCH_SECONDS)

    def commit(self) -> list[Staged]:
        """Replace every staged log; each comes back with ``error`` set if its replacement
        failed (then its log and record are as they were, or, if only the log's own rename
        or directory sync failed, the record describes both files)."""
        staged, self.staged, self.copied = self.staged, [], 0
        try:
            live = list(staged)
            intent: list[Path] = []
            if self.before_renames is not None and live:
                try:
                    intent = self.before_renames(live)
                except (OSError, WardrikError) as e:
                    why = e.strerror or str(e) if isinstance(e, OSError) else str(e)
                    self._fail(live, f"could not record the sweep's intent ({why}); nothing was changed")
                    return staged
            try:
                sync_files([p for s in live for p in (s.tmp, s.wm_tmp)] + intent)  # step 3
            except OSError as e:
                self._fail(live, f"could not make the new file durable ({e.strerror}); nothing was changed")
                return staged
            for s in live:  # step 4
                try:
                    os.rename(s.wm_tmp, s.log.watermark_path)
                except OSError as e:
                    self._fail([s], f"could not replace its record {s.log.watermark_path} ({e.strerror}); "
                                    "nothing was changed")
            live = [s for s in live if s.error is None]
            live = self._sync_dirs(live, lambda s: s.log.watermark_path.parent,
                                   "could not sync the directory of its record ({}); the log was kept as it was")
            folders: dict[Path, int] = {}  # each log's folder, opened once: renamed in by name
            try:
                for s in live:  # step 5
                    try:
                        dfd = folders.get(s.log.path.parent)
                        if dfd is None:
                            dfd = folders[s.log.path.parent] = open_folder(s.log.root.path, s.log.path.parent)
                        os.rename(s.tmp.name, s.log.path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    except NotRegular as e:
                        self._fail([s], f"could not replace the log ({e}); it was kept as it was")
                    except OSError as e:
                        self._fail([s], f"could not replace the log ({e.strerror}); it was kept as it was")
                live = [s for s in live if s.error is None]
                live = self._sync_dirs(live, lambda s: s.log.path.parent,
                                       "the log was replaced but its directory could not be synced ({})",
                                       replaced=True, fds=folders)
            finally:
                for dfd in folders.values():
                    os.close(dfd)
            for s in live:
                # Still under the lock: the appender's note moves to the new file (its kept
                # lines were verified, and the run open at its end is the same run).
                _carry_verified_note(s)
            return staged
        finally:
            for s in staged:  # step 6
                os.close(s.lock_fd)

    def abandon(self) -> None:
        """Give up the staged logs: their temporaries removed, their locks released."""
        staged, self.staged, self.copied = self.staged, [], 0
        for s in staged:
            s.discard()
            os.close(s.lock_fd)

    @staticmethod
    def _fail(which: list[Staged], why: str, *, replaced: bool = False) -> None:
        for s in which:
            s.error = why
            s.discard(replaced=replaced)

    def _sync_dirs(self, live: list[Staged], dir_of: Callable[[Staged], Path], why: str, *,
                   replaced: bool = False, fds: dict[Path, int] | None = None) -> list[Staged]:
        """Sync each folder of ``live`` once (``fds``: those held open, synced through them)."""
        failed: dict[Path, str] = {}
        for d in dict.fromkeys(dir_of(s) for s in live):
            try:
                if fds is not None and d in fds:
                    os.fsync(fds[d])
                else:
                    fsync_dir(d)
            except OSError as e:
                failed[d] = e.strerror or str(e)
        for s in live:
            if dir_of(s) in failed:
                self._fail([s], why.format(failed[dir_of(s)]), replaced=replaced)
        return [s for s in live if s.error is None]


def _carry_verified_note(s: Staged) -> None:
    """Point the appender's note (``store.append``) at the new file when it described the old
    one exactly; else remove it (the next append then verifies the new file once)."""
    root = s.log.root
    path = root.state_path("verified", s.log.state_key, ".json")
    raw = root.read_state(path, MAX_RECORD_BYTES)
    if raw is None and not os.path.lexists(path):
        return  # no note (the common case in a sweep: looked at with one walk, not two)
    try:
        state_dirs(path)  # never written nor removed through a linked folder
    except (OSError, NotRegular):
        return  # no note can be there (a note read through a link would name another file)
    try:
        # only a note this user's wardrik sealed is carried (store.seal), and sealed again
        note: Any = orjson.loads(raw) if raw is not None and seal.verify(VERIFIED_KIND, raw) else None
        held = (note["ino"], note["mtime_ns"], note["size"]) == (s.old.st_ino, s.old.st_mtime_ns, s.old_end)
        st = os.lstat(s.log.path)  # the rename gave the new file a ctime of its own: the note names it
        held = held and st.st_ino == s.new_ino
    except (OSError, ValueError, KeyError, TypeError):
        held = False
    if held:
        new = seal.seal(VERIFIED_KIND, orjson.dumps({"ino": s.new_ino, "size": s.new_size, "mtime_ns": st.st_mtime_ns,
                                                     "ctime_ns": st.st_ctime_ns, "trace": note.get("trace")}))
        try:
            if new is not None:
                write_atomic(path, new, durable=False)
                return
        except OSError:
            pass
    # The note names the old inode, so it is void already; removing it keeps .wardrik/ tidy
    # and makes the next append verify the new file once.
    try:
        path.unlink()
    except OSError:
        pass
