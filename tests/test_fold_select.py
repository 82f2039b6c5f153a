"""Folding a selection (``since``, ``select``) and the timeline's error text.

``fold_target(..., since=T, select=PRED)`` folds only the events at or after the stored time
``T`` (seeking to it) and accepted by ``PRED``; it never reads nor writes a checkpoint, and
``through`` keeps its meaning. The timeline keeps a failed tool call's or run's error text
(short form) in its state and shows it, escaped, on the failed row.
"""
from __future__ import annotations

import copy
import os
import re
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from foldhelp import SEED_FIXTURE, START
from wardrik_cli.errors import BadInput
from wardrik_cli.folding.checkpoint import SEAL_KIND
from wardrik_cli.folding.engine import Target, fold, fold_target, target
from wardrik_cli.folding.views import ERROR_CHARS, ActivityView, StateView, TimelineView, ViewFailed, error_text
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.seal import seal

VIEWS = {"state": StateView, "timeline": TimelineView, "activity": ActivityView}
RUN_A, RUN_B, RUN_C = "a" * 31 + "1", "b" * 31 + "2", "c" * 31 + "3"


# -- helpers -------------------------------------------------------------------------------
def ck_dir(root: Path) -> Path:
    return root / ".wardrik" / "checkpoints"


def ck_files(root: Path) -> dict[str, bytes]:
    d = ck_dir(root)
    if not d.exists():
        return {}
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def lib_target(root: Path, log: str = "acme/t") -> Target:
    return Target(log, Log.agent(Root(root), log), True)


def run_of(trace_prefix: str):
    """What ``fold --run ID`` will build: the events of one run, by trace-id prefix."""
    def select(e: dict) -> bool:
        tp = e.get("traceparent") or ""
        return tp[3:35].startswith(trace_prefix)
    return select


def append(cli, log: str, type_: str, data: dict, *extra: str) -> dict:
    p = cli("append", log, type_, "--data", orjson.dumps(data).decode(), *extra)
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)


def a_run(cli, run_id: str, task: str, tools: int, end: str, log: str = "acme/t") -> None:
    append(cli, log, "run.started", {"run": {"id": run_id}, "task": task})
    append(cli, log, "message.started", {"message": {"id": f"m-{task}"}})
    append(cli, log, "message.completed", {"message": {"id": f"m-{task}"}})
    for i in range(tools):
        append(cli, log, "tool_call.started", {"tool": {"name": "bash", "call": {"id": f"{task}-{i}"}}})
        append(cli, log, "tool_call.completed", {"tool": {"call": {"id": f"{task}-{i}"}}})
    if end == "failed":
        append(cli, log, "run.failed", {"error": {"message": f"{task} broke"}})
    else:
        append(cli, log, "run.completed", {"answer": f"answer of {task}"})


def write_timed(root: Path, log: str, events: list[tuple[str, dict, float, str]]) -> Path:
    """events: (type, data, seconds after START, trace id), written with sequences 1.."""
    path = root / (log + ".jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for i, (t, d, secs, trace) in enumerate(events):
        e = build_event(etype=lookup(t), data=d, source=f"wardrik://local/agents/{log}", subject=f"agents/{log}",
                        seq=i + 1, time_str=format_dt(START + timedelta(seconds=secs)), trace=trace,
                        span=new_span_id())
        out.append(dumps_line(e))
    path.write_bytes(b"".join(out))
    return path


def many_runs(n_runs: int, *, repeat_times: bool = True) -> list[tuple[str, dict, float, str]]:
    """n runs of a few events each; times step by a second, some repeated (a clock that
    stepped back repeats the last time); every third run fails, and a tool call in each fails."""
    ev: list[tuple[str, dict, float, str]] = []
    secs = 0.0
    for r in range(n_runs):
        trace = f"{r:032x}"

        def add(t: str, d: dict, trace: str = trace) -> None:
            nonlocal secs
            ev.append((t, d, secs, trace))
            secs += 0.0 if (repeat_times and len(ev) % 7 == 0) else 1.0
        add("message.received", {"message": {"id": f"in{r}"}})
        add("run.started", {"run": {"id": trace, "message_ids": [f"in{r}"]}, "task": f"task {r}"})
        add("message.started", {"message": {"id": f"m{r}"}})
        add("message.completed", {"message": {"id": f"m{r}"}})
        add("tool_call.started", {"tool": {"name": "bash", "call": {"id": f"c{r}"}}})
        add("tool_call.failed", {"tool": {"call": {"id": f"c{r}"}}, "error": {"message": f"exit {r}\ntrace"}})
        add("trigger.fired", {"trigger": {"name": "cron"}})  # a type no built-in view reads
        if r % 3 == 2:
            add("run.failed", {"error": {"message": f"run {r} failed"}})
        else:
            add("run.completed", {"answer": f"answer {r}"})
    return ev


def reference(path: Path, spec: str, *, since: str | None = None, at: int | None = None, select=None):
    """The selected fold, computed here from every line of the file: (through, state)."""
    view = VIEWS[spec]()
    types = view.types | {"wardrik." + t for t in view.types}
    state = view.initial()
    through = 0
    for raw in path.read_bytes().splitlines():
        e = orjson.loads(raw)
        seq = int(e["sequence"])
        if at is not None and seq > at:
            break
        through = seq
        if e["type"] not in types or (since is not None and e["time"] < since):
            continue
        if select is not None and not select(e):
            continue
        state = view.apply(state, copy.deepcopy(e))
    fin = getattr(view, "finish", None)
    return through, (fin(state, through) if fin else state)


def time_of(path: Path, seq: int) -> str:
    return orjson.loads(path.read_bytes().splitlines()[seq - 1])["time"]


# -- select --------------------------------------------------------------------------------
def test_select_keeps_only_one_runs_events(root, cli):
    a_run(cli, RUN_A, "alpha", 2, "completed")
    a_run(cli, RUN_B, "beta", 1, "failed")
    a_run(cli, RUN_C, "gamma", 3, "completed")
    last = len((root / "acme" / "t.jsonl").read_bytes().splitlines())

    whole = fold(Root(root), "acme/t", "state")
    assert whole.state["task"] == "gamma" and whole.state["answer"] == "answer of gamma"

    a = fold(Root(root), "acme/t", "state", select=run_of(RUN_A[:8]))
    assert a.state == {"status": "completed", "task": "alpha", "turns": 1, "tool_calls": 2,
                       "answer": "answer of alpha", "applied_through": last}
    assert a.through == last  # the last sequence read, not the last one selected

    b = fold(Root(root), "acme/t", "state", select=run_of(RUN_B))
    assert b.state["status"] == "failed" and b.state["task"] == "beta" and b.state["tool_calls"] == 1
    assert b.state["answer"] is None

    tl = fold(Root(root), "acme/t", "timeline", select=run_of(RUN_B[:12]))
    runs = tl.state["runs"]
    assert [r["run"] for r in runs] == [RUN_B]
    assert runs[0]["status"] == "failed" and runs[0]["error"] == "beta broke"
    assert [(i["kind"], i["id"]) for i in runs[0]["items"]] == [("model", "m-beta"), ("tool", "beta-0")]

    none = fold(Root(root), "acme/t", "state", select=run_of("f" * 32))
    assert none.state["status"] == "empty" and none.through == last


def test_select_raising_is_its_own_error_not_a_view_failure(root, cli):
    a_run(cli, RUN_A, "alpha", 1, "completed")

    class Boom(Exception):
        pass

    def select(e):
        raise Boom("no")
    with pytest.raises(Boom):
        fold(Root(root), "acme/t", "state", select=select)


def test_select_on_seed_lines_and_since_refused_there(root):
    tgt = target(Root(root), str(SEED_FIXTURE))
    whole = fold_target(tgt, StateView(), "state")
    assert whole.state["status"] == "completed" and whole.state["tool_calls"] == 3
    no_tools = fold_target(tgt, StateView(), "state", select=lambda e: e["type"] != "tool.returned")
    assert no_tools.state["tool_calls"] == 0 and no_tools.state["turns"] == whole.state["turns"]
    assert no_tools.through == whole.through == 11
    with pytest.raises(BadInput, match="no\\s+time"):
        fold_target(tgt, StateView(), "state", since="2026-10-22T09:00:00.000000Z")


# -- since ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["state", "timeline", "activity"])
def test_since_equals_the_fold_of_the_events_at_or_after_it(root, spec):
    path = write_timed(root, "acme/t", many_runs(400))  # 3600 events
    n = len(path.read_bytes().splitlines())
    first, last = time_of(path, 1), time_of(path, n)
    for since in (first, "2026-10-22T08:00:00.000000Z", time_of(path, 1000), time_of(path, 2801),
                  time_of(path, n - 3), last, "2026-10-23T00:00:00.000000Z",
                  # between two stored times
                  time_of(path, 2000)[:-7] + "500000Z"):
        res = fold_target(lib_target(root), VIEWS[spec](), spec, since=since)
        through, state = reference(path, spec, since=since)
        assert (res.through, res.state) == (through, state), since
        assert res.through == n
    # It seeks: from three quarters in, about a quarter of the lines is read.
    res = fold_target(lib_target(root), VIEWS[spec](), spec, since=time_of(path, 2701))
    assert res.events_read <= n - 2700 + 1


def test_since_and_select_together(root):
    path = write_timed(root, "acme/t", many_runs(60))
    since = time_of(path, 200)
    for r in (0, 20, 25, 59):
        sel = run_of(f"{r:032x}")
        for spec in VIEWS:
            res = fold_target(lib_target(root), VIEWS[spec](), spec, since=since, select=sel)
            assert (res.through, res.state) == reference(path, spec, since=since, select=sel), (r, spec)
    # a run that began before ``since``: only its events at or after it
    tl = fold_target(lib_target(root), TimelineView(), "timeline", since=since, select=run_of(f"{24:032x}"))
    assert tl.state == reference(path, "timeline", since=since, select=run_of(f"{24:032x}"))[1]


def test_since_on_a_log_whose_times_are_not_sorted_is_still_exact(root):
    ev = many_runs(100, repeat_times=False)
    ev[0] = (ev[0][0], ev[0][1], 10_000.0, ev[0][3])  # the first line is later than the rest
    path = write_timed(root, "acme/t", ev)
    since = time_of(path, 500)
    for spec in VIEWS:
        res = fold_target(lib_target(root), VIEWS[spec](), spec, since=since)
        assert (res.through, res.state) == reference(path, spec, since=since)
    # the late first event counts: it is at or after ``since``
    st = fold_target(lib_target(root), StateView(), "state", since=since,
                     select=lambda e: e["type"] == "wardrik.message.received")
    assert st.state["applied_through"] == len(ev)


def test_since_must_be_a_stored_time(root, cli):
    a_run(cli, RUN_A, "alpha", 0, "completed")
    for bad in ("2026-10-22T09:00:00Z", "2026-10-22", "15m", "", "2026-10-22T09:00:00.000000+00:00"):
        with pytest.raises(BadInput):
            fold(Root(root), "acme/t", "state", since=bad)


# -- --at with since -----------------------------------------------------------------------
def test_at_with_since(root):
    path = write_timed(root, "acme/t", many_runs(50, repeat_times=False))
    n = len(path.read_bytes().splitlines())
    since = time_of(path, 100)
    for at in (0, 1, 50, 99, 100, 101, 250, n - 1, n):
        for spec in VIEWS:
            res = fold_target(lib_target(root), VIEWS[spec](), spec, since=since, at=at)
            assert (res.through, res.state) == reference(path, spec, since=since, at=at), (at, spec)
            assert res.through == at
    # at before since: nothing selected, the fold is through --at all the same
    st = fold_target(lib_target(root), StateView(), "state", since=since, at=60)
    assert st.state == {"status": "empty", "task": None, "turns": 0, "tool_calls": 0, "answer": None,
                        "applied_through": 60}
    with pytest.raises(BadInput, match="past the end"):
        fold_target(lib_target(root), StateView(), "state", since=since, at=n + 1)


# -- checkpoints ---------------------------------------------------------------------------
def test_a_selected_fold_writes_no_checkpoint(root, cli):
    a_run(cli, RUN_A, "alpha", 2, "completed")
    a_run(cli, RUN_B, "beta", 1, "failed")
    t0 = time_of(root / "acme" / "t.jsonl", 1)
    for spec in VIEWS:
        res = fold(Root(root), "acme/t", spec, since=t0)
        assert not res.saved and res.from_checkpoint is None
        res = fold(Root(root), "acme/t", spec, select=run_of(RUN_A))
        assert not res.saved and res.from_checkpoint is None
    assert ck_files(root) == {}
    # the CLI's whole fold does write one (so the check above can fail)
    assert cli("fold", "acme/t", "-F", "json").returncode == 0
    assert list(ck_files(root)) == [os.path.join("acme", "t@state.json")]


def test_a_selected_fold_neither_uses_nor_replaces_a_checkpoint(root, cli):
    a_run(cli, RUN_A, "alpha", 2, "completed")
    a_run(cli, RUN_B, "beta", 1, "failed")
    for spec in VIEWS:
        assert fold(Root(root), "acme/t", spec).saved
    # Poison the saved states, sealed again with this user's key (store.seal: a checkpoint
    # this user's wardrik did not write is never believed): a fold that trusted them would show it.
    for rel in ck_files(root):
        p = ck_dir(root) / rel
        doc = orjson.loads(p.read_bytes())
        del doc["seal"]
        if rel.endswith("@state.json"):
            doc["state"]["task"] = "POISON"
        elif rel.endswith("@timeline.json"):
            doc["state"]["earlier_runs"] = 999
        else:
            doc["state"]["pending"] = ["POISON"]
        p.write_bytes(seal(SEAL_KIND, orjson.dumps(doc)))
    poisoned = ck_files(root)
    # more to fold (a save would be due), none of it undoing the poison
    append(cli, "acme/t", "message.completed", {"message": {"id": "late"}})
    append(cli, "acme/t", "trigger.fired", {"trigger": {"name": "cron"}})
    poisoned_fold = {spec: fold(Root(root), "acme/t", spec, save_checkpoints=False) for spec in VIEWS}
    assert poisoned_fold["state"].state["task"] == "POISON"  # the unselected fold uses them
    assert poisoned_fold["timeline"].state["earlier_runs"] == 999
    assert poisoned_fold["activity"].state["pending"] == ["POISON"]
    t0 = time_of(root / "acme" / "t.jsonl", 1)
    everything = {spec: fold(Root(root), "acme/t", spec, use_checkpoints=False, save_checkpoints=False).state
                  for spec in VIEWS}
    for spec in VIEWS:
        for kw in ({"select": lambda e: True}, {"since": t0}, {"since": t0, "select": lambda e: True}):
            res = fold(Root(root), "acme/t", spec, **kw)
            assert res.from_checkpoint is None and not res.saved
            assert res.state == everything[spec] != poisoned_fold[spec].state, (spec, kw)
    assert ck_files(root) == poisoned  # untouched


# -- the timeline's error text -------------------------------------------------------------
HOSTILE = "\x1b]0;title\x07 boom \x9b2J\u202eevil"


def failing_log(cli) -> None:
    append(cli, "acme/t", "run.started", {"run": {"id": RUN_A}, "task": "deploy"})
    append(cli, "acme/t", "tool_call.started", {"tool": {"name": "bash", "call": {"id": "c1"}}})
    append(cli, "acme/t", "tool_call.failed", {"tool": {"call": {"id": "c1"}},
                                                "error": {"message": "permission denied\n  at /etc/x"}})
    append(cli, "acme/t", "tool_call.started", {"tool": {"name": "curl", "call": {"id": "c2"}}})
    append(cli, "acme/t", "tool_call.failed", {"tool": {"call": {"id": "c2"}}, "error": "y" * 300})
    append(cli, "acme/t", "tool_call.started", {"tool": {"name": "sh", "call": {"id": "c3"}}})
    append(cli, "acme/t", "tool_call.failed", {"tool": {"call": {"id": "c3"}}})  # no error text
    append(cli, "acme/t", "tool_call.failed", {"tool": {"name": "evil", "call": {"id": "c4"}},  # no start
                                                "error": {"message": HOSTILE}})
    append(cli, "acme/t", "tool_call.started", {"tool": {"name": "ok", "call": {"id": "c5"}}})
    append(cli, "acme/t", "tool_call.completed", {"tool": {"call": {"id": "c5"}}, "error": "not an error"})
    append(cli, "acme/t", "run.failed", {"error": {"message": "\n\ntool bash failed: permission denied"}})


def test_timeline_json_has_the_error_text(root, cli):
    failing_log(cli)
    out = orjson.loads(cli("fold", "acme/t", "--view", "timeline", "-F", "json").stdout)
    run = out["state"]["runs"][0]
    assert run["status"] == "failed" and run["error"] == "tool bash failed: permission denied"
    items = {i["id"]: i for i in run["items"]}
    assert items["c1"]["status"] == "failed" and items["c1"]["error"] == "permission denied …"
    assert items["c2"]["error"] == "y" * (ERROR_CHARS - 1) + "…" and len(items["c2"]["error"]) == ERROR_CHARS
    assert "error" not in items["c3"] and items["c3"]["status"] == "failed"
    assert items["c4"]["error"] == HOSTILE and items["c4"]["name"] == "evil"  # the data as it is, in JSON
    assert "error" not in items["c5"] and items["c5"]["status"] == "completed"
    # from a checkpoint too (the second fold resumes)
    again = fold(Root(root), "acme/t", "timeline")
    assert again.from_checkpoint is not None and again.state == out["state"]


def test_error_text_short_form():
    assert error_text({"error": {"message": "a\nb"}}) == "a …"
    assert error_text({"error": {"message": "  only  "}}) == "only"
    assert error_text({"error": {"code": 7}}) == '{"code": 7}'
    assert error_text({"error": {"message": "", "code": 7}}) == '{"message": "", "code": 7}'
    assert error_text({"error": 42}) == "42"
    assert error_text({"error": None}) is None and error_text({}) is None and error_text({"error": "\n \n"}) is None
    assert error_text({"error": "z" * 500}, limit=10) == "z" * 9 + "…"
    deep: dict = {}
    cur = deep
    for _ in range(5000):
        cur["x"] = {}
        cur = cur["x"]
    assert error_text({"error": deep})  # never raises


def test_timeline_pretty_shows_the_error_escaped(root, cli):
    failing_log(cli)
    p = cli("fold", "acme/t", "--view", "timeline", "--format", "pretty", env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    rows = out.splitlines()
    c1 = next(r for r in rows if " c1 " in r)
    assert "tool bash" in c1 and "failed" in c1 and "— error: permission denied …" in c1
    c2 = next(r for r in rows if " c2 " in r)
    assert "— error: yyyy" in c2
    c3 = next(r for r in rows if " c3 " in r)
    assert "error" not in c3
    head = next(r for r in rows if "run aaaaaaaa" in r)
    assert "failed" in head and "— error: tool bash failed: permission denied" in head
    # hostile text: no control reaches the terminal; every one is shown escaped (cli.safe_text)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    c4 = next(r for r in rows if " c4 " in r)
    assert "— error: \\x1b]0;title\\x07 boom \\x9b2J\\u202eevil" in c4
    # with colours forced on a terminal, still nothing but the renderer's own colours
    p = cli("--color", "always", "fold", "acme/t", "--view", "timeline", "-F", "pretty",
            env={"COLUMNS": "200", "NO_COLOR": "", "TERM": "xterm"})
    raw = p.stdout
    rest = re.sub(rb"\x1b\[[0-9;]*m", b"", raw)
    assert b"\x1b" not in rest and b"\x07" not in rest and b"error: \\x1b]0;title\\x07 boom" in rest


def test_timeline_version_changed_so_old_checkpoints_are_not_trusted():
    assert TimelineView.version != "timeline/1"


def test_view_failure_is_still_a_view_failure_with_select(root, cli):
    a_run(cli, RUN_A, "alpha", 1, "completed")

    class Bad:
        def initial(self):
            return {}

        def apply(self, s, e):
            raise KeyError("k")
    with pytest.raises(ViewFailed, match="failed at sequence 1"):
        fold_target(lib_target(root), Bad(), "t:Bad", select=lambda e: True)
