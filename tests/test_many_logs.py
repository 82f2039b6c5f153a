"""More matched logs than file descriptors: readers, followers, check and compact still work."""
from __future__ import annotations

import os
import resource
import subprocess
import time

import orjson
import pytest

from conftest import WARDRIK
from ledgergen import write_log

pytestmark = pytest.mark.subprocess
N = 1500
LIMIT = 128  # RLIMIT_NOFILE of every command here: far fewer than the logs


def _limited():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def wr(root, *args, **kw):
    return subprocess.run([WARDRIK, "--root", str(root), *args], capture_output=True, preexec_fn=_limited,
                          env=dict(os.environ, NO_COLOR="1"), stdin=subprocess.DEVNULL, timeout=120, **kw)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("many") / "root"
    (r / ".wardrik").mkdir(parents=True)
    for i in range(N):
        write_log(r / "m" / f"l{i:04d}.jsonl", 3, log_id=f"m/l{i:04d}", pad=10)
    return r


@pytest.mark.parametrize("args, lines", [
    (("page", "m/*", "--limit", "100000"), 3 * N), (("tail", "m/*", "-n", "20"), 20), (("head", "m/*"), 1),
    (("check",), 0), (("compact", "--dry-run", "-F", "json"), None),
])
def test_readers_over_more_logs_than_descriptors(root, args, lines):
    p = wr(root, *args)  # before: "Too many open files" once the logs outnumbered the limit
    assert p.returncode == 0, p.stderr
    if lines is None:
        assert len(orjson.loads(p.stdout)["logs"]) == N
    else:
        assert len(p.stdout.splitlines()) == lines


def test_a_follower_over_more_logs_than_descriptors(root):
    p = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "-n", "0", "m/*"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=_limited)
    try:
        deadline = time.monotonic() + 60
        while not list((root / ".wardrik" / "live").glob("*.json")):
            assert time.monotonic() < deadline and p.poll() is None, p.stderr.read1(4096) if p.poll() is not None else ""
            time.sleep(0.05)
        time.sleep(0.5)  # the read-back is done once registered; let the first sweep pass
        add = subprocess.run([WARDRIK, "--root", str(root), "append", f"m/l{N - 1:04d}", "trigger.fired", "--data",
                              '{"trigger": {"name": "late"}}'], capture_output=True, timeout=30)
        assert add.returncode == 0
        line = p.stdout.readline()
        assert orjson.loads(line)["data"]["trigger"]["name"] == "late"
    finally:
        p.terminate()
        p.wait(30)
    assert p.returncode == 0, p.stderr.read()
