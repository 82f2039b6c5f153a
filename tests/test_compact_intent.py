"""A sweep killed after its drops and before its ``ledger.compacted`` leaves a durable intent
(``.wardrik/compact-intent.jsonl``), and the next ``compact`` records the drops that landed,
once (``store.retention``, "The sweep's intent").

The kills are real (SIGKILL) and land where they are meant to: while this test holds the
audit log's lock, so the sweep blocks at its audit record after every rename; or from an
audit hook in the sweep's own process at one chosen rename (``os.rename`` raises an audit
event before the call). Each test checks on disk that the fault landed there.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, run_cli
from ledgergen import START, write_log

INTENT = ".wardrik/compact-intent.jsonl"
OLD = START - timedelta(days=400)
NEW = datetime.now(UTC) - timedelta(hours=1)  # kept by a 30-day retention (and not in the future: no note)
DROPS = {"acme/a": 30, "acme/b": 10}


def make_logs(root: Path) -> dict[str, bytes]:
    """acme/a: 30 old then 5 new events; acme/b: 10 old; acme/new: 5 new; an audit log with
    nothing to drop. Returns the logs' bytes."""
    a = root / "acme" / "a.jsonl"
    write_log(a, 30, start=OLD, log_id="acme/a", pad=20)
    old = a.read_bytes()
    write_log(a, 5, first_seq=31, start=NEW, log_id="acme/a", pad=20)
    kept = a.read_bytes()
    a.write_bytes(old + kept)
    write_log(root / "acme" / "b.jsonl", 10, start=OLD, log_id="acme/b", pad=20)
    write_log(root / "acme" / "new.jsonl", 5, start=NEW, log_id="acme/new", pad=20)
    run_cli("audit", "record", "agent.created", "agents/acme/a", "--data", '{"agent": {"id": "acme/a"}}',
            "--actor", "user:a", root=root, check=True)
    return {"a kept": kept, **{name: (root / "acme" / f"{name}.jsonl").read_bytes() for name in ("a", "b", "new")}}


def sweeps(root: Path) -> list[dict]:
    p = run_cli("audit", "page", "-t", "ledger.compacted", "--all", "-F", "json", root=root)
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)["events"]


def first_seq(path: Path) -> int | None:
    with open(path, "rb") as f:
        line = f.readline()
    return int(orjson.loads(line)["sequence"]) if line else None


def holds_open(pid: int, path: Path) -> bool:
    want = os.path.realpath(path)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                return True
        except OSError:
            continue
    return False


@pytest.mark.subprocess
def test_a_sweep_killed_before_its_audit_record_is_recorded_by_the_next_once(root):
    before = make_logs(root)
    lock = root / ".wardrik/locks/@audit@lock"  # the audit log's lock (appenders and compaction take it)
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.Popen([WARDRIK, "--root", str(root), "compact", "-q", "--actor", "cron:first"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "WARDRIK_LOCK_TIMEOUT": "600"})
        try:
            deadline = time.monotonic() + 120  # a ceiling for a slow machine, not a margin
            while not (first_seq(root / "acme/a.jsonl") == 31 and (root / "acme/b.jsonl").stat().st_size == 0
                       and holds_open(p.pid, lock)):
                assert p.poll() is None, f"compact ended before its audit record: {p.stderr.read()!r}"
                assert time.monotonic() < deadline, "compact never reached its audit record"
                time.sleep(0.01)
            p.send_signal(signal.SIGKILL)
        finally:
            p.wait()
    finally:
        os.close(held)
    # The fault landed between the drops and their record: both logs were cut, nothing recorded.
    assert p.returncode == -signal.SIGKILL
    assert (root / "acme/a.jsonl").read_bytes() == before["a kept"]
    assert (root / "acme/new.jsonl").read_bytes() == before["new"]
    assert sweeps(root) == []
    intent = root / INTENT
    assert intent.is_file(), "no durable record of the drops before they were made"
    left = intent.read_bytes()

    p2 = run_cli("compact", "--actor", "cron:second", "-F", "json", root=root)
    assert p2.returncode == 0, p2.stderr
    assert orjson.loads(p2.stdout)["dropped"] == 0  # the second sweep had nothing of its own to drop
    err = p2.stderr.decode()
    assert err.startswith("warning: recovered") and err.count("\n") == 1 and "40 event(s)" in err, err
    (ev,) = sweeps(root)
    assert ev["data"]["logs"] == DROPS and ev["data"]["retention"] == "30d"
    assert ev["data"]["actor"] == "cron:first" and ev["data"]["recovered"] is True
    assert ev["data"]["sweep"] == orjson.loads(left.split(b"\n")[0])["sweep"]
    assert not intent.exists()
    assert run_cli("check", root=root).returncode == 0

    # A kill after that record and before the intent's removal leaves both: put it back.
    intent.write_bytes(left)
    p3 = run_cli("compact", "-F", "json", root=root)
    assert p3.returncode == 0, p3.stderr
    assert b"already" in p3.stderr and len(sweeps(root)) == 1 and not intent.exists()
    assert run_cli("compact", "-q", root=root).returncode == 0
    assert len(sweeps(root)) == 1
    assert run_cli("check", root=root).returncode == 0


# Run the CLI and kill it (SIGKILL, from its own process) as the first rename to TARGET starts.
KILL_AT_RENAME = """
import os, signal, sys
target = os.environ["KILL_AT_RENAME"]
def hook(event, args):
    if event in ("os.rename", "os.replace"):
        dst, dst_dir_fd = str(args[1]), args[3]
        if dst_dir_fd not in (None, -1):  # a rename by name in a folder held open
            dst = os.readlink(f"/proc/self/fd/{dst_dir_fd}") + "/" + dst
        if dst.endswith(target):
            os.kill(os.getpid(), signal.SIGKILL)
sys.addaudithook(hook)
from wardrik_cli.cli.entry import main
main()
"""


@pytest.mark.subprocess
@pytest.mark.parametrize("target, landed", [
    (".wardrik/watermarks/acme/a@json", {}),  # the first rename of the batch: nothing dropped yet
    ("/acme/b.jsonl", {"acme/a": 30}),  # step 5, between the two logs' renames: acme/a cut, acme/b not
], ids=["before-the-renames", "between-two-logs"])
def test_a_sweep_killed_at_a_rename_is_recorded_for_what_landed(root, target, landed):
    before = make_logs(root)
    p = subprocess.run([sys.executable, "-c", KILL_AT_RENAME, "--root", str(root), "compact", "-q"],
                       capture_output=True, timeout=120, env={**os.environ, "KILL_AT_RENAME": target})
    assert p.returncode == -signal.SIGKILL, p.stderr
    # The fault landed there: the intent was durable, and the logs are cut exactly as far.
    intent = root / INTENT
    assert intent.is_file(), "no durable record of the drops before the first rename"
    named = [e["log"] for line in intent.read_bytes().splitlines()[1:] for e in orjson.loads(line)["logs"]]
    assert named == ["acme/a", "acme/b"]
    assert first_seq(root / "acme/a.jsonl") == (31 if landed else 1)
    assert (root / "acme/b.jsonl").read_bytes() == before["b"]
    assert sweeps(root) == []

    # Recovery alone (a retention that drops nothing now): a record for what landed, if anything.
    p2 = run_cli("compact", "--retention", "3650d", "-F", "json", root=root)
    assert p2.returncode == 0, p2.stderr
    assert orjson.loads(p2.stdout)["dropped"] == 0
    err = p2.stderr.decode()
    assert "warning: recovered" in err and ("nothing to record" in err) == (not landed), err
    assert [ev["data"]["logs"] for ev in sweeps(root)] == ([landed] if landed else [])
    assert not intent.exists()
    assert run_cli("check", root=root).returncode == 0
    # The next sweep drops the rest and records only that: nothing counted twice.
    assert run_cli("compact", "-q", root=root).returncode == 0
    assert {k: v for ev in sweeps(root) for k, v in ev["data"]["logs"].items()} == DROPS
    assert sum(sum(ev["data"]["logs"].values()) for ev in sweeps(root)) == sum(DROPS.values())


@pytest.mark.subprocess
def test_recovery_and_tidying_are_silent_under_quiet(root):
    """What a killed sweep left (its record, its staged files) is settled by the next
    ``compact -q`` without a word: cron mails only failures."""
    make_logs(root)
    p = subprocess.run([sys.executable, "-c", KILL_AT_RENAME, "--root", str(root), "compact", "-q"],
                       capture_output=True, timeout=120,
                       env={**os.environ, "KILL_AT_RENAME": ".wardrik/watermarks/acme/a@json"})
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert (root / INTENT).is_file()
    staged = [q for q in root.rglob("*") if q.name.endswith(".tmp")]
    assert staged, "the kill left no staged file to tidy"
    q = run_cli("compact", "-q", "--retention", "3650d", root=root)
    assert (q.returncode, q.stdout, q.stderr) == (0, b"", b"")
    assert not (root / INTENT).exists() and not any(x.exists() for x in staged)


def _plant(root: Path, kind: str) -> None:
    path = root / INTENT
    if kind == "garbage":
        path.write_bytes(b"\x00\xff not json\n{\n")
    elif kind == "not-a-record":
        path.write_bytes(b'{"sweep": "x", "actor": "a"}\n{"logs": [{"log": "../etc/passwd"}]}\n')
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(1 << 30)  # sparse: costs nothing on disk, too big for a record
    elif kind == "symlink":
        outside = root.parent / "outside.jsonl"
        outside.write_bytes(b"not to be read\n")
        path.symlink_to(outside)
    elif kind == "directory":
        path.mkdir()
        (path / "x").write_bytes(b"kept")
    elif kind == "fifo":
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["garbage", "not-a-record", "huge", "symlink", "directory", "fifo"])
def test_a_damaged_intent_stops_the_sweep_with_one_error_and_loses_nothing(root, kind):
    before = make_logs(root)
    _plant(root, kind)
    path = root / INTENT
    planted = os.lstat(path)
    p = run_cli("compact", "-q", root=root, process=kind == "fifo", timeout=30)  # a FIFO: never waited on
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "compact-intent.jsonl" in err and "Nothing was swept" in err, err
    for name in ("a", "b", "new"):
        assert (root / "acme" / f"{name}.jsonl").read_bytes() == before[name]
    now = os.lstat(path)
    assert (now.st_mode, now.st_ino, now.st_size) == (planted.st_mode, planted.st_ino, planted.st_size)
    if kind == "symlink":
        assert (root.parent / "outside.jsonl").read_bytes() == b"not to be read\n"
    assert sweeps(root) == []
    # Moved away by a person, the sweep goes on and records its own drops.
    path.rename(root / "looked-at")
    assert run_cli("compact", "-q", root=root).returncode == 0
    assert [ev["data"]["logs"] for ev in sweeps(root)] == [DROPS]
