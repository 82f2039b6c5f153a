"""What each agent is doing now, and the live ``activity.changed`` after an append.

Contract kept here (CONTRACT.md, ``activity``):
- ``doing``: the stored ``tool_call.started`` event of every tool call running, oldest first;
  with none running, the last thing the agent started in the current run (``message.started``:
  a model call; ``input.requested``: a wait on a person), whether or not it has completed
  since (the contract's words: "the last thing the agent started"); empty before any such
  event in the run and once the run ends (``run.completed`` / ``run.failed``).
  ``since``: the time of the first thing in ``doing`` (null when empty). ``pending``: messages
  received and not yet taken by a ``run.started`` (its ``data.run.message_ids``).
- It is the ``activity`` view folded from its checkpoint, so on a writable root its cost is
  the suffix since the last fold, not the log (a read-only root folds from the start).
- ``changed_event`` is called after a kept append when someone follows the log. It returns
  the live ``wardrik.activity.changed`` line (no sequence, data = the new activity) when the
  appended lines changed the activity, else None. Appends of types the view does not read
  cost nothing; the others cost a checkpoint load and the suffix since it.
"""
from __future__ import annotations


from typing import Any

import orjson

from wardrik_cli.folding import checkpoint
from wardrik_cli.folding.engine import OnCorrupt, Target, fold_target, Scan
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, decode_event, peek
from wardrik_cli.folding.views import ActivityView, activity_of, types_of

VIEW = "activity"


def activity(log: Log, on_corrupt: OnCorrupt = None) -> dict[str, Any]:
    """``{"doing", "since", "pending"}`` of one log."""
    res = fold_target(Target(log.name, log, True), ActivityView(), VIEW, on_corrupt=on_corrupt)
    return activity_of(res.state)


def activities(logs: list[Log], on_corrupt: OnCorrupt = None) -> dict[str, dict[str, Any]]:
    return {log.name: activity(log, on_corrupt) for log in logs}


_WANTED = frozenset(t.encode() for t in ActivityView.types)


def changed_event(root: Root, log_id: str, lines_in: list[bytes]) -> bytes | None:
    """The live activity.changed line (with its newline) if ``lines_in`` changed the activity."""
    raws = [line.rstrip(b"\n") for line in lines_in if line.strip()]
    if not raws:
        return None
    if all((p := peek(r)) is not None and p[0] not in _WANTED for r in raws):
        return None  # nothing the activity reads: it cannot have changed
    try:
        events = [decode_event(r) for r in raws]
    except ValueError:
        return None
    first_new = int(events[0]["sequence"])
    view = ActivityView()
    log = Log.agent(root, log_id)
    with log.open() as lv:
        if lv.fd is None:
            return None
        ck = checkpoint.load(log, lv, VIEW, view.version)
        if ck is not None and ck.seq < first_new:
            state, through, start = ck.state, ck.seq, ck.offset
        else:
            state, through, start = view.initial(), 0, 0  # rare: someone folded past us meanwhile
        try:
            bound = lv.offset_after_seq(first_new - 1)
            scan = Scan(Target(log_id, log, True), lv, view, VIEW, None)
            state, through = scan.run(state, through, start, max(bound, start), first_new - 1)
        except Exception:
            return None  # a corrupt line before ours: followers get no activity.changed
        before = activity_of(state)
        types = types_of(view)
        assert types is not None  # the activity view names what it reads
        for e in events:
            if e["type"] in types:
                state = view.apply(state, e)
        after = activity_of(state)
        if after == before:
            return None
        # Keep the checkpoint current, so the next append's check is as cheap as this one (but
        # never replace a valid one that is further on: someone folded past us meanwhile).
        end_new = bound + sum(len(r) + 1 for r in raws)
        last_new = int(events[-1]["sequence"])
        if end_new <= lv.end and (ck is None or ck.seq < last_new):
            try:
                checkpoint.save(log, lv, VIEW, view.version, last_new, end_new, raws[-1],
                                orjson.dumps(state))
            except Exception:
                pass
    return _live_line(log, events[-1], after)


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
