"""Folding a log into a view: oldest first, streaming, from a checkpoint when one is valid.

Contract kept here:
- What is folded: a log id under the root, or a path ending in ``.jsonl`` anywhere (an
  evidence copy). A path that is a log under the root is that log; any other path is read
  as it is and never gets a checkpoint.
- Formats: this tool's CloudEvents lines, or seed 000's ``{"seq", "type", "data"}`` lines.
  The first complete line decides; a line of the other format later on is refused
  (``CorruptLedger`` naming its line and byte offset). A path whose first line is neither is
  not a ledger (``BadInput``).
- A fold is always the fold of the events the file holds now; ``--at SEQ`` stops after that
  sequence (found by bisection). A checkpoint is used only when ``checkpoint.load`` finds it
  valid and it is not past ``--at``; the state is saved again when the fold got further,
  unless a corrupt line was skipped (a checkpoint must equal the full fold).
- Streaming: lines are read in 1 MB chunks and dropped as they go; memory is the view's state.
- Lines the view does not read (its ``types``) are not decoded: the scan (``read.scan``, the
  loop the reader and the follower use too) passes over lines of other types in this tool's
  own shape by a byte look, whole blocks at a time; a line not in that shape is decoded and
  judged like any other; ``wardrik check`` parses every line.
- A view that raises (in ``initial``, ``apply`` or ``finish``) is ``ViewFailed`` naming the
  view, the log and the event's sequence; so is a state ``result_json`` cannot write. A state
  holding values nested deeper than JSON is written (a line written by hand) is written cut
  at ``STATE_DEPTH`` levels (``clip_state``, ``folding.deep``), never refused.
- A valid checkpoint is never replaced by one at a lower sequence (``--at`` after a full fold).
- A selection (``since``, ``select``; the command line's ``--since`` and ``--run``) folds only
  the events it keeps: ``since`` (a stored time) keeps events at or after it, and the fold
  seeks to it (``LogView.offset_at_time``, which falls back to the start of a log whose times
  are not sorted) instead of reading from the start; ``select(event) -> bool`` keeps the
  events it accepts. Each event the view reads is checked against both, so an unsorted log
  still gives the exact answer. A selected fold neither reads nor saves a checkpoint (a
  checkpoint is the fold of the whole log). ``through`` keeps its meaning: the last sequence
  of the log the fold covers (read, or passed over by the seek), so ``--at`` still stops after
  that sequence; corrupt lines before the seek point are not met. Without a selection nothing
  of this runs: the hot loop is the same.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable

import orjson

from wardrik_cli.folding import checkpoint
from wardrik_cli.store import lines
from wardrik_cli.errors import BadInput, CorruptLedger, NoSuchLog
from wardrik_cli.protocol.names import LOG_SUFFIX, validate_log_id
from wardrik_cli.store.layout import Root, log_id_from_path
from wardrik_cli.store.log import Log, LogView, Watermark, decode_event, head_envelope
from wardrik_cli.read.reader import repeat_reporter
from wardrik_cli.read.scan import Line, OnGap, OnRepeat, scan
from wardrik_cli.folding.views import ViewFailed, load as load_view, name_of, types_of, version_of

OnCorrupt = Callable[[CorruptLedger], None] | None
Select = Callable[[dict[str, Any]], bool] | None
WARDRIK, SEED = "wardrik", "seed-000"
_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")



class _FileLog(Log):
    """A .jsonl file outside any root: no watermark, no lock, no checkpoint."""

    def __init__(self, path: Path):
        super().__init__(Root(path.parent), str(path), path, "")

    def read_watermark(self) -> Watermark | None:
        return None


@dataclass
class Target:
    label: str  # what "log" says in the output: the log id, or the path as given
    log: Log
    checkpoints: bool


@dataclass
class FoldResult:
    log: str
    view: str
    through: int
    state: Any
    format: str = WARDRIK
    from_checkpoint: int | None = None  # the sequence the fold resumed after, if any
    saved: bool = False
    events_read: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "view": self.view, "through": self.through, "state": self.state}


def target(root: Root, arg: str) -> Target:
    """A log id, or a path ending in .jsonl (anywhere). A root that does not exist is an
    error either way, as for every reader (the contract's rule; a file folds beside any root)."""
    root.require()
    if arg.endswith(LOG_SUFFIX):
        p = Path(arg)
        if not p.exists():
            raise BadInput(f"no file {arg!r}")
        if not p.is_file():
            raise BadInput(f"{arg!r} is not a file")
        if root.path.is_dir():
            log_id = log_id_from_path(Root(os.path.realpath(root.path)), Path(os.path.realpath(p)))
            if log_id is not None:
                return Target(arg, Log.agent(root, log_id), True)
        return Target(arg, _FileLog(p), False)
    validate_log_id(arg)
    log = Log.agent(root, arg)
    if not log.exists():
        raise NoSuchLog(f"no log {arg!r} under {root.path}")
    return Target(arg, log, True)


def decode_seed(raw: bytes) -> dict[str, Any] | None:
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if (isinstance(d, dict) and type(d.get("seq")) is int and isinstance(d.get("type"), str)
            and isinstance(d.get("data"), dict) and "specversion" not in d and "sequence" not in d):
        return d
    return None


def fold_target(tgt: Target, view: Any, spec: str, *, at: int | None = None, on_corrupt: OnCorrupt = None,
                use_checkpoints: bool = True, save_checkpoints: bool = True, since: str | None = None,
                select: Select = None, warn: Callable[[str], None] | None = None) -> FoldResult:
    """Fold ``tgt`` with ``view`` (through ``at`` when given).

    ``since`` (a stored time, fixed-width RFC 3339 UTC such as ``2026-10-22T09:00:00.000000Z``)
    folds only the events at or after it, read from where the log reaches it; ``select``
    (``event -> bool``) folds only the events it accepts. A line repeated or out of order in
    sequence is passed over, and ``warn`` told (``read.reader.repeat_reporter``). With either, no checkpoint is read
    or saved, and ``through`` is still the last sequence of the log the fold covers. On seed
    000's lines (which have no time) ``select`` applies and ``since`` is refused (``BadInput``).
    """
    if at is not None and at < 0:
        raise BadInput(f"--at {at}: a sequence is a whole number, 0 or more")
    if since is not None and (not isinstance(since, str) or _STORED_TIME.fullmatch(since) is None):
        raise BadInput(f"since {since!r}: expected a stored time such as 2026-10-22T09:00:00.000000Z")
    selected = since is not None or select is not None
    vname = name_of(view, spec)
    with tgt.log.open() as lv:
        if lv.fd is None:
            raise NoSuchLog(f"no log {tgt.label!r} (it was removed)")
        fmt = _format(tgt, lv)
        if fmt == SEED:
            if since is not None:
                raise BadInput(f"{tgt.label} holds seed-000 {{\"seq\", \"type\", \"data\"}} lines, which have no "
                               f"time: --since cannot select among them")
            return _fold_seed(tgt, lv, view, vname, at, on_corrupt, select)
        if at is not None:
            _check_at(tgt, lv, at, on_corrupt)
        version = version_of(view, spec)
        ck = valid = None
        if use_checkpoints and tgt.checkpoints and not selected:
            ck = valid = checkpoint.load(tgt.log, lv, vname, version)
            if ck is not None and at is not None and ck.seq > at:
                ck = None  # past --at: not usable here, but kept (see the save below)
        if ck is not None:
            state, through, start = ck.state, ck.seq, ck.offset
        else:
            state, through, start = _initial(view, vname, tgt), 0, 0
        if since is not None:
            through, start = _seek(lv, since, at)
        end = lv.end
        if at is not None:
            # Bisection bounds the read; it answers 0 when a corrupt line is in its way, and
            # then the scan stops by sequence instead (and meets the corrupt line).
            bound = lv.offset_after_seq(at)
            if bound > start:
                end = bound
        scan = Scan(tgt, lv, view, vname, on_corrupt, keep=_keep(since, select) if selected else None,
                    on_repeat=repeat_reporter(tgt.label, warn), on_gap=_gap_teller(tgt, warn),
                    exact=ck is not None and since is None,
                    from_missing_start=ck is None and since is None and _missing_start(lv))
        state, through = scan.run(state, through, start, end, at)
        res = FoldResult(tgt.label, vname, through, state, WARDRIK, ck.seq if ck else None,
                         events_read=scan.events)
        # Never replace a valid checkpoint by one at a lower sequence (a fold --at after a full
        # fold): the next full fold would have more to read.
        # Nor save one past a gap: the next fold reads it again, and says so again.
        if (save_checkpoints and tgt.checkpoints and not selected and scan.skipped == 0 and scan.gaps == 0
                and scan.last_raw is not None and through > (valid.seq if valid else 0)):
            state_json = _state_json(state)
            if state_json is not None:
                res.saved = checkpoint.save(tgt.log, lv, vname, version, through, scan.last_end, scan.last_raw,
                                            state_json)
        res.state = _finish(view, vname, tgt, state, through)
        return res


def _missing_start(lv: LogView) -> bool:
    from wardrik_cli.read.reader import missing_start

    return lv.fd is not None and missing_start(lv)


def _gap_teller(tgt: Target, warn: Callable[[str], None] | None) -> OnGap | None:
    """A warning for a hole in the log's sequence met by the fold (a line deleted by hand)."""
    if warn is None:
        return None
    from wardrik_cli.read.reader import gap_reporter

    return gap_reporter(tgt.log, warn)


def _seek(lv: LogView, since: str, at: int | None) -> tuple[int, int]:
    """(through, offset): where a fold ``since`` starts, and the sequence of the line before it.

    Never past ``at``'s bound (the lines through ``at`` that are before ``since`` are passed
    over, the fold is through them); 0 when the log's times are not sorted, when the line
    before cannot be read, or when nothing comes before: the scan then reads from the start
    and the per-event check of ``since`` keeps the answer exact."""
    fd = lv.fd
    assert fd is not None  # an open view
    start = lv.offset_at_time(since)
    if at is not None and start > 0:
        start = min(start, lv.offset_after_seq(at))  # 0: at before the first event, or a corrupt line
    if start <= 0:
        return 0, 0
    prev = lines.last_line(fd, start)
    if prev is None:
        return 0, 0
    try:
        return int(decode_event(prev[1])["sequence"]), start
    except ValueError:
        return 0, 0


def _keep(since: str | None, select: Select) -> Callable[[dict[str, Any]], bool]:
    """One predicate for the selection: at or after ``since``, and accepted by ``select``."""
    if since is None:
        assert select is not None  # only called for a selection
        return select
    t: str = since
    if select is None:
        return lambda e: bool(e["time"] >= t)
    sel = select
    return lambda e: bool(e["time"] >= t) and bool(sel(e))


class _SelectFailed(Exception):
    """The caller's ``select`` raised: its own error is passed on, not made a ViewFailed."""

    def __init__(self, error: Exception):
        super().__init__(error)
        self.error = error


def _only(apply: Callable[[Any, dict[str, Any]], Any],
          keep: Callable[[dict[str, Any]], bool]) -> Callable[[Any, dict[str, Any]], Any]:
    """``apply`` for the events ``keep`` accepts; any other leaves the state as it is."""
    def apply_kept(state: Any, event: dict[str, Any]) -> Any:
        try:
            kept = keep(event)
        except Exception as e:
            raise _SelectFailed(e) from e
        return apply(state, event) if kept else state
    return apply_kept


def _state_json(state: Any) -> bytes | None:
    """The state as JSON, only if it comes back equal (else resuming from it could differ)."""
    try:
        b = orjson.dumps(state)
    except (TypeError, orjson.JSONEncodeError):
        return None
    try:
        return b if orjson.loads(b) == state else None
    except orjson.JSONDecodeError:
        return None


def _initial(view: Any, vname: str, tgt: Target) -> Any:
    try:
        return view.initial()
    except Exception as e:
        raise ViewFailed(f"view {vname!r} failed in initial() (before sequence 1 of {tgt.label}): "
                         f"{type(e).__name__}: {e}") from None


# The deepest a state's objects and arrays can go in fold's JSON: orjson writes 254 levels,
# and the document's own object is one. Data append accepts (128 levels) is never cut so.
STATE_DEPTH = 253


def clip_state(res: FoldResult) -> bool:
    """Cut what is nested too deep to write in ``res.state`` (``deep.clip`` at ``STATE_DEPTH``:
    each object or array past it is the string ``deep.TOO_DEEP``); True when something was cut
    (a line written by hand: the stored events keep every level)."""
    from wardrik_cli.folding.deep import clip, too_deep

    if not too_deep(res.state, STATE_DEPTH):
        return False
    res.state = clip(res.state, STATE_DEPTH)
    return True


def result_json(res: FoldResult, *, indent: bool = False) -> bytes:
    """``{"log", "view", "through", "state"}`` as JSON; sets and tuples become lists, other
    objects their repr. Objects and arrays nested deeper than JSON can be written are cut
    (``clip_state``). A state JSON cannot hold otherwise (a key that is not a string) is
    ``ViewFailed`` naming the view; an integer past 64 bits is written whole."""
    clip_state(res)
    try:
        try:
            return orjson.dumps(res.to_json(), default=_jsonable, option=orjson.OPT_INDENT_2 if indent else 0)
        except TypeError as e:
            if "64-bit" not in str(e):
                raise
            # a sum past 64 bits of counts each valid (the usage view's tokens): JSON holds any
            # integer, the standard library writes it (in the same layout)
            import json

            return json.dumps(res.to_json(), default=_jsonable, ensure_ascii=False, indent=2 if indent else None,
                              separators=None if indent else (",", ":")).encode()
    except (TypeError, ValueError, orjson.JSONEncodeError) as e:
        raise ViewFailed(f"view {res.view!r}: its state through sequence {res.through} of {res.log} cannot be "
                         f"written as JSON ({e}); use --format pretty, or keep the state to JSON types "
                         f"(string keys)") from None


def state_json(state: Any) -> bytes | None:
    """A state as ``result_json`` writes it (indented; sets and tuples as lists, other objects
    their repr), or None when JSON cannot hold it: what pretty output shows of a view with no
    renderer of its own, so that it agrees with ``-o json``."""
    try:
        return orjson.dumps(state, default=_jsonable, option=orjson.OPT_INDENT_2)
    except (TypeError, orjson.JSONEncodeError):
        return None


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def _finish(view: Any, vname: str, tgt: Target, state: Any, through: int) -> Any:
    fin = getattr(view, "finish", None)
    if fin is None:
        return state
    try:
        return fin(state, through)
    except Exception as e:
        raise ViewFailed(f"view {vname!r} failed in finish() after sequence {through} of {tgt.label}: "
                         f"{type(e).__name__}: {e}") from None


LONG_FIRST = 1 << 18  # a first line longer than this is told by its head (the scan decodes it anyway)


def _format(tgt: Target, lv: LogView) -> str:
    fd = lv.fd
    assert fd is not None  # an open view
    got = lines.read_line_at(fd, 0, lv.end, longest=LONG_FIRST)
    if isinstance(got, tuple) and isinstance(got[1], lines.Head) and head_envelope(fd, 0, got[1]) is not None:
        return WARDRIK  # a long first line in this tool's shape: not read whole to tell the format
    first = lines.first_line(fd, lv.end)
    if first is None:
        if isinstance(tgt.log, _FileLog) and lv.size > 0 and os.pread(fd, 1, 0) != b"{":
            raise BadInput(f"{tgt.label} is not a ledger: it holds no line of events")
        return WARDRIK
    try:
        decode_event(first[1])
        return WARDRIK
    except ValueError as e:
        if decode_seed(first[1]) is not None:
            return SEED
        if isinstance(tgt.log, _FileLog):
            raise BadInput(f"{tgt.label} is not a ledger: line 1 is neither a wardrik event nor a seed-000 "
                           f'{{"seq", "type", "data"}} event ({e})') from None
        return WARDRIK  # a log under the root: its corrupt first line is reported by the scan


def _check_at(tgt: Target, lv: LogView, at: int, on_corrupt: OnCorrupt) -> None:
    try:
        last = lv.last_seq()
        first = lv.first_seq()
    except CorruptLedger:
        if on_corrupt is not None:
            return
        raise
    if at > last:
        raise BadInput(f"--at {at} is past the end of {tgt.label} (its last sequence is {last})")
    # Through first - 1 too: those events are gone, so is their state. Through 0 is the state
    # before any event (as a fold of a log compaction emptied says: through 0), always known.
    if first > 1 and 0 < at < first:
        raise BadInput(f"--at {at} is before the first event {tgt.label} holds ({first}): "
                       f"the events through {first - 1} were dropped by compaction")


class Scan:
    """The hot loop: decode only what the view reads, apply it, remember where it ended."""

    def __init__(self, tgt: Target, lv: LogView, view: Any, vname: str, on_corrupt: OnCorrupt,
                 keep: Callable[[dict[str, Any]], bool] | None = None, on_repeat: OnRepeat | None = None,
                 on_gap: OnGap | None = None, exact: bool = False, from_missing_start: bool = False):
        self.tgt, self.lv, self.view, self.vname, self.on_corrupt = tgt, lv, view, vname, on_corrupt
        # read from the start of a log that starts after sequence 1 with no compaction record:
        # its missing first events are a gap, told as any other
        self.from_missing_start = from_missing_start
        self.on_repeat = on_repeat
        self.gaps = 0  # sequence gaps met (a damaged log): told, and no checkpoint is saved past one
        self._on_gap, self.exact = on_gap, exact
        self.keep = keep  # a selection: only the events it accepts are applied
        self.skipped = 0
        self.events = 0
        self.last_raw: bytes | None = None
        self.last_end = 0

    def run(self, state: Any, through: int, start: int, end: int, at: int | None) -> tuple[Any, int]:
        view = self.view
        types = types_of(view)
        wanted = frozenset(t.encode() for t in types) if types is not None else None
        # A selection wraps apply: the unselected loop stays exactly as it is.
        apply = view.apply if self.keep is None else _only(view.apply, self.keep)
        last: Line | None = None
        n = 0
        def on_gap(before: int, after: int) -> None:
            self.gaps += 1
            if self._on_gap is not None:
                self._on_gap(before, after)

        for line in scan(self.lv, start, end, wanted=wanted, at=at, decode=self._decode, on_repeat=self.on_repeat,
                         on_gap=on_gap, after_seq=through if self.exact else 0,
                         gap_from_start=(self.exact and through > 0) or self.from_missing_start):
            event = line.event
            if event is not None and (types is None or event["type"] in types):
                try:
                    state = apply(state, event)
                except _SelectFailed as e:
                    raise e.error from None
                except Exception as e:
                    raise ViewFailed(f"view {self.vname!r} failed at sequence {line.seq} of {self.tgt.label}: "
                                     f"{type(e).__name__}: {e}") from None
            through, last = line.seq, line
            n += line.span
        self.events += n
        if last is not None:
            self.last_raw, self.last_end = last.raw, last.end
        return state, through

    def _decode(self, off: int, raw: bytes) -> dict[str, Any] | None:
        """A line as an event; a seed-000 line is refused, a corrupt one reported (or skipped)."""
        try:
            return decode_event(raw)
        except ValueError as e:
            if decode_seed(raw) is not None:
                raise self._mixed(off, "a seed-000 {\"seq\", \"type\", \"data\"} line in a file of wardrik "
                                       "events") from None
            err = self.lv.corrupt(off, f"corrupt line ({e})")
            if self.on_corrupt is None:
                raise err from None
            self.on_corrupt(err)
            self.skipped += 1
            return None

    def _mixed(self, off: int, what: str) -> CorruptLedger:
        err = self.lv.corrupt(off, what)
        err.args = (f"{err}: a file mixing the two formats is refused",)
        return err


def _fold_seed(tgt: Target, lv: LogView, view: Any, vname: str, at: int | None, on_corrupt: OnCorrupt,
               select: Select = None) -> FoldResult:
    """Seed 000's lines: small demo ledgers, decoded whole, no checkpoint (they have no ids).

    ``select`` applies to them as to this tool's events (it is given the seed line's dict,
    ``{"seq", "type", "data"}``); ``since`` cannot (they have no time: ``fold_target`` refuses it)."""
    fd = lv.fd
    assert fd is not None  # an open view
    if at is not None:
        last = lines.last_line(fd, lv.end)
        d = decode_seed(last[1]) if last else None
        last_seq = d["seq"] if d else None
        if last_seq is not None and at > last_seq:
            raise BadInput(f"--at {at} is past the end of {tgt.label} (its last seq is {last_seq})")
    types = types_of(view)
    state, through, n = _initial(view, vname, tgt), 0, 0
    for off, raw in lines.iter_lines(fd, 0, lv.end):
        e = decode_seed(raw)
        if e is None:
            try:
                decode_event(raw)
                other = True
            except ValueError:
                other = False
            if other:
                err = lv.corrupt(off, "a wardrik event in a file of seed-000 {\"seq\", \"type\", \"data\"} lines")
                raise CorruptLedger(err.path, err.line, err.offset,
                                    f"{err.what}: a file mixing the two formats is refused")
            err = lv.corrupt(off, "corrupt line (not a seed-000 {\"seq\", \"type\", \"data\"} event)")
            if on_corrupt is None:
                raise err
            on_corrupt(err)
            continue
        if at is not None and e["seq"] > at:
            break
        if (types is None or e["type"] in types) and (select is None or select(e)):
            try:
                state = view.apply(state, e)
            except Exception as ex:
                raise ViewFailed(f"view {vname!r} failed at sequence {e['seq']} of {tgt.label}: "
                                 f"{type(ex).__name__}: {ex}") from None
        through = e["seq"]
        n += 1
    state = _finish(view, vname, tgt, state, through)
    return FoldResult(tgt.label, vname, through, state, SEED, None, events_read=n)


def fold(root: Root, log_arg: str, spec: str, **kw: Any) -> FoldResult:
    """Convenience: resolve the target and the view by name, then fold (``kw``: ``fold_target``'s
    ``at``, ``on_corrupt``, ``since``, ``select`` ...)."""
    view = load_view(spec)
    return fold_target(target(root, log_arg), view, spec, **kw)
