"""kill -9 across a batched sweep of 2,000 logs (``store.replace``'s crash order, for real).

Each round copies the same root of 2,000 logs (half of each log's events 60-100 days old,
half under 10 days), starts ``wardrik compact --retention 30d``, waits for a chosen point of
the sweep to be reached (new files being staged, the first records renamed, a third of the
records renamed, ...) and kills the process with SIGKILL while it is still running. Then:
every log is byte for byte as it was or as it should be; reading every log gives each
acknowledged event or an ``events.dropped`` notice that accounts for it, with no gap;
``check`` is clean; a second sweep finishes the job and leaves no temporary behind; the next
append to a log continues its sequence.
"""
from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY = 86_400 * 10**9
LOGS = 2000
OLD, NEW = 6, 6  # events per log before and after the cutoff
DROPPED = "wardrik.events.dropped"

pytestmark = pytest.mark.subprocess


def _log_id(i: int) -> str:
    return f"t{i // 100:02d}/a{i % 100:02d}"


@pytest.fixture(scope="module")
def source_root(tmp_path_factory) -> tuple[Path, dict[str, tuple[str, str]]]:
    """The root every round copies, and per log (sha256 of the whole file, of the kept part)."""
    r = tmp_path_factory.mktemp("batch") / "root"
    (r / ".wardrik").mkdir(parents=True)
    now = time.time_ns()
    shas: dict[str, tuple[str, str]] = {}
    scratch = r.parent / "scratch.jsonl"
    for i in range(LOGS):
        log_id = _log_id(i)
        write_spread(scratch, events=OLD, days=40, end_ns=now - 60 * DAY, log_id=log_id, pad=40)
        old = scratch.read_bytes()
        write_spread(scratch, events=NEW, days=9, end_ns=now - DAY, first_seq=OLD + 1, log_id=log_id, pad=40)
        new = scratch.read_bytes()
        path = r / f"{log_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(old + new)
        shas[log_id] = (hashlib.sha256(old + new).hexdigest(), hashlib.sha256(new).hexdigest())
    scratch.unlink()
    return r, shas


def _count(root: Path, suffix: str, under: str = "") -> int:
    n = 0
    for d in os.scandir(root / under):
        if d.is_dir() and not d.name.startswith("."):
            n += sum(1 for e in os.scandir(d.path) if e.name.endswith(suffix))
    return n


# Where each round kills the sweep: (what is watched, how many of it).
POINTS = [
    ("staged", 1),        # the first new file is being written: nothing renamed yet
    ("records", 1),       # the first records are renamed: logs of that batch not yet
    ("records", LOGS // 3),
    ("records", 2 * LOGS // 3),
    ("random", 0),
]


@pytest.mark.parametrize("point", range(len(POINTS)))
def test_kill_9_at_any_point_of_a_batched_sweep(tmp_path, source_root, point):
    src, shas = source_root
    r = tmp_path / "root"
    subprocess.run(["cp", "-a", str(src), str(r)], check=True)
    what, n = POINTS[point]
    if what == "random":  # any point at all, chosen by a seeded draw
        what, n = random.Random(point).choice([("staged", 100), ("records", 700), ("records", 1500)])
    p = subprocess.Popen([WARDRIK, "--root", str(r), "compact", "--retention", "30d", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120  # a generous ceiling, not a margin: the point is a condition
    try:
        while time.monotonic() < deadline and p.poll() is None:
            if what == "staged":
                seen = _count(r, ".compact.tmp")
            else:
                wm = r / ".wardrik/watermarks"
                seen = _count(wm, "@json") if wm.is_dir() else 0
            if seen >= n:
                break
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait()
    # The fault landed mid-sweep: the process was killed, it had not finished.
    assert p.returncode == -signal.SIGKILL, f"the sweep ended by itself (exit {p.returncode}) before {what} >= {n}"

    states = {"as it was": 0, "as it should be": 0}
    for i in range(LOGS):
        log_id = _log_id(i)
        sha = hashlib.sha256((r / f"{log_id}.jsonl").read_bytes()).hexdigest()
        whole, kept = shas[log_id]
        state = {whole: "as it was", kept: "as it should be"}.get(sha)
        assert state is not None, f"{log_id} is neither the original nor the expected result"
        states[state] += 1
    print(f"[{POINTS[point]}: {states}]")

    # Every acknowledged event is read back or accounted for by a notice, in order, no gap.
    out = run_cli("page", "*", "--all", "--format", "jsonl", root=r)
    assert out.returncode == 0, out.stderr
    seen_to: dict[str, int] = {}
    for ev in jsonl(out.stdout):
        if ev["type"] == DROPPED:
            log_id = ev["data"]["log"]
            assert log_id not in seen_to
            seen_to[log_id] = ev["data"]["count"]
            assert ev["data"]["count"] == OLD
        else:
            log_id = ev["subject"].removeprefix("agents/")
            seq = int(ev["sequence"])
            assert seq == seen_to.get(log_id, 0) + 1, f"{log_id}: {seq} after {seen_to.get(log_id, 0)}"
            seen_to[log_id] = seq
    assert seen_to == {_log_id(i): OLD + NEW for i in range(LOGS)}
    assert b"missing" not in out.stderr

    assert run_cli("check", root=r).returncode == 0
    # A later sweep is not confused by anything the killed one left, and finishes the job.
    again = run_cli("compact", "--retention", "30d", "--format", "json", root=r)
    assert again.returncode == 0, again.stderr
    for i in range(0, LOGS, 37):
        log_id = _log_id(i)
        assert hashlib.sha256((r / f"{log_id}.jsonl").read_bytes()).hexdigest() == shas[log_id][1]
    leftovers = [x for x in r.rglob(".*") if x.name.endswith((".compact.tmp", ".wm.tmp"))]
    assert leftovers == []
    assert run_cli("check", root=r).returncode == 0
    for log_id in (_log_id(0), _log_id(LOGS // 2), _log_id(LOGS - 1)):
        a = run_cli("append", log_id, "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r)
        assert a.returncode == 0, a.stderr
        assert jsonl(a.stdout)[0]["sequence"] == f"{OLD + NEW + 1:012d}"
        first = jsonl(run_cli("page", log_id, "--limit", "1", root=r).stdout)[0]
        assert first["type"] == DROPPED and first["data"]["count"] == OLD
    recorded = orjson.loads(run_cli("audit", "page", "-t", "ledger.compacted", "--format", "json", root=r).stdout)
    assert recorded, "the finishing sweep recorded ledger.compacted"
