"""Remote reads: `--root s3://...` and `--root file://...` give what the local root gives.

A root is shipped (several logs, the audit log, a log compacted before its first ship, so its
store starts after sequence 1 and readers owe an events.dropped), then every reader runs on
the local root and on the store, and stdout and exit codes are compared byte for byte. The
mirror under the test's cache folder is what the remote reads sync; what they fetch is
counted by a second S3 endpoint that counts the bytes of every GET (never by timing).
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli
import s3_server
from s3_server import FolderTarget, s3_env

s3_endpoint, bucket, target = s3_server.s3_endpoint, s3_server.bucket, s3_server.target

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY_NS = 86_400 * 10**9
KEY_END = ".jsonl"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    # Each test's mirrors in its own cache folder: never the developer's ~/.cache.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("WARDRIK_CACHE", raising=False)




def make_root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    run_cli("init", root=r, check=True)
    now = time.time_ns()
    write_spread(r / "acme/triage.jsonl", events=300, days=3, end_ns=now - DAY_NS, log_id="acme/triage", pad=60)
    write_spread(r / "acme/billing.jsonl", events=50, days=0.2, end_ns=now, log_id="acme/billing", pad=40)
    # compacted before its first ship: the store starts after sequence 1, with no record of why
    write_spread(r / "acme/old.jsonl", events=200, days=60, end_ns=now - DAY_NS, log_id="acme/old", pad=40)
    run_cli("compact", "--retention", "30d", root=r, check=True)
    assert (r / "acme/old.jsonl").read_bytes()[:200].count(b'"sequence":"000000000001"') == 0
    run_cli("append", "solo", "run.started", "--data", '{"task": "x"}', root=r, check=True)
    for i in range(3):
        run_cli("append", "solo", "tool_call.started", "--data",
                f'{{"tool": {{"name": "bash", "call": {{"id": "c{i}"}}}}}}', root=r, check=True)
    run_cli("append", "solo", "tool_call.completed", "--data", '{"tool": {"call": {"id": "c0"}}}', root=r, check=True)
    run_cli("audit", "record", "agent.created", "agents/acme/triage", "--data", '{"agent": {"id": "acme/triage"}}',
            "--actor", "user:a", root=r, check=True)
    return r


def ship(r: Path, url: str) -> None:
    p = run_cli("ship", url, "-o", "json", root=r)
    assert p.returncode == 0, p.stderr


def cursor(d: dict) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(d, option=orjson.OPT_SORT_KEYS)).rstrip(b"=").decode()


def same(r: Path, url: str, *args: str) -> bytes:
    """Run the command on both roots; stdout and exit code must agree. Returns stdout."""
    local = run_cli(*args, root=r)
    remote = run_cli("--root", url, *args)
    assert remote.returncode == local.returncode, (args, local.stderr, remote.stderr)
    assert remote.stdout == local.stdout, args
    return local.stdout


def mirrors(tmp_path: Path) -> Path:
    return tmp_path / "cache/wardrik/mirrors"


# ---------------------------------------------------------------------------
# the same output as the local root
# ---------------------------------------------------------------------------
def test_every_reader_gives_the_local_roots_output(tmp_path, target):
    r = make_root(tmp_path)
    ship(r, target.url)
    out = same(r, target.url, "page", "*", "--all", "-o", "jsonl")
    evs = jsonl(out)
    assert evs[0]["type"] == "wardrik.events.dropped" and evs[0]["data"]["log"] == "acme/old"  # the notice, same id
    assert len(evs) > 300 + 50 + 5
    page = orjson.loads(same(r, target.url, "page", "*", "--limit", "40", "-o", "json"))
    same(r, target.url, "page", "*", "--after", page["next"], "--limit", "100", "-o", "json")
    same(r, target.url, "page", "acme", "--after", cursor({"acme/old": 3, "acme/triage": 290}), "-o", "jsonl")
    same(r, target.url, "page", "*", "-t", "tool_call.started", "--all", "-o", "jsonl")
    head = same(r, target.url, "head")
    assert orjson.loads(base64.urlsafe_b64decode(head.strip() + b"==="))["acme/triage"] == 300
    same(r, target.url, "head", "acme")
    same(r, target.url, "tail", "-n", "5", "-o", "jsonl")
    same(r, target.url, "tail", "acme/old", "-n", "3", "-o", "jsonl")
    same(r, target.url, "fold", "solo", "--view", "state", "-o", "json")
    same(r, target.url, "fold", "acme/old", "--view", "state", "-o", "json")
    same(r, target.url, "activity", "-o", "json")
    assert same(r, target.url, "check") == b""
    same(r, target.url, "check", "-o", "json")
    audit = same(r, target.url, "audit", "page", "--all", "-o", "jsonl")
    assert [e["type"] for e in jsonl(audit)][-1] == "wardrik.agent.created"
    same(r, target.url, "sql", "select type, count(*) as n from events group by 1 order by 1", "-o", "json")
    # a literal naming no log is the same refusal (exit 2)
    assert run_cli("--root", target.url, "page", "acme/nope").returncode == 2
    # the mirror is a cache: without it, the same again
    shutil.rmtree(mirrors(tmp_path))
    same(r, target.url, "page", "*", "--all", "-o", "jsonl")


def test_a_cursor_read_on_a_cold_mirror_then_a_read_from_the_start(tmp_path, target):
    r = make_root(tmp_path)
    ship(r, target.url)
    # cold: only the segments from the cursor on are fetched (a partial mirror) ...
    same(r, target.url, "page", "acme/triage", "--after", cursor({"acme/triage": 295}), "-o", "jsonl")
    [m] = list(mirrors(tmp_path).iterdir())
    partial = (m / "root/acme/triage.jsonl").read_bytes()
    assert 0 < len(partial) < (r / "acme/triage.jsonl").stat().st_size
    # ... and a read that needs the start completes it first: the same output as the local root
    same(r, target.url, "page", "*", "--all", "-o", "jsonl")
    assert (m / "root/acme/triage.jsonl").read_bytes() == (r / "acme/triage.jsonl").read_bytes()
    same(r, target.url, "check")
    # head needs only each log's last segment
    shutil.rmtree(mirrors(tmp_path))
    same(r, target.url, "head")


def test_sync_is_incremental_and_survives_a_damaged_mirror(tmp_path, target):
    from wardrik_cli.remote.mirror import Mirror, Need
    from wardrik_cli.remote.stores import open_store

    r = make_root(tmp_path)
    ship(r, target.url)
    store = open_store(target.url, dict(os.environ))
    m = Mirror(store, "local", tmp_path / "c")
    m.sync(Need(["*"], audit=True))
    first = m.report.fetched
    assert first == len(target.segments())
    again = Mirror(store, "local", tmp_path / "c")
    again.sync(Need(["*"], audit=True))
    assert again.report.fetched == 0  # nothing new: nothing fetched
    run_cli("append", "acme/billing", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=r, check=True)
    ship(r, target.url)
    more = Mirror(store, "local", tmp_path / "c")
    more.sync(Need(["*"], audit=True))
    assert more.report.fetched == 1 and more.report.bytes < 1000  # only the new segment
    assert (more.root.path / "acme/billing.jsonl").read_bytes() == (r / "acme/billing.jsonl").read_bytes()
    # a sync killed part-way (the file no longer what the state says): fetched again, not served wrong
    with open(more.root.path / "acme/billing.jsonl", "ab") as f:
        f.write(b'{"half a line')
    fixed = Mirror(store, "local", tmp_path / "c")
    fixed.sync(Need(["acme/billing"]))
    assert (fixed.root.path / "acme/billing.jsonl").read_bytes() == (r / "acme/billing.jsonl").read_bytes()
    # and through the command line, after more shipping
    run_cli("append", "solo", "run.completed", "--data", "{}", root=r, check=True)
    ship(r, target.url)
    same(r, target.url, "page", "*", "--all", "-o", "jsonl")
    same(r, target.url, "fold", "solo", "-o", "json")


# ---------------------------------------------------------------------------
# a segment that is not what its metadata says
# ---------------------------------------------------------------------------
def _tamper(target, r: Path) -> str:
    keys = [k for k in target.segments() if "log=acme~triage" in k]
    assert len(keys) >= 3
    bad = keys[1]
    data, meta = target.get(bad)
    target.put(bad, data.replace(b'"output":"', b'"output":"X', 1), meta)  # same metadata, other bytes
    return bad


def test_a_tampered_segment_is_reported_never_served(tmp_path, target):
    r = make_root(tmp_path)
    ship(r, target.url)
    bad = _tamper(target, r)
    p = run_cli("--root", target.url, "page", "acme/triage", "--all", "-o", "jsonl")
    assert p.returncode == 1 and p.stdout == b""
    err = p.stderr.decode()
    assert err.count("error:") == 1 and "sha256" in err and bad in err and "Traceback" not in err
    c = run_cli("--root", target.url, "check")
    assert c.returncode == 1 and bad in c.stderr.decode()
    # the mirror never holds it: only the segment before it
    [m] = list(mirrors(tmp_path).iterdir())
    held = (m / "root/acme/triage.jsonl").read_bytes()
    assert b"X" not in held.replace(b"x", b"") and held == target.get(
        [k for k in target.segments() if "log=acme~triage" in k][0])[0]
    # other logs are still read
    same(r, target.url, "page", "acme/billing", "--all", "-o", "jsonl")


def test_check_reads_the_store_again_after_the_mirror_was_made(tmp_path, target):
    r = make_root(tmp_path)
    ship(r, target.url)
    same(r, target.url, "page", "*", "--all", "-o", "jsonl")  # the mirror holds every segment, verified
    bad = _tamper(target, r)
    c = run_cli("--root", target.url, "check")
    assert c.returncode == 1 and bad in c.stderr.decode() and c.stderr.decode().count("error:") == 1


def test_a_warm_mirror_never_serves_what_a_cold_one_refuses(tmp_path, target):
    """The store's listing must still lead to what the mirror holds: a segment deleted from the
    store, or a second one planted at a first sequence it already holds (under another day),
    is reported by a warm read and by check, as by a cold one (before, a warm mirror served
    every event and check said all was well)."""
    r = make_root(tmp_path)
    ship(r, target.url)
    same(r, target.url, "page", "*", "--all", "-o", "jsonl")  # warm: every segment mirrored
    keys = [k for k in target.segments() if "log=acme~triage" in k]
    gone = keys[1]
    data, _meta = target.get(gone)
    backup = gone.replace("/day=", "/saved-day=")
    target.copy(gone, backup)
    target.delete(gone)
    for args in (["page", "acme/triage", "--all"], ["check"]):
        p = run_cli("--root", target.url, *args)
        assert p.returncode == 1 and b"missing from the store" in p.stderr, (args, p.stderr)
    target.copy(backup, gone)
    assert run_cli("--root", target.url, "check").returncode == 0  # back as it was
    first = keys[0]
    day = first.split("/day=")[1].split("/")[0]
    planted = first.replace(f"/day={day}/", "/day=2020-01-01/")
    target.copy(first, planted)  # one first sequence under two days
    for args in (["page", "acme/triage", "--all"], ["check"]):
        p = run_cli("--root", target.url, *args)
        assert p.returncode == 1 and b"overlap" in p.stderr, (args, p.stderr)


def test_a_segment_filed_under_another_day_is_refused(tmp_path, target):
    """Readers and sql find events by the day their segment is filed under: one moved to
    another day= is refused by remote readers and pull (before: served, and sql's pruning
    gave other answers than the same query written another way)."""
    r = make_root(tmp_path)
    ship(r, target.url)
    key = [k for k in target.segments() if "log=acme~billing" in k][-1]
    day = key.split("/day=")[1].split("/")[0]
    moved = key.replace(f"/day={day}/", "/day=2020-01-01/")
    target.copy(key, moved)
    target.delete(key)
    p = run_cli("--root", target.url, "page", "acme/billing", "--all")
    assert p.returncode == 1 and b"filed under day 2020-01-01" in p.stderr, p.stderr
    p = run_cli("pull", target.url, "acme/billing", "--into", tmp_path / "ev")
    assert p.returncode == 1 and b"filed under day 2020-01-01" in p.stderr, p.stderr


# ---------------------------------------------------------------------------
# what a page after a cursor fetches: about one segment, counted by the S3 endpoint
# ---------------------------------------------------------------------------
class CountingApp:
    """moto's app, counting the body bytes of every GET of a segment."""

    def __init__(self, app):
        self.app, self.gets, self.lock = app, [], threading.Lock()

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "GET" and environ.get("PATH_INFO", "").endswith(KEY_END):
            body = b"".join(self.app(environ, start_response))
            with self.lock:
                self.gets.append((environ["PATH_INFO"], len(body)))
            return [body]
        return self.app(environ, start_response)

    def take(self) -> list[tuple[str, int]]:
        with self.lock:
            got, self.gets = self.gets, []
        return got


@pytest.fixture
def counted(s3_endpoint, monkeypatch):
    """A second endpoint onto the same moto backends, counting GETs; a fresh bucket."""
    import uuid

    import boto3
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = CountingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, True, request_handler=MotoRequestHandler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    for k, v in s3_env(endpoint).items():
        monkeypatch.setenv(k, v)
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
    name = f"wardrik-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    try:
        yield app, f"s3://{name}/fleet"
    finally:
        server.shutdown()


def test_a_page_after_a_cursor_near_the_end_fetches_about_one_segment(tmp_path, counted):
    from wardrik_cli.remote.ship import Shipper, sources
    from wardrik_cli.remote.stores import open_store
    from wardrik_cli.store.layout import Root

    app, url = counted
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    info = write_spread(r / "big.jsonl", events=20_000, days=1, end_ns=time.time_ns() - DAY_NS // 2, log_id="big",
                        pad=200)
    seg_max = 256 << 10
    shipper = Shipper(Root(r), open_store(url, dict(os.environ)), "local", warn=lambda m: None, segment_max=seg_max)
    assert not shipper.ship(sources(Root(r), None)).failed
    app.take()
    n = info["events"]
    p = run_cli("--root", url, "page", "big", "--after", cursor({"big": n - 10}), "-o", "jsonl")
    assert p.returncode == 0 and len(jsonl(p.stdout)) == 10
    gets = app.take()
    fetched = sum(b for _, b in gets)
    assert info["bytes"] > 40 * seg_max  # a big log: dozens of segments
    assert len(gets) <= 2 and fetched <= 2 * seg_max, gets  # the segment holding the cursor (and the last)
    # warm: the same page again fetches nothing; after one more shipped event, only that segment
    assert run_cli("--root", url, "page", "big", "--after", cursor({"big": n - 10}), "-o", "jsonl").stdout == p.stdout
    assert app.take() == []
    run_cli("append", "big", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=r, check=True)
    assert not shipper.ship(sources(Root(r), None)).failed
    app.take()
    p = run_cli("--root", url, "page", "big", "--after", cursor({"big": n}), "-o", "jsonl")
    assert [e["sequence"] for e in jsonl(p.stdout)] == [f"{n + 1:012d}"]
    gets = app.take()
    assert len(gets) == 1 and gets[0][1] < 2000, gets
    # a read from the start now fills in the rest: the whole log, byte for byte
    run_cli("--root", url, "page", "big", "--limit", "1", check=True)
    assert sum(b for _, b in app.take()) + fetched + gets[0][1] >= (r / "big.jsonl").stat().st_size
    assert run_cli("--root", url, "page", "big", "--all", "-o", "jsonl").stdout == (r / "big.jsonl").read_bytes()


# ---------------------------------------------------------------------------
# following a remote root, several commands at once, writers refused
# ---------------------------------------------------------------------------
@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["variable", "option"])
def test_tail_f_on_a_remote_root_sees_a_newly_shipped_event(tmp_path, bucket, how):
    r = make_root(tmp_path)
    ship(r, bucket.url)
    env = dict(os.environ, WARDRIK_REMOTE_INTERVAL="0.3") if how == "variable" else dict(os.environ)
    every = ["--interval", "0.3"] if how == "option" else []
    proc = subprocess.Popen([WARDRIK, "--root", bucket.url, "tail", "solo", "-f", "-n", "1", "-o", "jsonl", *every],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(proc.stdout.readline, b"")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got and orjson.loads(got[0])["sequence"] == "000000000005"
        line = run_cli("append", "solo", "run.completed", "--data", "{}", root=r, check=True).stdout
        ship(r, bucket.url)
        deadline = time.monotonic() + 30
        while line not in got and time.monotonic() < deadline:
            time.sleep(0.05)
        # the stored events the follower printed, in order (live ones, e.g. the
        # activity.changed the run's end causes, carry no sequence and may come too)
        stored = [x for x in got if "sequence" in orjson.loads(x)]
        assert stored[-1] == line and len(stored) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and b"Traceback" not in err, err


@pytest.mark.subprocess
def test_commands_sharing_a_cold_mirror_at_once(tmp_path, bucket):
    r = make_root(tmp_path)
    for i in range(4):
        write_spread(r / f"fleet/a{i}.jsonl", events=3000, days=2, log_id=f"fleet/a{i}", pad=100)
    ship(r, bucket.url)
    want = run_cli("page", "*", "--all", "-o", "jsonl", root=r).stdout
    procs = [subprocess.Popen([WARDRIK, "--root", bucket.url, "page", "*", "--all", "-o", "jsonl"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outs]
    assert all(o[0] == want for o in outs)
    assert hashlib.sha256(run_cli("--root", bucket.url, "page", "*", "--all", "-o", "jsonl").stdout).digest() == \
        hashlib.sha256(want).digest()


@pytest.mark.parametrize("args", [
    ("append", "solo", "trigger.fired", "--data", '{"trigger": {"name": "x"}}'),
    ("init",),
    ("audit", "record", "agent.created", "agents/x", "--data", '{"agent": {"id": "x"}}', "--actor", "user:a"),
    ("ship", "file:///nonexistent-share"),
])
def test_writing_commands_are_refused_on_a_remote_root(tmp_path, args):
    share = FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    ship(r, share.url)
    before = share.segments()
    p = run_cli("--root", share.url, *args)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("error:") == 1 and "remote root" in err and "Traceback" not in err, err
    assert share.segments() == before and not mirrors(tmp_path).exists()


@pytest.mark.parametrize("args", [("page", "*"), ("tail", "-n", "1"), ("stats",), ("check",)])
def test_a_file_root_that_is_not_there_is_bad_input_as_a_local_one(tmp_path, args):
    local = run_cli("--root", str(tmp_path / "gone"), *args)
    remote = run_cli("--root", (tmp_path / "gone").as_uri(), *args)
    assert local.returncode == remote.returncode == 2, (local.stderr, remote.stderr)
    assert remote.stderr.count(b"error:") == 1 and b"not a directory" in remote.stderr


def test_several_deployments_under_one_prefix_need_deployment(tmp_path):
    share = FolderTarget(tmp_path / "share")
    roots = []
    for dep in ("east", "west"):
        r = tmp_path / dep
        run_cli("init", "--deployment", dep, root=r, check=True)
        run_cli("append", "a", "trigger.fired", "--data", f'{{"trigger": {{"name": "{dep}"}}}}', root=r, check=True)
        ship(r, share.url)
        roots.append(r)
    p = run_cli("--root", share.url, "page", "*")
    assert p.returncode == 2 and b"east, west" in p.stderr and b"--deployment" in p.stderr
    for r, dep in zip(roots, ("east", "west"), strict=True):
        assert run_cli("--root", share.url, "--deployment", dep, "page", "*", "-o", "jsonl").stdout == \
            run_cli("page", "*", "-o", "jsonl", root=r).stdout


def test_sql_on_a_remote_root_fetches_only_the_partitions_its_where_touches(tmp_path, counted):
    """Hive-style pruning: ``WHERE log = 'x'`` lists and fetches log x's segments alone, a lower
    bound on time only its segments from that day on; the answers are the local root's."""
    app, url = counted
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    now = time.time_ns()
    for i in range(8):
        write_spread(r / f"fleet/a{i:02d}.jsonl", events=40, days=4, end_ns=now - DAY_NS, log_id=f"fleet/a{i:02d}",
                     pad=40)
    ship(r, url)
    app.take()

    def both(query: str) -> tuple[bytes, list[str]]:
        local = run_cli("sql", query, "-o", "jsonl", root=r)
        remote = run_cli("--root", url, "sql", query, "-o", "jsonl")
        assert remote.returncode == 0 and remote.stdout == local.stdout, remote.stderr
        return remote.stdout, [path for path, _ in app.take()]

    out, gets = both("select count(*) as n, min(seq) as lo from events where log = 'fleet/a07'")
    assert jsonl(out) == [{"n": 40, "lo": 1}]
    assert gets and all("/log=fleet~a07/" in g for g in gets), gets  # that log's segments, no other
    assert len(gets) == len(set(gets)) >= 4  # a segment a day: every one of its days, once each
    # a lower bound on time: only the segments of that day and later (here of another log, cold)
    day = jsonl(run_cli("sql", "select strftime(max(time), '%Y-%m-%d') as d from events where log = 'fleet/a03'",
                        "-o", "jsonl", root=r).stdout)[0]["d"]
    out, gets = both(f"select count(*) as n from events e where e.log in ('fleet/a03') and e.time >= '{day}'")
    assert 0 < jsonl(out)[0]["n"] < 40
    assert len(gets) == 1 and "/log=fleet~a03/" in gets[0] and f"/day={day}/" in gets[0], gets
    # a query the scope cannot narrow reads every log whole (the partial mirror made whole too)
    out, gets = both("select log, count(*) as n from events group by 1 order by 1")
    assert [row["n"] for row in jsonl(out)] == [40] * 8
    assert not any("/log=fleet~a07/" in g for g in gets)  # already mirrored: not fetched again
    # a write is refused before the store is asked for anything
    p = run_cli("--root", url, "sql", "delete from events where log = 'fleet/a01'")
    assert p.returncode == 2 and p.stderr.startswith(b"error: ") and app.take() == []
