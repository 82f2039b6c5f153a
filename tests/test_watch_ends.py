"""Long-running commands end when they must: a failing --exec without -f gives up, a watch ends
when its reader goes away even while nothing changes."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import WARDRIK

pytestmark = pytest.mark.subprocess
DATA = '{"trigger": {"name": "x"}}'


def wr(root, *args, **kw):
    return subprocess.run([WARDRIK, "--root", str(root), *args], capture_output=True, env=dict(os.environ, NO_COLOR="1"),
                          stdin=subprocess.DEVNULL, **kw)


def test_exec_without_follow_gives_up_naming_the_event(tmp_path):
    root = tmp_path / "root"
    ev = wr(root, "append", "a/x", "trigger.fired", "--data", DATA, timeout=20).stdout
    eid = __import__("orjson").loads(ev)["id"]
    cf = tmp_path / "cur"
    p = wr(root, "tail", "a/x", "--cursor-file", str(cf), "--exec", "exit 3", timeout=60)  # before: retried for ever
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert err.count("--exec exited 3") == 3 and err.splitlines()[-1].startswith("error:") and eid in err.splitlines()[-1]
    assert not cf.exists()  # the cursor file never moved past the event


def _ends_when_its_pipe_closes(tmp_path, *args):
    root = tmp_path / "root"
    wr(root, "append", "a/x", "trigger.fired", "--data", DATA, timeout=20)
    r, w = os.pipe()
    p = subprocess.Popen([WARDRIK, "--root", str(root), *args], stdout=w, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    os.close(w)
    try:
        assert b"a/x" in os.read(r, 65536)  # the first output: it is running
        os.close(r)  # the reader goes away; nothing is appended after this
        p.wait(timeout=30)  # before (activity --watch): it waited for the next change, i.e. for ever
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, p.stderr.read()


def test_activity_watch_ends_when_its_pipe_closes_while_idle(tmp_path):
    _ends_when_its_pipe_closes(tmp_path, "activity", "a/*", "--watch")


def test_tail_follow_ends_when_its_pipe_closes_while_idle(tmp_path):
    _ends_when_its_pipe_closes(tmp_path, "tail", "-f", "a/x")


@pytest.mark.subprocess
def test_activity_watch_says_when_a_literal_name_matches_no_log_yet(tmp_path):
    """As tail -f does: a typo is a note naming the closest log, not a silent wait."""
    import signal
    import time

    root = tmp_path / "r"
    env = {**os.environ, "WARDRIK_ROOT": str(root)}
    subprocess.run([WARDRIK, "append", "x/one", "run.started", "-d", "{}"], env=env, check=True, capture_output=True)
    p = subprocess.Popen([WARDRIK, "activity", "x/onee", "--watch", "-F", "json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30  # a ceiling: the first table line is the sign it is watching
        assert p.stdout is not None
        first = p.stdout.readline()
        assert first.strip() == b"{}" and time.monotonic() < deadline
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert err == b"note: waiting for x/onee, which does not exist yet; did you mean x/one?\n", err
