"""Retention with ship targets (issue 14, second part), against real stores on loopback.

- Local ``compact`` treats a target this root ships to as a replication slot: it never drops
  what the target has not stored, unless ``--max-ship-lag`` lets old events go, and then the
  next ``ship`` writes the gap to the store, and readers of a pulled root and of
  ``--root s3://...`` get ``events.dropped`` for it in place (``check`` stays clean).
- ``wardrik --root s3://... compact`` (and ``file://``): a watermark per log first, then
  whole expired segments deleted; a pull afterwards reads like a locally compacted root.

The store is read with a second client (boto3, or the folder's files), never with wardrik's.
"""
from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli
import s3_server
from s3_server import KEY, Bucket

s3_endpoint, bucket = s3_server.s3_endpoint, s3_server.bucket

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY = 86_400 * 10**9
DROPPED = "wardrik.events.dropped"


class FolderTarget:
    def __init__(self, path: Path):
        path.mkdir(parents=True, exist_ok=True)
        self.path, self.url = path, f"file://{path}"

    def keys(self) -> list[str]:
        return sorted(p.relative_to(self.path).as_posix()[:-len(".meta")] for p in self.path.rglob("*.meta")
                      if not p.name.startswith(".") and (p.parent / p.name[:-len(".meta")]).exists())

    def get(self, key: str) -> bytes:
        return (self.path / key).read_bytes()


class S3Target:
    def __init__(self, b: Bucket):
        self.b, self.url = b, b.url

    def keys(self) -> list[str]:
        return self.b.keys()

    def get(self, key: str) -> bytes:
        return self.b.get(key)[0]


@pytest.fixture(params=["s3", "file"])
def target(request, tmp_path):
    """A store: the local S3 server's bucket, or a folder (``file://``)."""
    if request.param == "s3":
        return S3Target(request.getfixturevalue("bucket"))
    return FolderTarget(tmp_path / "share")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    # remote reads' mirrors in this test's own cache folder: never the developer's ~/.cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("WARDRIK_CACHE", raising=False)


def segments(t, log: str) -> list[tuple[int, str]]:
    """(first sequence, key) of the log's segments in the store, in order."""
    out = []
    for k in t.keys():
        m = KEY.fullmatch(k)
        if m and m.group(3) == log.replace("/", "~"):
            out.append((int(m.group(5)), k))
    return sorted(out)


def stored(t, log: str) -> bytes:
    return b"".join(t.get(k) for _, k in segments(t, log))


def others(t, log: str, what: str) -> list[str]:
    return [k for k in t.keys() if f"/log={log.replace('/', '~')}/{what}/" in k]


def make_root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    return r


def add(r: Path, log: str, *, events: int, first: int, days_ago: float, days: float) -> bytes:
    """Append ``events`` events (sequences from ``first``) spread over ``days`` ending
    ``days_ago`` before now, straight to the file as wardrik stores them."""
    scratch = r.parent / "scratch.jsonl"
    write_spread(scratch, events=events, days=days, end_ns=time.time_ns() - int(days_ago * DAY), first_seq=first,
                 log_id=log, pad=20)
    data = scratch.read_bytes()
    path = r / f"{log}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(data)
    return data


def ship(r: Path, url: str, *args: str):
    p = run_cli("ship", url, "-o", "json", *args, root=r)
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)


def compact(r: Path, *args: str) -> dict:
    p = run_cli("compact", "-o", "json", *args, root=r)
    assert p.returncode == 0, p.stderr
    return {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}


def page(r: Path | str, log: str) -> list[dict]:
    p = run_cli("page", log, "--all", "-o", "jsonl", root=r)  # type: ignore[arg-type]
    assert p.returncode == 0, p.stderr
    return jsonl(p.stdout)


# ---------------------------------------------------------------------------
# the replication slot
# ---------------------------------------------------------------------------
def test_compact_holds_back_what_the_target_lacks_and_drops_it_once_shipped(tmp_path, target):
    r = make_root(tmp_path)
    shipped = add(r, "a", events=10, first=1, days_ago=70, days=10)
    ship(r, target.url)
    assert (r / ".wardrik/ship").is_dir() and list((r / ".wardrik/ship").glob("*.slot.json"))
    add(r, "a", events=10, first=11, days_ago=50, days=10)  # old enough to go, not shipped
    add(r, "a", events=5, first=21, days_ago=0, days=1)
    whole = (r / "a.jsonl").read_bytes()
    dry = compact(r, "--retention", "30d", "--dry-run")["a"]
    assert dry["dropped"] == 10 and dry["held_back"] == 10
    row = compact(r, "--retention", "30d")["a"]
    assert row["dropped"] == 10 and row["kept"] == 15 and row["held_back"] == 10
    assert row["held_for"] == [target.url.rstrip("/")]
    assert any(f"held back 10 event(s) for ship target {target.url.rstrip('/')}" in n for n in row["notes"])
    assert (r / "a.jsonl").read_bytes() == whole[len(shipped):]  # what the target lacks is still here ...
    evs = page(r, "a")
    assert evs[0]["type"] == DROPPED and evs[0]["data"]["count"] == 10  # ... and still read locally
    assert [int(e["sequence"]) for e in evs[1:]] == list(range(11, 26))
    ship(r, target.url)
    assert stored(target, "a") == whole
    row = compact(r, "--retention", "30d")["a"]
    assert row["dropped"] == 10 and "held_back" not in row  # shipped now: it goes
    assert [int(e["sequence"]) for e in page(r, "a")[1:]] == list(range(21, 26))


def test_a_log_the_target_does_not_cover_is_not_held_back(tmp_path, target):
    r = make_root(tmp_path)
    add(r, "acme/a", events=5, first=1, days_ago=60, days=5)
    add(r, "other", events=5, first=1, days_ago=60, days=5)
    ship(r, target.url, "acme")  # only acme/* is shipped to it
    add(r, "acme/a", events=5, first=6, days_ago=50, days=5)
    add(r, "other", events=5, first=6, days_ago=50, days=5)
    rows = compact(r, "--retention", "30d")
    assert rows["acme/a"]["dropped"] == 5 and rows["acme/a"]["held_back"] == 5
    assert rows["other"]["dropped"] == 10 and "held_back" not in rows["other"]


def test_max_ship_lag_drops_and_the_next_ship_records_the_gap(tmp_path, target):
    r = make_root(tmp_path)
    add(r, "a", events=10, first=1, days_ago=70, days=10)
    ship(r, target.url)
    assert len(page(target.url, "a")) == 10  # the mirror holds 1..10 before the gap is made
    add(r, "a", events=10, first=11, days_ago=50, days=10)  # 11..16 older than 54.5 days, 17..20 not
    add(r, "a", events=5, first=21, days_ago=0, days=1)
    add(r, "b", events=8, first=1, days_ago=60, days=8)  # a log made after the target was: never shipped
    rows = compact(r, "--retention", "30d", "--max-ship-lag", "54d12h")
    a = rows["a"]
    assert a["unshipped"] == 6 and a["held_back"] == 4 and a["dropped"] == 16
    assert rows["b"]["unshipped"] == 8 and rows["b"]["dropped"] == 8
    gaps_file = next((r / ".wardrik/ship").glob("*.gaps.json"))
    assert set(orjson.loads(gaps_file.read_bytes())["logs"]) == {"agents/a", "agents/b"}
    p = run_cli("ship", target.url, "-o", "json", root=r)
    assert p.returncode == 0, p.stderr  # not refused: the sweep recorded what it dropped
    doc = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert doc["a"]["gaps"] == [[11, 16]] and doc["b"]["gaps"] == [[1, 8]]
    assert b"events 11 to 16 were dropped here" in p.stderr
    assert not gaps_file.exists()  # the store accounts for both now
    assert [k.rsplit("/", 1)[1] for k in others(target, "a", "gaps")] == ["000000000011.json"]
    assert orjson.loads(target.get(others(target, "a", "gaps")[0]))["last"] == 16
    assert int(segments(target, "a")[-1][1].rsplit("/", 1)[1][:12]) > 16
    assert stored(target, "a")[-50:] == (r / "a.jsonl").read_bytes()[-50:]
    assert ship(r, target.url)["segments"] == 0  # and the next ship goes on after it, refusing nothing

    # pull: a gap the log starts with is a dropped prefix: events.dropped, as read locally
    out = tmp_path / "evidence"
    p = run_cli("pull", target.url, "--into", out, "-o", "json", root=r)
    assert p.returncode == 0, p.stderr
    remote_b, local_b = page(out, "b"), page(r, "b")
    for ev in remote_b + local_b:
        ev.pop("time")  # every event of b was dropped: the notice's time is now
    assert remote_b == local_b and len(remote_b) == 1 and remote_b[0]["data"]["count"] == 8  # same id too
    mirrored_b = page(target.url, "b")  # the mirror: a log whose every event the gap holds
    mirrored_b[0].pop("time")
    assert mirrored_b == local_b
    # a gap between shipped segments: pull records it, and readers get events.dropped in its place
    assert b"events 11 to 16 were dropped at the source" in p.stderr and b"recorded in the evidence root" in p.stderr
    assert orjson.loads(p.stdout)["logs"][0]["gaps"] == [[11, 16]]
    gap_time = orjson.loads(target.get(others(target, "a", "gaps")[0]))["time"]
    for where in (out, target.url):  # the pulled root, and the mirror (synced on from 1..10: incremental)
        read = run_cli("page", "a", "--all", "-o", "jsonl", root=where)  # type: ignore[arg-type]
        assert read.returncode == 0 and read.stderr == b"", read.stderr  # no warning: the hole is accounted for
        evs = jsonl(read.stdout)
        assert [int(e["sequence"]) for e in evs if e["type"] != DROPPED] == list(range(1, 11)) + list(range(17, 26))
        notice = evs[10]
        assert notice["type"] == DROPPED and notice["data"] == {"log": "a", "count": 6}
        assert notice["time"] == gap_time and "sequence" not in notice
        check = run_cli("check", root=where)  # type: ignore[arg-type]
        assert check.returncode == 0, check.stdout + check.stderr  # not damage: a warning names it
        assert [line.endswith(b"(warning)") and b"6 events missing before 000000000017" in line
                for line in check.stdout.splitlines()] == [True], check.stdout
    assert run_cli("page", "a", "--all", "-o", "jsonl", root=out).stdout == \
        run_cli("page", "a", "--all", "-o", "jsonl", root=target.url).stdout  # same notice id, same bytes
    cur = orjson.loads(run_cli("page", "a", "--limit", "10", "-o", "json", root=target.url).stdout)["next"]
    after = jsonl(run_cli("page", "a", "--after", cur, "--limit", "1", "-o", "jsonl", root=target.url).stdout)
    assert [e["type"] == DROPPED for e in after] == [True, False] and after[1]["sequence"] == f"{17:012d}"

    # remote retention past the segments before the gap: now the pulled log starts after it
    p = run_cli("--root", target.url, "compact", "--retention", "54d18h", "-o", "json")
    assert p.returncode == 0, p.stderr
    out2 = tmp_path / "evidence2"
    assert run_cli("pull", target.url, "--into", out2).returncode == 0
    local = run_cli("page", "a", "--all", "-o", "jsonl", root=r).stdout
    assert run_cli("page", "a", "--all", "-o", "jsonl", root=out2).stdout == local  # same notice (id, count 16)
    assert run_cli("check", root=out2).returncode == 0
    # the mirror drops the same prefix, and the gap record with it: one notice, as locally
    assert run_cli("page", "a", "--all", "-o", "jsonl", root=target.url).stdout == local
    assert run_cli("check", root=target.url).returncode == 0


def test_without_a_record_a_drop_before_shipping_is_still_refused(tmp_path, target):
    r = make_root(tmp_path)
    add(r, "a", events=4, first=1, days_ago=70, days=4)
    ship(r, target.url)
    add(r, "a", events=4, first=5, days_ago=50, days=4)
    run_cli("ship", "--forget", target.url, root=r, check=True)
    compact(r, "--retention", "30d")  # nothing registered: 5..8 go unshipped, unrecorded
    add(r, "a", events=1, first=9, days_ago=0, days=0.1)
    p = run_cli("ship", target.url, root=r)
    assert p.returncode == 1 and b"refusing to leave a gap" in p.stderr and b"Traceback" not in p.stderr


def test_forget_ends_the_hold(tmp_path, target):
    r = make_root(tmp_path)
    add(r, "a", events=5, first=1, days_ago=60, days=5)
    ship(r, target.url)
    add(r, "a", events=5, first=6, days_ago=50, days=5)
    assert compact(r, "--retention", "30d", "--dry-run")["a"]["held_back"] == 5
    p = run_cli("ship", "--forget", target.url + "/", root=r)  # the same target, however spelled
    assert p.returncode == 0 and b"forgot" in p.stderr
    assert list((r / ".wardrik/ship").iterdir()) == []
    row = compact(r, "--retention", "30d")["a"]
    assert row["dropped"] == 10 and "held_back" not in row
    p = run_cli("ship", "--forget", target.url, root=r)
    assert p.returncode == 0 and p.stderr.startswith(b"warning: ") and b"not registered" in p.stderr
    assert run_cli("ship", "--forget", target.url, "a", root=r).returncode == 2
    assert run_cli("ship", "--forget", "ftp://x/y", root=r).returncode == 2


def test_an_unreadable_registration_holds_back_everything(tmp_path):
    r = make_root(tmp_path)
    add(r, "a", events=5, first=1, days_ago=60, days=5)
    (r / ".wardrik/ship").mkdir()
    (r / ".wardrik/ship/0123456789abcdef.slot.json").write_bytes(b"\0\0")  # a power cut mid-write
    row = compact(r, "--retention", "30d")["a"]
    assert row["dropped"] == 0 and row["held_back"] == 5 and "unreadable registration" in row["held_for"][0]


# ---------------------------------------------------------------------------
# kill -9 of compact while it holds back
# ---------------------------------------------------------------------------
LOGS = 600


@pytest.mark.subprocess
def test_kill_9_of_a_sweep_that_holds_back(tmp_path):
    """Each log: 1..4 shipped (old), 5..8 old but not shipped, 9..12 new. Killed anywhere, a
    log is as it was or holds 5..12; never is an unshipped event gone."""
    from wardrik_cli.store import ship_slots
    from wardrik_cli.store.layout import Root

    r = make_root(tmp_path)
    url = f"file://{tmp_path}/share"
    scratch = tmp_path / "scratch.jsonl"
    now = time.time_ns()
    parts: dict[str, tuple[bytes, bytes]] = {}
    for i in range(LOGS):
        log = f"t{i // 100}/a{i % 100:02d}"
        chunks = []
        for first, ago, days in ((1, 90, 4), (5, 60, 4), (9, 1, 0.5)):
            write_spread(scratch, events=4, days=days, end_ns=now - ago * DAY, first_seq=first, log_id=log, pad=20)
            chunks.append(scratch.read_bytes())
        (r / log).parent.mkdir(parents=True, exist_ok=True)
        (r / f"{log}.jsonl").write_bytes(b"".join(chunks))
        parts[log] = (b"".join(chunks), chunks[1] + chunks[2])
    # the slot as ship leaves it (store.ship_slots' contract): registered, each log stored through 4
    ship_slots.register(Root(r), url, "local", None)
    ship_slots.positions_path(Root(r), url).write_bytes(orjson.dumps(
        {"target": url, "logs": {f"local/agents/{log}": {"last": 4, "key": "x", "owner": "y"} for log in parts}}))
    p = subprocess.Popen([WARDRIK, "--root", str(r), "compact", "--retention", "30d", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wm = r / ".wardrik/watermarks"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None:
            # past the first batch's records: some logs of it replaced, others of a later one not
            if wm.is_dir() and sum(1 for d in wm.iterdir() for _ in d.iterdir()) >= LOGS - 50:
                break
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL, "the sweep ended before it was killed"
    states = {"as it was": 0, "as it should be": 0}
    for log, (whole, kept) in parts.items():
        data = (r / f"{log}.jsonl").read_bytes()
        state = {whole: "as it was", kept: "as it should be"}.get(data)
        assert state is not None, log
        states[state] += 1
    assert states["as it should be"], states
    print(f"[{states}]")
    out = run_cli("page", "--all", "-o", "jsonl", root=r)
    seen: dict[str, int] = {}
    for ev in jsonl(out.stdout):
        log = ev["source"].rsplit("/agents/", 1)[1]
        if ev["type"] == DROPPED:
            assert ev["data"]["count"] == 4  # only what the target had
            seen[log] = 4
        else:
            assert int(ev["sequence"]) == seen.get(log, 0) + 1
            seen[log] = int(ev["sequence"])
    assert seen == {log: 12 for log in parts}
    assert run_cli("check", root=r).returncode == 0
    rows = compact(r, "--retention", "30d")
    assert all((r / f"{log}.jsonl").read_bytes() == kept for log, (_, kept) in parts.items())
    assert sum(row.get("held_back", 0) for row in rows.values()) == 4 * LOGS


# ---------------------------------------------------------------------------
# remote retention
# ---------------------------------------------------------------------------
def audit_log(path: Path, n: int, days: float, end_ns: int) -> None:
    """An audit log of ``n`` events over ``days`` with a real prevhash chain."""
    prev = "0" * 64
    out = []
    step = int(days * DAY) // n
    for i in range(n):
        t = end_ns - int(days * DAY) + i * step
        sec, us = divmod(t // 1000, 1_000_000)
        ev = {"specversion": "1.0", "id": f"01900000-0000-7000-8000-{i + 1:012x}", "type": "wardrik.agent.created",
              "source": "wardrik://local/audit", "subject": "agents/x",
              "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{us:06d}Z",
              "sequence": f"{i + 1:012d}", "traceparent": f"00-{i + 1:032x}-{i + 1:016x}-01", "prevhash": prev,
              "data": {"agent": {"id": "x"}, "actor": "user:a", "assumed_by": []}}
        line = orjson.dumps(ev) + b"\n"
        prev = hashlib.sha256(line).hexdigest()
        out.append(line)
    path.write_bytes(b"".join(out))


def test_remote_compact_writes_a_watermark_then_deletes_whole_expired_segments(tmp_path, target):
    r = make_root(tmp_path)
    write_spread(r / "big.jsonl", events=300, days=100, log_id="big", pad=20)  # a segment a day
    audit_log(r / ".wardrik/audit.jsonl", 40, 80, time.time_ns() - DAY)
    assert run_cli("check", root=r).returncode == 0
    ship(r, target.url)
    before = {k: target.get(k) for k in target.keys()}
    p = run_cli("--root", target.url, "compact", "--retention", "30d", "--dry-run", "-o", "json")
    assert p.returncode == 0, p.stderr
    dry = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert {k: target.get(k) for k in target.keys()} == before  # a dry run changes nothing
    p = run_cli("--root", target.url, "compact", "--retention", "30d", "-o", "json")
    assert p.returncode == 0, p.stderr
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["big"]["dropped"] == dry["big"]["dropped"] > 150
    cutoff = orjson.loads(p.stdout)["cutoff"]
    kept = segments(target, "big")
    # the contract's row: bytes before and after are the log's segments' (its stored lines)
    assert rows["big"]["bytes_before"] == dry["big"]["bytes_before"] == (r / "big.jsonl").stat().st_size
    assert rows["big"]["bytes_after"] == dry["big"]["bytes_after"] == sum(len(target.get(k)) for _, k in kept)
    kept_keys = {k for _, k in kept}
    gone = [k for k in before if KEY.fullmatch(k) and "log=big/" in k and k not in kept_keys]
    for k in gone:  # every deleted segment was wholly older than the cutoff ...
        assert jsonl(before[k])[-1]["time"] < cutoff
    first_kept = jsonl(target.get(kept[0][1]))
    assert first_kept[-1]["time"] >= cutoff  # ... and the first kept one is not (no part of one goes)
    if target.url.startswith("file://"):  # the days emptied go too
        days = [d for d in Path(target.url[len("file://"):]).rglob("day=*") if d.is_dir()]
        assert days and all(any(d.iterdir()) for d in days)
    assert kept[0][0] == rows["big"]["dropped"] + 1
    wm = others(target, "big", "watermark")
    assert [k.rsplit("/", 1)[1] for k in wm] == [f"{kept[0][0]:012d}.json"]
    doc = orjson.loads(target.get(wm[0]))
    last_dropped = before[max(gone, key=lambda k: int(k.rsplit("/", 1)[1][:12]))]
    assert doc["next_sequence"] == kept[0][0]
    assert doc["hash"] == hashlib.sha256(last_dropped.splitlines(keepends=True)[-1]).hexdigest()
    # pull: the evidence root reads like a locally compacted one
    out = tmp_path / "evidence"
    p = run_cli("pull", target.url, "--into", out, "-o", "json")
    assert p.returncode == 0, p.stderr
    evs = page(out, "big")
    assert evs[0]["type"] == DROPPED and evs[0]["data"]["count"] == kept[0][0] - 1
    assert run_cli("check", root=out).returncode == 0  # the audit chain goes on from the watermark's hash
    audit = run_cli("audit", "page", "--all", "-o", "jsonl", root=out)
    assert jsonl(audit.stdout)[0]["type"] == DROPPED and rows["audit"]["dropped"] > 0
    assert jsonl(audit.stdout)[0]["data"]["count"] == rows["audit"]["dropped"]
    # a second sweep has nothing to do; shipping again never brings deleted segments back
    again = orjson.loads(run_cli("--root", target.url, "compact", "--retention", "30d", "-o", "json").stdout)
    assert again["dropped"] == 0
    import shutil

    shutil.rmtree(r / ".wardrik/ship")
    run_cli("append", "big", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r, check=True)
    assert ship(r, target.url)["events"] >= 1
    assert [f for f, _ in segments(target, "big")][0] == kept[0][0]


def test_remote_compact_of_every_segment_keeps_the_sequence(tmp_path, target):
    r = make_root(tmp_path)
    write_spread(r / "old.jsonl", events=20, days=10, end_ns=time.time_ns() - 60 * DAY, log_id="old", pad=20)
    ship(r, target.url, "old")
    p = run_cli("--root", target.url, "compact", "--retention", "30d", "-o", "json")
    assert p.returncode == 0 and orjson.loads(p.stdout)["dropped"] == 20
    assert segments(target, "old") == [] and len(others(target, "old", "watermark")) == 1
    import shutil

    shutil.rmtree(r / ".wardrik/ship")  # the store alone says where to go on: after the watermark
    add(r, "old", events=2, first=21, days_ago=0, days=0.1)
    assert ship(r, target.url, "old")["events"] == 2
    assert [f for f, _ in segments(target, "old")][0] == 21  # (two segments when the two events span midnight)
    out = tmp_path / "evidence"
    assert run_cli("pull", target.url, "--into", out).returncode == 0
    evs = page(out, "old")
    assert evs[0]["type"] == DROPPED and evs[0]["data"]["count"] == 20 and evs[1]["sequence"] == "000000000021"


def test_an_idle_log_whose_segments_remote_retention_deleted_is_not_held_back_here(tmp_path, target):
    """After the store's sweep deleted every segment of a log that gets nothing new, the next
    ship still records where the store holds it to (its watermark): local retention goes on."""
    r = make_root(tmp_path)
    write_spread(r / "old.jsonl", events=20, days=10, end_ns=time.time_ns() - 60 * DAY, log_id="old", pad=20)
    ship(r, target.url)
    assert run_cli("--root", target.url, "compact", "--retention", "30d", "-q").returncode == 0
    assert segments(target, "old") == []
    assert ship(r, target.url)["events"] == 0  # nothing new: the store's position is found, nothing sent
    row = compact(r, "--retention", "30d")["old"]
    assert row["dropped"] == 20 and "held_back" not in row, row


def test_a_failed_ship_of_a_log_made_again_records_no_position_and_compact_keeps_it(tmp_path):
    """The log made again under the same id (other events, same sequences), its positions
    cache lost: ship is refused; before, it had recorded the position it only guessed from the
    store's listing, and the next compact dropped local events no store ever held."""
    share = FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    add(r, "a", events=10, first=1, days_ago=40, days=1)
    ship(r, share.url)
    add(r, "a", events=10, first=11, days_ago=39, days=1)
    ship(r, share.url)
    (r / "a.jsonl").unlink()
    made_again = add(r, "a", events=20, first=1, days_ago=38, days=1)
    for p in (r / ".wardrik/ship").glob("*.json"):
        if not p.name.endswith(".slot.json"):
            p.unlink()
    p = run_cli("ship", share.url, "-o", "json", root=r)
    assert p.returncode == 1, p.stderr
    row = compact(r, "--retention", "30d")["a"]
    assert row["dropped"] == 0 and row["held_back"] == 20, row
    assert (r / "a.jsonl").read_bytes() == made_again


def test_an_audit_log_that_cannot_take_the_record_leaves_no_gap_record_either(tmp_path):
    """The sweep is refused before a log's gap record is written: it claimed a drop it never
    made, and left the record behind (found by review)."""
    share = FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    add(r, "a", events=2, first=1, days_ago=40, days=1)
    ship(r, share.url)
    add(r, "a", events=3, first=3, days_ago=35, days=1)  # not shipped, older than the lag
    lock = r / ".wardrik/locks/@audit@lock"
    lock.unlink(missing_ok=True)
    lock.mkdir(parents=True)
    before = (r / "a.jsonl").read_bytes()
    p = run_cli("compact", "--retention", "30d", "--max-ship-lag", "1d", "-o", "json", root=r)
    assert p.returncode == 1 and b"ledger.compacted" in p.stderr and b"gap is recorded" not in p.stderr, p.stderr
    assert (r / "a.jsonl").read_bytes() == before
    assert list((r / ".wardrik/ship").glob("*.gaps.json")) == []


def test_remote_compact_bad_input(tmp_path, target):
    for args in (["--max-ship-lag", "1d", "--retention", "1d"], ["--max-bytes", "1M", "--retention", "1d"], []):
        p = run_cli("--root", target.url, "compact", *args)
        assert p.returncode == 2 and p.stderr.startswith(b"error: ") and b"Traceback" not in p.stderr


def test_a_sweep_stopped_mid_deletion_is_finished_by_the_next(tmp_path):
    """In process: the sweep stops (as if killed) after its tenth delete; the watermark is
    already there, so readers ignore what is left below it, and the next sweep deletes it."""
    from wardrik_cli.remote.compact import compact_remote
    from wardrik_cli.remote.stores import open_store
    from datetime import timedelta

    t = FolderTarget(tmp_path / "share")
    r = make_root(tmp_path)
    write_spread(r / "big.jsonl", events=100, days=100, log_id="big", pad=20)
    ship(r, t.url)
    store = open_store(t.url, {})

    class Killed(Exception):
        pass

    n = [0]

    def stop(key: str) -> None:
        n[0] += 1
        if n[0] == 10:
            raise Killed

    with pytest.raises(Killed):
        compact_remote(store, "30d", timedelta(days=30), after_delete=stop)
    left = [f for f, _ in segments(t, "big")]
    assert left[0] == 11 and len(others(t, "big", "watermark")) == 1
    wm = int(others(t, "big", "watermark")[0].rsplit("/", 1)[1][:12])
    assert wm > 11  # segments below the watermark are left over ...
    out = tmp_path / "evidence"
    assert run_cli("pull", t.url, "--into", out).returncode == 0
    evs = page(out, "big")
    assert evs[0]["data"]["count"] == wm - 1 and evs[1]["sequence"] == f"{wm:012d}"  # ... and never read
    res = compact_remote(store, "30d", timedelta(days=30))
    assert [f for f, _ in segments(t, "big")][0] == wm and res.logs[0].leftovers_deleted == wm - 11


@pytest.mark.subprocess
def test_kill_9_of_remote_compact_mid_deletion_then_again(tmp_path, bucket):
    t = S3Target(bucket)
    r = make_root(tmp_path)
    write_spread(r / "big.jsonl", events=400, days=400, log_id="big", pad=10)  # 400 segments
    ship(r, t.url, "big")
    total = len(segments(t, "big"))
    p = subprocess.Popen([WARDRIK, "--root", t.url, "compact", "--retention", "30d", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None and len(segments(t, "big")) > total - 40:
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL, "the sweep ended before it was killed"
    left = segments(t, "big")
    assert 30 < len(left) < total - 40  # killed mid-deletion
    wm = others(t, "big", "watermark")
    assert len(wm) == 1  # the watermark came first
    first_kept = int(wm[0].rsplit("/", 1)[1][:12])
    out = tmp_path / "evidence"
    assert run_cli("pull", t.url, "--into", out).returncode == 0
    evs = page(out, "big")
    assert evs[0]["data"]["count"] == first_kept - 1 and int(evs[1]["sequence"]) == first_kept
    assert [int(e["sequence"]) for e in evs[1:]] == list(range(first_kept, 401))
    p = run_cli("--root", t.url, "compact", "--retention", "30d", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert segments(t, "big")[0][0] == first_kept and others(t, "big", "watermark") == wm
    out2 = tmp_path / "evidence2"
    assert run_cli("pull", t.url, "--into", out2).returncode == 0
    assert (out2 / "big.jsonl").read_bytes() == (out / "big.jsonl").read_bytes()
