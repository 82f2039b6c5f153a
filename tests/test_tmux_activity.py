"""Issue 13 in a real terminal (tmux): `activity --watch` while a run is appended step by step.

After each step the screen must say exactly what the agent is doing (a model call that
returned is not shown as doing; a run just started shows as the run, not idle; the last
run's outcome after it ends), and the header and every column stay where they were. The
screen is polled up to a generous ceiling (never a sleep as an assertion); Ctrl-C ends the
watch with exit 0.
"""
from __future__ import annotations

import os
import re

import pytest

from conftest import WARDRIK
from foldhelp import TRACE
from test_tmux import TMUX, Term
from wardrik_cli import Root, append_event

pytestmark = [pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed"), pytest.mark.subprocess]

LOG, OTHER = "acme/t", "acme/other-agent"
FOR = r"(?:\d+ ms|\d+(?:\.\d)? s)"  # the "for" of something begun within the test
RUN = r"run 0af76519 · Why is checkout slow\?"


@pytest.fixture
def term(tmp_path):
    t = Term(tmp_path, width=120, height=20)
    try:
        yield t
    finally:
        t.kill()


class Screen:
    """The watch's screen: its header line, the columns it places, and each log's row."""

    def __init__(self, text: str):
        self.text = text
        lines = text.splitlines()
        self.head = next(ln for ln in lines if re.match(r"log +doing +for ", ln))
        self.columns = {m.group(0): m.start() for m in re.finditer(r"\S+(?: \S+)*", self.head)}
        self.rows = {ln.split(" ", 1)[0]: ln.rstrip() for ln in lines if ln.startswith("acme/")}

    def cells(self, log: str) -> dict[str, tuple[int, int, str]]:
        """A row's cells by header: (start, end, text); cells hold single spaces only."""
        found = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"\S+(?: \S+)*", self.rows[log])]
        assert len(found) == len(self.columns), (self.head, self.rows[log])
        return dict(zip(self.columns, found, strict=True))


def placed_as(screen: Screen, first: Screen) -> None:
    """The header is the first one, letter for letter, and every cell sits in its column:
    left-aligned cells start under their header, "for" and "pending" end under theirs."""
    assert screen.head == first.head, f"the header moved:\n{first.head}\n{screen.head}"
    for log in screen.rows:
        for name, (start, end, _text) in screen.cells(log).items():
            at = first.columns[name]
            if name in ("for", "pending"):
                assert end == at + len(name), (name, screen.text)
            else:
                assert start == at, (name, screen.text)


def test_watch_follows_a_run_exactly_and_holds_its_columns(term, root):
    r = Root(root)
    append_event(r, OTHER, "run.started", {"task": "digest"})
    append_event(r, OTHER, "run.completed", {"answer": "ok"})
    append_event(r, LOG, "message.received", {"message": {"id": "m1"}})
    term.send(f"{WARDRIK} --root {root} activity 'acme/*' --watch; echo rc=$?")
    first = Screen(term.wait_for(r"^acme/t +idle +– +– +– +1$"))
    assert list(first.columns) == ["log", "doing", "for", "since", "last run", "pending"]
    assert re.fullmatch(r"acme/other-agent +idle +– +– +completed \d+s ago +0", first.rows[OTHER])
    screens = [first]

    def step(type_, data, row):
        ev = append_event(r, LOG, type_, data)
        s = Screen(term.wait_for(r"^acme/t +" + row + r"$"))
        assert re.fullmatch(r"acme/t +" + row, s.rows[LOG]), s.text
        placed_as(s, first)
        screens.append(s)
        return ev, s

    run, s = step("run.started", {"run": {"id": TRACE, "message_ids": ["m1"]}, "task": "Why is checkout slow?"},
                  rf"{RUN} +{FOR} +\d\d:\d\d:\d\d +– +0")
    assert s.cells(LOG)["since"][2] == run["time"][11:19]  # since the run began

    call, s = step("message.started", {"message": {"id": "x3a"}, "model": "m-large"},
                   rf"model call x3a · m-large +{FOR} +\d\d:\d\d:\d\d +– +0")
    assert s.cells(LOG)["since"][2] == call["time"][11:19]

    # The report: "model call x3a 53 s" after the call had completed. Now the run shows,
    # since the run began, and stays so through later ticks of the clock.
    _, s = step("message.completed", {"message": {"id": "x3a"}}, rf"{RUN} +{FOR} +\d\d:\d\d:\d\d +– +0")
    assert s.cells(LOG)["since"][2] == run["time"][11:19] and "model call" not in s.text
    drawn_at = re.search(r"activity at (\S+)", s.text).group(1)
    later = Screen(term.wait_for(r"activity at (?!" + re.escape(drawn_at) + r"\b)"))
    assert "model call" not in later.text and re.fullmatch(rf"acme/t +{RUN} .*", later.rows[LOG])
    placed_as(later, first)

    tool, s = step("tool_call.started", {"tool": {"name": "grep_logs", "call": {"id": "t77"}}},
                   rf"tool grep_logs \(t77\) +{FOR} +\d\d:\d\d:\d\d +– +0")
    assert s.cells(LOG)["since"][2] == tool["time"][11:19]
    step("tool_call.completed", {"tool": {"call": {"id": "t77"}}}, rf"{RUN} +{FOR} +\d\d:\d\d:\d\d +– +0")

    step("run.completed", {"answer": "the pool"}, r"idle +– +– +completed \d+s ago +0")
    step("run.started", {"task": "again"}, rf"run [0-9a-f]{{8}} · again +{FOR} +\d\d:\d\d:\d\d +completed \d+s ago +0")
    step("run.failed", {"error": {"message": "boom"}}, r"idle +– +– +failed \d+s ago +0")

    assert len({s.head for s in screens}) == 1
    term.keys("C-c")
    out = term.wait_for(r"rc=\d+")
    assert "rc=0" in out and "Traceback" not in out and "KeyboardInterrupt" not in out
