"""tail's screen (render.streams): fixed columns, a colour per log, one line per streamed
message, the note for a log that does not exist yet, and nothing raw reaching the terminal.

The region (open streams redrawn in place) is checked here through a tiny terminal model
(``Screen``) fed the exact bytes written; tests/test_tmux_streams.py checks it in tmux.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
import unicodedata

import pytest

from conftest import WARDRIK
from follow_util import LIVE_WAIT, Tailer, add

from wardrik_cli.cli.render import streams
from wardrik_cli.cli.render.console import _console_class
from wardrik_cli.cli.render.events import LOG_COLOURS, fit_log, log_style, log_width
from wardrik_cli.cli.render.streams import FollowPrinter

ROW = re.compile(r"^\d\d:\d\d:\d\d ")
SGR = re.compile(r"\x1b\[[0-9;]*m")


class Item:
    def __init__(self, log, event):
        self.log, self.event, self.raw = log, event, b""
        self.seq = int(event["sequence"]) if event.get("sequence") else None


def ev(seq, typ, data=None, t="2026-10-22T09:00:05.200000Z"):
    e = {"type": "wardrik." + typ, "time": t, "data": data if data is not None else {"trigger": {"name": "x"}}}
    if seq is not None:
        e["sequence"] = f"{seq:012d}"
    return e


def delta(mid, text, typ="message.delta"):
    return ev(None, typ, {"message": {"id": mid}, "delta": text})


def make_console(width=100, height=30, terminal=False, color=None):
    """Our console class (the one sanitiser on the way out), writing to a string."""
    return _console_class()(file=io.StringIO(), width=width, height=height, force_terminal=terminal,
                            color_system=color, highlight=False)


class Screen:
    """What a terminal shows after these bytes: text, CR, LF, CSI n A (up), CSI 2 K (erase
    line); colours ignored. Anything else that is a control fails the test."""

    def __init__(self) -> None:
        self.rows: list[str] = [""]
        self.y = self.x = 0

    def feed(self, data: str) -> Screen:
        i = 0
        while i < len(data):
            m = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])").match(data, i)
            if m:
                n, cmd = m.group(1), m.group(2)
                if cmd == "A":
                    self.y = max(0, self.y - int(n or 1))
                elif cmd == "K":
                    assert n == "2", m.group(0)
                    self.rows[self.y] = ""
                else:
                    assert cmd == "m", m.group(0)
                i = m.end()
                continue
            ch = data[i]
            if ch == "\r":
                self.x = 0
            elif ch == "\n":
                self.y, self.x = self.y + 1, 0
                while len(self.rows) <= self.y:
                    self.rows.append("")
            else:
                assert unicodedata.category(ch) not in ("Cc", "Cf"), repr(ch)
                row = self.rows[self.y].ljust(self.x)
                self.rows[self.y] = row[: self.x] + ch + row[self.x + 1:]
                self.x += 1
            i += 1
        return self

    def lines(self) -> list[str]:
        return [r.rstrip() for r in self.rows if r.strip()]


def type_col(line: str) -> int:
    m = re.search(r" (trigger\.fired|message\.\w+|activity\.changed|tool_call\.\w+) ", line)
    assert m, line
    return m.start(1)


# ---------------------------------------------------------------------------
# fixed columns
# ---------------------------------------------------------------------------
def test_columns_do_not_shift_as_sequences_grow_or_longer_logs_appear():
    c = make_console(100)
    p = FollowPrinter(["acme/a", "acme/checkout-live"], c=c)
    for seq in (9, 100, 100000):
        p(Item("acme/a", ev(seq, "trigger.fired")))
        p(Item("acme/checkout-live", ev(seq, "trigger.fired")))
    p(Item("acme/checkout-live", ev(None, "activity.changed", {"doing": [], "pending": 0})))
    p(Item("acme/a-log-made-later/with/a-much-longer-id", ev(1, "trigger.fired")))
    p.close()
    rows = [l for l in c.file.getvalue().splitlines() if ROW.match(l)]
    assert len(rows) == 8
    assert len({type_col(r) for r in rows}) == 1, "\n".join(rows)
    assert len({r.index(" x") for r in rows if "trigger.fired" in r}) == 1  # the summary too
    # sequences right-aligned: their last digits in one column
    assert len({r.index("9 trigger") if " 9 trigger" in r else r.index("0 trigger") for r in rows[:6]}) == 1
    # the later, longer id is cut in its middle, its end kept
    assert fit_log("acme/a-log-made-later/with/a-much-longer-id", 18) in rows[-1]
    assert "…" in rows[-1] and "-longer-id" in rows[-1]


def test_a_sequence_past_the_width_widens_the_column_from_then_on_only():
    c = make_console(100)
    p = FollowPrinter(["a"], c=c)
    for seq in (5, 1234567, 8):
        p(Item("a", ev(seq, "trigger.fired")))
    rows = [l for l in c.file.getvalue().splitlines() if ROW.match(l)]
    assert "1234567 trigger.fired" in rows[1]  # never cut
    assert type_col(rows[1]) == type_col(rows[2]) == type_col(rows[0]) + 1


def test_log_width_is_the_widest_at_start_within_bounds():
    assert log_width([], 100) == 12
    assert log_width(["acme/checkout-live"], 200) == 18
    assert log_width(["x" * 100], 100) == 25  # a quarter of the screen
    assert log_width(["x" * 100], 400) == 32
    assert fit_log("acme/a", 8) == "acme/a  "
    cut = fit_log("acme/prod/eu-west-1/checkout", 12)
    assert len(cut) == 12 and cut.endswith("checkout") and "…" in cut


def test_tail_rows_align_across_logs_and_sequences(root, cli):
    for i in range(12):
        add(root, "acme/a", f"a{i}")
    for i in range(3):
        add(root, "acme/checkout-live", f"b{i}")
    p = cli("tail", "acme/*", "-n", "15", "-F", "pretty", env={"COLUMNS": "100"})
    assert p.returncode == 0, p.stderr
    rows = [l for l in p.stdout.decode().splitlines() if ROW.match(l)]
    assert len(rows) == 15 and len({type_col(r) for r in rows}) == 1
    assert " acme/a" + " " * 12 + "     12 trigger.fired" in "\n".join(rows)  # padded to 18, the sequence to 6


@pytest.mark.subprocess
def test_tail_f_on_a_pipe_keeps_its_columns_for_later_logs(root):
    for i in range(9):
        add(root, "acme/a", str(i))
    t = Tailer(root, "acme/*", "-f", "-n", "1", "-F", "pretty", env={"COLUMNS": "100"})
    try:
        got = t.take(2)  # the day line, seq 9
        t.wait_registered()
        add(root, "acme/a", "ten")
        add(root, "acme/a-much-longer-log-id-made-later", "new")
        got += t.take(2)
    finally:
        assert t.stop() == 0
    rows = [l.decode() for l in got if ROW.match(l.decode())]
    assert len(rows) == 3 and len({type_col(r) for r in rows}) == 1, rows
    (later,) = [r for r in rows if r.endswith(" new")]  # two logs: in either order
    assert "…" in later and b"\x1b" not in b"".join(got)  # a pipe: no cursor movement, no colour


# ---------------------------------------------------------------------------
# a colour per log
# ---------------------------------------------------------------------------
def _sgr_of(colour: str) -> str:
    from rich.color import ColorSystem
    from rich.style import Style

    return SGR.match(Style.parse("bold " + colour).render("x", color_system=ColorSystem.STANDARD)).group(0)


def test_log_colour_is_stable_and_tells_logs_apart():
    assert len(set(LOG_COLOURS)) == len(LOG_COLOURS) > 6 and "red" not in LOG_COLOURS
    assert log_style("acme/checkout-live") == log_style("acme/checkout-live")
    assert log_style("acme/checkout-live") != log_style("acme/support-bot")
    # the same in another process, whatever its hash seed (not Python's salted hash())
    code = "from wardrik_cli.cli.render.events import log_style; print(log_style('acme/checkout-live'))"
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed)).stdout.strip()
        assert out == log_style("acme/checkout-live")
    # spread: many ids use most of the palette
    assert len({log_style(f"acme/agent-{i}") for i in range(60)}) == len(LOG_COLOURS)


def test_log_colour_only_when_colour_is_on(root, cli):
    add(root, "acme/checkout-live")
    add(root, "acme/support-bot")
    on = cli("--color", "always", "tail", "acme/*", "-F", "pretty").stdout.decode()
    for log in ("acme/checkout-live", "acme/support-bot"):
        assert re.search(re.escape(_sgr_of(log_style(log))) + re.escape(log), on), on
    off = cli("--color", "never", "tail", "acme/*", "-F", "pretty").stdout
    assert b"\x1b" not in off and b"acme/support-bot" in off


# ---------------------------------------------------------------------------
# streamed text: the region on a terminal
# ---------------------------------------------------------------------------
def _stream_two(p: FollowPrinter) -> tuple[str, str]:
    a = ["The roll", "back of v841 ", "fixed it: ", "p99 is ", "back to 210 ms."]
    b = ["Refund ", "approved ", "for order ", "5120; ", "customer told."]
    for x, y in zip(a, b, strict=True):
        p(Item("acme/checkout-live", delta("m1", x)))
        p(Item("acme/support-bot", delta("m2", y)))
    return "".join(a), "".join(b)


def test_region_one_labelled_line_per_message_however_they_interleave():
    c = make_console(140, terminal=True)
    p = FollowPrinter(["acme/checkout-live", "acme/support-bot"], c=c, region=True)
    p(Item("acme/checkout-live", ev(4, "message.started", {"message": {"id": "m1"}})))
    text_a, text_b = _stream_two(p)
    lines = Screen().feed(c.file.getvalue()).lines()
    assert len(lines) == 4, lines  # day line, the started row, one line per message
    assert re.match(r"09:00:05 acme/checkout-live +~ message\.delta +m1 ▸ " + re.escape(text_a) + "$", lines[2])
    assert re.match(r"09:00:05 acme/support-bot +~ message\.delta +m2 ▸ " + re.escape(text_b) + "$", lines[3])
    assert type_col(lines[1]) == type_col(lines[2]) == type_col(lines[3])
    # the kept message.completed prints above; that message's line goes, the other stays
    p(Item("acme/checkout-live", ev(5, "message.completed", {"message": {"id": "m1"}, "text": "done"})))
    lines = Screen().feed(c.file.getvalue()).lines()
    assert len(lines) == 4 and "5 message.completed" in lines[2] and "m2 ▸ " + text_b in lines[3], lines
    p(Item("acme/support-bot", ev(9, "run.completed", {"answer": "ok"})))  # a run's end ends its streams
    lines = Screen().feed(c.file.getvalue()).lines()
    assert len(lines) == 4 and "run.completed" in lines[3] and not any("▸" in l for l in lines), lines
    p.close()


def test_region_shows_the_newest_text_cut_to_the_width():
    c = make_console(80, terminal=True)
    p = FollowPrinter(["acme/a"], c=c, region=True)
    words = [f"word{i} " for i in range(40)]
    for w in words:
        p(Item("acme/a", delta("m1", w)))
    (line,) = Screen().feed(c.file.getvalue()).lines()
    assert len(line) <= 79 and line.endswith("word38 word39") and "▸ …" in line


def test_region_caps_its_height_and_counts_the_rest():
    c = make_console(100, height=10, terminal=True)  # room for 5 lines
    p = FollowPrinter(["acme/a"], c=c, region=True)
    for i in range(7):
        p(Item(f"acme/a{i}", delta("m", f"text {i}")))
    lines = Screen().feed(c.file.getvalue()).lines()
    assert len(lines) == 5 and lines[-1].strip() == "… 3 more streaming", lines
    assert [re.search(r"text (\d)", l).group(1) for l in lines[:4]] == ["3", "4", "5", "6"]  # the most recent


def test_region_line_goes_when_the_message_goes_idle(monkeypatch):
    monkeypatch.setattr(streams, "IDLE_S", 0.3)
    monkeypatch.setattr(streams, "TICK_S", 0.05)
    c = make_console(100, terminal=True)
    p = FollowPrinter(["acme/a"], c=c, region=True)
    try:
        p(Item("acme/a", ev(1, "trigger.fired")))
        p(Item("acme/a", delta("m1", "half a thought")))
        assert any("half a thought" in l for l in Screen().feed(c.file.getvalue()).lines())
        deadline = time.monotonic() + LIVE_WAIT  # the ticker ends it with no event arriving
        while any("▸" in l for l in Screen().feed(c.file.getvalue()).lines()):
            assert time.monotonic() < deadline, "the idle line never went"
            time.sleep(0.05)
        assert len(Screen().feed(c.file.getvalue()).lines()) == 2
    finally:
        p.close()


def test_a_warning_prints_above_the_region_and_leaves_it_whole():
    c = make_console(100, terminal=True)
    p = FollowPrinter(["acme/a"], c=c, region=True,
                      warn=lambda m: (c.file.write(f"warning: {m}\n"), c.file.flush()))  # stderr on the same terminal
    p(Item("acme/a", delta("m1", "streaming on")))
    p.warn("acme/b: the log was deleted")
    p(Item("acme/a", delta("m1", " and on")))
    lines = Screen().feed(c.file.getvalue()).lines()
    assert lines[0] == "warning: acme/b: the log was deleted" and lines[1].endswith("m1 ▸ streaming on and on")
    assert len(lines) == 2


HOSTILE = "\x1b]0;pwned\x07 \x1b[2J \x9b2J \u202eevil \x00 a\u200bb \r\x08\x7f [bold red]x[/] tab\there\nnext line"


@pytest.mark.parametrize("region", [True, False])
def test_delta_text_is_sanitised(region):
    c = make_console(300, terminal=region, color="standard")
    p = FollowPrinter(["acme/a"], c=c, region=region)
    p(Item("acme/a", delta("m\x1b[31m1", HOSTILE)))
    p(Item("acme/a", delta("m\x1b[31m1", "!", "reasoning.delta")))
    while_open = Screen().feed(c.file.getvalue()).lines()
    p(Item("acme/a", ev(2, "message.completed", {"message": {"id": "m\x1b[31m1"}})))
    raw = c.file.getvalue()
    rest = SGR.sub("", raw)
    if region:
        rest = re.sub(r"\x1b\[1A\x1b\[2K|\r", "", rest)  # the region's own cursor movement, and nothing else
    bad = [ch for ch in rest if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]
    assert not bad, (bad, rest)
    shown = while_open if region else rest.splitlines()  # a pipe: printed once whole
    (line,) = [l for l in shown if "message.delta" in l]
    assert "\\x1b]0;pwned\\x07" in line and "\\u202eevil" in line and "[bold red]x[/]" in line
    assert "tab here next line" in line  # whitespace runs, newlines too, are one space on one line
    assert "m\\x1b[31m1 ▸ " in line
    assert any(l.endswith("reasoning.delta      m\\x1b[31m1 ▸ !") for l in shown)


# ---------------------------------------------------------------------------
# a pattern that names no log yet
# ---------------------------------------------------------------------------
@pytest.mark.subprocess
def test_tail_f_of_a_missing_log_says_so_once_then_shows_it_once_created(root):
    add(root, "acme/checkout-live")
    t = Tailer(root, "acme/checkout-lve", "-f")
    try:
        note = b"note: waiting for acme/checkout-lve, which does not exist yet; did you mean acme/checkout-live?\n"
        assert t.wait_err(note), t.err
        t.wait_registered()
        assert t.proc.poll() is None  # it waits, it does not give up
        add(root, "acme/checkout-lve", "finally")
        (got,) = t.events(1)
        assert got["source"].endswith("/agents/acme/checkout-lve") and got["data"]["trigger"]["name"] == "finally"
    finally:
        rc = t.stop()
    assert rc == 0
    assert t.err == note  # once, and nothing else


@pytest.mark.subprocess
@pytest.mark.parametrize(("patterns", "notes"), [
    (["zz/top"], [b"note: waiting for zz/top, which does not exist yet"]),
    (["nope/*", "acme/checkout-live"], [b"note: waiting for a log matching nope/*; none exists yet"]),
    (["acme/checkout-live"], []),
])
def test_the_waiting_note_says_only_what_is_missing(root, patterns, notes):
    add(root, "acme/checkout-live")
    t = Tailer(root, *patterns, "-f", "-n", "0")
    try:
        t.wait_registered()  # registered and idle: any note was written before
    finally:
        assert t.stop() == 0
    assert t.err.splitlines() == notes


def test_tail_without_f_still_refuses_a_missing_literal(root, cli):
    add(root, "acme/checkout-live")
    p = cli("tail", "acme/checkout-lve")
    assert p.returncode == 2 and b"did you mean acme/checkout-live?" in p.stderr and b"note:" not in p.stderr


@pytest.mark.subprocess
def test_the_region_is_never_used_on_a_pipe_even_with_colour_forced(root):
    """--color always on a pipe: colours, but no cursor movement; each message once, whole."""
    from follow_util import wait_registered

    from wardrik_cli.follow.publish import append_event, publish_live
    from wardrik_cli.store.layout import Root

    add(root, "acme/a")
    env = dict(os.environ, COLUMNS="120")
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([WARDRIK, "--root", str(root), "--color", "always", "tail", "acme/a", "-f", "-n", "0",
                          "-F", "pretty"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        wait_registered(root, p)
        r = Root(root)
        for w in ("Rolling ", "back ", "v841."):
            publish_live(r, "acme/a", "message.delta", {"message": {"id": "m7"}, "delta": w})
        add(root, "acme/a", "after")  # a kept event of another kind: the stream is still open
        append_event(r, "acme/a", "message.completed", {"message": {"id": "m7"}}, sync=False)
        out = b""
        deadline = time.monotonic() + LIVE_WAIT
        while b"message.completed" not in out and time.monotonic() < deadline:
            out += os.read(p.stdout.fileno(), 65536)
    finally:
        p.terminate()
        rest, err = p.communicate(timeout=LIVE_WAIT)
    assert p.returncode == 0 and b"Traceback" not in err
    text = (out + rest).decode()
    assert re.search(r"\x1b\[[0-9;]*m", text)  # colour, as asked
    assert not re.search(r"\x1b\[[0-9;]*[A-HJKST]|\r", text)  # but no cursor movement or erasing
    plain = [SGR.sub("", l) for l in text.splitlines()]
    msg = [l for l in plain if "▸" in l]
    assert len(msg) == 1 and msg[0].endswith("m7 ▸ Rolling back v841.")
    assert plain.index(msg[0]) == len(plain) - 2 and "message.completed" in plain[-1]
    assert "trigger.fired" in plain[-3]
