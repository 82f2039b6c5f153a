"""What a sweep reports and records says what happened to each log (found by a review of
compact against the contract): ledger.compacted keeps an agent log named `audit` apart from
the audit log, a damaged audit log stops every drop before it is made, rows count events
(not sequences, not zero for a log that failed), a dry run says what the sweep would, and a
damaged line where the kept part would start no longer stops a log's retention for good
under --skip-corrupt."""
from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from conftest import jsonl, run_cli
from ledgergen import write_log
from test_compact import _age_audit

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=40)  # past the default retention, 30d
NEW = NOW - timedelta(days=1)


def log_of(root: Path, log_id: str, *parts: tuple[int, datetime, int]) -> Path:
    """A log written as (first sequence, time of its first event, events) runs, a minute apart."""
    path = root.joinpath(*log_id.split("/")).with_suffix(".jsonl")
    data = b""
    for first, start, n in parts:
        write_log(path, n, first_seq=first, start=start, step=timedelta(minutes=1), log_id=log_id, pad=20)
        data += path.read_bytes()
    path.write_bytes(data)
    return path


def sweep(cli, *args) -> tuple[int, dict]:
    p = cli("compact", *args, "-o", "json")
    return p.returncode, orjson.loads(p.stdout)


def recorded(cli) -> list[dict]:
    return [e["data"] for e in jsonl(cli("audit", "page", "-t", "ledger.compacted").stdout)
            if e["type"] == "wardrik.ledger.compacted"]  # (an events.dropped passes the filter too)


def test_an_agent_log_named_audit_and_the_audit_log_are_recorded_apart(cli, root):
    log_of(root, "audit", (1, OLD, 2), (3, NEW, 1))
    rec = ["audit", "record", "agent.created", "agents/x", "--data", '{"agent": {"id": "x"}}', "--actor", "user:a"]
    for _ in range(4):
        assert cli(*rec).returncode == 0
    _age_audit(root, range(1, 4), timedelta(days=40))
    rc, out = sweep(cli)
    assert rc == 0
    rows = {(r["log"], r.get("audit", False)): r["dropped"] for r in out["logs"]}
    assert rows == {("audit", False): 2, ("audit", True): 3}
    [data] = recorded(cli)
    # before: {"audit": 3}, the agent log's two drops recorded nowhere
    assert data["logs"] == {"audit": 2, ".wardrik/audit": 3} and data["max_bytes"] is None


def test_a_damaged_audit_log_stops_every_drop_before_it_is_made(cli, root):
    path = log_of(root, "acme/a", (1, OLD, 2), (3, NEW, 1))
    assert cli("audit", "record", "agent.created", "agents/x", "--data", '{"agent": {"id": "x"}}',
               "--actor", "user:a").returncode == 0
    with open(root / ".wardrik/audit.jsonl", "ab") as f:
        f.write(b"garbage line\n")
    before = path.read_bytes()
    rc, out = sweep(cli)  # before: acme/a lost two events, exit 1, no rows and no record of it
    assert rc == 1 and path.read_bytes() == before
    [row] = [r for r in out["logs"] if r["log"] == "acme/a"]
    assert row["dropped"] == 0 and row["kept"] == 3 and "ledger.compacted" in row["error"]


def _pulled(root: Path, log_id: str, first: int, last: int, when: datetime) -> None:
    gaps = root / ".wardrik/gaps" / f"{log_id}@gaps.json"
    gaps.parent.mkdir(parents=True, exist_ok=True)
    gaps.write_bytes(orjson.dumps({"gaps": [{"first": first, "last": last,
                                             "time": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]}))


def test_a_dry_run_counts_the_events_a_sweep_drops_past_a_recorded_gap(cli, root):
    log_of(root, "acme/p", (1, OLD, 3), (7, OLD + timedelta(days=3), 1), (8, NEW, 1))
    _pulled(root, "acme/p", 4, 6, OLD + timedelta(days=2))
    rc, dry = sweep(cli, "--dry-run")
    rc2, real = sweep(cli)
    assert rc == rc2 == 0
    assert dry["logs"][0]["dropped"] == real["logs"][0]["dropped"] == 4  # before, the dry run said 7
    assert recorded(cli)[0]["logs"] == {"acme/p": 4}


def test_kept_counts_events_when_a_recorded_gap_is_in_the_kept_part(cli, root):
    path = log_of(root, "acme/p", (1, OLD, 2), (3, NEW, 2), (8, NEW + timedelta(hours=1), 1))
    _pulled(root, "acme/p", 5, 7, NEW + timedelta(minutes=30))
    rc, dry = sweep(cli, "--dry-run")
    rc2, real = sweep(cli)
    assert rc == rc2 == 0
    held = len(path.read_bytes().splitlines())
    assert held == 3 and dry["logs"][0]["kept"] == real["logs"][0]["kept"] == held  # before: 5 (sequences)


def test_the_row_of_a_log_that_failed_keeps_all_it_holds(cli, root):
    path = log_of(root, "acme/f", (1, OLD, 1), (3, OLD + timedelta(hours=1), 1), (4, NEW, 2))  # 2 deleted
    rc, out = sweep(cli)
    assert rc == 1
    [row] = out["logs"]
    assert row["error"] and row["dropped"] == 0
    assert row["kept"] == len(path.read_bytes().splitlines()) == 4 and out["kept"] == 4  # before: 0


def test_a_damaged_line_where_the_kept_part_starts_goes_with_the_old_part_under_skip_corrupt(cli, root):
    old = log_of(root, "acme/a", (1, OLD, 2)).read_bytes()
    path = log_of(root, "acme/a", (3, NEW, 1))
    new = path.read_bytes()
    path.write_bytes(old + b"not json\n" + new)
    p = cli("compact", "-q")
    assert p.returncode == 1 and b"--skip-corrupt drops it" in p.stderr  # not dropped on a guess
    assert path.read_bytes() == old + b"not json\n" + new
    rc, out = sweep(cli, "--skip-corrupt")  # before: never swept, with or without it
    assert rc == 0 and path.read_bytes() == new
    [row] = out["logs"]
    assert (row["dropped"], row["kept"], row["damaged"]) == (2, 1, 1)
    assert Path(row["damaged_kept"]).read_bytes() == b"not json\n"
    assert cli("check").returncode == 0


def test_config_and_size_spellings_are_refused_naming_what_is_wrong(cli, root):
    (root / ".wardrik/config.toml").write_text('deployment = "BAD"\n')
    p = cli("compact", "-q")
    assert p.returncode == 2 and b"config.toml: deployment:" in p.stderr
    os.unlink(root / ".wardrik/config.toml")
    p = cli("compact", "-q", "--max-bytes", "500ib")  # before: 500 bytes
    assert p.returncode == 2 and b"bad --max-bytes '500ib'" in p.stderr
    for ok in ("500B", "5MiB", "5mb"):
        assert cli("compact", "-q", "--max-bytes", ok).returncode == 0


def test_a_tool_folder_that_is_a_file_is_named_as_such(tmp_path):
    r = tmp_path / "notroot"
    r.mkdir()
    (r / ".wardrik").write_bytes(b"")
    p = run_cli("compact", "-q", root=r)
    assert p.returncode == 2 and b".wardrik is not a folder" in p.stderr  # before: "make it with init", which fails
