"""`compact`: the retention sweep, through the real CLI (see wardrik_cli/retention.py)."""
from __future__ import annotations

import hashlib
import os
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DROPPED = "wardrik.events.dropped"


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def tree(root: Path) -> dict[str, str]:
    """Every file under root with its hash (to prove nothing changed)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = sha(p)
    return out


def compact_json(cli, *args) -> dict:
    p = cli("compact", *args, "--format", "json")
    assert p.returncode == 0, p.stderr.decode()
    return orjson.loads(p.stdout)


def spread(root: Path, log: str = "acme/big", events: int = 100, days: float = 100, **kw) -> dict:
    return write_spread(root / f"{log}.jsonl", events=events, days=days, log_id=log, **kw)


@pytest.mark.parametrize("bad", ["30", "1y", "-5d", "5 d", "", "1.5h", "d", "30dd", "0x10s", "0s", "0d0h"])
def test_bad_duration_refused_nothing_written(cli, root, bad):
    spread(root, events=20)
    before = tree(root)
    p = cli("compact", "--retention", bad)
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.startswith("error: ") and "Traceback" not in err
    assert tree(root) == before
    assert os.listdir(root / ".wardrik") == []  # not even a lock


def test_bad_retention_in_config(cli, root):
    spread(root, events=20)
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text('retention = "forever"\n')
    p = cli("compact")
    assert p.returncode == 2 and b"config.toml" in p.stderr and b"retention" in p.stderr


def test_config_retention_and_flag_override(cli, root):
    spread(root, events=100, days=100)
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text('retention = "50d"\n')
    dry = compact_json(cli, "--dry-run")
    assert dry["retention"] == "50d" and 45 <= dry["dropped"] <= 55
    dry = compact_json(cli, "--dry-run", "--retention", "10d")
    assert dry["retention"] == "10d" and 85 <= dry["dropped"] <= 95


def test_default_retention_is_30_days(cli, root):
    spread(root, events=100, days=100)
    out = compact_json(cli, "--dry-run")
    assert out["retention"] == "30d" and 65 <= out["dropped"] <= 75


def test_root_with_no_logs(cli, root):
    out = compact_json(cli)
    assert out["logs"] == [] and out["dropped"] == 0 and out["kept"] == 0


def test_missing_root_is_an_error(tmp_path):
    p = run_cli("compact", root=tmp_path / "nope")
    assert p.returncode == 2 and p.stderr.startswith(b"error: ")
    assert not (tmp_path / "nope").exists()


def test_drops_the_old_prefix_and_keeps_bytes_verbatim(cli, root):
    spread(root, events=200, days=100)
    path = root / "acme/big.jsonl"
    original = path.read_bytes()
    head_before = cli("head", "acme/big").stdout
    out = compact_json(cli, "--retention", "30d")
    [lr] = out["logs"]
    assert lr["log"] == "acme/big"
    assert lr["dropped"] + lr["kept"] == 200
    assert 135 <= lr["dropped"] <= 145
    assert out["dropped"] == lr["dropped"] and out["kept"] == lr["kept"]
    now = path.read_bytes()
    assert lr["bytes_before"] == len(original) and lr["bytes_after"] == len(now)
    assert original.endswith(now) and original[len(original) - len(now) - 1:][:1] == b"\n"  # a suffix, whole lines
    events = jsonl(now)
    assert int(events[0]["sequence"]) == lr["dropped"] + 1
    cutoff = out["cutoff"]
    assert all(e["time"] >= cutoff for e in events)
    dropped = jsonl(original[: len(original) - len(now)])
    assert dropped and all(e["time"] < cutoff for e in dropped)
    assert cli("check").returncode == 0
    assert cli("head", "acme/big").stdout == head_before
    # A second sweep at once has nothing left to drop.
    again = compact_json(cli, "--retention", "30d")
    assert again["logs"][0]["dropped"] == 0 and path.read_bytes() == now


def test_dry_run_changes_nothing(cli, root):
    spread(root, events=100)
    before = tree(root)
    out = compact_json(cli, "--retention", "10d", "--dry-run")
    assert out["dry_run"] is True and out["dropped"] >= 85
    assert out["logs"][0]["bytes_after"] < out["logs"][0]["bytes_before"]
    assert tree(root) == before and os.listdir(root / ".wardrik") == []


def test_pretty_output_has_table_and_total(cli, root):
    spread(root, log="acme/a", events=50)
    spread(root, log="acme/b", events=50)
    p = cli("compact", "--retention", "10d", "--format", "pretty")
    assert p.returncode == 0
    text = p.stdout.decode()
    assert "acme/a" in text and "acme/b" in text and "total" in text and "dropped" in text


def test_times_going_backwards_only_prefix_dropped(cli, root):
    """Old, old, NEW, old, NEW: only the first two are dropped, and the output says why."""
    path = root / "acme/odd.jsonl"
    now_ns = time.time_ns()
    day = 86_400 * 10**9
    parts = []
    for i, age in enumerate([90, 80, 1, 70, 0.5], start=1):
        tmp = root / f"part{i}"
        write_spread(tmp / "x.jsonl", events=1, days=0.0001, end_ns=int(now_ns - age * day), first_seq=i, log_id="acme/odd")
        parts.append((tmp / "x.jsonl").read_bytes())
        (tmp / "x.jsonl").unlink()
        tmp.rmdir()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(parts))
    p = cli("compact", "--retention", "30d", "--format", "json")
    assert p.returncode == 0, p.stderr
    out = orjson.loads(p.stdout)
    lr = out["logs"][0]
    assert (lr["dropped"], lr["kept"]) == (2, 3)
    assert lr["notes"] and "backwards" in lr["notes"][0]
    assert b"backwards" in p.stderr
    assert path.read_bytes() == b"".join(parts[2:])


def test_times_going_backwards_in_a_big_log(cli, root):
    """Past the linear-scan size the cut is bisected; an out-of-order stretch must still not be dropped."""
    now_ns = time.time_ns()
    day = 86_400 * 10**9
    a = write_spread(root / "p1.jsonl", mb=1.5, days=10, end_ns=now_ns - 80 * day, log_id="acme/odd")
    b = write_spread(root / "p2.jsonl", mb=0.3, days=0.001, end_ns=now_ns - day, first_seq=a["events"] + 1, log_id="acme/odd")
    nb = b["events"]
    c = write_spread(root / "p3.jsonl", mb=1.5, days=10, end_ns=now_ns - 40 * day,
                     first_seq=a["events"] + nb + 1, log_id="acme/odd")
    d = write_spread(root / "p4.jsonl", events=50, days=5, end_ns=now_ns, first_seq=a["events"] + c["events"] + nb + 1,
                     log_id="acme/odd")
    parts = [(root / f"p{i}.jsonl").read_bytes() for i in range(1, 5)]
    for i in range(1, 5):
        (root / f"p{i}.jsonl").unlink()
    (root / "acme").mkdir()
    (root / "acme/odd.jsonl").write_bytes(b"".join(parts))
    out = compact_json(cli, "--retention", "30d")
    lr = out["logs"][0]
    assert lr["dropped"] == a["events"], lr  # only the prefix before the 1-day-old events
    assert lr["notes"]
    assert (root / "acme/odd.jsonl").read_bytes() == b"".join(parts[1:])
    assert d["events"] == 50


def test_torn_tail_is_cut_and_kept(cli, root):
    spread(root, events=100)
    path = root / "acme/big.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"specversion":"1.0","id":"half')
    out = compact_json(cli, "--retention", "10d")
    assert out["logs"][0]["dropped"] >= 85
    assert path.read_bytes().endswith(b"}\n")
    kept = list((root / "acme").glob("big.jsonl.torn-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b'{"specversion":"1.0","id":"half'
    assert cli("check").returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a log another owner: needs root (CI runs as root)")
def test_a_sweep_as_root_keeps_each_logs_owner_and_mode_and_its_kept_bytes_private(cli, root):
    """Before, the new file was root's and 0644: cron's sweep (as root) locked the agents out
    of their logs (their next append: permission denied) and made private logs readable."""
    spread(root, events=100)
    path = root / "acme/big.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"specversion":"1.0","id":"half')
    os.chown(path, 33, 44)
    os.chmod(path, 0o640)
    before = path.stat().st_ino
    assert compact_json(cli, "--retention", "10d")["logs"][0]["dropped"] >= 85
    st = path.stat()
    assert st.st_ino != before  # replaced, not rewritten in place
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (33, 44, 0o640)
    [kept] = list((root / "acme").glob("big.jsonl.torn-*"))
    assert kept.stat().st_mode & 0o077 == 0o040  # no more than the log: group read, nothing for others
    with open(path, "ab") as f:  # appended by hand while torn bytes are kept: the in-place cut keeps them private
        f.write(b'{"half')
    os.chmod(path, 0o600)
    run_cli("append", "acme/big", "run.started", root=root, check=True)
    for k in (root / "acme").glob("big.jsonl.torn-*"):
        assert k.stat().st_mode & 0o077 in (0, 0o040), oct(k.stat().st_mode)
    assert path.stat().st_mode & 0o7777 == 0o600


@pytest.mark.parametrize("damage", ["gap_at_edge", "gap_inside", "repeat_inside", "missing_start"])
def test_a_sequence_break_in_the_part_to_drop_is_not_swept_unseen(cli, root, damage):
    """Before, the sweep passed a hole off as retention's: exit 0, the audit record and the
    readers' notice counted sequences, not events, and check found nothing any more."""
    spread(root, events=100, days=100)
    path = root / "acme/big.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    old = [int(orjson.loads(x)["sequence"]) for x in lines].index(
        next(int(orjson.loads(x)["sequence"]) for x in lines if orjson.loads(x)["time"] >= _cutoff(10)))
    if damage == "gap_at_edge":
        lines = lines[:old] + lines[old + 1:]  # the first kept event gone: the edge of the part dropped
    elif damage == "gap_inside":
        lines = lines[:5] + lines[6:]
    elif damage == "repeat_inside":
        lines = lines[:5] + [lines[4]] + lines[5:]
    else:
        lines = lines[3:]
    path.write_bytes(b"".join(lines))
    events = len([x for x in lines if orjson.loads(x)["time"] < _cutoff(10)])
    before = tree(root)
    p = cli("compact", "--retention", "10d", "-q")
    err = p.stderr.decode()
    assert p.returncode == 1 and "acme/big: not swept" in err and "--skip-corrupt" in err, err
    assert {k: v for k, v in tree(root).items() if not k.startswith(".wardrik/locks/")} == before
    assert cli("check").returncode == 1  # still there to be found
    row = compact_json(cli, "--retention", "10d", "--skip-corrupt")["logs"][0]
    assert row["dropped"] == events and any("dropped anyway" in n for n in row["notes"]), row
    [rec] = [e for e in jsonl(cli("audit", "page", "-o", "jsonl").stdout) if e["type"] == "wardrik.ledger.compacted"]
    assert rec["data"]["logs"] == {"acme/big": events}


def _cutoff(days: float) -> str:
    return (datetime.utcnow() - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_an_event_stamped_in_the_future_is_said_by_compact_and_check(cli, root):
    """Every event appended after it repeats its time, so retention never drops them: before,
    neither compact nor check said a word."""
    spread(root, events=10, days=30)
    path = root / "acme/big.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    ev = orjson.loads(lines[-1])
    ev["time"] = "2099-01-01T00:00:00.000000Z"
    path.write_bytes(b"".join(lines[:-1]) + orjson.dumps(ev) + b"\n")
    row = compact_json(cli, "--retention", "1d")["logs"][0]
    assert any("2099-01-01T00:00:00.000000Z, in the future" in n for n in row["notes"]), row
    p = cli("check")
    assert p.returncode == 0 and b"is in the future" in p.stdout and b"(warning)" in p.stdout, p.stdout


def test_torn_tail_cut_even_when_nothing_is_old(cli, root):
    spread(root, events=10, days=1)
    path = root / "acme/big.jsonl"
    whole = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00")
    out = compact_json(cli, "--retention", "30d")
    assert out["logs"][0]["dropped"] == 0 and out["logs"][0]["kept"] == 10
    assert path.read_bytes() == whole
    assert [p.read_bytes() for p in (root / "acme").glob("big.jsonl.torn-*")] == [b"\x00\x00\x00"]


# ---------------------------------------------------------------------------
# readers after a cut: events.dropped
# ---------------------------------------------------------------------------
@pytest.fixture
def two_cut_logs(cli, root):
    spread(root, log="acme/a", events=100, days=100)
    spread(root, log="acme/b", events=40, days=100)
    out = compact_json(cli, "--retention", "50d")
    return {r["log"]: r for r in out["logs"]}


def test_dropped_notice_without_cursor(cli, two_cut_logs):
    p = cli("page", "acme/*", "--limit", "5")
    evs = jsonl(p.stdout)
    assert [e["type"] for e in evs[:2]] == [DROPPED, DROPPED]  # before all events
    counts = {e["data"]["log"]: e["data"]["count"] for e in evs[:2]}
    assert counts == {"acme/a": two_cut_logs["acme/a"]["dropped"], "acme/b": two_cut_logs["acme/b"]["dropped"]}
    assert all("sequence" not in e for e in evs[:2])
    assert len(evs) == 7  # --limit counts events only
    assert all(e["type"] != DROPPED for e in evs[2:])
    again = jsonl(cli("page", "acme/*", "--limit", "5").stdout)
    assert [e["id"] for e in again[:2]] == [e["id"] for e in evs[:2]]  # stable id


def test_dropped_notice_with_old_cursor_counts_what_was_missed(cli, root, two_cut_logs):
    from wardrik_cli.protocol.cursor import encode_cursor
    cur = encode_cursor({"acme/a": 10})
    evs = jsonl(cli("page", "acme/a", "--after", cur, "--limit", "3").stdout)
    assert evs[0]["type"] == DROPPED and evs[0]["data"]["count"] == two_cut_logs["acme/a"]["dropped"] - 10
    assert int(evs[1]["sequence"]) == two_cut_logs["acme/a"]["dropped"] + 1
    # A cursor already past the cut gets no notice.
    cur2 = encode_cursor({"acme/a": two_cut_logs["acme/a"]["dropped"] + 1})
    evs2 = jsonl(cli("page", "acme/a", "--after", cur2, "--limit", "3").stdout)
    assert all(e["type"] != DROPPED for e in evs2)


def test_dropped_notice_passes_type_filter_and_moves_cursor(cli, two_cut_logs):
    p = cli("page", "acme/a", "--types", "run.failed", "--format", "json")
    doc = orjson.loads(p.stdout)
    assert [e["type"] for e in doc["events"]] == [DROPPED]
    from wardrik_cli.protocol.cursor import decode_cursor
    assert decode_cursor(doc["next"])["acme/a"] == 100  # past every event read, filtered too
    doc2 = orjson.loads(cli("page", "acme/a", "--after", doc["next"], "--format", "json").stdout)
    assert doc2["events"] == []


def test_sequences_continue_after_every_event_dropped(cli, root):
    spread(root, events=30, days=10)
    head_before = cli("head", "acme/big").stdout
    out = compact_json(cli, "--retention", "1s")
    assert out["logs"][0]["dropped"] == 30 and out["logs"][0]["kept"] == 0
    assert (root / "acme/big.jsonl").read_bytes() == b""
    assert cli("head", "acme/big").stdout == head_before  # the cursor at the end stays valid
    assert cli("check").returncode == 0
    evs = jsonl(cli("page", "acme/big").stdout)
    assert [e["type"] for e in evs] == [DROPPED] and evs[0]["data"]["count"] == 30
    p = cli("append", "acme/big", "trigger.fired", "--data", '{"trigger": {"name": "t"}}')
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout)[0]["sequence"] == "000000000031"
    assert cli("page", "acme/big", "--after", head_before.decode().strip()).stdout.count(b"\n") == 1
    assert cli("check").returncode == 0
    # and again: compaction of a log that was emptied, then appended to
    compact_json(cli, "--retention", "30d")
    assert jsonl(cli("append", "acme/big", "trigger.fired", "--data", '{"trigger": {"name": "t"}}').stdout)[0]["sequence"] == "000000000032"


def test_append_time_never_before_last_dropped(cli, root):
    """The watermark's time is the floor for the next append into an emptied log."""
    future = time.time_ns() + 3_600 * 10**9
    write_spread(root / "acme/f.jsonl", events=5, days=0.001, end_ns=future, log_id="acme/f")
    last = jsonl((root / "acme/f.jsonl").read_bytes())[-1]["time"]
    # Nothing is old enough yet; drop with a negative-free trick: retention 1s after faking age is
    # not possible, so check the floor via the watermark directly after a full drop of a past log.
    write_spread(root / "acme/g.jsonl", events=5, days=1, log_id="acme/g")
    compact_json(cli, "--retention", "1s")
    wm = orjson.loads((root / ".wardrik/watermarks/acme/g@json").read_bytes())
    ev = jsonl(cli("append", "acme/g", "trigger.fired", "--data", '{"trigger": {"name": "t"}}').stdout)[0]
    assert ev["time"] >= wm["time"] and last > ev["time"]


def test_watermark_records_the_cut(cli, root):
    spread(root, events=50)
    original = (root / "acme/big.jsonl").read_bytes()
    out = compact_json(cli, "--retention", "10d")
    n = out["logs"][0]["dropped"]
    wm = orjson.loads((root / ".wardrik/watermarks/acme/big@json").read_bytes())
    lines = original.splitlines(keepends=True)
    assert wm["next_sequence"] == n + 1
    assert wm["hash"] == hashlib.sha256(lines[n - 1]).hexdigest()
    assert wm["time"] == orjson.loads(lines[n - 1])["time"]
    assert wm["first_time_kept"] == orjson.loads(lines[n])["time"]
    assert wm["inode"] == os.stat(root / "acme/big.jsonl").st_ino
    assert not list(root.rglob("*.compact.tmp"))


def _age_audit(root: Path, seqs: range, by: timedelta) -> None:
    """Stamp the audit events of ``seqs`` ``by`` earlier, as if recorded then, and chain the
    lines again (each prevhash the SHA-256 of the line before; the first line's is kept). In
    place: same inode, same length, as the tool wrote it but for those bytes."""
    path = root / ".wardrik/audit.jsonl"
    out: list[bytes] = []
    for line in path.read_bytes().splitlines(keepends=True):
        ev = orjson.loads(line)
        if int(ev["sequence"]) in seqs:
            then = datetime.strptime(ev["time"], "%Y-%m-%dT%H:%M:%S.%fZ") - by
            line = line.replace(f'"time":"{ev["time"]}"'.encode(), f'"time":"{then:%Y-%m-%dT%H:%M:%S.%f}Z"'.encode(), 1)
        if out:
            chained = hashlib.sha256(out[-1]).hexdigest()
            line = line.replace(f'"prevhash":"{ev["prevhash"]}"'.encode(), f'"prevhash":"{chained}"'.encode(), 1)
        out.append(line)
    with open(path, "r+b") as f:
        f.write(b"".join(out))


def test_audit_log_compacted_and_chain_verifiable(cli, root):
    rec = ["audit", "record", "agent.created", "agents/x", "--data", '{"agent": {"id": "x"}}', "--actor", "user:a"]
    for _ in range(3):
        assert cli(*rec).returncode == 0
    _age_audit(root, range(1, 4), timedelta(days=1))  # recorded a day ago: past a 12h retention
    assert cli("check").returncode == 0
    for _ in range(2):
        assert cli(*rec).returncode == 0
    out = compact_json(cli, "--retention", "12h")
    [lr] = [r for r in out["logs"] if r["log"] == "audit"]
    assert (lr["dropped"], lr["kept"]) == (3, 2)
    assert cli("check").returncode == 0
    evs = jsonl(cli("audit", "page").stdout)
    assert evs[0]["type"] == DROPPED and evs[0]["data"] == {"log": "audit", "count": 3}
    assert [e["sequence"] for e in evs[1:]] == ["000000000004", "000000000005", "000000000006"]
    assert evs[-1]["type"] == "wardrik.ledger.compacted" and evs[-1]["data"]["logs"] == {".wardrik/audit": 3}
    new = jsonl(cli(*rec).stdout)[0]
    assert new["sequence"] == "000000000007"
    last = (root / ".wardrik/audit.jsonl").read_bytes().splitlines(keepends=True)[-2]
    assert new["prevhash"] == hashlib.sha256(last).hexdigest()
    assert cli("check").returncode == 0
    # everything dropped: the sweep's own record goes on from the watermark's hash
    _age_audit(root, range(4, 8), timedelta(days=1))
    assert cli("check").returncode == 0
    compact_json(cli, "--retention", "12h")
    wm = orjson.loads((root / ".wardrik/watermarks/@audit@json").read_bytes())
    [only] = jsonl((root / ".wardrik/audit.jsonl").read_bytes())
    assert only["type"] == "wardrik.ledger.compacted" and only["data"]["logs"] == {".wardrik/audit": 4}
    assert only["sequence"] == "000000000008" and only["prevhash"] == wm["hash"]
    assert cli("check").returncode == 0


@pytest.mark.subprocess
def test_reads_the_file_about_once(root, tmp_path):
    """rchar of the compact process: the file about once (the part dropped is read to see that
    every line in it is an event, none thrown away unseen; the part kept to copy it), not more."""
    from procio import run_with_io
    info = write_spread(root / "acme/big.jsonl", mb=40, days=100, log_id="acme/big")
    empty = tmp_path / "empty"
    empty.mkdir()
    _, base = run_with_io([WARDRIK, "--root", str(empty), "compact", "--format", "json"])
    p, io = run_with_io([WARDRIK, "--root", str(root), "compact", "--retention", "10d", "--format", "json"])
    assert p.returncode == 0, p.stderr
    kept = orjson.loads(p.stdout)["logs"][0]["bytes_after"]
    assert 3_000_000 < kept < 5_000_000
    extra = io["rchar"] - base["rchar"]
    assert info["bytes"] <= extra <= info["bytes"] + 4_000_000, (extra, kept, info["bytes"])


@pytest.mark.subprocess
def test_the_first_append_after_a_sweep_reads_no_more_than_before(root):
    """The appender's verified note (sealed) is carried to the file a sweep made, so the next
    append checks only what is new, not the whole kept log again (rchar: bytes really read)."""
    from procio import run_with_io

    write_spread(root / "acme/big.jsonl", events=4000, days=100, log_id="acme/big", pad=400)
    env = {**os.environ}
    add = [WARDRIK, "--root", str(root), "append", "acme/big", "run.started"]
    assert run_with_io(add, env=env)[0].returncode == 0  # verifies the log once, leaves its note
    p, held = run_with_io(add, env=env)  # the note held: what an append reads (modules included)
    assert p.returncode == 0, p.stderr
    assert run_cli("compact", "-q", "--retention", "30d", root=root).returncode == 0
    kept = (root / "acme/big.jsonl").stat().st_size
    assert kept > 500_000
    p, io = run_with_io(add, env=env)
    assert p.returncode == 0, p.stderr
    # before: the whole kept log was read again
    assert io["rchar"] < held["rchar"] + kept // 4, (io["rchar"], held["rchar"], kept)
