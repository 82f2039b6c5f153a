"""The real `compact` racing two real appenders and a real `tail -f`: nothing lost, nothing
shown twice, the follower keeps going across the file being replaced under it."""
from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime, timedelta, UTC
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import WARDRIK  # noqa: E402
from follow_util import Tailer  # noqa: E402
from ledgergen import write_log  # noqa: E402

pytestmark = pytest.mark.subprocess  # real compact, appender and follower processes


def test_compact_races_appenders_and_a_follower(root):
    log = root / "acme" / "a.jsonl"
    # 3000 events from 40 days ago: a 30-day sweep drops all of them.
    write_log(log, 3000, start=datetime.now(UTC) - timedelta(days=40), log_id="acme/a")
    t = Tailer(root, "-f", "-n", "0", "acme/a")
    t.wait_registered()
    # Two appender processes, each running the command line `wardrik append` 25 times through
    # cli.app.run (one Python start-up per appender, not per append), paced so that appends keep
    # coming while the sweeps run. The last append of each waits for the first sweep to be over:
    # the sweep surely lands mid-stream.
    swept = root.parent / "swept"
    writers = [subprocess.Popen([sys.executable, "-c", f"""
import io, os, sys, time
from wardrik_cli.cli.app import run
for i in range(25):
    if i == 24:
        while not os.path.exists({str(swept)!r}):
            time.sleep(0.01)
    body = b'{{"type":"trigger.fired","data":{{"trigger":{{"name":"w{w}-' + str(i).encode() + b'"}}}}}}\\n'
    err = io.BytesIO()
    if run(["--root", {str(root)!r}, "append", "acme/a", "--batch", "-", "--no-sync"],
           stdin=io.BytesIO(body), stdout=io.BytesIO(), stderr=err) != 0:
        sys.exit(err.getvalue().decode())
    time.sleep(0.02)
"""]) for w in range(2)]
    deadline = time.monotonic() + 60
    while log.read_bytes().count(b"\n") < 3005 and time.monotonic() < deadline:
        time.sleep(0.01)  # let the appenders get going, so the sweep lands among them
    sweeps = []
    mid_stream = None
    while any(w.poll() is None for w in writers):
        sweeps.append(subprocess.run([WARDRIK, "--root", str(root), "compact", "--retention", "30d", "--wait",
                                      "--format", "json"], capture_output=True))
        if mid_stream is None:
            mid_stream = any(w.poll() is None for w in writers)
            swept.touch()
        time.sleep(0.05)
    assert all(w.wait() == 0 for w in writers)
    assert all(s.returncode == 0 for s in sweeps), [s.stderr for s in sweeps]
    assert sum(orjson.loads(s.stdout)["dropped"] for s in sweeps) == 3000  # the old prefix, once
    assert mid_stream, "the appenders finished before the first sweep: the race did not happen"

    got = t.events(50)
    assert [int(e["sequence"]) for e in got] == list(range(3001, 3051))
    assert sorted(e["data"]["trigger"]["name"] for e in got) == sorted(f"w{w}-{i}" for w in range(2) for i in range(25))
    assert t.nothing_more() == []
    assert t.stop() == 0
    kept = [orjson.loads(l) for l in log.read_bytes().splitlines()]
    assert [int(e["sequence"]) for e in kept] == list(range(3001, 3051))
    assert subprocess.run([WARDRIK, "--root", str(root), "check"], capture_output=True).returncode == 0
