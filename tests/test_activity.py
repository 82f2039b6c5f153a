"""`wardrik activity` and the live activity.changed: doing, since, pending, and their cost."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import orjson
import pytest

from conftest import WARDRIK, run_cli
from foldhelp import TRACE, run_events, write
from procio import run_with_io
from wardrik_cli.folding.activity import ActivityTracker
from wardrik_cli.store.log import Log
from wardrik_cli.store.layout import Root


def act(cli, *pats):
    p = cli("activity", *pats, "-F", "json")
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)


def tool(i, name="grep"):
    return ("tool_call.started", {"tool": {"name": name, "call": {"id": f"c{i}"}}})


def test_running_tools_oldest_first_then_open_model_call_then_nothing(root, cli):
    lines = write(root, "acme/t", [
        ("message.received", {"message": {"id": "m1"}}, 0),
        ("message.received", {"message": {"id": "m2"}}, 1),
        ("run.started", {"run": {"id": TRACE, "message_ids": ["m1"]}}, 2),
        ("message.started", {"message": {"id": "a1"}}, 3),
        (*tool(1, "search"), 4), (*tool(2, "read"), 5), (*tool(3, "shell"), 6),
        ("tool_call.completed", {"tool": {"call": {"id": "c2"}}}, 7),
    ])
    a = act(cli, "acme/t")["acme/t"]
    assert [orjson.dumps(e) + b"\n" for e in a["doing"]] == [lines[4], lines[6]]  # the stored events
    assert a["since"] == orjson.loads(lines[4])["time"] and a["pending"] == 1
    write(root, "acme/t", [("tool_call.failed", {"tool": {"call": {"id": "c1"}}}, 8),
                           ("tool_call.completed", {"tool": {"call": {"id": "c3"}}}, 9)], first_seq=9, mode="ab")
    a = act(cli, "acme/t")["acme/t"]
    # no tool running: the model call that is still open
    assert [e["type"] for e in a["doing"]] == ["wardrik.message.started"] and a["since"].startswith("2026-10-22T09:00:03")
    write(root, "acme/t", [("message.completed", {"message": {"id": "a1"}}, 10),
                           ("input.requested", {"request": {"id": "r1"}}, 11)], first_seq=11, mode="ab")
    a = act(cli, "acme/t")["acme/t"]
    assert [e["type"] for e in a["doing"]] == ["wardrik.input.requested"]
    write(root, "acme/t", [("input.received", {"request": {"id": "r1"}}, 12), (*tool(9), 13),
                           ("run.completed", {}, 14)], first_seq=13, mode="ab")
    assert act(cli, "acme/t")["acme/t"] == {"doing": [], "since": None, "pending": 1}
    write(root, "acme/t", [("run.started", {"run": {"message_ids": ["m2", "m9"]}}, 15)], first_seq=16, mode="ab")
    assert act(cli, "acme/t")["acme/t"]["pending"] == 0


def test_many_logs_by_pattern(root, cli):
    write(root, "acme/a", run_events(1))
    write(root, "acme/b", [tool(1)])
    write(root, "other/c", [tool(1)])
    out = act(cli, "acme/*")
    assert sorted(out) == ["acme/a", "acme/b"] and out["acme/a"]["doing"] == [] and len(out["acme/b"]["doing"]) == 1
    assert act(cli, "nomatch/*") == {}
    p = cli("activity", "acme/zzz")
    assert p.returncode == 2 and p.stderr.startswith(b"error: ")
    p = cli("activity", "acme/*", "-F", "pretty")
    assert p.returncode == 0 and b"tool grep" in p.stdout and b"idle" in p.stdout


@pytest.mark.subprocess
def test_activity_cost_does_not_grow_with_the_log(root, cli):
    write(root, "acme/big", (run_events(3) * 500) + [tool(1)])
    size = os.path.getsize(root / "acme" / "big.jsonl")
    cli("activity", "acme/big", check=True)  # the first one folds it all and saves the checkpoint
    p, io = run_with_io([WARDRIK, "--root", str(root), "activity", "acme/big"])
    assert p.returncode == 0 and len(orjson.loads(p.stdout)["acme/big"]["doing"]) == 1
    write(root, "acme/small", [tool(1)])
    p2, io2 = run_with_io([WARDRIK, "--root", str(root), "activity", "acme/small"])
    # reading the big log again would cost `size` bytes; it costs what the small one costs, give or take
    assert io["rchar"] - io2["rchar"] < size / 20


def changed_event(r: Root, log_id: str, new_lines: list[bytes]) -> bytes | None:
    """What a follower that has just read ``new_lines`` (the last lines of the log) announces."""
    before = int(orjson.loads(new_lines[0])["sequence"]) - 1
    return ActivityTracker(Log.agent(r, log_id)).advance(before)


def test_changed_event(root):
    r = Root(root)
    write(root, "acme/t", run_events(1)[:2])
    # a reasoning step changes nothing the activity shows
    more = write(root, "acme/t", [("reasoning.completed", {"message": {"id": "a0"}})], first_seq=3, mode="ab")
    assert changed_event(r, "acme/t", more) is None
    more = write(root, "acme/t", [tool(1)], first_seq=4, mode="ab")
    raw = changed_event(r, "acme/t", more)
    assert raw is not None and raw.endswith(b"\n")
    ev = orjson.loads(raw)
    assert ev["type"] == "wardrik.activity.changed" and "sequence" not in ev
    assert ev["source"] == "wardrik://local/agents/acme/t"
    assert ev["data"]["doing"] == [orjson.loads(more[0])] and ev["data"]["pending"] == 0
    assert ev["data"]["since"] == orjson.loads(more[0])["time"]
    assert ev["traceparent"].split("-")[1] == TRACE
    # completing a call nobody started changes nothing
    more = write(root, "acme/t", [("tool_call.completed", {"tool": {"call": {"id": "zz"}}})], first_seq=5, mode="ab")
    assert changed_event(r, "acme/t", more) is None
    more = write(root, "acme/t", [("message.received", {"message": {"id": "m7"}})], first_seq=6, mode="ab")
    assert orjson.loads(changed_event(r, "acme/t", more))["data"]["pending"] == 1


@pytest.mark.subprocess
def test_watch_updates_and_ends_cleanly_on_ctrl_c(root, cli):
    write(root, "acme/t", run_events(1))
    p = subprocess.Popen([WARDRIK, "--root", str(root), "activity", "acme/*", "--watch", "-F", "jsonl"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = orjson.loads(p.stdout.readline())
        assert first == {"acme/t": {"doing": [], "since": None, "pending": 0}}
        time.sleep(0.5)
        lines = write(root, "acme/t", [tool(1)], first_seq=len(run_events(1)) + 1, mode="ab")
        second = orjson.loads(p.stdout.readline())
        assert second["acme/t"]["doing"] == [orjson.loads(lines[0])]
        write(root, "acme/u", [tool(2)])  # a log created while watching
        third = orjson.loads(p.stdout.readline())
        assert sorted(third) == ["acme/t", "acme/u"]
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=10) == 0
        assert b"Traceback" not in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_doing_is_the_last_thing_started_even_once_it_completed(root, cli):
    # CONTRACT: "with none running, the last thing the agent started (a model call, a wait
    # on a person); empty once the run ends" -- started, whether or not it has completed.
    write(root, "acme/t", [
        ("run.started", {"run": {"id": TRACE}}, 0),
        ("message.completed", {"message": {"id": "zz"}}, 0.5),
    ])
    assert act(cli, "acme/t")["acme/t"]["doing"] == []  # nothing started in this run yet
    more = write(root, "acme/t", [("message.started", {"message": {"id": "a1"}}, 1),
                                  ("message.completed", {"message": {"id": "a1"}}, 2)], first_seq=3, mode="ab")
    a = act(cli, "acme/t")["acme/t"]
    assert a["doing"] == [orjson.loads(more[0])] and a["since"] == orjson.loads(more[0])["time"]
    more = write(root, "acme/t", [("input.requested", {"request": {"id": "r1"}}, 3),
                                  ("input.received", {"request": {"id": "r1"}}, 4)], first_seq=5, mode="ab")
    assert act(cli, "acme/t")["acme/t"]["doing"] == [orjson.loads(more[0])]
    # tool calls running come first; once they end, the last model call or wait is back
    write(root, "acme/t", [(*tool(1), 5)], first_seq=7, mode="ab")
    assert [e["type"] for e in act(cli, "acme/t")["acme/t"]["doing"]] == ["wardrik.tool_call.started"]
    write(root, "acme/t", [("tool_call.completed", {"tool": {"call": {"id": "c1"}}}, 6)], first_seq=8, mode="ab")
    assert act(cli, "acme/t")["acme/t"]["doing"] == [orjson.loads(more[0])]
    write(root, "acme/t", [("run.completed", {}, 7)], first_seq=9, mode="ab")
    assert act(cli, "acme/t")["acme/t"] == {"doing": [], "since": None, "pending": 0}
    # a new run starts with nothing: what the last run started is not carried over
    write(root, "acme/t", [("run.started", {}, 8)], first_seq=10, mode="ab")
    assert act(cli, "acme/t")["acme/t"]["doing"] == []
    # the library's fold from scratch agrees with the checkpointed answers above
    from wardrik_cli.folding.engine import Target, fold_target
    from wardrik_cli.store.log import Log
    from wardrik_cli.folding.views import ActivityView, activity_of
    lg = Log.agent(Root(root), "acme/t")
    res = fold_target(Target("acme/t", lg, True), ActivityView(), "activity", use_checkpoints=False, save_checkpoints=False)
    assert activity_of(res.state)["doing"] == []


def test_completing_a_model_call_is_no_activity_change(root):
    r = Root(root)
    write(root, "acme/t", run_events(1)[:2])
    more = write(root, "acme/t", [("message.started", {"message": {"id": "a1"}})], first_seq=3, mode="ab")
    assert changed_event(r, "acme/t", more) is not None
    more = write(root, "acme/t", [("message.completed", {"message": {"id": "a1"}})], first_seq=4, mode="ab")
    assert changed_event(r, "acme/t", more) is None
    more = write(root, "acme/t", [("run.completed", {})], first_seq=5, mode="ab")
    assert orjson.loads(changed_event(r, "acme/t", more))["data"]["doing"] == []


def test_sample_ledgers(tmp_path):
    # The shipped samples (copied: a fold saves checkpoints on a writable root).
    import shutil
    from conftest import run_cli
    src = os.path.join(os.path.dirname(__file__), "..", "sample_ledgers")
    shutil.copytree(src, tmp_path / "s")
    out = orjson.loads(run_cli("activity", "acme/*", "-F", "json", root=tmp_path / "s", check=True).stdout)
    sup = out["acme/support"]
    assert [e["type"] for e in sup["doing"]] == ["wardrik.tool_call.started"] * 2
    assert sup["since"] == sup["doing"][0]["time"] and sup["pending"] == 1
    assert out["acme/triage"] == {"doing": [], "since": None, "pending": 0}


def test_fold_with_the_activity_view_gives_what_activity_gives_in_json(tmp_path):
    """`fold --view activity -o json` gave the state the fold carries (ended, last, open,
    pending as a list, ...): its state is the contract's {doing, since, pending}, as `activity`."""
    import shutil
    from pathlib import Path

    root = tmp_path / "r"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_ledgers", root)
    act = orjson.loads(run_cli("activity", "-o", "json", root=root).stdout)
    assert len(act) >= 4
    for log_id, want in act.items():
        for fmt in ("json", "jsonl"):
            p = run_cli("fold", log_id, "--view", "activity", "-o", fmt, root=root)
            assert p.returncode == 0, p.stderr
            doc = orjson.loads(p.stdout)
            assert doc["view"] == "activity" and doc["state"] == want, (log_id, fmt)
