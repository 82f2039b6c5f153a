"""`compact` under real faults: kill -9 mid-sweep, a read-only root, racing writers and readers."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY = 86_400 * 10**9
DROPPED = "wardrik.events.dropped"


def two_part_log(path: Path, old_mb: float, new_mb: float, log_id: str = "acme/big") -> tuple[bytes, bytes, int, int]:
    """A log of events 60-100 days old then 0-10 days old: a 30d sweep cuts exactly between them.

    Returns (whole file, expected kept suffix, number of old events, total events)."""
    now = time.time_ns()
    tmp = path.with_name(".gen-" + path.name)
    a = write_spread(tmp, mb=old_mb, days=40, end_ns=now - 60 * DAY, log_id=log_id)
    old = tmp.read_bytes()
    b = write_spread(tmp, mb=new_mb, days=10, end_ns=now, first_seq=a["events"] + 1, log_id=log_id)
    new = tmp.read_bytes()
    tmp.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(old)
        f.write(new)
    return old + new, new, a["events"], a["events"] + b["events"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("big")
    whole, kept, n_old, total = two_part_log(d / "acme/big.jsonl", 20, 25)
    return d / "acme/big.jsonl", hashlib.sha256(whole).hexdigest(), hashlib.sha256(kept).hexdigest(), len(kept), n_old, total


def _fresh_root(tmp_path: Path, big) -> Path:
    src = big[0]
    r = tmp_path / "root"
    (r / "acme").mkdir(parents=True)
    (r / ".wardrik").mkdir()  # a root, as `wardrik init` makes it
    shutil.copyfile(src, r / "acme/big.jsonl")
    # a second, small log and an audit log, so every kind of log is in the sweep
    write_spread(r / "acme/small.jsonl", events=200, days=100, log_id="acme/small")
    run_cli("audit", "record", "agent.created", "agents/acme/big", "--data", '{"agent": {"id": "acme/big"}}',
            "--actor", "user:a", root=r, check=True)
    return r


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def full_run_seconds(big, tmp_path_factory):
    r = _fresh_root(tmp_path_factory.mktemp("timing"), big)
    t = time.perf_counter()
    run_cli("compact", "--retention", "30d", root=r, check=True)
    return time.perf_counter() - t


@pytest.mark.parametrize("when", ["50ms", "100ms", "200ms", "30%", "60%", "85%", "95%"])
@pytest.mark.subprocess
def test_kill_9_mid_sweep_leaves_each_log_as_it_was_or_should_be(tmp_path, big, full_run_seconds, when):
    path_src, sha_whole, sha_kept, kept_len, n_old, total = big
    r = _fresh_root(tmp_path, big)
    small_before = (r / "acme/small.jsonl").read_bytes()
    delay = float(when[:-2]) / 1000 if when.endswith("ms") else full_run_seconds * float(when[:-1]) / 100
    p = subprocess.Popen([WARDRIK, "--root", str(r), "compact", "--retention", "30d", "--format", "json"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()
    log = r / "acme/big.jsonl"
    state = {sha_whole: "as it was", sha_kept: "as it should be"}.get(_sha(log))
    assert state is not None, "the log is neither the original nor the expected result"
    print(f"[{when}: {state}]")
    small = (r / "acme/small.jsonl").read_bytes()
    assert small == small_before or small_before.endswith(small)
    # Every reader sees a consistent log: check passes, head is unchanged.
    c = run_cli("check", root=r)
    assert c.returncode == 0, c.stdout
    from wardrik_cli.protocol.cursor import decode_cursor
    assert decode_cursor(run_cli("head", "acme/big", root=r).stdout.decode())["acme/big"] == total
    # A later run is not confused by anything the killed one left, and finishes the job.
    p2 = run_cli("compact", "--retention", "30d", "--format", "json", root=r)
    assert p2.returncode == 0, p2.stderr
    assert _sha(log) == sha_kept
    assert not [x for x in r.rglob("*") if x.name.endswith((".compact.tmp", ".wm.tmp"))]
    assert run_cli("check", root=r).returncode == 0
    wm = orjson.loads((r / ".wardrik/watermarks/acme/big@json").read_bytes())
    assert wm["next_sequence"] == n_old + 1 and wm["inode"] == log.stat().st_ino
    evs = jsonl(run_cli("page", "acme/big", "--limit", "1", root=r).stdout)
    assert evs[0]["type"] == DROPPED and evs[0]["data"]["count"] == n_old
    a = run_cli("append", "acme/big", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r)
    assert jsonl(a.stdout)[0]["sequence"] == f"{total + 1:012d}"


def test_stale_temp_from_a_dead_run_is_removed(tmp_path, big):
    r = _fresh_root(tmp_path, big)
    junk = r / "acme/.big.jsonl.compact.tmp"
    junk.write_bytes(b"half a copy")
    p = run_cli("compact", "--retention", "30d", root=r)
    assert p.returncode == 0 and not junk.exists() and b"did not finish" in p.stderr
    assert run_cli("page", "*", "--limit", "0", root=r).returncode == 0


# ---------------------------------------------------------------------------
# a read-only root
# ---------------------------------------------------------------------------
@pytest.fixture
def ro_root(tmp_path):
    r = tmp_path / "ro"
    (r / ".wardrik").mkdir(parents=True)
    write_spread(r / "acme/a.jsonl", events=100, days=100, log_id="acme/a")
    run_cli("audit", "record", "agent.created", "agents/acme/a", "--data", '{"agent": {"id": "acme/a"}}',
            "--actor", "user:a", root=r, check=True)
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount")
    m = subprocess.run(["mount", "--bind", str(r), str(r)], capture_output=True)
    if m.returncode != 0:
        pytest.skip(f"cannot bind-mount: {m.stderr.decode().strip()}")
    try:
        m = subprocess.run(["mount", "-o", "remount,bind,ro", str(r)], capture_output=True)
        if m.returncode != 0:
            pytest.skip(f"cannot remount read-only: {m.stderr.decode().strip()}")
        yield r
    finally:
        subprocess.run(["umount", str(r)], capture_output=True)


def _snapshot(r: Path) -> dict:
    return {str(p): (p.stat().st_mtime_ns, _sha(p) if p.is_file() else None) for p in sorted(r.rglob("*"))}


@pytest.mark.subprocess
def test_read_only_root_clear_error_nothing_changed(ro_root):
    before = _snapshot(ro_root)
    p = run_cli("compact", "--retention", "10d", root=ro_root, process=True)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.startswith("error: ") and "read-only" in err and "Traceback" not in err and err.count("\n") == 1
    assert _snapshot(ro_root) == before
    # a dry run and the readers work there
    d = run_cli("compact", "--retention", "10d", "--dry-run", "--format", "json", root=ro_root, process=True)
    assert d.returncode == 0 and orjson.loads(d.stdout)["dropped"] >= 85
    assert run_cli("check", root=ro_root, process=True).returncode == 0
    assert run_cli("audit", "page", root=ro_root, process=True).returncode == 0
    assert run_cli("audit", "tail", root=ro_root, process=True).returncode == 0
    assert _snapshot(ro_root) == before


# ---------------------------------------------------------------------------
# racing appenders, a follower and two compactions
# ---------------------------------------------------------------------------
APPENDER = textwrap.dedent("""
    import sys
    from wardrik_cli import Root, append_event
    root = Root(sys.argv[1])
    for i in range(int(sys.argv[2])):
        e = append_event(root, "acme/big", "trigger.fired", {"trigger": {"name": sys.argv[3] + str(i)}})
        print(e["sequence"], flush=True)
""")


@pytest.mark.subprocess
def test_compaction_racing_appenders_and_a_follower(tmp_path):
    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    info = write_spread(r / "acme/big.jsonl", mb=8, days=40, end_ns=time.time_ns() - 60 * DAY, log_id="acme/big")
    n_old = info["events"]
    per = 120
    apps = [subprocess.Popen([sys.executable, "-c", APPENDER, str(r), str(per), name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE) for name in ("a", "b")]
    cur = tmp_path / "follower.cursor"
    seen: list[dict] = []

    def follow_once() -> None:
        p = run_cli("page", "acme/big", "--cursor-file", str(cur), "--limit", "100000", root=r)
        assert p.returncode == 0, p.stderr
        seen.extend(jsonl(p.stdout))

    compacts = []
    while any(a.poll() is None for a in apps):
        # two sweeps at once: one does the work, the other skips (or finds nothing left)
        compacts += [subprocess.Popen([WARDRIK, "--root", str(r), "compact", "--retention", "30d", "--format", "json"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        follow_once()
    for c in compacts:
        out, err = c.communicate()
        assert c.returncode == 0, err
        doc = orjson.loads(out)
        assert doc.get("skipped") or doc["logs"]
    got = []
    for a in apps:
        out, err = a.communicate()
        assert a.returncode == 0, err
        got += [int(x) for x in out.split()]
    total = n_old + 2 * per
    assert sorted(got) == list(range(n_old + 1, total + 1))  # no append lost, none repeated
    run_cli("compact", "--retention", "30d", root=r, check=True)
    follow_once()
    # The log: every appended event kept, in sequence, contiguous.
    evs = jsonl((r / "acme/big.jsonl").read_bytes())
    assert [int(e["sequence"]) for e in evs] == list(range(n_old + 1, total + 1))
    assert run_cli("check", root=r).returncode == 0
    # The follower: every event either seen once, in order, or counted by a dropped notice.
    pos = 0
    for e in seen:
        if e["type"] == DROPPED:
            pos += e["data"]["count"]
        else:
            assert int(e["sequence"]) == pos + 1, (e["sequence"], pos)
            pos += 1
    assert pos == total
    assert {int(e["sequence"]) for e in seen if e["type"] != DROPPED} >= set(range(n_old + 1, total + 1))


@pytest.mark.subprocess
def test_second_compact_skips_or_waits(tmp_path, big):
    r = _fresh_root(tmp_path, big)
    from wardrik_cli.store.locking import try_lock
    fd = try_lock(r / ".wardrik/locks/@compact@lock")
    assert fd is not None
    try:
        p = run_cli("compact", "--format", "json", root=r)
        assert p.returncode == 0 and b"skipped" in p.stderr
        assert orjson.loads(p.stdout)["skipped"]
        w = subprocess.Popen([WARDRIK, "--root", str(r), "compact", "--wait", "--format", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)
        assert w.poll() is None  # waiting for the lock
    finally:
        os.close(fd)
    out, err = w.communicate(timeout=60)
    assert w.returncode == 0, err
    assert orjson.loads(out)["dropped"] > 0


def test_a_failing_log_does_not_stop_the_others(tmp_path):
    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    write_spread(r / "acme/good.jsonl", events=100, days=100, log_id="acme/good")
    bad = r / "acme/bad.jsonl"
    write_spread(bad, events=100, days=100, log_id="acme/bad")
    lines = bad.read_bytes().splitlines(keepends=True)
    lines[-1] = b"this is not json\n"  # its last line: where the sequence goes on from is unknown
    bad.write_bytes(b"".join(lines))
    p = run_cli("compact", "--retention", "10d", "--format", "json", root=r)
    assert p.returncode == 1
    doc = orjson.loads(p.stdout)
    by = {x["log"]: x for x in doc["logs"]}
    assert by["acme/good"]["dropped"] >= 85 and "error" not in by["acme/good"]
    assert "corrupt" in by["acme/bad"]["error"]
    assert b"acme/bad" in p.stderr and p.stderr.startswith(b"error: ")
    assert bad.read_bytes() == b"".join(lines)  # untouched


@pytest.mark.parametrize("skip", [False, True])
def test_a_damaged_first_line_is_kept_beside_the_log_and_the_rest_swept(tmp_path, skip):
    """The first line is not an event: it is in the part dropped, so its bytes are kept beside
    the log (as any damaged line there), the log is swept from its first event on, and the
    run exits 1 unless --skip-corrupt (it used to refuse the log for good)."""
    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    bad = r / "acme/bad.jsonl"
    write_spread(bad, events=100, days=100, log_id="acme/bad")
    lines = bad.read_bytes().splitlines(keepends=True)
    lines[0] = b"this is not json\n"
    bad.write_bytes(b"".join(lines))
    p = run_cli("compact", "--retention", "10d", "--format", "json", *(["--skip-corrupt"] if skip else []), root=r)
    assert p.returncode == (0 if skip else 1), p.stderr
    row = orjson.loads(p.stdout)["logs"][0]
    assert row["dropped"] >= 85 and "error" not in row, row
    kept = list((r / "acme").glob("bad.jsonl.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b"this is not json\n"
    assert run_cli("check", root=r).returncode == 0
