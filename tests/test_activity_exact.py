"""Issue 13: `activity` says exactly what each agent is doing, and its table holds still.

A run is appended step by step through the library (``append_event``, real logs on disk);
after each step the json (the contract's three keys), the pretty row, a fold from scratch and
the live ``activity.changed`` a follower would send all agree with what the agent is doing:
a model call that returned is no longer doing, a run just started shows as the run, "since"
is the time of the event that began what is shown. The table's columns are placed once per
watch session: a redraw with other states and durations puts every column where it was.
"""
from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from foldhelp import TRACE
from wardrik_cli import Root, append_event
from wardrik_cli.cli.render.fold import ActivityLayout, activity_table, watch_table
from wardrik_cli.folding.activity import ActivityTracker, details
from wardrik_cli.folding.engine import Target, fold_target
from wardrik_cli.folding.views import ActivityView, activity_of
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.store.log import Log

LOG = "acme/t"
WIDE = {"COLUMNS": "160"}  # wide enough that no column is left out
DURATION = r"\d+ ms|\d+(?:\.\d)? s"  # "for" of something begun within the test


def act_json(cli, log=LOG):
    p = cli("activity", log, "-F", "json")
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)[log]


def cells(line: str) -> list[str]:
    """A table line's cells: cells hold single spaces only, columns are two or more apart."""
    return re.split(r" {2,}", line.strip())


def table(text: str) -> dict[str, dict[str, str]]:
    """The pretty table as {log: {header: cell}}."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    heads = cells(lines[0])
    assert heads[:2] == ["log", "doing"], text
    out = {}
    for ln in lines[1:]:
        row = cells(ln)
        assert len(row) == len(heads), f"{ln!r} does not fill {heads}"
        out[row[0]] = dict(zip(heads, row, strict=True))
    return out


def pretty_row(cli, log=LOG):
    p = cli("activity", log, "-F", "pretty", env=WIDE)
    assert p.returncode == 0, p.stderr
    assert b"Traceback" not in p.stderr
    return table(p.stdout.decode())[log]


def fresh(root, log=LOG):
    """The activity folded from the log's first line, no checkpoint read or written."""
    res = fold_target(Target(log, Log.agent(Root(root), log), True), ActivityView(), "activity",
                      use_checkpoints=False, save_checkpoints=False)
    return res.state


class Agent:
    """Appends one event at a time (the library, as an agent's host would) and checks, after
    each, the json, the fold from scratch and what a follower announces."""

    def __init__(self, root, cli, log=LOG):
        self.root, self.cli, self.log = root, cli, log
        self.r = Root(root)
        self.tracker = ActivityTracker(Log.agent(self.r, log))
        self.shown = {"doing": [], "since": None, "pending": 0}  # a follower's, before any event
        self.events: list[dict] = []

    def step(self, type_, data=None, **kw):
        ev = append_event(self.r, self.log, type_, data or {}, **kw)
        self.events.append(ev)
        now = act_json(self.cli, self.log)
        assert activity_of(fresh(self.root, self.log)) == now  # the checkpointed fold is the fold
        live = self.tracker.advance(int(ev["sequence"]) - 1)
        if now == self.shown:
            assert live is None, f"{type_} changed nothing, yet a follower announced {live!r}"
        else:
            assert live is not None, f"{type_} changed the activity to {now}, and no follower heard"
            sent = orjson.loads(live)
            assert sent["type"] == "wardrik.activity.changed" and sent["data"] == now
        self.shown = now
        return ev, now


def test_a_run_step_by_step_json_and_table(root, cli):
    a = Agent(root, cli)
    _, now = a.step("message.received", {"message": {"id": "m1"}})
    assert now == {"doing": [], "since": None, "pending": 1}
    row = pretty_row(cli)
    assert row["doing"] == "idle" and row["for"] == "–" and row["last run"] == "–" and row["pending"] == "1"

    run, now = a.step("run.started", {"run": {"id": TRACE, "message_ids": ["m1"]}, "task": "Why is checkout slow?"})
    assert now == {"doing": [], "since": None, "pending": 0}
    row = pretty_row(cli)
    # the bug: "idle" right after run.started
    assert row["doing"] == "run 0af76519 · Why is checkout slow?", row
    assert re.fullmatch(DURATION, row["for"]) and row["since"] == run["time"][11:19]

    call, now = a.step("message.started", {"message": {"id": "x3a"}, "model": "m-large"})
    assert now == {"doing": [call], "since": call["time"], "pending": 0}
    row = pretty_row(cli)
    assert row["doing"] == "model call x3a · m-large" and row["since"] == call["time"][11:19]

    _, now = a.step("message.completed", {"message": {"id": "x3a"}})
    # the json keeps the contract's words ("with none running, the last thing the agent
    # started"); the table was the bug: "model call x3a 53 s" after the call had completed
    assert now == {"doing": [call], "since": call["time"], "pending": 0}
    row = pretty_row(cli)
    assert row["doing"] == "run 0af76519 · Why is checkout slow?" and row["since"] == run["time"][11:19]

    t1, now = a.step("tool_call.started", {"tool": {"name": "grep", "call": {"id": "t1"}}})
    assert now == {"doing": [t1], "since": t1["time"], "pending": 0}
    t2, now = a.step("tool_call.started", {"tool": {"name": "read", "call": {"id": "t2"}}})
    assert now == {"doing": [t1, t2], "since": t1["time"], "pending": 0}
    assert pretty_row(cli)["doing"] == "tool grep (t1), tool read (t2)"
    _, now = a.step("tool_call.completed", {"tool": {"call": {"id": "t1"}}})
    assert now == {"doing": [t2], "since": t2["time"], "pending": 0}
    assert pretty_row(cli)["since"] == t2["time"][11:19]
    _, now = a.step("tool_call.failed", {"tool": {"call": {"id": "t2"}}, "error": {"message": "no"}})
    assert now == {"doing": [call], "since": call["time"], "pending": 0}
    assert pretty_row(cli)["doing"].startswith("run 0af76519")

    wait, now = a.step("input.requested", {"request": {"id": "r1"}})
    assert now == {"doing": [wait], "since": wait["time"], "pending": 0}
    assert pretty_row(cli)["doing"] == "waiting on a person · r1"
    _, now = a.step("input.received", {"request": {"id": "r1"}})
    assert now["doing"] == [wait]
    assert pretty_row(cli)["doing"].startswith("run 0af76519")

    call2, now = a.step("message.started", {"message": {"id": "x3b"}})
    # a completion is matched to its start by id: another call's end ends nothing
    _, now = a.step("message.completed", {"message": {"id": "zz"}})
    assert now == {"doing": [call2], "since": call2["time"], "pending": 0}
    assert pretty_row(cli)["doing"] == "model call x3b"
    _, now = a.step("message.completed", {"message": {"id": "x3b"}})
    assert now["doing"] == [call2]
    assert pretty_row(cli)["doing"].startswith("run 0af76519")

    _, now = a.step("run.completed", {"answer": "the pool"})
    assert now == {"doing": [], "since": None, "pending": 0}
    row = pretty_row(cli)
    assert row["doing"] == "idle" and row["for"] == "–"
    assert re.fullmatch(r"completed \d+s ago", row["last run"]), row

    second, now = a.step("run.started", {})  # no run id: the run is its trace
    assert now["doing"] == []
    row = pretty_row(cli)
    trace = second["traceparent"].split("-")[1]
    assert row["doing"] == f"run {trace[:8]}" and re.fullmatch(r"completed \d+s ago", row["last run"])
    _, now = a.step("run.failed", {"error": {"message": "boom"}})
    assert now == {"doing": [], "since": None, "pending": 0}
    row = pretty_row(cli)
    assert row["doing"] == "idle" and re.fullmatch(r"failed \d+s ago", row["last run"]), row


def test_a_wait_inside_a_model_call_gives_the_call_back_when_answered(root, cli):
    a = Agent(root, cli)
    a.step("run.started", {"run": {"id": TRACE}})
    call, _ = a.step("message.started", {"message": {"id": "a1"}})
    wait, now = a.step("input.requested", {"request": {"id": "r1"}})
    assert now["doing"] == [wait]
    _, now = a.step("input.received", {"request": {"id": "r9"}})  # another request's answer
    assert now["doing"] == [wait]
    _, now = a.step("input.received", {"request": {"id": "r1"}})
    assert now == {"doing": [wait], "since": wait["time"], "pending": 0}  # the last thing started
    assert pretty_row(cli)["doing"] == "model call a1"  # what is open again


def test_the_json_keeps_the_contracts_three_keys(root, cli):
    a = Agent(root, cli)
    a.step("run.started", {"run": {"id": TRACE}, "task": "t"})
    a.step("run.completed")
    p = cli("activity", "-F", "json")
    assert orjson.loads(p.stdout) == {LOG: {"doing": [], "since": None, "pending": 0}}
    p = cli("activity", "-F", "jsonl")
    assert orjson.loads(p.stdout) == {LOG: {"doing": [], "since": None, "pending": 0}}


def test_an_old_checkpoint_is_not_misread(root, cli):
    # activity/2's state had "last" and no run (and activity/3's no "last"): a checkpoint of
    # another version must be discarded, not read as this version's state.
    a = Agent(root, cli)
    a.step("run.started", {"run": {"id": TRACE}})
    call, _ = a.step("message.started", {"message": {"id": "a1"}})
    a.step("message.completed", {"message": {"id": "a1"}})
    ck = root / ".wardrik" / "checkpoints" / "acme" / "t@activity.json"
    doc = orjson.loads(ck.read_bytes())
    assert doc["version"] == ActivityView.version != "activity/2"
    doc["version"], doc["state"] = "activity/2", {"tools": [], "last": call, "pending": []}
    ck.write_bytes(orjson.dumps(doc))
    assert act_json(cli) == {"doing": [call], "since": call["time"], "pending": 0}
    assert pretty_row(cli)["doing"] == "run 0af76519"
    assert orjson.loads(ck.read_bytes())["version"] == ActivityView.version  # replaced by this version's


# -- times set in the past: the "for" and "last run" cells ------------------------------------
def write_ago(root, log, events):
    """Events (type, data, seconds ago) written as stored lines, times counted back from now."""
    now = datetime.now(UTC)
    path = root / (log + ".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for seq, (t, d, ago) in enumerate(events, 1):
        e = build_event(etype=lookup(t), data=d, source=f"wardrik://local/agents/{log}", subject=f"agents/{log}",
                        seq=seq, time_str=format_dt(now - timedelta(seconds=ago)), trace=TRACE, span=new_span_id())
        out.append(dumps_line(e))
    path.write_bytes(b"".join(out))


def test_last_run_outcome_and_how_long(root, cli):
    write_ago(root, "acme/done", [("run.started", {"run": {"id": TRACE}}, 600),
                                  ("message.started", {"message": {"id": "a1"}}, 590),
                                  ("message.completed", {"message": {"id": "a1"}}, 530),  # 53 s later
                                  ("run.completed", {}, 185)])
    write_ago(root, "acme/failing", [("run.started", {"run": {"id": TRACE}}, 7300),
                                     ("run.failed", {"error": {"message": "x"}}, 7200)])
    write_ago(root, "acme/again", [("run.started", {}, 4 * 86400), ("run.started", {"task": "retry"}, 125)])
    write_ago(root, "acme/busy", [("run.started", {"run": {"id": TRACE}}, 300),
                                  ("message.started", {"message": {"id": "b1"}}, 95)])
    rows = table(cli("activity", "-F", "pretty", env=WIDE, check=True).stdout.decode())
    assert rows["acme/done"]["doing"] == "idle" and rows["acme/done"]["last run"] == "completed 3m ago"
    assert rows["acme/failing"]["last run"] == "failed 2h ago"
    # a run.started while a run was open: the one before was abandoned; the new one shows
    assert rows["acme/again"]["last run"] == "abandoned 2m ago"
    assert rows["acme/again"]["doing"].endswith("· retry") and rows["acme/again"]["for"] == "2m 05s"
    assert rows["acme/busy"]["doing"] == "model call b1" and rows["acme/busy"]["for"] == "1m 35s"
    assert rows["acme/busy"]["last run"] == "–"
    # and the json says the same in the contract's words
    out = orjson.loads(cli("activity", "-F", "json", check=True).stdout)
    assert out["acme/done"]["doing"] == [] and out["acme/busy"]["since"] == out["acme/busy"]["doing"][0]["time"]


# -- the columns hold still ---------------------------------------------------------------------
def render(renderable, width=100) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, highlight=False).print(renderable)
    return buf.getvalue()


def ev(type_, data, ago_s):
    t = format_dt(datetime.now(UTC) - timedelta(seconds=ago_s))
    return {"type": "wardrik." + type_, "time": t, "data": data}


def acts(doing, ago_s, last=None, run=None, pending=0):
    d = [ev(*x, ago_s) for x in doing]
    return {"doing": d, "since": d[0]["time"] if d else None, "pending": pending, "run": run, "last_run": last}


def offsets(text: str) -> dict[str, int]:
    """Where each header starts on the header line (the line under the title)."""
    head = text.splitlines()[1]
    return {h: head.index(h) for h in cells(head)}


def edges(text: str) -> list[list[int]]:
    """For each row, where each of its cells starts and ends."""
    return [[m.span() for m in re.finditer(r"\S+(?: \S+)*", ln)] for ln in text.splitlines()[2:] if ln.strip()]


TOOL = ("tool_call.started", {"tool": {"name": "query_metrics", "call": {"id": "t42"}}})
MODEL = ("message.started", {"message": {"id": "x3a"}, "model": "m-large"})


@pytest.mark.parametrize("width", [80, 100, 160])
def test_redraws_never_move_a_column(width):
    layout = ActivityLayout()
    now = datetime.now(UTC)
    frames = [
        {"acme/a": acts([TOOL], 3), "acme/bb": acts([], 0, pending=2)},
        {"acme/a": acts([MODEL], 12), "acme/bb": acts([TOOL, TOOL], 3725, last={"status": "failed", "time":
                                                                               format_dt(now), "run": None})},
        {"acme/a": acts([], 0, run={"id": TRACE, "task": "a task " * 30, "time": format_dt(now)}),
         "acme/bb": acts([MODEL], 59 * 60 + 59, pending=12345)},
        {"acme/a": acts([], 0, last={"status": "completed", "time": format_dt(now - timedelta(minutes=59)),
                                     "run": None}), "acme/bb": acts([], 0)},
    ]
    shots = [render(watch_table(f, layout), width) for f in frames]
    heads = [offsets(s) for s in shots]
    assert all(h == heads[0] for h in heads), heads
    assert list(heads[0]) == ["log", "doing", "for"] + (["since"] if width >= 100 else []) + ["last run", "pending"]
    ends = {name: heads[0][name] + len(name) for name in ("for", "pending")}  # right-aligned columns
    starts = {name: heads[0][name] for name in heads[0] if name not in ("for", "pending")}
    for shot in shots:
        assert max(len(ln) for ln in shot.splitlines()) <= width
        for row in edges(shot):
            spans = dict(zip(heads[0], row, strict=True))
            assert all(spans[n][0] == starts[n] for n in starts), (shot, spans)
            assert all(spans[n][1] == ends[n] for n in ends), (shot, spans)
    # a one-off table, sized to its own cells, would have put them elsewhere: the layout kept them
    assert offsets(render(activity_table(frames[0]), width)) != heads[0] or width < 100


def test_a_longer_log_matched_later_is_cut_and_moves_no_column():
    """The columns are fixed for the session (the README): before, a longer id widened the log
    column once, moving every column after it (and "since" went on a narrow terminal)."""
    layout = ActivityLayout()
    short = {"acme/a": acts([TOOL], 2)}
    longer = {"acme/a": acts([TOOL], 2), "acme/a-much-longer-agent-name": acts([], 0)}
    first = offsets(render(watch_table(short, layout)))
    shot = render(watch_table(longer, layout))
    assert offsets(shot) == first
    assert "acme/a-much-longer-agent-name" not in shot and "…" in shot  # cut, with an ellipsis
    # cut in the middle, its end kept: two such logs of one folder are told apart
    two = render(watch_table({**short, "acme/billing-eu": acts([], 0), "acme/billing-us": acts([], 0)}, layout))
    assert "…ng-eu" in two and "…ng-us" in two, two
    assert offsets(render(watch_table(short, layout))) == first
    # a table of the logs at the start fits its longest id; so does one that started with none
    both = ActivityLayout()
    assert "acme/a-much-longer-agent-name" in render(watch_table(longer, both))
    empty = ActivityLayout()
    render(watch_table({}, empty))
    assert "acme/a-much-longer-agent-name" in render(watch_table(longer, empty))


def test_a_wide_cell_is_cut_not_wrapped_and_the_tick_changes_no_offset():
    layout = ActivityLayout()
    long_tool = ("tool_call.started", {"tool": {"name": "x" * 300, "call": {"id": "c"}}})
    shots = [render(watch_table({"acme/a": acts([long_tool], s)}, layout)) for s in (1, 9, 10, 61, 3600, 90000)]
    assert all(len(s.splitlines()) == 3 for s in shots)  # title, header, one row: nothing wrapped
    assert all("…" in s.splitlines()[2] for s in shots)
    fors = [re.search(r"…\s+(\S+(?: \S+)?)\s", s.splitlines()[2]) for s in shots]
    assert [m.group(1) for m in fors] == ["1.0 s", "9.0 s", "10 s", "1m 01s", "1h 00m", "1d 1h"]
    assert len({m.end(1) for m in fors}) == 1  # each ends where the others did
    assert len({offsets(s)["pending"] for s in shots}) == 1


def test_details_adds_the_run_and_the_last_run_beside_the_contract(root):
    r = Root(root)
    append_event(r, LOG, "run.started", {"run": {"id": TRACE}, "task": "x" * 500})
    d = details([Log.agent(r, LOG)])[LOG]
    assert {k: d[k] for k in ("doing", "since", "pending")} == {"doing": [], "since": None, "pending": 0}
    assert d["run"]["id"] == TRACE and len(d["run"]["task"]) == ActivityView.TASK_CHARS and d["last_run"] is None
