"""`ship` and `pull` against real stores on loopback: moto's S3 server and a folder (file://).

What is checked is what the store holds, read with a second client (boto3, or the folder's
files), never the shipper's own account of it: every log in the store is its local file,
byte for byte, in segments whose keys, days and metadata follow the layout, with no event
twice and none missing, after repeats, appends, compaction, two shippers at once, kill -9 at
random instants, and a second root.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli
import s3_server
from s3_server import KEY, S3Target, free_port, s3_env

# the server and bucket fixtures (conftest is shared; these are this module's)
s3_endpoint, bucket, target = s3_server.s3_endpoint, s3_server.bucket, s3_server.target

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY_NS = 86_400 * 10**9


# ---------------------------------------------------------------------------
# the two kinds of target, read without wardrik
# ---------------------------------------------------------------------------


def stored_logs(t) -> dict[tuple[str, str], list[tuple[int, int, bytes, str]]]:
    """(kind, log id) -> [(first, last, bytes, day)] in sequence order, each segment checked
    against the layout: key, day of every line, first and last sequence, sha256."""
    out: dict[tuple[str, str], list] = {}
    for key in t.segments():
        m = KEY.fullmatch(key)
        assert m, key
        _, kind, raw_id, day, first = m.groups()
        data, meta = t.get(key)
        assert hashlib.sha256(data).hexdigest() == meta["wardrik-sha256"], key
        assert data.endswith(b"\n") and len(data) <= 64 << 20
        evs = [orjson.loads(line) for line in data.splitlines()]
        assert evs[0]["sequence"] == first and evs[-1]["sequence"] == meta["wardrik-last-sequence"]
        assert {e["time"][:10] for e in evs} == {day}, key  # never crosses a UTC day
        out.setdefault((kind, raw_id.replace("~", "/")), []).append((int(first), int(evs[-1]["sequence"]), data, day))
    for segs in out.values():
        segs.sort()
        for a, b in zip(segs, segs[1:], strict=False):
            assert b[0] == a[1] + 1, "segments overlap or leave a gap"
    return out


def store_bytes(t, log: str, kind: str = "agents") -> bytes:
    return b"".join(s[2] for s in stored_logs(t).get((kind, log), []))


def make_root(tmp_path: Path, name: str = "root") -> Path:
    r = tmp_path / name
    r.mkdir()
    run_cli("init", root=r, check=True)
    now = time.time_ns()
    write_spread(r / "acme/triage.jsonl", events=300, days=3, end_ns=now - DAY_NS, log_id="acme/triage", pad=60)
    write_spread(r / "acme/billing.jsonl", events=50, days=0.2, end_ns=now, log_id="acme/billing", pad=40)
    for i in range(3):
        run_cli("append", "solo", "trigger.fired", "--data", f'{{"trigger": {{"name": "t{i}"}}}}', root=r, check=True)
    run_cli("audit", "record", "agent.created", "agents/acme/triage", "--data", '{"agent": {"id": "acme/triage"}}',
            "--actor", "user:a", root=r, check=True)
    return r


def ship(r: Path, url: str, *args: str, **kw):
    return run_cli("ship", url, "--format", "json", *args, root=r, **kw)


def root_id(r: Path) -> str:
    return (r / ".wardrik/root-id").read_text().strip()


# ---------------------------------------------------------------------------
# the round trip
# ---------------------------------------------------------------------------
def test_ship_then_pull_is_byte_identical(tmp_path, target):
    r = make_root(tmp_path)
    with open(r / "solo.jsonl", "ab") as f:
        f.write(b'{"specversion":"1.0","id":"half a li')  # a torn tail: never shipped
    p = ship(r, target.url)
    assert p.returncode == 0, p.stderr
    doc = orjson.loads(p.stdout)
    # a segment per UTC day per log (all are small): counted from the files, since how many days
    # the generated logs span depends on the hour the test runs
    days = sum(len({e["time"][:10] for e in jsonl(path.read_bytes().rsplit(b"\n", 1)[0] + b"\n")})
               for path in [r / "acme/triage.jsonl", r / "acme/billing.jsonl", r / "solo.jsonl",
                            r / ".wardrik/audit.jsonl"])
    assert doc["events"] == 300 + 50 + 3 + 1 and doc["segments"] == days
    logs = stored_logs(target)
    assert set(logs) == {("agents", "acme/triage"), ("agents", "acme/billing"), ("agents", "solo"), ("audit", "audit")}
    for log in ("acme/triage", "acme/billing"):
        assert store_bytes(target, log) == (r / f"{log}.jsonl").read_bytes()
    assert store_bytes(target, "solo") + b'{"specversion":"1.0","id":"half a li' == (r / "solo.jsonl").read_bytes()
    assert store_bytes(target, "audit", "audit") == (r / ".wardrik/audit.jsonl").read_bytes()
    out = tmp_path / "evidence"
    p = run_cli("pull", target.url, "--into", out, "--format", "json")
    assert p.returncode == 0, p.stderr
    for log in ("acme/triage", "acme/billing"):
        assert (out / f"{log}.jsonl").read_bytes() == (r / f"{log}.jsonl").read_bytes()
    assert (out / ".wardrik/audit.jsonl").read_bytes() == (r / ".wardrik/audit.jsonl").read_bytes()
    assert run_cli("check", root=out).returncode == 0
    assert run_cli("page", "*", "--all", "-o", "jsonl", root=out).stdout == \
        run_cli("page", "acme", "solo", "--all", "-o", "jsonl", root=r).stdout
    # a pattern pulls only what it matches
    p = run_cli("pull", target.url, "acme/b*", "--into", tmp_path / "two")
    assert p.returncode == 0 and sorted(x.name for x in (tmp_path / "two").rglob("*.jsonl")) == ["billing.jsonl"]
    # --since leaves out whole segments: the evidence root records where each log starts, so it
    # checks clean and its readers say what they miss (before: check exit 1, a start unexplained)
    since = sorted({e["time"][:10] for e in jsonl((r / "acme/triage.jsonl").read_bytes())})[-1]
    p = run_cli("pull", target.url, "--since", since, "--into", tmp_path / "recent", "-o", "json")
    assert p.returncode == 0, p.stderr
    [row] = [x for x in orjson.loads(p.stdout)["logs"] if x["log"] == "acme/triage"]
    assert row["first"] > 1 and row["dropped"] == row["first"] - 1
    c = run_cli("check", root=tmp_path / "recent")
    assert c.returncode == 0, c.stderr
    got = jsonl(run_cli("page", "acme/triage", "--all", "-o", "jsonl", root=tmp_path / "recent").stdout)
    assert got[0]["type"] == "wardrik.events.dropped" and got[0]["data"]["count"] == row["first"] - 1
    assert int(got[1]["sequence"]) == row["first"]


def test_a_second_ship_ships_nothing_and_an_append_only_the_new_lines(tmp_path, target):
    r = make_root(tmp_path)
    assert ship(r, target.url).returncode == 0
    before = {k: target.get(k)[0] for k in target.segments()}
    p = ship(r, target.url)
    assert p.returncode == 0 and orjson.loads(p.stdout)["segments"] == 0
    assert {k: target.get(k)[0] for k in target.segments()} == before
    a = run_cli("append", "acme/billing", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=r, check=True)
    p = ship(r, target.url)
    doc = orjson.loads(p.stdout)
    assert doc["segments"] == 1 and doc["events"] == 1, doc
    new = sorted(set(target.segments()) - set(before))
    assert len(new) == 1 and new[0].endswith("/000000000051.jsonl")
    assert target.get(new[0])[0] == a.stdout
    assert {k: target.get(k)[0] for k in before} == before  # nothing shipped before was touched
    # without the position cache, the store says where to go on: still nothing twice
    shutil.rmtree(r / ".wardrik/ship")
    run_cli("append", "acme/billing", "trigger.fired", "--data", '{"trigger": {"name": "y"}}', root=r, check=True)
    assert orjson.loads(ship(r, target.url).stdout)["events"] == 1
    assert store_bytes(target, "acme/billing") == (r / "acme/billing.jsonl").read_bytes()


def test_a_log_deleted_and_made_again_is_refused_never_mixed_in(tmp_path, target):
    """The store holds events 1..3 of a log; the log is deleted and made again. Before, ship said
    nothing until the new log passed sequence 3, then shipped its 4 and 5 after the old 1..3."""
    r = tmp_path / "root"
    for i in range(3):
        run_cli("append", "solo", "trigger.fired", "--data", f'{{"trigger": {{"name": "old{i}"}}}}', root=r, check=True)
    assert ship(r, target.url).returncode == 0
    before = {k: target.get(k)[0] for k in target.segments()}
    log = r / "solo.jsonl"
    log.unlink()
    for n in (1, 4):  # behind the store, then past it
        while (log.read_bytes().count(b"\n") if log.exists() else 0) < n:
            run_cli("append", "solo", "trigger.fired", "--data", '{"trigger": {"name": "new"}}', root=r, check=True)
        for cache in (True, False):  # from the position cache, and from the store's listing
            if not cache:
                shutil.rmtree(r / ".wardrik/ship", ignore_errors=True)
            p = ship(r, target.url)
            err = p.stderr.decode()
            assert p.returncode == 1 and err.count("error:") == 1 and "solo" in err, (n, cache, err)
            assert {k: target.get(k)[0] for k in target.segments()} == before, (n, cache)


def test_a_log_made_again_up_to_the_stores_last_segment_is_refused_without_the_cache(tmp_path, target):
    """Store: segments 1..3 and 4..5; the log made again holds 1..3. From the store's listing
    (no position cache) the shipper tried segment 4 again, had no local line for it, and said
    nothing (exit 0): the store ahead of the local log is refused as with the cache."""
    r = tmp_path / "root"
    add = ["append", "solo", "trigger.fired", "--data", '{"trigger": {"name": "x"}}']
    for n in (3, 2):
        for _ in range(n):
            run_cli(*add, root=r, check=True)
        assert ship(r, target.url).returncode == 0
    before = {k: target.get(k)[0] for k in target.segments()}
    assert len(before) == 2
    (r / "solo.jsonl").unlink()
    for _ in range(3):
        run_cli(*add, root=r, check=True)
    shutil.rmtree(r / ".wardrik/ship")
    p = ship(r, target.url)
    assert p.returncode == 1 and b"holds it through sequence 5" in p.stderr, p.stderr
    assert {k: target.get(k)[0] for k in target.segments()} == before


def test_a_log_compacted_before_its_first_ship_pulls_clean(tmp_path, target):
    """The store never had its start and holds no record of why: pull starts the evidence log
    at the store's first segment with a record, as a remote read does (before: exit 1, '2
    events missing from the store', and an empty log)."""
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    write_spread(r / "old.jsonl", events=40, days=60, end_ns=time.time_ns() - DAY_NS, log_id="old", pad=20)
    run_cli("compact", "-q", "--retention", "30d", root=r, check=True)
    first = orjson.loads((r / "old.jsonl").read_bytes().split(b"\n")[0])["sequence"]
    assert int(first) > 1
    assert ship(r, target.url).returncode == 0
    p = run_cli("pull", target.url, "--into", tmp_path / "ev", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "ev/old.jsonl").read_bytes() == (r / "old.jsonl").read_bytes()
    assert run_cli("check", root=tmp_path / "ev").returncode == 0
    got = jsonl(run_cli("page", "old", "--all", "-o", "jsonl", root=tmp_path / "ev").stdout)
    assert got[0]["type"] == "wardrik.events.dropped" and got[0]["data"]["count"] == int(first) - 1


def test_shipping_goes_on_after_local_compaction(tmp_path, target):
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    write_spread(r / "acme/old.jsonl", events=400, days=60, end_ns=time.time_ns() - DAY_NS, log_id="acme/old", pad=40)
    original = (r / "acme/old.jsonl").read_bytes()
    assert ship(r, target.url).returncode == 0
    c = run_cli("compact", "--retention", "30d", "-o", "json", root=r, check=True)
    assert orjson.loads(c.stdout)["dropped"] > 100  # the first kept sequence moved on
    added = run_cli("append", "acme/old", "trigger.fired", "--data", '{"trigger": {"name": "after"}}',
                    root=r, check=True).stdout
    shutil.rmtree(r / ".wardrik/ship")  # and the store alone says where to go on
    p = ship(r, target.url)
    assert p.returncode == 0, p.stderr
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["acme/old"]["events"] == 1 and rows["audit"]["events"] == 1  # and compact's ledger.compacted
    assert store_bytes(target, "acme/old") == original + added


# ---------------------------------------------------------------------------
# concurrency and crashes
# ---------------------------------------------------------------------------
@pytest.mark.subprocess
def test_two_shippers_at_once_store_each_log_once(tmp_path, target):
    r = make_root(tmp_path)
    for i in range(6):
        write_spread(r / f"fleet/a{i}.jsonl", events=2000, days=2, log_id=f"fleet/a{i}", pad=100)
    procs = [subprocess.Popen([WARDRIK, "--root", str(r), "ship", target.url, "-o", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    docs = [orjson.loads(o[0]) for o in outs]
    logs = stored_logs(target)  # contiguous, no overlap
    for log in [f"fleet/a{i}" for i in range(6)] + ["acme/triage", "acme/billing", "solo"]:
        assert b"".join(s[2] for s in logs[("agents", log)]) == (r / f"{log}.jsonl").read_bytes()
    # each segment was written by exactly one of them
    assert sum(d["segments"] for d in docs) == sum(len(v) for v in logs.values())


ROUNDS = 12  # kills at random instants; each lands mid-ship (after storing 1-3 segments) nearly always


@pytest.mark.subprocess
def test_kill_9_mid_ship_with_an_appender_running(tmp_path, bucket):
    t = S3Target(bucket)
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    names = [f"k/log{i}" for i in range(6)]
    for n in names:  # 60 days each: a backlog of about 360 segments for the first rounds to be killed in
        write_spread(r / f"{n}.jsonl", events=3000, days=60, log_id=n, pad=200)
    stop = threading.Event()
    appenders = [subprocess.Popen([WARDRIK, "--root", str(r), "append", n, "--stream", "--no-sync"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for n in names[:3]]

    def feed():
        i = 0
        while not stop.is_set():
            for a in appenders:
                a.stdin.write(b'{"type": "trigger.fired", "data": {"trigger": {"name": "t%d"}}}\n' % i)
                a.stdin.flush()
            i += 1
            time.sleep(0.002)

    feeder = threading.Thread(target=feed)
    feeder.start()
    rng = random.Random(14)
    mid_ship = alive = 0
    started = time.monotonic()
    try:
        for _ in range(ROUNDS):
            before = len(t.segments())
            p = subprocess.Popen([WARDRIK, "--root", str(r), "ship", t.url, "-q"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # the instant: once it has stored a random 1 to 3 segments (a condition on what it
            # did, not a sleep; a generous ceiling only against a hang)
            want, deadline = before + rng.randint(1, 3), time.monotonic() + 60
            while p.poll() is None and len(t.segments()) < want and time.monotonic() < deadline:
                time.sleep(0.005)
            running = p.poll() is None
            p.send_signal(signal.SIGKILL)
            p.wait()
            if running:
                alive += 1  # killed while it was still running
                if len(t.segments()) > before:
                    mid_ship += 1  # ... and after it had stored something: mid-ship
            else:
                assert p.returncode == 0, p.stderr.read()
    finally:
        stop.set()
        feeder.join()
        for a in appenders:
            a.stdin.close()
            a.wait(timeout=30)
    print(f"[{alive} of {ROUNDS} killed while running, {mid_ship} after storing a segment; "
          f"{time.monotonic() - started:.1f}s]")
    assert alive >= ROUNDS * 2 // 3 and mid_ship >= ROUNDS // 3
    p = run_cli("ship", t.url, "-o", "json", root=r, process=True)
    assert p.returncode == 0, p.stderr
    logs = stored_logs(t)
    for n in names:
        assert b"".join(s[2] for s in logs[("agents", n)]) == (r / f"{n}.jsonl").read_bytes(), n
        assert len((r / f"{n}.jsonl").read_bytes()) > 0


# ---------------------------------------------------------------------------
# two roots, one log id
# ---------------------------------------------------------------------------
def test_a_second_root_shipping_the_same_log_id_is_refused_naming_both(tmp_path, target):
    a = make_root(tmp_path, "a")
    assert ship(a, target.url).returncode == 0
    before = {k: target.get(k)[0] for k in target.segments()}
    b = tmp_path / "b"
    run_cli("init", root=b, check=True)
    # its events are of other days than a's: their keys would not collide; the owner does
    write_spread(b / "acme/billing.jsonl", events=20, days=1, end_ns=time.time_ns() - 20 * DAY_NS,
                 log_id="acme/billing")
    write_spread(b / "other.jsonl", events=5, days=0.01, log_id="other")
    p = ship(b, target.url)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("error:") == 1 and "acme/billing" in err and "two roots" in err
    assert root_id(a) in err and root_id(b) in err, err
    assert "Traceback" not in err
    after = {k: target.get(k)[0] for k in target.segments()}
    assert {k: v for k, v in after.items() if "log=acme~billing" in k} == \
        {k: v for k, v in before.items() if "log=acme~billing" in k}
    assert store_bytes(target, "other") == (b / "other.jsonl").read_bytes()  # its other logs still go
    # in pretty, the summary counts the refused log (before: "nothing new to ship", then errors)
    q = run_cli("ship", target.url, "-F", "pretty", root=b)
    assert q.returncode == 1 and b"nothing new" not in q.stderr and b"1 log(s) refused" in q.stderr, q.stderr


def test_shipping_again_as_another_deployment_is_refused_until_the_target_is_forgotten(tmp_path):
    """A root that shipped as one deployment and ships again as another would store every log
    again under the other deployment's keys: each event twice in the fleet."""
    share = s3_server.FolderTarget(tmp_path / "share")
    r = tmp_path / "root"
    run_cli("init", "--deployment", "east", root=r, check=True)
    run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=r, check=True)
    assert ship(r, share.url).returncode == 0
    before = {p: p.read_bytes() for p in share.path.rglob("*") if p.is_file()}
    for args in ((), ("--follow",)):
        p = run_cli("--deployment", "west", "ship", share.url + "/", *args, root=r, timeout=60)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("error:") == 1 and "'east'" in err and "--forget" in err, err
        assert {p: p.read_bytes() for p in share.path.rglob("*") if p.is_file()} == before
    assert ship(r, share.url, "--deployment", "east").returncode == 0  # as before: fine
    run_cli("ship", "--forget", share.url, root=r, check=True)
    assert run_cli("--deployment", "west", "ship", share.url, root=r).returncode == 0
    assert [k.split("/")[1] for k in share.segments()] == ["deployment=east", "deployment=west"]


# ---------------------------------------------------------------------------
# --follow
# ---------------------------------------------------------------------------
@pytest.mark.subprocess
def test_follow_ends_when_its_output_pipe_closes_while_idle(tmp_path):
    """As tail -f and activity --watch do; before, it waited out its interval (here an hour)
    and only a signal ended it."""
    share = s3_server.FolderTarget(tmp_path / "share")
    r = tmp_path / "root"
    run_cli("append", "a", "run.started", root=r, check=True)
    read, write = os.pipe()
    p = subprocess.Popen([WARDRIK, "--root", str(r), "ship", share.url, "--follow", "--interval", "1h", "-q"],
                         stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    try:
        deadline = time.monotonic() + 60
        while not share.segments():  # its first pass is done: it is idle
            assert time.monotonic() < deadline and p.poll() is None, p.stderr.read() if p.stderr else b""
            time.sleep(0.05)
        os.close(read)
        rc = p.wait(timeout=60)  # a ceiling: the interval it waits out is an hour
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("ship --follow did not notice its reader went away")
    assert rc == 0 and p.stderr is not None and b"Traceback" not in p.stderr.read()


@pytest.mark.subprocess
def test_follow_ships_as_the_log_grows_and_ends_on_sigterm(tmp_path, bucket):
    t = S3Target(bucket)
    r = make_root(tmp_path)
    p = subprocess.Popen([WARDRIK, "--root", str(r), "ship", t.url, "--follow", "--interval", "1s", "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while store_bytes(t, "solo") != (r / "solo.jsonl").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
        run_cli("append", "solo", "trigger.fired", "--data", '{"trigger": {"name": "late"}}', root=r, check=True)
        while store_bytes(t, "solo") != (r / "solo.jsonl").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store_bytes(t, "solo") == (r / "solo.jsonl").read_bytes()
        assert p.poll() is None
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0 and b"Traceback" not in err, err


@pytest.mark.subprocess
def test_follow_retries_an_unreachable_endpoint(tmp_path):
    r = make_root(tmp_path)
    env = {**os.environ, **s3_env(f"http://127.0.0.1:{free_port()}")}
    p = subprocess.Popen([WARDRIK, "--root", str(r), "ship", "s3://nobody/x", "--follow", "--interval", "1s"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(3)
    assert p.poll() is None  # still trying
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    lines = err.decode().splitlines()
    assert len(lines) >= 2 and all(line.startswith("warning: cannot reach") for line in lines), lines
    assert "trying again in 1s" in lines[0] and "trying again in 2s" in lines[1]


# ---------------------------------------------------------------------------
# bad input and a bad store
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["http://example.com/x", "ftp://h/p", "s3:///no-bucket", "/tmp/plain/path",
                                 "file://host/share", "s3", "s3://ledgers/a\x01b", "s3://ledgers/a\x7fb",
                                 "s3://ledgers/a\tb", "s3://ledgers/a\nb"])
def test_a_target_that_is_not_s3_or_file_is_refused(tmp_path, url):
    r = make_root(tmp_path)
    p = run_cli("ship", url, root=r)
    assert p.returncode == 2 and p.stderr.startswith(b"error: ") and p.stderr.count(b"\n") == 1, p.stderr
    assert not (r / ".wardrik/ship").exists()
    p = run_cli("pull", url, "--into", tmp_path / "out")
    assert p.returncode == 2 and p.stderr.startswith(b"error: ")


def test_one_place_spelled_several_ways_is_one_registration(tmp_path):
    """The store takes s3://b//p/ and S3://b/p as s3://b/p: so does the registration that holds
    back local compaction, and --forget of any spelling ends it."""
    from wardrik_cli.store.ship_slots import normal_url

    assert {normal_url(u) for u in ("s3://b/p", "s3://b/p/", "S3://b//p", "s3://b/p//")} == {"s3://b/p"}
    share = s3_server.FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    for url in (share.url, share.url + "/", share.url.replace("file:///", "file:////") + "//"):
        assert ship(r, url).returncode == 0
    assert len(list((r / ".wardrik/ship").glob("*.slot.json"))) == 1
    run_cli("ship", "--forget", share.url + "/", root=r, check=True)
    assert list((r / ".wardrik/ship").glob("*.slot.json")) == []


def _legacy_registration(r: Path, url: str) -> str:
    """A registration as the version before one-spelling-per-place wrote it for ``url``: its
    file keyed by the URL less its trailing slashes, its positions beside it."""
    import hashlib as _h

    key = _h.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    d = r / ".wardrik/ship"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{key}.slot.json").write_bytes(orjson.dumps({"target": url, "deployment": "local", "patterns": None,
                                                       "registered": "2026-11-01T00:00:00.000000Z"}))
    (d / f"{key}.json").write_bytes(orjson.dumps({"target": url, "logs": {}}))
    return key


@pytest.mark.parametrize("how", ["forget", "ship"])
def test_a_registration_an_older_version_spelled_otherwise_is_forgotten_or_taken_over(tmp_path, how):
    """Before, --forget of the place missed it ('not registered') and compact held back
    events for it for good."""
    share = s3_server.FolderTarget(tmp_path / "share")
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    run_cli("append", "a", "run.started", root=r, check=True)
    odd = share.url[:share.url.rindex("/share")] + "//share/"  # one place, another spelling
    key = _legacy_registration(r, odd)
    if how == "forget":
        p = run_cli("ship", "--forget", share.url, root=r)
        assert p.returncode == 0 and b"not registered" not in p.stderr, p.stderr
    else:
        assert ship(r, share.url).returncode == 0
    names = sorted(p.name for p in (r / ".wardrik/ship").iterdir())
    assert not any(n.startswith(key) for n in names), names
    assert len([n for n in names if n.endswith(".slot.json")]) == (0 if how == "forget" else 1)


def test_taking_over_an_older_registration_keeps_what_it_covered(tmp_path):
    """The older registration covered a/* only; a ship of b/* to the same place took it over
    and dropped a/*, so compact would have dropped a's events, never shipped (found by review)."""
    share = s3_server.FolderTarget(tmp_path / "share")
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    for log in ("a/one", "b/two"):  # two days old
        write_spread(r / f"{log}.jsonl", events=3, days=0.01, end_ns=time.time_ns() - 2 * DAY_NS, log_id=log)
    odd = share.url[:share.url.rindex("/share")] + "//share"
    key = _legacy_registration(r, odd)
    slot = r / ".wardrik/ship" / f"{key}.slot.json"
    slot.write_bytes(orjson.dumps({**orjson.loads(slot.read_bytes()), "patterns": ["a/*"]}))
    assert ship(r, share.url, "b/*").returncode == 0
    [now] = [orjson.loads(p.read_bytes()) for p in (r / ".wardrik/ship").glob("*.slot.json")]
    assert now["patterns"] == ["a/*", "b/*"], now
    rows = {row["log"]: row for row in orjson.loads(run_cli("compact", "--retention", "1d", "--dry-run", "-o", "json",
                                                            root=r).stdout)["logs"]}
    assert rows["a/one"]["dropped"] == 0 and rows["a/one"]["held_back"] == 3, rows


def test_an_unreachable_endpoint_is_one_error_line(tmp_path):
    r = make_root(tmp_path)
    started = time.monotonic()
    p = run_cli("ship", "s3://bkt/x", root=r, env=s3_env(f"http://127.0.0.1:{free_port()}"))
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.startswith(b"error: cannot reach http://127.0.0.1:") and p.stderr.count(b"\n") == 1, p.stderr
    assert time.monotonic() - started < 15


def test_a_bucket_that_does_not_exist(tmp_path, bucket):
    r = make_root(tmp_path)
    p = run_cli("ship", "s3://no-such-bucket-here/x", root=r)
    assert p.returncode == 1 and p.stderr.count(b"\n") == 1
    assert b"bucket 'no-such-bucket-here' does not exist" in p.stderr
    p = run_cli("pull", "s3://no-such-bucket-here/x", "--into", tmp_path / "out")
    assert p.returncode == 1 and b"does not exist" in p.stderr and p.stderr.count(b"\n") == 1


def test_a_folder_target_that_does_not_exist(tmp_path):
    r = make_root(tmp_path)
    p = run_cli("ship", f"file://{tmp_path}/not-mounted", root=r)
    assert p.returncode == 1 and b"is not a directory" in p.stderr and p.stderr.count(b"\n") == 1


def test_a_segment_whose_bytes_do_not_match_its_sha256_is_reported_not_pulled(tmp_path, target):
    r = make_root(tmp_path)
    assert ship(r, target.url).returncode == 0
    keys = [k for k in target.segments() if "log=acme~triage" in k]
    assert len(keys) >= 3
    bad = keys[1]
    data, meta = target.get(bad)
    target.put(bad, data.replace(b'"output":"', b'"output":"X', 1), meta)  # same metadata, other bytes
    out = tmp_path / "evidence"
    p = run_cli("pull", target.url, "--into", out, "-o", "json")
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("error:") == 1 and "sha256" in err and bad in err
    first = target.get(keys[0])[0]
    assert (out / "acme/triage.jsonl").read_bytes() == first  # the segments before it, never it
    assert (out / "acme/billing.jsonl").read_bytes() == (r / "acme/billing.jsonl").read_bytes()


def test_a_segment_missing_a_middle_line_with_its_hash_made_anew_is_not_pulled(tmp_path):
    """Its first and last sequences and its sha256 agree with its metadata; one line per
    sequence does not (remote reads refused it; pull wrote it, and check found the gap)."""
    share = s3_server.FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    assert ship(r, share.url).returncode == 0
    bad = next(k for k in share.segments() if "log=solo" in k)
    lines = (share.path / bad).read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    holed = lines[0] + lines[2]
    (share.path / bad).write_bytes(holed)
    meta = orjson.loads((share.path / (bad + ".meta")).read_bytes())
    meta["sha256"] = hashlib.sha256(holed).hexdigest()
    (share.path / (bad + ".meta")).write_bytes(orjson.dumps(meta))
    out = tmp_path / "evidence"
    p = run_cli("pull", share.url, "--into", out, "-o", "json")
    err = p.stderr.decode()
    assert p.returncode == 1 and err.count("error:") == 1 and "one whole line per sequence" in err and bad in err, err
    assert not (out / "solo.jsonl").exists() or (out / "solo.jsonl").read_bytes() == b""
    assert run_cli("--root", out, "check").returncode == 1  # the root says it is not whole
    assert run_cli("--root", share.url, "page", "solo").returncode == 1  # as remote reads say


def test_pull_into_a_folder_that_is_not_empty(tmp_path, target):
    r = make_root(tmp_path)
    assert ship(r, target.url).returncode == 0
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/x").write_text("x")
    p = run_cli("pull", target.url, "--into", tmp_path / "busy")
    assert p.returncode == 2 and b"not empty" in p.stderr
    assert run_cli("pull", target.url).returncode == 2  # --into is needed


# ---------------------------------------------------------------------------
# the library: segments
# ---------------------------------------------------------------------------
def test_a_segment_never_crosses_a_day_nor_its_size_limit(tmp_path):
    from wardrik_cli.remote.ship import build_segment
    from wardrik_cli.store.layout import Root
    from wardrik_cli.store.log import Log

    r = tmp_path / "r"
    write_spread(r / "x.jsonl", events=500, days=5, log_id="x", pad=100)
    raw = (r / "x.jsonl").read_bytes()
    lines = raw.splitlines(keepends=True)
    with Log.agent(Root(r), "x").open() as view:
        off, segs = 0, []
        while off < view.end:
            s = build_segment(view, off, limit=4096)
            segs.append(s)
            off = s.end
    assert b"".join(s.data for s in segs) == raw
    for s in segs:
        evs = [orjson.loads(x) for x in s.data.splitlines()]
        assert {e["time"][:10] for e in evs} == {s.day}
        assert len(s.data) <= 4096 and int(evs[0]["sequence"]) == s.first and int(evs[-1]["sequence"]) == s.last
    days = [orjson.loads(x)["time"][:10] for x in lines]
    # a segment ends at each change of day, and only there or at the size limit
    assert sum(1 for a, b in zip(days, days[1:], strict=False) if a != b) >= 4
    ends = {s.last for s in segs}
    for i, (a, b) in enumerate(zip(days, days[1:], strict=False)):
        if a != b:
            assert i + 1 in ends
    assert jsonl(raw)[0]["sequence"] == "000000000001"


@pytest.mark.subprocess
def test_a_pull_killed_part_way_is_said_by_check_and_by_the_next_pull(tmp_path):
    """kill -9 while pull writes the evidence root: the root says it is unfinished (check exit 1,
    naming it; a second pull into it names it too). Before, check passed on the partial root."""
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    for i in range(300):
        (r / "many").mkdir(exist_ok=True)
        write_spread(r / f"many/l{i:03d}.jsonl", events=20, days=0.1, end_ns=time.time_ns(), log_id=f"many/l{i:03d}",
                     pad=20)
    share = tmp_path / "share"
    share.mkdir()
    assert ship(r, f"file://{share}").returncode == 0
    for attempt in range(5):
        into = tmp_path / f"ev{attempt}"
        p = subprocess.Popen([WARDRIK, "pull", f"file://{share}", "--into", str(into)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not list(into.glob("many/*.jsonl")) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        p.kill()
        p.wait()
        pulled = len(list(into.glob("many/*.jsonl")))
        if (into / ".wardrik/pull-unfinished").exists() and pulled < 300:
            break  # killed mid-pull, as wanted
    else:
        pytest.fail("the pull always finished before it could be killed")
    c = run_cli("check", root=into)
    assert c.returncode == 1 and b"did not finish" in c.stdout + c.stderr, c.stdout
    again = run_cli("pull", f"file://{share}", "--into", into)
    assert again.returncode == 2 and b"did not finish" in again.stderr
    done = tmp_path / "done"
    assert run_cli("pull", f"file://{share}", "--into", done).returncode == 0
    assert not (done / ".wardrik/pull-unfinished").exists() and run_cli("check", root=done).returncode == 0


def _shipped_to_folder(tmp_path, *logs: str, root: Path | None = None) -> tuple[Path, str]:
    """(root, store URL): ``logs`` appended to a new root (or ``root`` as it is), shipped to a
    new file:// store."""
    r = root if root is not None else tmp_path / "root"
    for log in logs:
        run_cli("append", log, "run.started", root=r, check=True)
    store = tmp_path / "store"
    store.mkdir()
    assert run_cli("ship", f"file://{store}", root=r).returncode == 0
    return r, f"file://{store}"


def test_pull_reads_a_pattern_as_readers_do(tmp_path):
    """``pull STORE acme`` pulled nothing (a literal was matched as one log id only), and a
    literal naming no log in the store pulled nothing with exit 0; readers take ``acme`` as
    every log under it, and refuse a literal naming none (exit 2)."""
    _, store = _shipped_to_folder(tmp_path, "acme/a", "acme/sub/b", "other")
    p = run_cli("pull", store, "acme", "--into", str(tmp_path / "e1"), "-o", "json")
    assert p.returncode == 0, p.stderr
    assert sorted(x["log"] for x in orjson.loads(p.stdout)["logs"]) == ["acme/a", "acme/sub/b"]
    p = run_cli("pull", store, "acme/nosuch", "--into", str(tmp_path / "e2"))
    assert p.returncode == 2 and b"no log 'acme/nosuch'" in p.stderr and not (tmp_path / "e2").exists()
    p = run_cli("pull", store, "nomatch*", "--into", str(tmp_path / "e3"), "-o", "json")
    assert p.returncode == 0 and orjson.loads(p.stdout)["logs"] == []


def test_a_log_compacted_to_nothing_before_its_first_ship_is_there_for_remote_readers(tmp_path):
    """Locally such a log reads as one events.dropped; the store got only its owner, so a
    remote reader said there was no such log (exit 2). Ship now records the cut as the log's
    watermark in the store (as a remote sweep does)."""
    import shutil

    r = tmp_path / "root"
    shutil.copytree(Path(__file__).parent.parent / "sample_ledgers", r)
    assert run_cli("compact", "--retention", "1d", "-q", root=r).returncode == 0
    local = jsonl(run_cli("page", "acme/billing", root=r).stdout)
    assert [e["type"] for e in local] == ["wardrik.events.dropped"]
    _, store = _shipped_to_folder(tmp_path, root=r)
    p = run_cli("--root", store, "page", "acme/billing")
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout) and jsonl(p.stdout)[0]["data"] == local[0]["data"] and \
        jsonl(p.stdout)[0]["id"] == local[0]["id"]
    ev = tmp_path / "ev"
    assert run_cli("pull", store, "--into", str(ev)).returncode == 0
    assert run_cli("check", root=ev).returncode == 0
    run_cli("append", "acme/billing", "run.started", root=r, check=True)
    assert run_cli("ship", store, root=r).returncode == 0  # goes on after the watermark
    got = jsonl(run_cli("--root", store, "page", "acme/billing").stdout)
    assert [(e["type"], e.get("sequence")) for e in got] == [
        ("wardrik.events.dropped", None), ("wardrik.run.started", str(local[0]["data"]["count"] + 1).zfill(12))]


def test_pull_of_a_name_that_is_a_log_and_a_folder_pulls_the_log(tmp_path):
    """As page reads it (a log keeps naming itself beside a folder of that name)."""
    _, store = _shipped_to_folder(tmp_path, "ops", "ops/a")
    p = run_cli("pull", store, "ops", "--into", str(tmp_path / "e"), "-o", "json")
    assert p.returncode == 0 and [x["log"] for x in orjson.loads(p.stdout)["logs"]] == ["ops"]


def test_a_pull_with_a_log_that_fails_leaves_the_root_unfinished(tmp_path):
    """A segment whose bytes do not match its sha256: pull exits 1 for that log, and the
    evidence root said nothing of it afterwards (the marker went, check was clean, the log
    an empty file). Now the marker stays, saying which log failed, and check exits 1."""
    r, store = _shipped_to_folder(tmp_path, "a", "b")
    [seg] = [p for p in (tmp_path / "store").rglob("*.jsonl") if "log=a/" in p.as_posix()]
    seg.write_bytes(seg.read_bytes().replace(b"run.started", b"run.stArted"))
    ev = tmp_path / "ev"
    p = run_cli("pull", store, "--into", str(ev))
    assert p.returncode == 1 and b"sha256" in p.stderr, p.stderr
    marker = ev / ".wardrik" / "pull-unfinished"
    assert marker.is_file() and b"a: " in marker.read_bytes()
    p = run_cli("check", root=ev)
    assert p.returncode == 1 and b"did not finish" in p.stdout + p.stderr
    assert (ev / "b.jsonl").read_bytes() == (r / "b.jsonl").read_bytes()  # the others were pulled


def test_interval_without_follow_is_refused_before_anything(tmp_path):
    """--interval paces the passes of --follow; given alone it was taken silently and ignored."""
    r = tmp_path / "r"
    assert run_cli("append", "a", "run.started", root=r).returncode == 0
    (tmp_path / "share").mkdir()
    p = run_cli("ship", f"file://{tmp_path / 'share'}", "--interval", "10s", root=r)
    assert (p.returncode, p.stdout) == (2, b"") and b"--interval goes with --follow" in p.stderr, p.stderr
    assert list((tmp_path / "share").iterdir()) == [] and not (r / ".wardrik" / "ship").exists()
