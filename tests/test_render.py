"""Rendering: the summary line of every protocol type, the row layout, colour, --local, -v, deltas."""
from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from conftest import run_cli
from wardrik_cli.cli.render import events as render
from wardrik_cli.protocol.catalogue import catalogue
from wardrik_cli.cli.render.summary import family, summarize

SAMPLE = Path(__file__).resolve().parent.parent / "sample_ledgers"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# One event per protocol type, with what its summary line must say.
CASES = {
    "run.started": ({"run": {"id": "f2c6a2b45b3d240a9ca194f070c4a976", "message_ids": ["msg_1"]}, "task": "Find the cause"},
                    ["run f2c6a2b4", "task: Find the cause", "takes msg_1"]),
    "run.completed": ({"answer": "Rollback of v841 fixed it: checkout p99 is back to ~200 ms. Incident closed now for good."},
                      ["answer: Rollback of v841 fixed it:", "…"]),
    "run.failed": ({"error": {"message": "permission denied"}}, ["error: permission denied"]),
    "message.received": ({"message": {"id": "msg_1"}, "from": "pagerduty", "text": "p99 spiked"},
                         ["msg_1", "from pagerduty", "p99 spiked"]),
    "message.started": ({"message": {"id": "m1"}, "model": "claude"}, ["m1", "claude"]),
    "message.completed": ({"message": {"id": "m1"}, "text": "Looking at metrics", "stop_reason": "tool_use"},
                          ["m1", "Looking at metrics", "tool_use"]),
    "reasoning.completed": ({"message": {"id": "m1"}, "text": "deploys first"}, ["m1", "deploys first"]),
    "tool_call.started": ({"tool": {"name": "query_metrics", "call": {"id": "t1"}, "args": {"service": "checkout"}}},
                          ["query_metrics (t1)", "service=checkout"]),
    "tool_call.completed": ({"tool": {"name": "query_metrics", "call": {"id": "t1"}}, "output": "p99 1.8 s"},
                            ["query_metrics (t1)", "→ p99 1.8 s"]),
    "tool_call.failed": ({"tool": {"name": "fetch", "call": {"id": "t2"}}, "error": {"message": "timeout"}},
                         ["fetch (t2)", "error: timeout"]),
    "input.requested": ({"request": {"id": "req_1", "prompt": "Close the incident?"}}, ["req_1", "Close the incident?"]),
    "input.received": ({"request": {"id": "req_1"}, "answer": "yes, close it"}, ["req_1", "yes, close it"]),
    "trigger.fired": ({"trigger": {"name": "daily"}, "status": "asked"}, ["daily", "asked"]),
    "message.delta": ({"message": {"id": "m1"}, "delta": "The roll"}, ["m1", "The roll"]),
    "reasoning.delta": ({"message": {"id": "m1"}, "delta": "hmm"}, ["m1", "hmm"]),
    "tool_call.progress": ({"tool": {"name": "search", "call": {"id": "t3"}}, "message": "40% done"},
                           ["search (t3)", "40% done"]),
    "activity.changed": ({"doing": [{"type": "wardrik.tool_call.started",
                                     "data": {"tool": {"name": "grep", "call": {"id": "c1"}}}}], "pending": 2},
                         ["tool grep (c1)", "pending 2"]),
    "agent.created": ({"agent": {"id": "acme/triage"}, "actor": "alice@acme.io", "assumed_by": []},
                      ["acme/triage by alice@acme.io"]),
    "agent.configured": ({"agent": {"id": "acme/billing"}, "actor": "bob", "assumed_by": ["svc:prov"]},
                         ["acme/billing by bob via svc:prov"]),
    "agent.forgotten": ({"agent": {"id": "acme/old"}, "actor": "carol", "assumed_by": ["sre", "svc:janitor"]},
                        ["acme/old by carol via sre → svc:janitor"]),
    "trigger.created": ({"trigger": {"name": "daily"}, "actor": "alice"}, ["daily by alice"]),
    "trigger.deleted": ({"trigger": {"name": "daily"}, "actor": "alice"}, ["daily by alice"]),
    "ledger.compacted": ({"logs": {"acme/a": 30, "acme/b": 10}, "retention": "30d", "actor": "cron@h"},
                         ["dropped 40", "acme/a 30", "by cron@h"]),
    "events.dropped": ({"log": "acme/triage", "count": 12}, ["12 events of acme/triage before this point are not here"]),
}


def test_every_protocol_type_has_a_case():
    assert sorted(CASES) == sorted(t.name for t in catalogue())


@pytest.mark.parametrize("name", sorted(CASES))
def test_summary_line(name):
    data, wanted = CASES[name]
    line = summarize({"type": "wardrik." + name, "data": data})
    assert "\n" not in line
    for w in wanted:
        assert w in line, (name, line)


def test_families_are_the_documented_ones():
    assert family("wardrik.reasoning.delta") == "message"
    assert family("trigger.created") == "audit" and family("trigger.fired") == "trigger"
    assert family("wardrik.events.dropped") == "dropped" and family("agent.forgotten") == "audit"
    assert {family(t.name) for t in catalogue()} <= set(render.STYLES)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(CASES)),
       st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=10))
def test_summary_never_raises_and_stays_one_line(name, data):
    for d in (data, {"tool": data, "message": data, "run": data, "answer": data, "doing": data}):
        line = summarize({"type": "wardrik." + name, "data": d})
        assert isinstance(line, str) and "\n" not in line and "\r" not in line


class Item:
    def __init__(self, log, event):
        self.log, self.event, self.raw = log, event, b""
        self.seq = int(event["sequence"]) if event.get("sequence") else None


def _console(width=80):
    from rich.console import Console
    return Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)


def _ev(seq, typ, data, t="2026-10-22T09:00:05.200000Z"):
    e = {"type": "wardrik." + typ, "time": t, "data": data}
    if seq is not None:
        e["sequence"] = f"{seq:012d}"
    return e


def test_rows_never_cut_time_log_seq_or_type_at_80_columns():
    c = _console(80)
    long_task = "a very long task description " * 10
    items = [Item("acme/support", _ev(9999, "tool_call.completed", {"tool": {"name": "lookup_refund", "call": {"id": "s1t2"}}, "output": long_task})),
             Item("acme/triage", _ev(2, "run.started", {"task": long_task}))]
    render.print_events(items, c=c)
    lines = c.file.getvalue().splitlines()
    assert all(len(l) <= 80 for l in lines)
    rows = [l for l in lines if l.startswith("09:00:05")]
    assert len(rows) == 2
    assert "acme/support 9999 tool_call.completed  lookup_refund (s1t2) → a very" in rows[0]
    assert rows[0].endswith("…") and "run.started" in rows[1]
    assert lines[1].startswith("2026-10-22 UTC ")  # the day line under the header


def test_sparse_events_show_the_date_on_every_row():
    c = _console(80)
    items = [Item("audit", _ev(i, "agent.created", {"agent": {"id": f"a{i}"}, "actor": "x"}, f"2026-10-2{i}T16:00:00.000000Z"))
             for i in range(1, 5)]
    render.print_events(items, c=c)
    out = c.file.getvalue()
    assert "2026-10-21 16:00:00 audit   1 agent.created" in out and "UTC ─" not in out


def test_follow_printer_prints_a_streamed_message_once_whole_on_a_pipe():
    """Not a terminal: no cursor movement; the deltas of a message become one labelled row
    when its message.completed comes (the live region on a terminal: tests/test_tail_screen.py)."""
    from wardrik_cli.cli.render.streams import FollowPrinter

    c = _console(100)
    p = FollowPrinter(["acme/t"], c=c)
    p(Item("acme/t", _ev(5, "message.started", {"message": {"id": "m9"}})))
    for chunk in ["The roll", "back of v841 ", "fixed it.\nNext: watch ", "p99 for an hour or two, ",
                  "then close the incident and write the report for the team."]:
        p(Item("acme/t", _ev(None, "message.delta", {"message": {"id": "m9"}, "delta": chunk})))
    assert len(c.file.getvalue().splitlines()) == 2  # the day line and message.started: nothing while it streams
    p(Item("acme/t", _ev(6, "message.completed", {"message": {"id": "m9"}})))
    p(Item("acme/t", {"type": "wardrik.events.dropped", "time": "2026-10-22T09:00:06.000000Z",
                      "data": {"log": "acme/t", "count": 3}}))
    p.close()
    lines = c.file.getvalue().splitlines()
    assert len(lines) == 5 and all(len(l) <= 100 for i, l in enumerate(lines) if i != 2)
    # whole, on one line (before: cut at the width, as if a file had one)
    assert re.fullmatch(r"09:00:05 acme/t +~ message\.delta +m9 ▸ The rollback of v841 fixed it\. Next: watch "
                        r"p99 for an hour or two, then close the incident and write the report for the team\.", lines[2])
    assert "\x1b" not in c.file.getvalue()
    assert "message.completed" in lines[3] and "⚠ 3 events of acme/t" in lines[4]
    assert " – events.dropped" in lines[4]


def test_a_streamed_message_on_a_pipe_comes_after_its_days_line_and_says_what_it_left_out():
    from wardrik_cli.cli.render.streams import KEEP, FollowPrinter

    c = _console(80)
    p = FollowPrinter(["acme/t"], c=c)
    p(Item("acme/t", _ev(None, "message.delta", {"message": {"id": "m1"}, "delta": "x" * (KEEP + 500)},
                         t="2026-10-23T01:00:00.000000Z")))
    p(Item("acme/t", _ev(7, "message.completed", {"message": {"id": "m1"}}, t="2026-10-23T01:00:01.000000Z")))
    p.close()
    lines = c.file.getvalue().splitlines()
    assert lines[0].startswith("2026-10-23 UTC ") and "message.delta" in lines[1], lines  # the day first
    assert lines[1].endswith("x" * 10 + "… (500 more characters)") and "message.completed" in lines[2]


def _copy(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    return dst


def test_colour_only_when_asked_or_on_a_terminal(tmp_path):
    root = _copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    plain = run_cli("page", "acme/triage", "-F", "pretty", root=root, env={"NO_COLOR": ""})
    assert plain.returncode == 0 and b"\x1b[" not in plain.stdout  # a pipe: no colour
    forced = run_cli("--color", "always", "page", "acme/triage", "-F", "pretty", root=root)
    assert b"\x1b[" in forced.stdout  # always wins, NO_COLOR (set by conftest) or not
    never = run_cli("--color", "never", "page", "acme/triage", "-F", "pretty", root=root, env=env)
    assert b"\x1b[" not in never.stdout
    assert ANSI.sub("", forced.stdout.decode()) .splitlines()[2:5] == never.stdout.decode().splitlines()[2:5]


@pytest.mark.subprocess
def test_no_color_is_honoured_on_a_terminal(tmp_path):
    """In a real pty: colour by default, none with NO_COLOR."""
    import pty
    import subprocess

    root = _copy(tmp_path)
    from conftest import WARDRIK
    outs = {}
    for name, extra in (("colour", {}), ("no_color", {"NO_COLOR": "1"})):
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update(extra, TERM="xterm-256color", COLUMNS="100")
        master, slave = pty.openpty()
        p = subprocess.Popen([WARDRIK, "--root", str(root), "page", "acme/triage", "--limit", "3"],
                             stdout=slave, stderr=slave, env=env)
        os.close(slave)
        buf = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
        p.wait(timeout=30)
        os.close(master)
        outs[name] = buf
    assert _colours(outs["colour"]) and b"message.received" in outs["colour"]
    # NO_COLOR (no-color.org) removes colour, and style too: no escape at all (bold and dim stayed)
    assert not _colours(outs["no_color"]) and b"message.received" in outs["no_color"]
    assert b"\x1b[" not in outs["no_color"]


def _colours(out: bytes) -> set:
    """The colour codes (foreground/background) among the SGR sequences of some output."""
    found = set()
    for params in re.findall(rb"\x1b\[([0-9;]*)m", out):
        for p in params.split(b";"):
            if p and (30 <= int(p) <= 49 or 90 <= int(p) <= 107):
                found.add(int(p))
    return found


def test_local_and_verbose(tmp_path):
    root = _copy(tmp_path)
    utc = run_cli("page", "acme/triage", "--limit", "2", "-F", "pretty", root=root).stdout.decode()
    assert "08:59:58" in utc and "2026-10-22 UTC" in utc
    tokyo = run_cli("--local", "page", "acme/triage", "--limit", "2", "-F", "pretty", root=root,
                    env={"TZ": "Asia/Tokyo"}).stdout.decode()
    assert "17:59:58" in tokyo and "2026-10-22 +09:00" in tokyo
    verbose = run_cli("-v", "page", "acme/triage", "--limit", "2", "-F", "pretty", root=root).stdout.decode()
    assert '"from": "pagerduty"' in verbose and '"message_ids": [' in verbose
    # -v does not change machine formats
    assert run_cli("-v", "page", "acme/triage", "--limit", "2", root=root).stdout == \
        run_cli("page", "acme/triage", "--limit", "2", root=root).stdout


def test_pretty_page_of_the_sample_at_80_columns(tmp_path):
    root = _copy(tmp_path)
    p = run_cli("page", "acme/*", "-F", "pretty", root=root, env={"COLUMNS": "80"})
    lines = p.stdout.decode().splitlines()
    assert p.returncode == 0 and lines[-1].startswith("next: ")
    rows = [l for l in lines if re.match(r"\d\d:\d\d:\d\d ", l)]
    assert len(rows) == 82
    assert all(len(l) <= 80 for l in lines[:-1])
    assert not any("2026-10-2…" in l for l in lines)
    # every type is shown whole
    assert all(re.match(r"\d\d:\d\d:\d\d acme/\w+ +\d+ [a-z_]+\.[a-z]+ ", l) for l in rows)


def test_check_and_types_pretty(tmp_path):
    root = _copy(tmp_path)
    with open(root / "acme" / "digest.jsonl", "ab") as f:
        f.write(b'{"half a line')
    p = run_cli("check", "-F", "pretty", root=root, env={"COLUMNS": "100"})
    out = p.stdout.decode()
    assert p.returncode == 0 and "warning:" in out and "acme/digest" in out and "1 warning" in out
    assert re.search(r"acme/triage +[\d.]+ kB +ok", out)
    t = run_cli("types", "-F", "pretty", root=root, env={"COLUMNS": "80"}).stdout.decode()
    assert all(name in t for name in CASES)


def test_a_completed_message_shows_its_tokens_and_cost():
    from wardrik_cli.cli.render.summary import summarize

    e = {"type": "wardrik.message.completed",
         "data": {"message": {"id": "m1"}, "usage": {"input_tokens": 1204, "output_tokens": 310}, "cost_usd": 0.0031}}
    assert summarize(e) == "m1 · 1,204 in · 310 out · $0.0031"
    bad = {"type": "wardrik.message.completed", "data": {"message": {"id": "m2"}, "usage": {"input_tokens": "x"}}}
    assert summarize(bad) == "m2"


def test_a_view_without_a_renderer_is_shown_as_json(tmp_path):
    """fold --view usage (or a custom view without render) in pretty: the state as JSON, as
    -o json gives it, not Python's repr (`None`, single quotes)."""
    root = _copy(tmp_path)
    p = run_cli("fold", "acme/triage", "--view", "usage", "-F", "pretty", root=root)
    assert p.returncode == 0, p.stderr
    body = p.stdout.decode().split("\n", 1)[1]
    assert orjson.loads(body) == orjson.loads(run_cli("fold", "acme/triage", "--view", "usage", "-F", "json",
                                                      root=root).stdout)["state"]
    assert "None" not in body and "'" not in body
