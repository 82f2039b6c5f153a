"""What each agent is doing now, and the live ``activity.changed`` after an append.

Contract kept here (CONTRACT.md, ``activity``):
- ``doing``: the stored ``tool_call.started`` event of every tool call running, oldest first;
  with none running, the last thing the agent started in the current run that has not ended
  (``message.started``: a model call, ended by the ``message.completed`` with its message id;
  ``input.requested``: a wait on a person, ended by the ``input.received`` with its request
  id); empty when nothing is open and once the run ends (``run.completed`` / ``run.failed``).
  A model call that has returned is not something the agent is doing: showing it (with a
  "for" counting from its start) is what issue 13 reported.
  ``since``: the time of the first thing in ``doing`` (null when empty). ``pending``: messages
  received and not yet taken by a ``run.started`` (its ``data.run.message_ids``).
- The JSON carries each stored event of ``doing`` whole, but for one nested deeper than any
  JSON writer goes (a line written by hand: ``append`` refuses data deeper than 128 levels):
  its objects and arrays past ``deep.DEPTH`` levels of its data are the string
  ``deep.TOO_DEEP`` (``folding.deep``); every event ``append`` wrote is as stored.
- ``details`` adds, for a person's table only (the json keeps the contract's three keys), the
  open run (so a run just started shows as the run, not idle) and how the last run ended.
- It is the ``activity`` view folded from its checkpoint, so on a writable root its cost is
  the suffix since the last fold, not the log (a read-only root folds from the start).
- ``ActivityTracker`` is how a follower (``tail -f`` wanting live events) tells its reader
  what the agent is doing: after each read of new events it reads only those (the view skips
  the types it does not read) and makes the live ``wardrik.activity.changed`` line (no
  sequence, data = the new activity, the contract's three keys) when the activity changed.
  An appender never folds a log for this: the follower does, once, then keeps up.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wardrik_cli.folding import checkpoint
from wardrik_cli.folding.deep import DEPTH, clip
from wardrik_cli.folding.engine import OnCorrupt, Target, fold_target, Scan
from wardrik_cli.store.log import Log, decode_event
from wardrik_cli.folding.views import ActivityView, activity_detail, activity_of

VIEW = "activity"
Warn = Callable[[str], None]


def state(log: Log, on_corrupt: OnCorrupt = None, warn: Warn | None = None) -> dict[str, Any]:
    """The activity view's state of one log (folded from its checkpoint, which it saves);
    ``warn`` is told of a gap in its sequence met by the fold."""
    res = fold_target(Target(log.name, log, True), ActivityView(), VIEW, on_corrupt=on_corrupt, warn=warn)
    st: dict[str, Any] = res.state
    return st


def activity(log: Log, on_corrupt: OnCorrupt = None, warn: Warn | None = None) -> dict[str, Any]:
    """``{"doing", "since", "pending"}`` of one log, each event of doing cut at ``deep.DEPTH``
    levels of its data (see the module's contract)."""
    act = activity_of(state(log, on_corrupt, warn))
    act["doing"] = [clip(e, DEPTH + 1) for e in act["doing"]]  # +1: the event itself, around its data
    return act


def activities(logs: list[Log], on_corrupt: OnCorrupt = None, warn: Warn | None = None) -> dict[str, dict[str, Any]]:
    return {log.name: activity(log, on_corrupt, warn) for log in logs}


def details(logs: list[Log], on_corrupt: OnCorrupt = None, warn: Warn | None = None) -> dict[str, dict[str, Any]]:
    """Per log, ``activity`` plus ``run`` (the open run) and ``last_run`` (how the last one
    ended): what the pretty table shows."""
    return {log.name: activity_detail(state(log, on_corrupt, warn)) for log in logs}


class ActivityTracker:
    """The activity of one log kept current by a follower, reading only what was appended.

    ``advance(before)``: the follower has just read the log past sequence ``before``. The
    first call folds the log through ``before`` (from a valid checkpoint when there is one;
    nothing is saved: a follower writes no checkpoint) as the baseline; every call then reads
    only the lines past what it read last time, and returns the live
    ``wardrik.activity.changed`` line (with its newline) when what the agent is doing
    changed, else None. A file replaced (compaction) starts a new baseline. A corrupt line
    or a view that fails gives None: followers then get no activity.changed, never an error.
    """

    def __init__(self, log: Log):
        self.log = log
        self.view = ActivityView()
        self.state: dict[str, Any] | None = None
        self.through = 0
        self.offset = 0
        self.ino: int | None = None

    def advance(self, before: int) -> bytes | None:
        try:
            return self._advance(before)
        except Exception:  # noqa: BLE001 - live news is best effort; the kept events are already out
            return None

    def _advance(self, before: int) -> bytes | None:
        view, log = self.view, self.log
        target = Target(log.name, log, True)
        with log.open() as lv:
            if lv.fd is None:
                return None
            if self.state is None or lv.ino != self.ino or lv.end < self.offset:
                ck = checkpoint.load(log, lv, VIEW, view.version)
                if ck is not None and ck.seq <= before:
                    state, through, start = ck.state, ck.seq, ck.offset
                else:
                    state, through, start = view.initial(), 0, 0
                bound = max(lv.offset_after_seq(before), start)
                scan = Scan(target, lv, view, VIEW, None)
                state, through = scan.run(state, through, start, bound, before)
                self.state, self.through, self.ino = state, through, lv.ino
                self.offset = scan.last_end if scan.last_raw is not None else start
            was = activity_of(self.state)
            scan = Scan(target, lv, view, VIEW, None)
            state, through = scan.run(self.state, self.through, self.offset, lv.end, None)
            if scan.last_raw is None:
                return None
            self.state, self.through, self.offset = state, through, scan.last_end
            now = activity_of(state)
            if now == was:
                return None
            return _live_line(log, decode_event(scan.last_raw), now)


def _live_line(log: Log, last: dict[str, Any], act: dict[str, Any]) -> bytes:
    from wardrik_cli.store.append import live_event, make_item
    from wardrik_cli.protocol.envelope import new_span_id, trace_id_of
    from wardrik_cli.protocol.catalogue import LIVE

    source = str(last.get("source", ""))
    deployment = source[len("wardrik://"):].split("/", 1)[0] if source.startswith("wardrik://") else None
    trace = trace_id_of(last)
    tp = f"00-{trace}-{new_span_id()}-01" if trace else None
    item = make_item("activity.changed", act, None, tp, kinds=(LIVE,))
    return live_event(log, item, deployment=deployment or log.root.deployment())
