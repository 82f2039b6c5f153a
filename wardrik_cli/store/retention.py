"""Retention: the ``compact`` sweep that drops each log's prefix of events older than the cutoff.

Contract kept here:
- In every log under the root, and the audit log, drop the longest prefix of events whose
  time is before ``now - retention``; never anything after the first event at or after the
  cutoff, so a log whose times go backwards keeps everything from that event on (and the
  result says so).
- The cut is found by bisection by time (a few small reads), checked against its neighbour
  and samples of the prefix (at least 16, one per 4 MB, at most 256); when a check fails, the
  prefix is scanned from the start instead, which is exact. Logs under 1 MB are always
  scanned. Limit: in a big log written by something other than wardrik (whose appends never
  go back in time), a short stretch of newer events hidden between two samples of the old
  prefix is not seen, and is dropped with it; reading the whole prefix would make every
  sweep cost the whole log.
  Kept bytes are copied by the kernel (``copy_file_range``, falling back to ``sendfile`` and
  then 1 MB blocks), never parsed and re-serialised: the cost grows with what is kept.
- Each log whose prefix goes is replaced by a new file holding the rest, in batches, under
  the per-root compaction lock (a second sweep skips, or waits with ``wait=True``); the crash
  order (kill -9 anywhere leaves each log as it was or as it should be, its record describing
  it) is written down and kept in ``store.replace``. A log with nothing to drop is only read
  (its torn tail, if any, cut in place under its lock).
- ``dry_run`` reads only: no lock, no file created.
- Ship targets are replication slots (``store.ship_slots``): in a log a registered target
  covers, the cut is clamped to the first sequence that target has not confirmed storing,
  and the log's row says how many events were held back for which target. With
  ``max_ship_lag``, events older than now minus the lag go anyway: the gap (per target, the
  unshipped sequences dropped) is written to ``.wardrik/ship/<target>.gaps.json`` and made
  durable before the log is staged, so a crash leaves a record of a drop that may not have
  happened (the next ship finds those events still here, ships them and clears it), never a
  drop without a record. A record is read by the next ``ship``, which writes the gap to the
  store, so that remote readers get ``events.dropped`` for it.

The sweep's intent (nothing is thrown away unseen, even by a sweep killed before it says so).
A sweep that drops anything records one ``ledger.compacted`` (``data.logs``: {log: dropped};
``data.sweep``: the sweep's id) after its last batch. Its crash order, with the batches':
1. the first time a batch cuts a log, ``.wardrik/compact-intent.jsonl`` is created (``O_EXCL``,
   ``O_NOFOLLOW``, in a ``.wardrik/`` checked not to be a link) with a header: the sweep's id,
   actor, retention, size bound, start time, and the audit log's last sequence then (the
   "audit mark"); ``.wardrik/`` is fsynced;
2. every batch, before anything of it is synced or renamed, appends one line naming each log
   it cuts, how many events go and the sequence the log starts at once replaced; the line is
   made durable by the batch's own sync (``store.replace``, step 3), so it is on disk before
   the first rename of its batch;
3. after the last batch, ``ledger.compacted`` is appended to the audit log, durably;
4. the intent is removed (and ``.wardrik/`` fsynced). If a log it names failed in its batch
   (an I/O error around the renames), the intent is kept for step 5 to settle from the disk.
5. the next ``compact``, under the compaction lock and before its own sweep (so nothing else
   moves a log's start meanwhile), finds an intent left over and records ``ledger.compacted``
   (``data.recovered``, ``data.started``, the dead sweep's id and actor) for the cuts that
   landed and are not recorded yet, then removes it, with a ``warning:``.
Why that is enough: no rename can land before the line naming it is durable (2), and the
intent is not removed before the record is durable (3, 4), so a kill -9 anywhere from the
first rename to the record leaves an intent naming every cut that may have landed. Whether
one did is read from the disk, not the intent: a log starts at the planned sequence or later
(its first event, or, for a log the cut emptied, the next sequence of a record describing
this very file) only once its rename landed; before, the old file starts before it. A kill
before any rename leaves an intent none of whose cuts landed: nothing is recorded. A kill
between 3 and 4 leaves an intent whose record exists: recovery reads the audit events after
the audit mark (the record came after it) and skips every log a ``ledger.compacted`` of the
same sweep id names, so no drop is recorded twice, recovery's own record included. An intent
that cannot be read (a link, a folder, a FIFO, over ``MAX_INTENT_BYTES``, not what a sweep
writes) stops the next sweep (exit 1, naming it) and is left as it is: its drops may be
missing from the audit log, and only a person can tell. Its last line without a newline is
a line whose batch never reached its sync, passed over.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson


from wardrik_cli.store import lines
from wardrik_cli.errors import Failure, ReadOnlyRoot, WardrikError
from wardrik_cli.store.fsutil import (HeldFolder, fsync_dir, open_folder, open_regular, read_capped, refuse_linked,
                                      remove_below, write_all, write_new)
from wardrik_cli.store.replace import TMP_SUFFIX, WM_TMP_SUFFIX, Batch, Staged, stage
from wardrik_cli.store.layout import Root
from wardrik_cli.store.recorded_gaps import RecordedGap, any_recorded, covered, read_gaps
from wardrik_cli.store.log import Log, block_shape, decode_all, decode_event, line_time, peek
from wardrik_cli.store.search import count
from wardrik_cli.store.locking import check_lockable, locked, try_lock
from wardrik_cli.store.ship_slots import Slot, kind_of, record_gaps
from wardrik_cli.store.ship_slots import load as load_slots
from wardrik_cli.protocol.catalogue import RUN_MARK
from wardrik_cli.protocol.times import format_dt, parse_duration

DEFAULT_RETENTION = "30d"
LINEAR_LIMIT = 1 << 20  # a log this small is scanned line by line: exact, and cheap
SAMPLES = 16  # at least this many lines sampled on each side of a bisected cut ...
SAMPLE_EVERY = 4 << 20  # ... and one per 4 MB, up to MAX_SAMPLES: out-of-order stretches show up
MAX_SAMPLES = 256
COMPACT_LOCK_KEY = "@compact"


@dataclass
class LogResult:
    log: str
    audit: bool = False  # the audit log's row (its name, "audit", may also be an agent log's id)
    dropped: int = 0
    kept: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    damaged: int = 0  # lines in the dropped part that were not events (their bytes kept beside)
    damaged_kept: str | None = None
    held_back: int = 0  # events old enough to go, kept for ship targets that lack them
    held_for: list[str] = field(default_factory=list)
    unshipped: int = 0  # events dropped before a registered target stored them (--max-ship-lag)
    staged: Staged | None = None  # waiting in a batch: the figures above are known at its commit

    def settle(self) -> None:
        """Take the figures of a committed batch's replacement of this log."""
        s, self.staged = self.staged, None
        if s is None:
            return
        self.bytes_before = s.bytes_before
        if s.error:
            # not replaced: the log holds every event it had (and those appended meanwhile)
            self.error, self.dropped, self.kept, self.bytes_after = s.error, 0, s.dropped + s.kept, s.bytes_before
            if self.damaged_kept is not None and not os.path.lexists(self.damaged_kept):
                # the log was not replaced: its damaged lines are still in it, their copy went
                self.notes = [n for n in self.notes if self.damaged_kept not in n]
                self.damaged_kept = None
        else:
            self.dropped, self.kept, self.bytes_after = s.dropped, s.kept, s.new_size

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"log": self.log, "dropped": self.dropped, "kept": self.kept,
                             "bytes_before": self.bytes_before, "bytes_after": self.bytes_after}
        if self.audit:
            d["audit"] = True
        if self.error:
            d["error"] = self.error
        if self.damaged:
            d["damaged"] = self.damaged
            if self.damaged_kept:
                d["damaged_kept"] = self.damaged_kept
        if self.held_back:
            d["held_back"] = self.held_back
            d["held_for"] = self.held_for
        if self.unshipped:
            d["unshipped"] = self.unshipped
        if self.notes:
            d["notes"] = self.notes
        return d


class SweepTotals:
    """The totals of a sweep's per-log rows (``logs``: rows with dropped, kept, error); the
    local sweep's and the store's (``remote.compact``) alike."""

    logs: list[Any]

    @property
    def dropped(self) -> int:
        return sum(r.dropped for r in self.logs)

    @property
    def kept(self) -> int:
        return sum(r.kept for r in self.logs)

    @property
    def failed(self) -> list[Any]:
        return [r for r in self.logs if r.error]


@dataclass
class SweepResult(SweepTotals):
    cutoff: str
    retention: str
    dry_run: bool
    logs: list[LogResult] = field(default_factory=list)
    skipped: str | None = None  # set when another sweep held the root
    max_bytes: int | None = None  # the size bound of agents' logs, if any
    max_ship_lag: str | None = None


    @property
    def damaged(self) -> list[LogResult]:
        return [r for r in self.logs if r.damaged]

    def to_json(self) -> dict[str, Any]:
        d = {"logs": [r.to_json() for r in self.logs], "dropped": self.dropped, "kept": self.kept,
             "cutoff": self.cutoff, "retention": self.retention, "dry_run": self.dry_run}
        if self.max_bytes is not None:
            d["max_bytes"] = self.max_bytes
        if self.max_ship_lag is not None:
            d["max_ship_lag"] = self.max_ship_lag
        if self.skipped:
            d["skipped"] = self.skipped
        return d


class _Unreadable(Exception):
    def __init__(self, offset: int, what: str):
        self.offset, self.what = offset, what


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------
def resolve_retention(root: Root, given: str | None) -> tuple[str, timedelta]:
    """The retention from the flag, else config.toml, else 30 days (validated either way)."""
    if given is not None:
        return given, parse_retention(given)
    cfg = root.config().retention if root.exists() else None
    if cfg is not None:
        from wardrik_cli.errors import BadConfig, BadDuration
        try:
            return cfg, parse_retention(cfg)
        except BadDuration as e:
            raise BadConfig(f"{root.tool_dir / 'config.toml'}: retention: {e}") from None
    return DEFAULT_RETENTION, parse_duration(DEFAULT_RETENTION)


def parse_retention(text: str) -> timedelta:
    """A retention of no time would drop every event, the one written a moment ago too:
    never what a cron line means."""
    d = parse_duration(text)
    if d.total_seconds() <= 0:
        from wardrik_cli.errors import BadDuration

        raise BadDuration(f"bad retention {text!r}: it must be longer than 0s (e.g. 30d)")
    return d


# a unit may end in B or iB (500MB, 500MiB), and a bare B is bytes; "500iB" is no size
_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(?:([KMGT])(?:I?B)?|B)?", re.I)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MAX_SIZE = 1 << 60  # a bound past any disk, well inside the 64-bit integers a record holds


def parse_size(text: str | int, what: str = "--max-bytes") -> int:
    """``500M``, ``2G``, ``1.5G``, ``800K`` or a number of bytes (units of 1,024); above 0."""
    if isinstance(text, int) and not isinstance(text, bool):
        n = text
    else:
        m = _SIZE_RE.fullmatch(str(text).strip()) if isinstance(text, str) else None
        if not m:
            from wardrik_cli.errors import BadInput

            raise BadInput(f"bad {what} {text!r}: use a size such as 500M, 2G or 800K (units of 1,024 bytes)")
        n = int(float(m.group(1)) * _SIZE_UNITS[(m.group(2) or "").upper()])
    if n > MAX_SIZE:
        from wardrik_cli.errors import BadInput

        raise BadInput(f"bad {what} {text!r}: at most {MAX_SIZE >> 50} PiB")
    if n <= 0:
        from wardrik_cli.errors import BadInput

        raise BadInput(f"bad {what} {text!r}: it must be more than 0 bytes")
    return n


def resolve_max_bytes(root: Root, given: str | None) -> int | None:
    """The size bound from the flag, else ``max_bytes`` in config.toml, else none."""
    if given is not None:
        return parse_size(given)
    cfg = root.config().max_bytes if root.exists() else None
    if cfg is None:
        return None
    from wardrik_cli.errors import BadConfig, BadInput

    try:
        return parse_size(cfg, "max_bytes")
    except BadInput as e:
        raise BadConfig(f"{root.tool_dir / 'config.toml'}: {e}") from None


# ---------------------------------------------------------------------------
# finding the cut
# ---------------------------------------------------------------------------
def _time(off: int, raw: bytes) -> str:
    p = peek(raw)  # a line in this tool's shape: its time read from its bytes
    if p is not None:
        return p[2].decode()
    try:
        t: str = decode_event(raw)["time"]  # decode_event checked it is a str
    except ValueError as e:
        raise _Unreadable(off, f"corrupt line ({e})") from None
    return t


def _seq(off: int, raw: bytes) -> int:
    try:
        return int(decode_event(raw)["sequence"])
    except ValueError as e:
        raise _Unreadable(off, f"corrupt line ({e})") from None


def _seq_at(found: tuple[int, bytes] | None) -> int:
    """``_seq`` of a line the caller knows is there (``lines.first_line`` and the like)."""
    assert found is not None, "a complete line is there"
    return _seq(*found)


def _linear_cut(fd: int, end: int, cutoff: str, *, check_rest: bool, lenient: bool = False) -> tuple[int, bool]:
    """(offset of the first line at or after the cutoff, whether an older line follows it).
    ``lenient``: a line that is not an event goes with the part it is in when an older event
    follows it; one after the last older event is kept (its time cannot be read, so it is not
    shown to be older than the cutoff: never dropped on a guess)."""
    if end <= LINEAR_LIMIT:
        shaped = _shaped_cut(os.pread(fd, end, 0), cutoff)
        if shaped is not None:
            return shaped
    cut = None
    unread = None  # the first line that is not an event since the last older event
    for off, raw in lines.iter_lines(fd, 0, end):
        try:
            t = _time(off, raw)
        except _Unreadable:
            if not lenient:
                raise
            if unread is None:
                unread = off
            continue
        if cut is None:
            if t >= cutoff:
                cut = off if unread is None else unread
                if not check_rest or cut == 0:
                    return cut, False  # nothing to drop: the rest need not be read (cron, every hour)
            else:
                unread = None  # an older event after it: it lies inside the part dropped
        elif t < cutoff:
            return cut, True
    if cut is None:
        cut = end if unread is None else unread
    return cut, False


_TIME_KEY = b'","time":"'
_AFTER_TIME = b'","sequence":"'  # 27 bytes of time come between the two, in this tool's shape


def _shaped_cut(data: bytes, cutoff: str) -> tuple[int, bool] | None:
    """``_linear_cut`` of a small log whose every line is in this tool's shape (a few byte
    counts say so, and exactly one time per line is found): the times are read with one
    regular-expression pass instead of a look at each line (cron sweeps thousands of small
    logs). None when the log is not all in that shape."""
    n = count(data, b"\n")
    if n == 0 or block_shape(data, len(data), n) is None:
        return None
    parts = data.split(_TIME_KEY)  # parts[i + 1] starts with line i's time
    if len(parts) != n + 1:  # one line's data holds a "time" of its own: look line by line
        return None
    c = cutoff.encode()
    if b"\n" in parts[0]:
        return None
    for i in range(1, n + 1):  # each line holds exactly one time key, followed as in the shape
        if parts[i][27:41] != _AFTER_TIME or parts[i].count(b"\n") != 1:  # small: bytes.count
            return None
    for i in range(1, n + 1):
        if parts[i][:27] >= c:
            if i == 1:
                return 0, False  # nothing to drop (as _linear_cut: the rest is not judged)
            backwards = any(p[:27] < c for p in parts[i + 1:])
            at = sum(len(p) for p in parts[:i]) + (i - 1) * len(_TIME_KEY)
            return data.rfind(b"\n", 0, at) + 1, backwards
    return len(data), False


def _samples(fd: int, lo: int, hi: int, end: int) -> Iterator[tuple[int, bytes]]:
    """About SAMPLES complete lines spread over [lo, hi)."""
    if hi <= lo:
        return
    count = min(MAX_SAMPLES, max(SAMPLES, (hi - lo) // SAMPLE_EVERY))
    step = max((hi - lo) // count, 1)
    pos = lo
    while pos < hi:
        found = lines.line_at_or_after(fd, pos, end)
        if found is None or found[0] >= hi:
            return
        yield found
        pos = max(pos + step, found[0] + len(found[1]) + 1)


def find_cut(fd: int, end: int, cutoff: str) -> tuple[int, bool]:
    """(cut offset, times go backwards): the longest prefix of ``[0, end)`` older than ``cutoff``.

    Small logs are scanned; big ones bisected, and the answer checked: the line before the cut
    and samples of the prefix must be older than the cutoff. A failed check means the times
    are out of order: the prefix is then scanned from the start, which is exact.
    """
    if end <= LINEAR_LIMIT:
        return _linear_cut(fd, end, cutoff, check_rest=True)

    def is_after(raw: bytes) -> bool:
        return _time(-1, raw) >= cutoff

    try:
        cut = lines.bisect(fd, end, is_after)
    except _Unreadable:
        cut = -1
    ok = cut >= 0
    if ok and cut > 0:
        prev = lines.last_line(fd, cut)
        ok = prev is not None and _time(prev[0], prev[1]) < cutoff
        if ok:
            ok = all(_time(o, r) < cutoff for o, r in _samples(fd, 0, cut, end))
    if not ok:
        cut, _ = _linear_cut(fd, end, cutoff, check_rest=False)
        return cut, True
    backwards = any(_time(o, r) < cutoff for o, r in _samples(fd, cut, end, end))
    return cut, backwards


def clean_stale(root: Root) -> list[Path]:
    """Remove temporaries a killed sweep left (call only under the compaction lock), returned;
    and, not returned (they are not a sweep's), those a killed shipper left in ``.wardrik/``
    (``ship_slots.stale_temp``: only ones older than a running shipper's write could be).
    Folders are walked with ``fsutil.remove_below``: a link planted in the root (``.wardrik``
    or ``.wardrik/watermarks`` pointing elsewhere) is never followed, so nothing outside the
    root is removed."""
    from wardrik_cli.store.ship_slots import ROOT_ID_NAME, SHIP_DIR, stale_temp

    tool = root.tool_dir.name
    remove_below(root.path, (tool, SHIP_DIR), stale_temp())  # a registration, positions: the file itself is whole
    remove_below(root.path, (tool,), stale_temp(ROOT_ID_NAME))

    def temp(suffix: str) -> Callable[[os.DirEntry[str]], bool]:
        return lambda e: e.name.startswith(".") and e.name.endswith(suffix)

    removed = remove_below(root.path, (), temp(TMP_SUFFIX), recurse=lambda name: not name.startswith("."))  # logs
    removed += remove_below(root.path, (tool,), temp(TMP_SUFFIX))  # the audit log's
    removed += remove_below(root.path, (tool, "watermarks"), temp(WM_TMP_SUFFIX), recurse=lambda name: True)
    return removed


# ---------------------------------------------------------------------------
# one log
# ---------------------------------------------------------------------------
def compact_log(log: Log, cutoff: str, *, dry_run: bool = False, warn: Callable[[str], None] = lambda m: None,
                lock_timeout: float | None = None, _after_bulk: Callable[[], None] | None = None,
                max_bytes: int | None = None, batch: Batch | None = None,
                slots: list[Slot] | None = None, lag_cutoff: str | None = None,
                skip_corrupt: bool = False, future: str | None = None,
                before_drop: Callable[[], None] | None = None, folder: HeldFolder | None = None) -> LogResult:
    """Sweep one log; raises WardrikError/OSError on a failure (the caller records it).

    ``folder``: the sweep's held folder (``fsutil.HeldFolder``), reused for the logs of one folder.

    ``before_drop``: called before anything of a log with a part to drop is written (its
    gap record, its new file): a failure there leaves the log as it was.
    ``future``: a time past which an event is in the future (a day past now): a log whose
    newest event is stamped so gets a note, since every event appended after it repeats that
    time and no retention will drop them until then.

    A part to drop whose sequence breaks (a line deleted or repeated by hand there or at its
    edge, or a log that starts after sequence 1 with no compaction record saying why) is not
    dropped: the sweep would pass the hole off as retention's, and ``check`` would find it no
    more. ``skip_corrupt``: it is dropped anyway, said in a note, and the count is of the
    events that went.

    ``max_bytes``: after the time rule, the oldest whole events go too until what is kept
    is at most that many bytes (an event larger than the bound on its own goes as well).
    ``slots``: the registered ship targets; the cut stops at the first event one of them
    lacks, unless it is older than ``lag_cutoff`` (then the gap is recorded first).
    A log whose prefix goes is staged in ``batch`` (``store.replace``): its figures are known
    once the batch is committed (``LogResult.settle``). Without a batch it is replaced at once."""
    res = LogResult(log.name, audit=log.is_audit)
    try:
        # the log's folder, held: a folder swapped for a link meanwhile is never gone through
        # (every file of the sweep beside the log is made, opened and renamed by name in it)
        dfd = folder.get(log.root.path, log.path.parent) if folder is not None else \
            open_folder(log.root.path, log.path.parent)
    except FileNotFoundError:
        return res
    try:
        try:
            fd = open_regular(log.path.name, os.O_RDONLY, dir_fd=dfd, shown=log.path)
        except FileNotFoundError:
            return res
        return _compact_open(log, dfd, fd, cutoff, res, dry_run=dry_run, warn=warn, lock_timeout=lock_timeout,
                             _after_bulk=_after_bulk, max_bytes=max_bytes, batch=batch, slots=slots,
                             lag_cutoff=lag_cutoff, skip_corrupt=skip_corrupt, future=future,
                             before_drop=before_drop)
    finally:
        if folder is None:
            os.close(dfd)


def _compact_open(log: Log, dfd: int, fd: int, cutoff: str, res: LogResult, *, dry_run: bool,
                  warn: Callable[[str], None], lock_timeout: float | None, _after_bulk: Callable[[], None] | None,
                  max_bytes: int | None, batch: Batch | None, slots: list[Slot] | None, lag_cutoff: str | None,
                  skip_corrupt: bool, future: str | None, before_drop: Callable[[], None] | None) -> LogResult:
    """``compact_log`` of the log open at ``fd`` in its folder ``dfd`` (``fd`` closed here)."""
    recorded_within = _recorded_counter(log)
    try:
        st = os.fstat(fd)
        end0, size0 = lines.complete_end(fd, st.st_size)
        res.bytes_before = res.bytes_after = size0
        cut = 0
        try:
            try:
                cut, backwards = find_cut(fd, end0, cutoff)
            except _Unreadable:
                # a line that is not an event where the bisection looked: decide line by line,
                # and the damaged lines in the part dropped are kept beside the log (below)
                cut, backwards = _linear_cut(fd, end0, cutoff, check_rest=True, lenient=True)
            if max_bytes is not None and end0 - cut > max_bytes:
                over = lines.line_at_or_after(fd, end0 - max_bytes, end0)
                cut = over[0] if over is not None else end0
            if 0 < cut < end0 and skip_corrupt:
                cut = _past_damaged(fd, cut, end0)
            gaps: list[tuple[str, str, str, int, int, str | None]] = []
            if slots and cut > 0:
                cut, gaps = _hold_for_targets(log, fd, end0, cut, slots, lag_cutoff, res)
            last = lines.last_line(fd, end0)
            last_seq = _seq(*last) if last else None
            # the first event (a damaged first line is in the part dropped, kept beside the log)
            first_seq = _first_seq(fd, cut) if last is not None else None
            kept_first = _seq_at(lines.line_at_or_after(fd, cut, end0)) if cut < end0 else None
            if first_seq is None:
                first_seq = kept_first if kept_first is not None else last_seq
        except _Unreadable as e:
            # a damaged line where the kept part would start: its time cannot be read, so it is
            # not dropped on a guess unless the operator says so
            hint = "; --skip-corrupt drops it with the events before it, its bytes kept beside the log" \
                if 0 < cut == e.offset else ""
            raise Failure(f"{e.what} at byte {e.offset} (see `wardrik check`); not compacted{hint}") from None
        if first_seq is not None and last_seq is not None and not (
                first_seq <= last_seq and (kept_first is None or first_seq <= kept_first <= last_seq)):
            raise Failure(f"its sequences go back (first {first_seq}, last {last_seq}; see `wardrik check`); "
                          "not compacted")
        if first_seq is not None and last_seq is not None:  # the log has a complete line
            res.dropped = (kept_first if kept_first is not None else last_seq + 1) - first_seq
            res.kept = (last_seq - kept_first + 1 - recorded_within(kept_first, last_seq)) \
                if kept_first is not None else 0
        if backwards:
            res.notes.append("times go backwards in this log: only the prefix before the first event at or "
                             "after the cutoff was dropped; older events after it were kept")
        if future is not None and last is not None:
            when = line_time(last[1])
            if when is not None and when > future:
                res.notes.append(f"its newest event is stamped {when}, in the future: the events appended after "
                                 "it repeat that time (times never go back), so retention drops none of them "
                                 "before then (see `wardrik check`)")
        run_mark = 0
        went: int | None = None  # events dropped, where the sequences would say otherwise
        if cut > 0:
            bad, run_mark, n_lines = _damaged_lines(fd, cut)
            assert first_seq is not None, "cut > 0: lines come before it"
            n_events = n_lines - len(bad)
            broken = None
            # the sequences a pulled copy lacks by record (dropped at their source before they
            # were shipped) hold no line here: they are not a line deleted
            held = res.dropped - recorded_within(first_seq, first_seq + res.dropped - 1)
            # (a damaged line may hold one of the sequences: fewer lines than sequences is a
            # line deleted, more events than sequences one repeated)
            if held != res.dropped:
                went = n_events  # the row and the audit record count events, not the sequences recorded
            if n_lines < held or n_events > held:
                broken = (f"the part to drop holds {n_events} event(s) where its sequences, {first_seq} to "
                          f"{first_seq + res.dropped - 1}, say {held}"
                          + (f" ({res.dropped - held} more were dropped at their source, as recorded)"
                             if held != res.dropped else "")
                          + ": a line there was deleted or repeated")
            elif first_seq > 1 and not (bad and bad[0][0] == 0) and not _start_recorded(log, first_seq) \
                    and recorded_within(1, first_seq - 1) < first_seq - 1:
                broken = (f"it starts at sequence {first_seq} and no compaction record says why: its first "
                          f"{first_seq - 1} event(s) were deleted")
            if broken is not None:
                if not skip_corrupt:
                    raise Failure(f"{broken} (see `wardrik check`); not compacted (--skip-corrupt drops it anyway)")
                res.notes.append(f"{broken}; dropped anyway (--skip-corrupt): {n_events} event(s) went")
                went = n_events
            if went is not None:
                res.dropped = went  # a dry run says what the sweep would: events, not sequences
            if bad:
                res.damaged = len(bad)
                if dry_run:
                    res.notes.append(f"{len(bad)} line(s) in the part that would be dropped are not events (the "
                                     f"first at byte {bad[0][0]}); their bytes would be kept beside the log")
        torn = size0 - end0
        if dry_run or (cut == 0 and torn == 0):
            if dry_run:
                res.bytes_after = size0 - cut - torn
            return res
        if cut == 0:
            # Nothing to drop: only cut the torn tail, in place, under the appenders' lock.
            with locked(log.lock_path, timeout=lock_timeout, what=log.name):
                wfd = open_regular(log.path.name, os.O_RDWR, dir_fd=dfd, shown=log.path)
                try:
                    refuse_linked(wfd, log.path)
                    if os.fstat(wfd).st_ino != st.st_ino:
                        raise Failure("the log was replaced while it was swept; run compact again")
                    end1, size1 = lines.complete_end(wfd)
                    from wardrik_cli.store.append import cut_torn_tail
                    cut_torn_tail(wfd, log.path, end1, size1, sync=True, warn=warn, label=log.name, dir_fd=dfd)
                    res.bytes_before, res.bytes_after = size1, end1
                    if first_seq is not None and last_seq is not None:
                        res.kept = _seq_at(lines.last_line(wfd, end1)) - first_seq + 1
                finally:
                    os.close(wfd)
            return res
        assert first_seq is not None, "cut > 0: lines come before it"
        if before_drop is not None:
            before_drop()
        if gaps:
            record_gaps(log.root, gaps)  # durable before the log is staged: never a drop without its record
        kept_beside = None
        if bad:
            # written once the drop is sure to be tried (a refused sweep leaves no copy behind,
            # run after run), removed again if it is not made (the log still holds those bytes)
            kept_beside = _keep_damaged(log, bad, dfd)
            res.damaged_kept = str(kept_beside)
            res.notes.append(f"{len(bad)} line(s) in the part dropped are not events (the first at byte "
                             f"{bad[0][0]}); their bytes are kept in {kept_beside}")
        try:
            staged = stage(log, fd, st.st_ino, cut, end0, first_seq, warn=warn, lock_timeout=lock_timeout,
                           after_bulk=_after_bulk, run_mark=run_mark, dir_fd=dfd)
        except BaseException:
            if kept_beside is not None:
                _unlink_quietly(kept_beside.name, dfd)
            raise
        staged.kept_beside = kept_beside
        if went is not None:
            staged.dropped = went  # what the row and the audit record say: events, not sequences
        if staged.kept:  # events, too: the sequences a pulled copy lacks by record are none
            staged.kept -= recorded_within(staged.next_seq, staged.next_seq + staged.kept - 1)
        if batch is not None:
            batch.add(staged)
            res.staged = staged
            return res
        one = Batch()
        one.add(staged)
        res.staged = staged  # its figures (or its error) come from the commit
        one.commit()
        res.settle()
        return res
    finally:
        os.close(fd)


def _events_held(log: Log) -> int:
    """How many events a log that failed holds: its complete lines (counted, not read as
    JSON: a failure is rare, and may be a damaged line); 0 when it cannot be read."""
    try:
        with log.open() as view:
            return 0 if view.fd is None else lines.count_lines_before(view.fd, lines.complete_end(view.fd)[0]) - 1
    except (WardrikError, OSError):
        return 0


def _recorded_counter(log: Log) -> Callable[[int, int], int]:
    """``within(first, last)``: how many of the sequences ``first`` to ``last`` a pulled copy
    lacks by record (``pull``'s gap records, read once per log however often a sweep asks;
    never the audit log's, whose holes are damage whatever a record says)."""
    gaps: dict[int, RecordedGap] | None = None

    def within(first: int, last: int) -> int:
        nonlocal gaps
        if last < first or log.is_audit:
            return 0
        if gaps is None:
            gaps = read_gaps(log.root, log.state_key) if any_recorded(log.root) else {}
        if not gaps:
            return 0
        found, _rest = covered(gaps, first - 1, last + 1)
        return sum(g.last - g.first + 1 for g in found)
    return within


def _start_recorded(log: Log, first_seq: int) -> bool:
    """Does the log's compaction record (or the one it carries) say the log starts at
    ``first_seq``?"""
    wm = log.read_watermark()
    return any(w is not None and w.next_sequence == first_seq for w in (wm, wm.previous if wm else None))


def _hold_for_targets(log: Log, fd: int, end0: int, cut: int, slots: list[Slot], lag_cutoff: str | None,
                      res: LogResult) -> tuple[int, list[tuple[str, str, str, int, int, str | None]]]:
    """(the cut clamped for the ship targets covering the log, the gaps to record). The cut
    moves back to the first event a target has not confirmed storing; with ``lag_cutoff``,
    it moves back only as far as the first event at or after that time."""
    kind, name = kind_of(log.is_audit), log.name
    held = [(s.target, s.position(kind, name)) for s in slots if s.covers(kind, name)]
    if not held:
        return cut, []
    keep_from = min(p for _, p in held) + 1
    at_cut = lines.line_at_or_after(fd, cut, end0)
    cut_seq = _seq(*at_cut) if at_cut is not None else _seq_at(lines.last_line(fd, end0)) + 1
    if cut_seq <= keep_from:
        return cut, []

    def from_keep(raw: bytes) -> bool | None:
        try:
            return _seq(-1, raw) >= keep_from
        except _Unreadable:
            return None  # a damaged line decides nothing: the bisection steps over it

    clamp = lines.bisect(fd, cut, from_keep)
    new = clamp
    if lag_cutoff is not None:
        try:
            lag, _ = find_cut(fd, end0, lag_cutoff)
        except _Unreadable:
            lag, _ = _linear_cut(fd, end0, lag_cutoff, check_rest=False, lenient=True)
        new = max(clamp, min(cut, lag))
    at_new = lines.line_at_or_after(fd, new, end0)
    new_seq = _seq(*at_new) if at_new is not None else cut_seq
    res.held_back = cut_seq - new_seq
    if res.held_back:
        res.held_for = sorted({t for t, p in held if p + 1 < cut_seq})
        res.notes.append(f"held back {res.held_back} event(s) for ship target {', '.join(res.held_for)}: not yet "
                         "stored there (ship them, or use --max-ship-lag, or `wardrik ship --forget TARGET`)")
    gaps: list[tuple[str, str, str, int, int, str | None]] = []
    if new > clamp:
        first_seq = _seq_at(lines.first_line(fd, end0))
        newest = lines.last_line(fd, new)
        newest_time = _time(*newest) if newest is not None else None
        lacking = sorted({t for t, p in held if p + 1 < new_seq})
        gaps = [(t, kind, name, p + 1, new_seq - 1, newest_time) for t, p in held if p + 1 < new_seq]
        res.unshipped = new_seq - max(keep_from, first_seq)
        res.notes.append(f"dropped {res.unshipped} event(s) older than --max-ship-lag before ship target "
                         f"{', '.join(lacking)} stored them; the gap is recorded, and the next ship writes it "
                         "to the store (remote readers get events.dropped for it)")
    return new, gaps


def _past_damaged(fd: int, cut: int, end: int) -> int:
    """Under --skip-corrupt, the cut moved past the lines right after it that are not events:
    the kept part starts with an event (its record says where the sequence starts), and those
    lines, whose time no one can read, go with the part dropped, kept beside the log and
    reported like the damaged lines there. Without it such a line stops the log's sweep (it is
    not dropped on a guess), and the error says how to let it go."""
    while cut < end:
        found = lines.line_at_or_after(fd, cut, end)
        if found is None:
            return end
        try:
            decode_event(found[1])
            return found[0]
        except ValueError:
            cut = found[0] + len(found[1]) + 1
    return end


def _first_seq(fd: int, cut: int) -> int | None:
    """The sequence of the first event before ``cut`` (lines that are not events are passed
    over: ``_damaged_lines`` keeps them), or None when there is none."""
    for _off, raw in lines.iter_lines(fd, 0, cut):
        try:
            return int(decode_event(raw)["sequence"])
        except ValueError:
            continue
    return None


def _damaged_lines(fd: int, cut: int) -> tuple[list[tuple[int, bytes]], int, int]:
    """(the lines of ``[0, cut)`` that are not events, so that none is dropped unseen; the end
    of the last line there that names a run's type, ``RUN_MARK``: 0 for none; how many lines
    there are, to check they are one per sequence). Every line is
    decoded (a line's shape says nothing of the JSON inside it): a block at a time in C
    (``store.log.decode_all``), line by line only in a block that holds a bad one. The mark
    is where the walk back for the run open at the cut starts (``replace.stage``): the part
    dropped is read once, not again from its end.

    Decoding is most of what a sweep of a big prefix costs (0.3 s for 180 MB, where copying
    the kept 20 MB and syncing it takes 0.16 s), so past ``PARALLEL_MIN`` bytes the second
    half is judged by a forked child while this process judges the first: the child reads
    the file through the same descriptor (``pread``: no shared offset), writes the offsets of
    the bad lines it found to a pipe and exits; if it cannot be started, or dies, its half
    is judged here. Nothing else is done in the child."""
    if cut < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        return _damaged_in(fd, 0, cut)
    got = lines.line_at_or_after(fd, cut // 2, cut)
    mid = got[0] if got is not None else cut
    theirs = _judged_apart(fd, mid, cut)
    bad, mark, n = _damaged_in(fd, 0, mid)
    answer = theirs() if theirs is not None else None
    if answer is None:
        more, their_mark, their_n = _damaged_in(fd, mid, cut)
        return bad + more, their_mark or mark, n + their_n
    offsets, their_mark, their_n = answer
    for off in offsets:
        line = lines.read_line_at(fd, off, cut)
        if line is not None:
            bad.append(line)
    return bad, their_mark or mark, n + their_n


PARALLEL_MIN = 32 << 20  # a prefix this big is judged in two halves, one by a forked child


def _judged_apart(fd: int, start: int, stop: int) -> Callable[[], tuple[list[int], int, int] | None] | None:
    """Start a child judging ``[start, stop)``; returns what collects its answer (the offsets of
    the bad lines, the run mark and the count of lines, or None when the child failed), or None
    when no child could be started."""
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: judge, answer, exit; never back into the caller's code
        code = 1
        try:
            os.close(r)
            bad, mark, n = _damaged_in(fd, start, stop)
            answer = orjson.dumps([mark, n, *(off for off, _raw in bad)])
            view = memoryview(answer)
            while view:
                view = view[os.write(w, view):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)

    def collect() -> tuple[list[int], int, int] | None:
        parts = []
        try:
            while chunk := os.read(r, 1 << 16):
                parts.append(chunk)
        finally:
            os.close(r)
        _, status = os.waitpid(pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        try:
            got = orjson.loads(b"".join(parts))
        except orjson.JSONDecodeError:
            return None
        if not (isinstance(got, list) and len(got) >= 2 and all(type(o) is int for o in got)):
            return None
        return got[2:], got[0], got[1]

    return collect


def _damaged_in(fd: int, start: int, stop: int) -> tuple[list[tuple[int, bytes]], int, int]:
    """``_damaged_lines`` of ``[start, stop)`` (a line start, a line end), in this process."""
    bad: list[tuple[int, bytes]] = []
    mark = n_lines = 0
    for off, data, size in lines.iter_spans(fd, start, stop):
        at = data.rfind(RUN_MARK, 0, size)
        if at >= 0:
            mark = off + data.find(b"\n", at) + 1
        raws = data[:size - 1].split(b"\n")
        n_lines += len(raws)
        if decode_all(raws) is not None:
            continue
        here = off
        for raw in raws:
            try:
                decode_event(raw)
            except ValueError:
                bad.append((here, raw))
            here += len(raw) + 1
    return bad, mark, n_lines


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def _keep_damaged(log: Log, bad: list[tuple[int, bytes]], dfd: int) -> Path:
    """Write the damaged lines beside the log (durably, by name in its folder ``dfd``) before
    the part holding them is dropped."""
    keep = log.path.with_name(f"{log.path.name}.damaged-{bad[0][0]}-{time.time_ns()}")
    try:
        like: os.stat_result | None = os.stat(log.path.name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        like = None
    write_new(keep, b"".join(raw + b"\n" for _off, raw in bad), durable=True, like=like, dir_fd=dfd)
    return keep


# ---------------------------------------------------------------------------
# the sweep's intent: its drops are audited even when it is killed before it says so
# ---------------------------------------------------------------------------
INTENT_NAME = "compact-intent.jsonl"
# A line per batch, 60 bytes and the log's id per log cut: 250,000 logs of the longest ids in one
# sweep. A sweep whose intent would grow past it cuts no more logs (they fail, named, and the next
# sweep takes them): an intent its own sweep wrote is never one the next refuses as too big.
MAX_INTENT_BYTES = 64 << 20
_SWEEP_ID = re.compile(r"[0-9a-f]{32}")
COMPACTED_TYPE = "wardrik.ledger.compacted"


def intent_path(root: Root) -> Path:
    return root.tool_dir / INTENT_NAME


class _Intent:
    """The durable record of what a running sweep drops (see "The sweep's intent" above).

    ``before_renames`` is the batch's hook (``replace.Batch``): the first time, it creates
    the file with its header (the sweep's id, actor, retention, size bound, start time and
    the audit log's last sequence then) and fsyncs ``.wardrik/``; every time, it appends one
    line naming the batch's logs that lose events (how many, and the sequence each starts at
    once replaced), and returns the file for the batch's sync."""

    def __init__(self, root: Root, retention: str, max_bytes: int | None, actor: str):
        self.root, self.path = root, intent_path(root)
        self.sweep, self.actor = os.urandom(16).hex(), actor
        self.header = {"sweep": self.sweep, "actor": actor, "retention": retention, "max_bytes": max_bytes}
        self.written = False
        self.size = 0  # bytes written to the intent
        self.cut: list[Staged] = []  # the logs named in the lines written (their ``error`` set by the commit)

    def before_renames(self, staged: list[Staged]) -> list[Path]:
        cut = [s for s in staged if s.dropped > 0]
        if not cut:
            return []
        line = orjson.dumps({"logs": [{"log": s.log.name, "audit": s.log.is_audit, "dropped": s.dropped,
                                       "next": s.next_seq} for s in cut]}) + b"\n"
        if not self.written:
            head = {**self.header, "started": format_dt(datetime.now(UTC)), "audit_mark": _audit_mark(self.root)}
            line = orjson.dumps(head) + b"\n" + line
        if self.size + len(line) > MAX_INTENT_BYTES:
            raise Failure(f"this sweep's record {self.path} would pass {MAX_INTENT_BYTES >> 20} MiB; "
                          "the next compact sweeps this log")
        if not self.written:
            self.root.state_dir(self.path)  # .wardrik/ is no link: NotRegular names it, the batch fails
            write_new(self.path, line)
            fsync_dir(self.path.parent)  # the name durable now; its bytes with the batch (step 3)
            self.written = True
        else:
            fd = open_regular(self.path, os.O_WRONLY | os.O_APPEND, what="sweep record")
            try:
                write_all(fd, line)
            finally:
                os.close(fd)
        self.size += len(line)
        self.cut += cut
        return [self.path]

    def remove(self, warn: Callable[[str], None]) -> None:
        """Once the sweep's ledger.compacted is durable: the record goes (a crash before the
        removal lands is harmless: recovery finds the event by the sweep's id)."""
        if self.written:
            _remove_intent(self.path, warn)


def _audit_mark(root: Root) -> int:
    """The audit log's last sequence (0 when there is none, or it cannot be read): every
    event recorded after this instant comes after it."""
    try:
        with Log.audit(root).open() as view:
            view.lenient = True
            return view.last_seq()
    except (WardrikError, OSError, ValueError, KeyError):
        return 0


def _remove_intent(path: Path, warn: Callable[[str], None]) -> None:
    try:
        os.unlink(path)
        fsync_dir(path.parent)
    except FileNotFoundError:
        pass
    except OSError as e:  # left, it is read again by the next compact, which finds its drops recorded
        warn(f"could not remove {path} ({e.strerror}); the next compact looks at it again")


class _DamagedIntent(Exception):
    pass


def _parse_intent(raw: bytes) -> tuple[dict[str, Any], list[tuple[str, bool, int, int]]] | None:
    """(header, [(log, is audit, dropped, next sequence)]) of an intent's complete lines;
    None when it has none (its sweep was killed before its first batch's sync: nothing of it
    was renamed). A last line without its newline is such a line too (each is written whole
    before the batch's sync, so an unfinished one was never synced, nor followed by a
    rename), and is passed over. ``_DamagedIntent`` says what is wrong otherwise."""
    from wardrik_cli.store.audit import validate_principal
    from wardrik_cli.protocol.names import validate_log_id

    parts = raw.split(b"\n")[:-1]  # complete lines only
    if not parts:
        return None
    try:
        head = orjson.loads(parts[0])
        if not isinstance(head, dict):
            raise _DamagedIntent("its first line is not a JSON object")
        if not (isinstance(head.get("sweep"), str) and _SWEEP_ID.fullmatch(head["sweep"])):
            raise _DamagedIntent("its sweep id is missing or malformed")
        validate_principal(head.get("actor"), "actor")
        for key in ("retention", "started"):
            if not (isinstance(head.get(key), str) and 0 < len(head[key]) <= 64):
                raise _DamagedIntent(f"its {key} is missing or malformed")
        mb, mark = head.get("max_bytes"), head.get("audit_mark")
        if not (mb is None or (type(mb) is int and 0 < mb <= MAX_SIZE)):
            raise _DamagedIntent("its max_bytes is malformed")
        if not (type(mark) is int and mark >= 0):
            raise _DamagedIntent("its audit_mark is missing or malformed")
        entries: list[tuple[str, bool, int, int]] = []
        for n, part in enumerate(parts[1:], 2):
            line = orjson.loads(part)
            logs = line.get("logs") if isinstance(line, dict) else None
            if not isinstance(logs, list):
                raise _DamagedIntent(f"line {n} is not a batch of logs")
            for e in logs:
                if not (isinstance(e, dict) and isinstance(e.get("log"), str) and type(e.get("audit")) is bool
                        and type(e.get("dropped")) is int and type(e.get("next")) is int
                        and 0 < e["dropped"] <= e["next"]):
                    raise _DamagedIntent(f"line {n} names a log malformed")
                if not e["audit"]:
                    validate_log_id(e["log"])
                entries.append((e["log"], e["audit"], e["dropped"], e["next"]))
    except orjson.JSONDecodeError:
        raise _DamagedIntent("a line is not JSON") from None
    except WardrikError as e:  # a bad principal or log id
        raise _DamagedIntent(str(e)) from None
    return head, entries


def _landed(root: Root, name: str, is_audit: bool, next_seq: int) -> bool | str:
    """Did this log's planned cut land? It did when the log now starts at ``next_seq`` or
    later: its first event (lines that are not events passed over), or, for a log the cut
    emptied, the next sequence its record gives (a record that describes this very file).
    Before the rename, the old file starts before ``next_seq`` (the cut dropped events).
    A string says why the log could not be looked at."""
    try:
        log = Log.audit(root) if is_audit else Log.agent(root, name)
        with log.open() as view:
            if view.fd is None:
                return "it is gone"
            view.lenient = True
            first = view.first()
            if first is not None:
                return int(first[1]["sequence"]) >= next_seq
            wm = view.watermark()
            return wm is not None and wm.next_sequence >= next_seq
    except (WardrikError, OSError, ValueError, KeyError) as e:
        return str(e) if isinstance(e, WardrikError) else getattr(e, "strerror", None) or str(e)


def _recorded(root: Root, sweep: str, mark: int) -> set[str]:
    """The logs a ``ledger.compacted`` of sweep ``sweep`` already names: the audit events
    after sequence ``mark`` are read, last first (lines that are not events passed over)."""
    names: set[str] = set()
    try:
        with Log.audit(root).open() as view:
            if view.fd is None:
                return names
            for _off, raw in lines.iter_lines_backward(view.fd, view.end):
                try:
                    ev = decode_event(raw)
                    seq = int(ev["sequence"])
                except (ValueError, KeyError):
                    continue
                if seq <= mark:
                    break
                data = ev.get("data")
                if ev.get("type") == COMPACTED_TYPE and isinstance(data, dict) and data.get("sweep") == sweep \
                        and isinstance(data.get("logs"), dict):
                    names.update(data["logs"])
    except OSError as e:
        raise Failure(f"cannot read the audit log to recover an earlier sweep's record: {e.strerror}") from None
    return names


def recover_intent(root: Root, warn: Callable[[str], None] = lambda m: None,
                   notice: Callable[[str], None] | None = None, deployment: str | None = None) -> None:
    """Settle the record a sweep killed before it recorded its drops left (call only under
    the compaction lock, before a sweep): ``ledger.compacted`` for the drops of it that landed
    and are not recorded yet, then the record goes. A record that cannot be read (not a
    regular file, a link, over ``MAX_INTENT_BYTES``, not what a sweep writes) is ``Failure``
    and stays: its drops may be missing from the audit log, which a person must look at.
    What was recovered is said to ``notice`` (default: ``warn``)."""
    from wardrik_cli.store.audit import record_audit

    notice = notice or warn

    path = intent_path(root)
    try:
        raw = read_capped(path, MAX_INTENT_BYTES, what="sweep record")
        parsed = _parse_intent(raw)
    except FileNotFoundError:
        return
    except (OSError, WardrikError, _DamagedIntent) as e:
        why = e.strerror or str(e) if isinstance(e, OSError) else str(e)
        if isinstance(e, _DamagedIntent):
            why = f"{path}: not a sweep record: {why}"
        raise Failure(f"cannot read the record of an earlier compact that did not finish ({why}); its drops "
                      f"may be missing from the audit log. Nothing was swept: look at it (and at `wardrik audit "
                      f"page -t ledger.compacted`), move it out of {root.tool_dir}, then run compact again") from None
    if parsed is None:
        _remove_intent(path, warn)
        notice(f"removed {path}, left by a compaction that was stopped before it dropped anything")
        return
    head, entries = parsed
    landed: dict[str, int] = {}
    unknown: list[str] = []
    for name, is_audit, dropped, next_seq in entries:
        got = _landed(root, name, is_audit, next_seq)
        if got is True:
            key = logs_key(name, is_audit)
            landed[key] = landed.get(key, 0) + dropped
        elif got is not False:
            unknown.append(f"{name} ({got})")
    todo = landed
    if landed:
        done = _recorded(root, head["sweep"], head["audit_mark"])
        todo = {k: v for k, v in landed.items() if k not in done}
    what = f"the record of a compaction started {head['started']} that did not finish ({path})"
    if todo:
        data: dict[str, Any] = {"logs": todo, "retention": head["retention"], "max_bytes": head["max_bytes"],
                                "sweep": head["sweep"], "started": head["started"], "recovered": True}
        try:
            record_audit(root, "ledger.compacted", "ledger", data, head["actor"], deployment=deployment, warn=warn,
                         by_sweep=True)
        except (WardrikError, OSError) as e:
            raise Failure(f"found {what}: {sum(todo.values())} event(s) it dropped are not in the audit log, and "
                          f"recording them failed: {e}; nothing was swept") from None
    _remove_intent(path, warn)
    if todo:
        said = f"recorded ledger.compacted for the {sum(todo.values())} event(s) it dropped from {len(todo)} log(s)"
    elif landed:
        said = "its drops were in the audit log already"
    else:
        said = "none of its drops had landed; nothing to record"
    if unknown:
        said += f"; could not look at {', '.join(unknown)}: not recorded"
    (warn if unknown else notice)(f"recovered {what}: {said}")  # a cut that may be unrecorded: always said


# ---------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------
AUDIT_LOGS_KEY = ".wardrik/audit"  # no log id starts with a dot: an agent log named "audit" keeps its own


def logs_key(name: str, is_audit: bool) -> str:
    """A log's key in ``ledger.compacted``'s ``data.logs``: an agent log's id; the audit log's
    path under the root, which no agent log's id can be."""
    return AUDIT_LOGS_KEY if is_audit else name


def _record_sweep(root: Root, result: SweepResult, actor: str, warn: Callable[[str], None], sweep: str,
                  deployment: str | None = None) -> None:
    from wardrik_cli.store.audit import record_audit

    data: dict[str, Any] = {"logs": {logs_key(r.log, r.audit): r.dropped for r in result.logs if r.dropped},
                            "retention": result.retention, "max_bytes": result.max_bytes, "sweep": sweep}
    try:
        record_audit(root, "ledger.compacted", "ledger", data, actor, deployment=deployment, warn=warn,
                     by_sweep=True)
    except (WardrikError, OSError) as e:
        raise Failure(f"the sweep dropped {result.dropped} event(s) but could not record ledger.compacted "
                      f"in the audit log: {e}; its record {intent_path(root)} stays, and the next compact "
                      "records them") from None


FUTURE_SLACK = timedelta(days=1)  # an event stamped this far past now is in the future (no clock skew is a day)


def _audit_usable(root: Root) -> None:
    """Refuse a drop (``Failure``: that log is not swept) when the audit log could not take the
    sweep's ``ledger.compacted``: its lock file cannot be had (a folder, a FIFO, a link there)
    or the log cannot be opened to append, or holds a line the append would refuse to write
    after (a line that is not an event: ``append._verify_lines``, which reads only what its last
    append did not verify). Before, the sweep dropped events first and found out after. (The
    lock is not taken: one held now is waited for when the record is written.)"""
    from wardrik_cli.store.append import _verify_lines

    audit = Log.audit(root)
    try:
        check_lockable(audit.lock_path, "the audit log")
        if os.path.lexists(audit.path):
            fd = open_regular(audit.path, os.O_WRONLY | os.O_APPEND)
            try:
                refuse_linked(fd, audit.path, "audit log")  # as the record's append will
            finally:
                os.close(fd)
            with audit.open() as view:
                if view.fd is not None:
                    _verify_lines(audit, view)
    except (WardrikError, OSError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise Failure(f"cannot record ledger.compacted in the audit log ({why}); not compacted") from None


def default_actor() -> str:
    """``user@host`` of this process, as a principal (other characters become ``_``)."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no name for this uid: the uid itself
        user = f"uid{os.getuid()}"
    text = f"{user}@{socket.gethostname() or 'localhost'}"
    return re.sub(r"[^A-Za-z0-9._:@/+-]", "_", text)[:200]


def logs_of(root: Root) -> list[Log]:
    logs = [Log.agent(root, i) for i in sorted(root.iter_log_ids())]
    audit = Log.audit(root)
    if audit.exists():
        logs.append(audit)
    return logs


def compact(root: Root, retention: str, *, dry_run: bool = False, wait: bool = False,
          max_bytes: int | None = None, actor: str | None = None, max_ship_lag: str | None = None,
          now: datetime | None = None, warn: Callable[[str], None] = lambda m: None,
          on_start: Callable[[list[Log]], None] | None = None,
          on_log: Callable[[LogResult], None] | None = None,
          tidy: Callable[[Root], object] | None = None,
          notice: Callable[[str], None] | None = None, deployment: str | None = None,
          skip_corrupt: bool = False) -> SweepResult:
    """Compact every log under ``root``; a log that fails is recorded and the others still swept.

    ``tidy(root)`` runs after a real sweep, still under the compaction lock (the command line
    passes ``follow.live.cleanup_stale``: the registrations of followers that are gone).
    ``max_bytes`` bounds each agent's log after the time rule; the audit log is bounded by
    time only (its chain must stay verifiable from what is kept). A sweep that drops anything
    records one ``ledger.compacted`` in the audit log (``data.logs``: {log: dropped}) by
    ``actor`` (default: the process's ``user@host``), so "who pruned what, when" has an answer;
    the record a killed sweep left is settled first (``recover_intent``), and what is said of
    it goes to ``notice`` (default: ``warn``): it is no failure, so a quiet caller may drop it."""
    root.require()
    delta = parse_duration(retention)
    try:
        cutoff = format_dt((now or datetime.now(UTC)) - delta)
    except OverflowError:
        cutoff = format_dt(datetime.min)  # a retention longer than history keeps everything
    lag_cutoff: str | None = None
    if max_ship_lag is not None:
        try:
            lag_cutoff = format_dt((now or datetime.now(UTC)) - parse_duration(max_ship_lag))
        except OverflowError:
            lag_cutoff = format_dt(datetime.min)  # a lag longer than history lets nothing go
    try:
        future: str | None = format_dt((now or datetime.now(UTC)) + FUTURE_SLACK)
    except OverflowError:
        future = None
    result = SweepResult(cutoff, retention, dry_run, max_bytes=max_bytes, max_ship_lag=max_ship_lag)
    if not dry_run:
        why = root.read_only()
        if why:
            raise ReadOnlyRoot(f"cannot compact {root.path}: {why}; nothing was changed "
                               "(--dry-run reports what a sweep would drop)")
    lock_fd: int | None = None
    if not dry_run:
        lock_path = root.state_path("locks", COMPACT_LOCK_KEY, ".lock")
        try:
            lock_fd = try_lock(lock_path)
        except OSError as e:
            raise Failure(f"cannot take the compaction lock {lock_path}: {e.strerror}") from None
        if lock_fd is None:
            if not wait:
                result.skipped = "another compact is running on this root; skipped (use --wait to wait for it)"
                return result
            import time
            while lock_fd is None:
                time.sleep(0.05)
                lock_fd = try_lock(lock_path)
    from wardrik_cli.settings import Settings

    try:
        if not dry_run:
            for p in clean_stale(root):
                (notice or warn)(f"removed {p}, left by a compaction that did not finish")  # tidied: no failure
            # before this sweep changes any log's start: what an earlier one dropped is told apart
            recover_intent(root, warn, notice or warn, deployment)
        logs = logs_of(root)
        # Read once, at the start: a position can only grow meanwhile (holding back more than
        # needed), and a target registered after this point counts from the next sweep.
        slots = load_slots(root)
        if on_start:
            on_start(logs)
        lock_timeout = Settings.from_env().lock_timeout  # read once, not once per log
        checked: list[Failure | None] = []

        def audit_usable() -> None:
            """Before the sweep's first drop: its ledger.compacted must be possible (asked once;
            a refusal refuses every drop of the sweep)."""
            if not checked:
                try:
                    _audit_usable(root)
                    checked.append(None)
                except Failure as e:
                    checked.append(e)
            if checked[0] is not None:
                raise Failure(str(checked[0]))
        intent = _Intent(root, retention, max_bytes, actor or default_actor()) if not dry_run else None
        batch = Batch(intent.before_renames if intent is not None else None)
        waiting: list[LogResult] = []  # results whose figures the batch's commit settles

        def commit() -> None:
            batch.commit()
            for r in waiting:
                r.settle()
                if on_log:
                    on_log(r)
            waiting.clear()

        held = HeldFolder()
        try:
            for log in logs:
                try:
                    # a torn tail cut (its bytes kept beside) is tidying, no failure: ``notice``
                    r = compact_log(log, cutoff, dry_run=dry_run, warn=notice or warn, lock_timeout=lock_timeout,
                                    max_bytes=None if log.is_audit else max_bytes, batch=batch,
                                    slots=slots, lag_cutoff=lag_cutoff, skip_corrupt=skip_corrupt, future=future,
                                    before_drop=audit_usable, folder=held)
                except (WardrikError, OSError) as e:
                    name = getattr(e, "filename", None)
                    if name and "/" not in str(name):  # a file beside the log, made or opened by name in its folder
                        name = log.path.parent / str(name)
                    r = LogResult(log.name, log.is_audit, error=str(e) if isinstance(e, WardrikError) else
                                  f"{e.strerror or e}{': ' + str(name) if name else ''}")
                    try:
                        r.bytes_before = r.bytes_after = log.path.stat().st_size
                    except OSError:
                        pass
                    r.kept = _events_held(log)  # not swept: the log keeps all it holds
                result.logs.append(r)
                waiting.append(r)
                if batch.full():
                    commit()
            commit()
        finally:
            held.close()
            batch.abandon()  # only if something unexpected stopped the sweep: temps go, locks are released
        if intent is not None and result.dropped:
            _record_sweep(root, result, intent.actor, warn, intent.sweep, deployment)
        if intent is not None:
            if any(s.error for s in intent.cut):
                # a log named in the record failed after it was written: whether its cut landed is
                # told from the disk by the next sweep's recovery (what is recorded is not recorded twice)
                warn(f"kept {intent.path} for the next compact: a log it names failed while it was replaced")
            else:
                intent.remove(warn)
        if not dry_run and tidy is not None:
            try:
                tidy(root)
            except Exception as e:  # follower state is best effort: never fail a sweep for it
                warn(f"could not clean stale follower state: {e}")
        return result
    finally:
        if lock_fd is not None:
            os.close(lock_fd)
