"""The real CLI in a real terminal (tmux): tail -f and activity --watch, as a person sees them.

Each test runs its own tmux server on a private socket, types the command with send-keys,
reads the screen with capture-pane (polling until the text shows, up to a deadline; never a
fixed sleep as an assertion), and kills the server at the end.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import WARDRIK, run_cli

TMUX = shutil.which("tmux") or "/usr/bin/tmux"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_ledgers"
pytestmark = [pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed"), pytest.mark.subprocess]


class Term:
    def __init__(self, tmp_path: Path, width: int = 100, height: int = 30) -> None:
        self.sock = f"wardrik-test-{uuid.uuid4().hex[:10]}"
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX")}
        env["HOME"] = str(tmp_path)
        self.env = env
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "bash --norc --noprofile")
        self.send("export PS1='$ ' NO_COLOR= TERM=xterm-256color; clear")

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.sock, *args], capture_output=True, text=True, env=self.env,
                              timeout=20).stdout

    def send(self, line: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", line)
        self.tmux("send-keys", "-t", "t", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, pattern: str, timeout: float = 30.0) -> str:  # a generous ceiling, never a latency bound
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if re.search(pattern, s, re.M):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{s}")
            time.sleep(0.1)

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.sock, "kill-server"], capture_output=True, timeout=20)


def _running(cmdline: bytes) -> bool:
    """Is a process running with exactly this command line (its exec done)?"""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read() == cmdline:
                        return True
            except OSError:
                pass
    return False


@pytest.fixture
def term(tmp_path):
    t = Term(tmp_path)
    try:
        yield t
    finally:
        t.kill()


@pytest.fixture
def sample(tmp_path):
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    return root


def test_tail_f_shows_an_event_appended_from_outside(term, sample):
    term.send(f"{WARDRIK} --root {sample} tail -f 'acme/*' -n 2; echo rc=$?")
    term.wait_for(r"msg_s2 · from customer:5120")  # the last two events, read back
    run_cli("append", "acme/triage", "tool_call.started", "--data",
            '{"tool": {"name": "query_metrics", "call": {"id": "t42"}}}', root=sample, check=True)
    s = term.wait_for(r"acme/triage +28 tool_call\.started +query_metrics \(t42\)")
    assert re.search(r"^\d\d\d\d-\d\d-\d\d UTC ─", s, re.M)  # a day line before the new day's event
    # live text streams on one line labelled with its log and message, growing in place; the
    # message's kept row ends it and the line goes (two at once: tests/test_tmux_streams.py)
    run_cli("append", "acme/triage", "message.delta", "--data", '{"message": {"id": "m7"}, "delta": "Rolling "}',
            root=sample, check=True)
    run_cli("append", "acme/triage", "message.delta", "--data", '{"message": {"id": "m7"}, "delta": "back v841."}',
            root=sample, check=True)
    term.wait_for(r"^\d\d:\d\d:\d\d acme/triage +~ message\.delta +m7 ▸ Rolling back v841\.$")
    run_cli("append", "acme/triage", "message.completed", "--data", '{"message": {"id": "m7"}}', root=sample, check=True)
    s = term.wait_for(r"acme/triage +29 message\.completed +m7")
    assert "m7 ▸" not in s
    term.keys("C-c")
    s = term.wait_for(r"rc=\d+")
    assert "rc=0" in s and "Traceback" not in s


def test_activity_watch_updates_on_start_and_end_and_quits_on_ctrl_c(term, sample):
    term.send(f"{WARDRIK} --root {sample} activity 'acme/*' --watch; echo rc=$?")
    s = term.wait_for(r"acme/triage +idle")
    assert "activity at" in s and "Ctrl-C quits" in s
    assert re.search(r"acme/support +tool lookup_order \(s1t1\), tool lookup_refund", s)
    run_cli("append", "acme/triage", "tool_call.started", "--data",
            '{"tool": {"name": "grep_logs", "call": {"id": "t77"}}}', root=sample, check=True)
    s = term.wait_for(r"acme/triage +tool grep_logs \(t77\) +\d")
    # the "for" column ticks while nothing changes
    first = re.search(r"acme/triage +tool grep_logs \(t77\) +([\d.]+ (?:ms|s))", s).group(1)
    term.wait_for(r"acme/triage +tool grep_logs \(t77\) +(?!" + re.escape(first) + r"\b)[\d.]+ (?:ms|s)")
    run_cli("append", "acme/triage", "tool_call.completed", "--data",
            '{"tool": {"name": "grep_logs", "call": {"id": "t77"}}}', root=sample, check=True)
    term.wait_for(r"acme/triage +idle")
    # a message waiting for a run shows as pending
    run_cli("append", "acme/billing", "message.received", "--data", '{"message": {"id": "msg_b9"}}',
            root=sample, check=True)
    term.wait_for(r"acme/billing +idle .* 1\s*$")
    term.keys("C-c")
    s = term.wait_for(r"rc=\d+")
    assert "rc=0" in s and "Traceback" not in s and "KeyboardInterrupt" not in s


def test_an_exec_hook_may_read_the_terminal_and_ctrl_c_ends_both(term, tmp_path):
    """A hook runs in a group of its own (so a stopped tail leaves none running), made the
    terminal's foreground while it runs, as a shell does for a job: it can prompt (before: its
    read of /dev/tty failed at once), and Ctrl-C ends it and the tail (exit 0 with -f)."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", root=root, check=True)
    out = tmp_path / "got"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"printf 'ok? '; read x </dev/tty; echo \"[$x]\" >> {out}; exec sleep 59.25\n")
    term.send(f"{WARDRIK} --root {root} tail a -f -n 1 --exec 'sh {hook}'; echo rc=$?")
    term.wait_for(r"^ok\?")
    term.send("yes")
    deadline = time.monotonic() + 30
    while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text() == "[yes]\n"
    # Ctrl-C once the hook is its sleep: a shell running a script catches SIGINT itself, and
    # one that lands between its fork and the exec of a command is lost (as in any terminal).
    deadline = time.monotonic() + 30
    while not _running(b"sleep\x0059.25\x00") and time.monotonic() < deadline:
        time.sleep(0.05)
    term.keys("C-c")  # the hook, in its sleep, has the terminal: Ctrl-C goes to it, and the tail stops
    s = term.wait_for(r"rc=\d+")
    assert "rc=0" in s and "Traceback" not in s
