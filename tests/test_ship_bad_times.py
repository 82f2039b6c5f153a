"""A log holding an event whose time does not parse strictly as RFC 3339 (``T24:00:00``, a
day its month does not have, an offset beyond 23:59) is refused by `ship` the way a log with
a sequence hole is: one error naming the log, the sequence and the byte offset, exit 1; the
lines before it and the other logs still ship. A segment is never filed under a day readers
reject (``day=2026-02-30``: never served, and the log could never ship again) nor under the
wrong day (``2026-01-01T24:00`` under 2026-01-01: remote `sql` pruning by day loses it)."""
from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli
from s3_server import FolderTarget
from wardrik_cli.remote import keys


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("WARDRIK_CACHE", raising=False)


def line(log: str, seq: int, time: str) -> bytes:
    """An event in the exact shape `append` writes (so `ship` reads it by bytes, not JSON)."""
    h = hashlib.sha256(f"{log}{seq}".encode()).hexdigest()
    ev = {"specversion": "1.0", "id": str(uuid.UUID(h[:32])), "type": "wardrik.tool_call.started",
          "source": f"wardrik://local/agents/{log}", "subject": f"agents/{log}", "time": time,
          "sequence": f"{seq:012d}", "traceparent": f"00-{h[:32]}-{h[32:48]}-01",
          "data": {"tool": {"name": "bash", "call": {"id": f"c{seq}"}}}}
    return orjson.dumps(ev) + b"\n"


def write(root: Path, log: str, times: list[str]) -> list[bytes]:
    lines = [line(log, i, t) for i, t in enumerate(times, 1)]
    (root / f"{log}.jsonl").write_bytes(b"".join(lines))
    return lines


def stored(t: FolderTarget, log: str) -> dict[str, list[dict]]:
    """Each segment key of ``log`` in the store with its events."""
    return {k: jsonl((t.path / k).read_bytes()) for k in t.segments() if f"/log={log}/" in k}


GOOD = "2026-01-01T10:00:00.000000Z"
BAD = [
    ("2026-01-01T24:00:00.000000Z", "not a real date and time"),  # the stored shape: read by bytes
    ("2026-01-02T24:00:00.000000Z", "not a real date and time"),  # ... on a day after the first line's
    ("2026-02-30T10:00:00.000000Z", "not a real date and time"),
    ("2026-01-01T10:00:60.000000Z", "not a real date and time"),
    ("2026-01-01T10:00:00.000000+24:00", "offset beyond 23:59"),  # another shape: decoded
    ("2026-13-01T10:00:00Z", "not a real date and time"),
    ("2026-01-01 10:00:00Z", "not RFC 3339"),
]


@pytest.mark.parametrize("bad, said", BAD)
def test_a_bad_time_refuses_its_log_and_the_rest_ships(tmp_path, bad, said):
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    lines = write(r, "c", [GOOD, bad, "2026-01-02T05:00:00.000000Z"])
    # a healthy log with offsets: filed under the UTC day each time means
    write(r, "ok", ["2026-01-01T23:30:00-01:00", "2026-01-02T01:30:00.5+01:00", "2026-01-02T05:00:00.000000Z"])
    t = FolderTarget(tmp_path / "store")
    p = run_cli("ship", t.url, "-o", "json", root=r)
    err = p.stderr.decode()
    assert p.returncode == 1 and "Traceback" not in err, err
    [e] = err.splitlines()
    assert e.startswith("error: c: sequence 2: ") and f"byte {len(lines[0])}" in e and said in e, e
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["c"]["through"] == 1 and rows["ok"]["events"] == 3
    # the line before the bad one shipped, under its day; nothing at or after it
    assert {k: [ev["sequence"] for ev in evs] for k, evs in stored(t, "c").items()} == \
        {"v1/deployment=local/kind=agents/log=c/day=2026-01-01/000000000001.jsonl": ["000000000001"]}
    assert sorted(stored(t, "ok")) == [
        "v1/deployment=local/kind=agents/log=ok/day=2026-01-02/000000000001.jsonl"]
    # every key is one readers accept, and the remote root serves what was shipped
    assert all(keys.parse_key("", k) is not None for k in t.segments())
    there = run_cli("--root", t.url, "page", "c", "ok", "--all", "-o", "jsonl")
    assert there.returncode == 0, there.stderr
    assert sorted((ev["log"] if "log" in ev else ev["subject"], ev["sequence"]) for ev in jsonl(there.stdout)) == \
        [("agents/c", "000000000001")] + [("agents/ok", f"{i:012d}") for i in (1, 2, 3)]
    # still refused on the next run (nothing acknowledged in between), and still names it
    again = run_cli("ship", t.url, root=r)
    assert again.returncode == 1 and "c: sequence 2: " in again.stderr.decode()


def test_a_bad_first_time_ships_nothing_of_its_log(tmp_path):
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    write(r, "d", ["2026-02-30T10:00:00.000000Z", "2026-03-02T05:00:00.000000Z"])
    t = FolderTarget(tmp_path / "store")
    p = run_cli("ship", t.url, root=r)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.startswith("error: d: sequence 1: ") and "byte 0 " in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert stored(t, "d") == {}


def test_remote_sql_after_midnight_agrees_with_the_local_root(tmp_path):
    """The reviewer's case: seq 2 at 2026-01-01T24:00 was shipped under day 2026-01-01, so a
    remote `sql` pruning by day lost it. Now it is not shipped, and what is shipped reads
    the same remotely as locally."""
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    write(r, "c", [GOOD, "2026-01-01T24:00:00.000000Z", "2026-01-02T05:00:00.000000Z"])
    t = FolderTarget(tmp_path / "store")
    assert run_cli("ship", t.url, root=r).returncode == 1
    q = "SELECT log, seq, time FROM events WHERE time >= '2026-01-01'"
    there = run_cli("--root", t.url, "sql", q, "-o", "jsonl")
    assert there.returncode == 0, there.stderr
    assert [row["seq"] for row in jsonl(there.stdout)] == [1]
