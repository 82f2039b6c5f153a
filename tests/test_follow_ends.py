"""How follows end and what they survive, found in review: a blocked reader, signals during
start-up, a log recreated under a follower that started from a cursor, a closed pipe in
pretty output."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import WARDRIK, run_cli  # noqa: E402
from follow_util import Tailer, wait_registered  # noqa: E402

from wardrik_cli import Log, Root, append, make_item  # noqa: E402

pytestmark = pytest.mark.subprocess  # real followers: signals, blocked pipes, start-up


def _fill(root: Path, n: int, name: str = "x" * 600) -> None:
    Path(root.parent / "b.jsonl").write_bytes(b"".join(
        orjson.dumps({"type": "trigger.fired", "data": {"trigger": {"name": name}}}) + b"\n" for _ in range(n)))
    run_cli("append", "a/x", "--batch", str(root.parent / "b.jsonl"), root=root, check=True)


def test_sigterm_ends_a_follower_whose_stdout_is_blocked(root):
    run_cli("append", "a/x", "run.started", root=root, check=True)
    r, w = os.pipe()  # nobody reads r: the follower's writes block once the pipe is full
    p = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "-n", "0", "a/x"], stdout=w,
                         stderr=subprocess.PIPE)
    os.close(w)
    try:
        wait_registered(root, p)  # following from the end: what is written next comes to it
        _fill(root, 400)  # ~250 KB: far more than a pipe holds
        deadline = time.monotonic() + 30  # a generous ceiling
        while time.monotonic() < deadline:  # wait until it is really blocked in a write
            with open(f"/proc/{p.pid}/wchan") as f:
                if "pipe" in f.read():
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("the follower never blocked on its output")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == 0
        assert b"Traceback" not in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
        os.close(r)


def _catches(pid: int, sig: int) -> bool:
    """Has process ``pid`` a handler for ``sig`` (its SigCgt mask in /proc/PID/status)?"""
    with open(f"/proc/{pid}/status") as f:
        mask = next(line.split()[1] for line in f if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (sig - 1) & 1)


def test_signals_during_start_up_end_a_follow_cleanly(root):
    """Ctrl-C or SIGTERM while the CLI is still being imported. Measured from the instant the
    console script's entry point catches SIGTERM (its first statement: Python never catches
    SIGTERM itself), not from the spawn: before that the interpreter itself is starting up,
    which no Python program can guard, and how long that takes depends on the machine's load."""
    for delay in (0.0, 0.05, 0.15):
        for sig in (signal.SIGINT, signal.SIGTERM):
            p = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "-n", "0", "a/x"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 30
            while not _catches(p.pid, signal.SIGTERM):
                assert p.poll() is None and time.monotonic() < deadline, "the entry point never ran"
                time.sleep(0.001)
            time.sleep(delay)
            p.send_signal(sig)
            _, err = p.communicate(timeout=15)
            assert p.returncode == 0 and b"Traceback" not in err, (delay, sig, p.returncode, err)


def test_log_recreated_under_a_follower_that_started_from_a_cursor(root):
    for _ in range(3):
        run_cli("append", "a/x", "trigger.fired", "--data", '{"trigger":{"name":"old"}}', root=root, check=True)
    cursor = run_cli("head", "a/x", root=root, check=True).stdout.decode().strip()
    t = Tailer(root, "-f", "--after", cursor, "a/x")
    try:
        t.wait_registered()  # it follows the log it read to the cursor's end
        (root / "a" / "x.jsonl").unlink()
        r = Root(root)
        append(r, Log.agent(r, "a/x"), [make_item("trigger.fired", {"trigger": {"name": f"new{i}"}})
                                        for i in range(5)], deployment="local")
        got = t.take(5)
        got += t.nothing_more(0.5)  # and nothing after them (no repeat)
    finally:
        assert t.stop() == 0
    got += t.nothing_more(0)  # everything it printed before SIGTERM (its output was read to the end)
    names = [orjson.loads(l)["data"]["trigger"]["name"] for l in got]
    assert names == [f"new{i}" for i in range(5)], (names, t.err)
    assert b"recreated" in t.err


def test_pretty_output_into_a_closed_pipe_is_a_normal_end(root):
    _fill(root, 50, name="y")
    p = subprocess.run(f"{WARDRIK} --root {root} page a/x --limit 50 --format pretty | head -n 1; "
                       "echo rc=${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True)
    assert p.stdout.strip().endswith(b"rc=0"), p
    assert b"Traceback" not in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_two_stop_signals_back_to_back_still_end_a_follow_with_0(root, sig):
    """As ``timeout`` does (the process, then its group): before, the second one, landing
    while the follow was ending, armed a retry timer that killed the process with SIGALRM
    (exit 142) after its clean end, or came after the interpreter had reset its handlers
    (exit 130): in 30-70% of tries. Several tries, each a real follower that got an event."""
    from follow_util import add

    codes = []
    for i in range(9):
        t = Tailer(root, "-f", "-n", "0", "a/x")
        try:
            t.wait_registered()
            add(root, "a/x", f"t{i}")
            t.take(1)
            os.kill(t.proc.pid, sig)
            time.sleep((0.002, 0.01, 0.03)[i % 3])  # not at once: two pending signals are one
            os.kill(t.proc.pid, sig)
            codes.append(t.stop())
        finally:
            t.kill()
        assert b"Traceback" not in t.err
    assert codes == [0] * 9
