"""The built-in views (state, timeline) on both formats, and custom views by MODULE:NAME."""
from __future__ import annotations

import json
import textwrap

import orjson
import pytest

from foldhelp import SEED_FIXTURE, TRACE, run_events, write
from wardrik_cli.folding.views import StateView, TimelineView, load
from wardrik_cli.errors import BadView


def seed_fold(events, state=None):
    """Seed 000's own fold, verbatim (the reference the state view must agree with)."""
    s = state or {"status": "empty", "task": None, "turns": 0, "tool_calls": 0, "answer": None, "applied_through": 0}
    s = dict(s)
    for e in events:
        data = e["data"]
        if e["type"] == "run.created":
            s["status"], s["task"] = "running", data["task"]
        elif e["type"] == "model.responded":
            s["turns"] += 1
        elif e["type"] == "tool.returned":
            s["tool_calls"] += 1
        elif e["type"] == "run.completed":
            s["status"], s["answer"] = "completed", data["answer"]
        s["applied_through"] = e["seq"]
    return s


def cut(v) -> str:
    text = str(v)
    return text if len(text) <= 60 else text[:60] + "..."


def test_fixture_is_the_seed_printout():
    # The fixture reconstructs seed 000's 11 events: its printed ledger lines, exactly.
    printed = [
        ' 1 run.created {"task": "Checkout p99 latency spiked overnight. Find th...',
        ' 2 model.responded {"stop_reason": "tool_use", "text": "Starting with the l...',
        ' 3 tool.called {"id": "t1", "name": "query_metrics", "args": {"service"...',
        ' 4 tool.returned {"id": "t1", "name": "query_metrics", "output": "{\\"serv...',
        ' 5 model.responded {"stop_reason": "tool_use", "text": "p99 jumps from ~210...',
        ' 6 tool.called {"id": "t2", "name": "list_deploys", "args": {"service":...',
        ' 7 tool.returned {"id": "t2", "name": "list_deploys", "output": "{\\"servi...',
        ' 8 tool.called {"id": "t3", "name": "search_logs", "args": {"query": "p...',
        ' 9 tool.returned {"id": "t3", "name": "search_logs", "output": "{\\"query\\...',
        '10 model.responded {"stop_reason": "end_turn", "text": "Likely cause: deplo...',
        '11 run.completed {"answer": "Likely cause: deploy v841 at 01:55 shrank th...',
    ]
    got = []
    for ln in SEED_FIXTURE.read_text().splitlines():
        e = json.loads(ln)
        s = json.dumps(e["data"])
        got.append(f"{e['seq']:>2} {e['type']} {s[:56] + '...' if len(s) > 56 else s}")
    assert got == printed


def test_state_of_the_seed_investigation(cli):
    p = cli("fold", str(SEED_FIXTURE), "--format", "json")
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert out["view"] == "state" and out["through"] == 11 and out["log"] == str(SEED_FIXTURE)
    s = out["state"]
    assert list(s) == ["status", "task", "turns", "tool_calls", "answer", "applied_through"]
    printed = {"status": "completed", "task": "Checkout p99 latency spiked overnight. Find the likely cause...",
               "turns": "3", "tool_calls": "3",
               "answer": "Likely cause: deploy v841 at 01:55 shrank the payments-db co...", "applied_through": "11"}
    assert {k: cut(v) for k, v in s.items()} == printed
    events = [json.loads(l) for l in SEED_FIXTURE.read_text().splitlines()]
    assert s == seed_fold(events)


def test_seed_at_6_is_the_snapshot_and_snapshot_plus_suffix_is_the_fold(cli):
    events = [json.loads(l) for l in SEED_FIXTURE.read_text().splitlines()]
    p = cli("fold", str(SEED_FIXTURE), "--at", "6", "--format", "json")
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert out["through"] == 6
    assert out["state"] == seed_fold(events[:6])
    assert out["state"]["status"] == "running" and out["state"]["turns"] == 2 and out["state"]["tool_calls"] == 1
    # the seed's checkpoint property, on the view itself
    v = StateView()
    snap = v.initial()
    for e in events[:6]:
        snap = v.apply(snap, e)
    snap = json.loads(json.dumps(snap))
    for e in events[6:]:
        snap = v.apply(snap, e)
    assert snap == seed_fold(events)


def test_state_describes_the_latest_run(root, cli):
    ev = run_events(2) + [("run.started", {"task": "second"}), ("message.completed", {"message": {"id": "z"}}),
                          ("run.failed", {"error": {"message": "boom"}})]
    write(root, "acme/t", ev)
    s = orjson.loads(cli("fold", "acme/t", "--format", "json").stdout)["state"]
    assert s == {"status": "failed", "task": "second", "turns": 1, "tool_calls": 0, "answer": None,
                 "applied_through": len(ev)}
    s = orjson.loads(cli("fold", "acme/t", "--at", str(len(run_events(2))), "-F", "json").stdout)["state"]
    assert s == {"status": "completed", "task": "Why is checkout slow?", "turns": 1, "tool_calls": 2,
                 "answer": "the pool", "applied_through": len(run_events(2))}


def test_state_of_an_empty_log(root, cli):
    (root / "acme").mkdir()
    (root / "acme" / "e.jsonl").write_bytes(b"")
    out = orjson.loads(cli("fold", "acme/e", "-F", "json").stdout)
    assert out["through"] == 0 and out["state"]["status"] == "empty" and out["state"]["applied_through"] == 0


def test_timeline_runs_calls_waits_with_durations(root, cli):
    ev = run_events(2)
    ev.insert(-1, ("input.requested", {"request": {"id": "r1"}}, 6.0))
    ev.insert(-1, ("input.received", {"request": {"id": "r1"}}, 66.0))
    ev[-1] = (ev[-1][0], ev[-1][1], 70.0)
    write(root, "acme/t", ev)
    out = orjson.loads(cli("fold", "acme/t", "--view", "timeline", "-F", "json").stdout)
    runs = out["state"]["runs"]
    assert len(runs) == 1
    run = runs[0]
    assert run["run"] == TRACE and run["status"] == "completed" and run["duration_ms"] == 69000.0
    kinds = [(i["kind"], i["id"], i["status"], i["duration_ms"]) for i in run["items"]]
    assert kinds == [("model", "a1", "completed", 1500.0), ("tool", "c0", "completed", 250.0),
                     ("tool", "c1", "completed", 500.0), ("wait", "r1", "answered", 60000.0)]
    assert [i["name"] for i in run["items"] if i["kind"] == "tool"] == ["tool0", "tool1"]
    pretty = cli("fold", "acme/t", "--view", "timeline", "-F", "pretty")
    assert pretty.returncode == 0
    assert b"tool tool0" in pretty.stdout and b"250 ms" in pretty.stdout and b"wait on a person" in pretty.stdout


def test_timeline_is_bounded():
    v = TimelineView(max_runs=3, max_items=2)
    s = v.initial()
    seq = 0
    for r in range(5):
        for e in [("wardrik.run.started", {"task": str(r)})] + [("wardrik.tool_call.started", {"tool": {"name": "t", "call": {"id": str(i)}}}) for i in range(4)]:
            seq += 1
            s = v.apply(s, {"type": e[0], "data": e[1], "sequence": f"{seq:012d}", "time": "2026-10-22T09:00:00.000000Z"})
    assert s["earlier_runs"] == 2 and [r["task"] for r in s["runs"]] == ["2", "3", "4"]
    assert all(len(r["items"]) == 2 and r["earlier_items"] == 2 for r in s["runs"])
    # the runs a new run.started left open are marked, not left running
    assert s["runs"][0]["status"] == "abandoned" and s["runs"][0]["items"][0]["status"] == "unfinished"


def test_timeline_of_the_seed(cli):
    out = orjson.loads(cli("fold", str(SEED_FIXTURE), "--view", "timeline", "-F", "json").stdout)
    items = out["state"]["runs"][0]["items"]
    assert [(i["kind"], i["name"] if i["kind"] == "tool" else None) for i in items] == [
        ("model", None), ("tool", "query_metrics"), ("model", None), ("tool", "list_deploys"),
        ("tool", "search_logs"), ("model", None)]
    assert all(i["status"] == "completed" for i in items)


def test_pretty_state_is_a_panel(cli):
    p = cli("fold", str(SEED_FIXTURE), "-F", "pretty")
    assert p.returncode == 0
    assert b"status" in p.stdout and b"completed" in p.stdout and b"applied_through" in p.stdout


# -- custom views --------------------------------------------------------------
VIEWS_PY = textwrap.dedent('''
    class Counter:
        """Counts events by short type."""
        types = {"tool_call.started", "tool_call.completed"}
        def initial(self):
            return {}
        def apply(self, state, event):
            t = event["type"].split(".", 1)[1]
            state[t] = state.get(t, 0) + 1
            return state

    class Boom:
        def initial(self):
            return 0
        def apply(self, state, event):
            if event["sequence"] == "000000000003":
                raise ValueError("cannot handle this one")
            return state + 1

    not_a_view = 42

    class InitBoom:
        def initial(self):
            raise RuntimeError("nope")
        def apply(self, s, e):
            return s

    class FinishBoom:
        def initial(self):
            return 0
        def apply(self, s, e):
            return s + 1
        def finish(self, s, through):
            raise KeyError("gone")

    class RenderBoom:
        def initial(self):
            return 0
        def apply(self, s, e):
            return s + 1
        def render(self, s):
            raise ZeroDivisionError("render broke")

    class RenderJunk:
        def initial(self):
            return 0
        def apply(self, s, e):
            return s + 1
        def render(self, s):
            return object()

    class IntKeys:
        def initial(self):
            return {}
        def apply(self, s, e):
            s[int(e["sequence"])] = e["type"]
            return s
''')


# A custom view is the user's module, found on the fold process's PYTHONPATH (and imported
# once per process): these tests run the executable.
@pytest.fixture
def views_dir(tmp_path):
    d = tmp_path / "viewsmod"
    d.mkdir()
    (d / "myviews.py").write_text(VIEWS_PY)
    (d / "broken.py").write_text("raise RuntimeError('import-time failure')\n")
    return d


@pytest.mark.subprocess
def test_custom_view(root, cli, views_dir):
    write(root, "acme/t", run_events(2))
    p = cli("fold", "acme/t", "--view", "myviews:Counter", "-F", "json", env={"PYTHONPATH": str(views_dir)}, process=True)
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    assert out["view"] == "myviews:Counter"
    assert out["state"] == {"tool_call.started": 2, "tool_call.completed": 2}
    assert out["through"] == len(run_events(2))


@pytest.mark.subprocess
def test_custom_view_that_raises_names_view_and_sequence(root, cli, views_dir):
    write(root, "acme/t", run_events(2))
    p = cli("fold", "acme/t", "--view", "myviews:Boom", env={"PYTHONPATH": str(views_dir)}, process=True)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "myviews:Boom" in err and "sequence 3" in err and "cannot handle this one" in err
    assert b"Traceback" not in p.stderr and p.stdout == b""


@pytest.mark.subprocess
@pytest.mark.parametrize("spec,words", [
    ("nosuchmodule:View", "no module named 'nosuchmodule'"),
    ("myviews:Missing", "has no 'Missing'"),
    ("myviews:not_a_view", "is not a view"),
    ("broken:View", "import-time failure"),
    ("nonsense", "unknown view"),
    ("myviews:", "MODULE:NAME"),
])
def test_bad_view_names(root, cli, views_dir, spec, words):
    write(root, "acme/t", run_events(1))
    p = cli("fold", "acme/t", "--view", spec, env={"PYTHONPATH": str(views_dir)}, process=True)
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.startswith("error: ") and words in err and "Traceback" not in err
    assert not (root / ".wardrik" / "checkpoints").exists()


def test_load_builtin_and_errors_in_process():
    assert isinstance(load("state"), StateView)
    with pytest.raises(BadView):
        load("os:path")


def _view_error(p, *words) -> str:
    assert p.returncode == 1, (p.returncode, p.stderr)
    err = p.stderr.decode()
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    assert p.stdout == b""
    return err


@pytest.mark.parametrize("fmt", ["json", "pretty"])
@pytest.mark.subprocess
def test_custom_view_failing_in_initial_or_finish_is_one_error_line(root, cli, views_dir, tmp_path, fmt):
    write(root, "acme/t", run_events(1))
    env = {"PYTHONPATH": str(views_dir)}
    _view_error(cli("fold", "acme/t", "--view", "myviews:InitBoom", "-F", fmt, env=env, process=True),
                "myviews:InitBoom", "initial()", "RuntimeError: nope", "acme/t")
    _view_error(cli("fold", "acme/t", "--view", "myviews:FinishBoom", "-F", fmt, env=env, process=True),
                "myviews:FinishBoom", "finish()", f"sequence {len(run_events(1))}", "KeyError")
    # seed 000's format takes its own path through the fold: the same there
    _view_error(cli("fold", str(SEED_FIXTURE), "--view", "myviews:InitBoom", "-F", fmt, env=env, process=True),
                "myviews:InitBoom", "initial()", "RuntimeError: nope")


@pytest.mark.subprocess
def test_custom_view_failing_in_render_is_one_error_line(root, cli, views_dir):
    n = len(run_events(1))
    write(root, "acme/t", run_events(1))
    env = {"PYTHONPATH": str(views_dir)}
    _view_error(cli("fold", "acme/t", "--view", "myviews:RenderBoom", "-F", "pretty", env=env, process=True),
                "myviews:RenderBoom", "render()", f"sequence {n}", "ZeroDivisionError: render broke")
    _view_error(cli("fold", "acme/t", "--view", "myviews:RenderJunk", "-F", "pretty", env=env, process=True),
                "myviews:RenderJunk", "render()", "not something Rich can print")
    # the state itself is fine: json does not call render
    p = cli("fold", "acme/t", "--view", "myviews:RenderBoom", "-F", "json", env=env, process=True)
    assert p.returncode == 0 and orjson.loads(p.stdout)["state"] == n


@pytest.mark.subprocess
def test_state_json_cannot_hold_is_one_error_line(root, cli, views_dir):
    write(root, "acme/t", run_events(1))
    env = {"PYTHONPATH": str(views_dir)}
    for fmt in ("json", "jsonl"):
        _view_error(cli("fold", "acme/t", "--view", "myviews:IntKeys", "-F", fmt, env=env, process=True),
                    "myviews:IntKeys", "JSON", f"sequence {len(run_events(1))}")
    # pretty prints it (Rich can), and no checkpoint was saved for a state JSON cannot hold
    p = cli("fold", "acme/t", "--view", "myviews:IntKeys", "-F", "pretty", env=env, process=True)
    assert p.returncode == 0 and b"run.started" in p.stdout
    assert not (root / ".wardrik" / "checkpoints" / "acme" / "t@myviews+IntKeys.json").exists()
