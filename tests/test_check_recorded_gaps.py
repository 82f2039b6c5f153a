"""``check`` and recorded gaps (``store.recorded_gaps``): a hole a record accounts for is not
damage (pulled and mirrored copies of a log shipped after ``compact --max-ship-lag``) but is
never passed over in silence: a warning names it (a record planted by hand cannot quiet
check); a hole, or the part of one, that no record covers is an error. The audit log's holes
are errors whatever a record says: its chain is checked across them. The end-to-end path
(ship, pull, ``--root s3://``) is in test_ship_retention; here the record is written by hand."""
from __future__ import annotations

import hashlib
import time

import orjson

from conftest import run_cli
from ledgergen import START, write_log
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.recorded_gaps import RecordedGap, write_gaps


def _holed(root, hole=(4, 6)):
    path = root / "acme/a.jsonl"
    write_log(path, 10, start=START, pad=20, log_id="acme/a")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for i, line in enumerate(lines, 1) if not hole[0] <= i <= hole[1]))


def _record(root, log: Log, *gaps: tuple[int, int]) -> None:
    write_gaps(Root(root), log.state_key, [RecordedGap(a, b, None) for a, b in gaps])


def test_a_recorded_gap_is_not_damage(root):
    _holed(root)
    p = run_cli("check", root=root)
    assert p.returncode == 1 and b"sequence gap: 000000000007 follows 000000000003 (3 missing)" in p.stdout
    _record(root, Log.agent(Root(root), "acme/a"), (4, 6))
    p = run_cli("check", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stdout + p.stderr
    assert p.stdout.splitlines() == [
        str(root / "acme/a.jsonl").encode() + b":4: " + str(len(b"".join(
            (root / "acme/a.jsonl").read_bytes().splitlines(keepends=True)[:3]))).encode()
        + b": 3 events missing before 000000000007 (000000000004 to 000000000006): dropped at their source "
        b"before they were shipped, as the root's gap record says (.wardrik/gaps; a log written here should "
        b"have none) (warning)"], p.stdout
    j = run_cli("check", "-o", "json", root=root)
    assert j.returncode == 0 and [x["severity"] for x in orjson.loads(j.stdout)["problems"]] == ["warning"]


def test_the_part_of_a_hole_no_record_covers_is_still_a_gap(root):
    _holed(root, hole=(4, 7))
    _record(root, Log.agent(Root(root), "acme/a"), (4, 5))
    p = run_cli("check", root=root)
    assert p.returncode == 1
    err, warn = p.stdout.splitlines()
    assert b"(2 missing: 000000000006 to 000000000007" in err and warn.endswith(b"(warning)")
    assert b"(000000000004 to 000000000005): dropped at their source" in warn


def _audit(n: int) -> list[bytes]:
    prev, out = "0" * 64, []
    for i in range(n):
        sec = time.time() - 3600 + i
        ev = {"specversion": "1.0", "id": f"01900000-0000-7000-8000-{i + 1:012x}", "type": "wardrik.agent.created",
              "source": "wardrik://local/audit", "subject": "agents/x",
              "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".000000Z",
              "sequence": f"{i + 1:012d}", "traceparent": f"00-{i + 1:032x}-{i + 1:016x}-01", "prevhash": prev,
              "data": {"agent": {"id": "x"}, "actor": "user:a", "assumed_by": []}}
        line = orjson.dumps(ev) + b"\n"
        prev = hashlib.sha256(line).hexdigest()
        out.append(line)
    return out


def test_a_record_never_excuses_a_hole_in_the_audit_log(root):
    """The audit chain is what makes the log tamper-evident: a line removed by hand, with a
    gap record planted for it, is still a gap and a broken chain (exit 1)."""
    lines = _audit(8)
    path = root / ".wardrik/audit.jsonl"
    path.write_bytes(b"".join(lines[:3] + lines[5:]))  # 4..5 removed
    _record(root, Log.audit(Root(root)), (4, 5))
    p = run_cli("check", root=root)
    assert p.returncode == 1, p.stdout
    assert b"sequence gap: 000000000006 follows 000000000003 (2 missing)" in p.stdout
    assert b"audit chain broken here" in p.stdout


def test_a_planted_record_does_not_quiet_check_on_an_agent_log(root):
    """A line removed by hand and a record planted for it: check still says events are
    missing (a warning naming the record), never nothing."""
    _holed(root, hole=(5, 5))
    _record(root, Log.agent(Root(root), "acme/a"), (5, 5))
    p = run_cli("check", root=root)
    assert b"1 event missing before 000000000006 (000000000005 to 000000000005)" in p.stdout, p.stdout
