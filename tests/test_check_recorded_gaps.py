"""``check`` and recorded gaps (``store.recorded_gaps``): a hole a record accounts for is not
damage (pulled and mirrored copies of a log shipped after ``compact --max-ship-lag``); a
hole, or the part of one, that no record covers still is. The end-to-end path (ship, pull,
``--root s3://``) is in test_ship_retention; here the record is written by hand."""
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
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stdout + p.stderr


def test_the_part_of_a_hole_no_record_covers_is_still_a_gap(root):
    _holed(root, hole=(4, 7))
    _record(root, Log.agent(Root(root), "acme/a"), (4, 5))
    p = run_cli("check", root=root)
    assert p.returncode == 1
    assert len(p.stdout.splitlines()) == 1 and b"(2 missing: 000000000006 to 000000000007" in p.stdout


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


def test_the_audit_chain_is_checked_again_after_a_recorded_gap(root):
    lines = _audit(8)
    path = root / ".wardrik/audit.jsonl"
    path.write_bytes(b"".join(lines[:3] + lines[5:]))  # 4..5 dropped at the source
    log = Log.audit(Root(root))
    _record(root, log, (4, 5))
    assert run_cli("check", root=root).returncode == 0  # the chain cannot be checked across the hole ...
    bad = bytearray(b"".join(lines[:3] + lines[5:]))
    i = bad.rfind(b'"prevhash":"') + len(b'"prevhash":"')
    bad[i:i + 1] = b"f" if bad[i:i + 1] != b"f" else b"e"  # ... but is after it
    path.write_bytes(bytes(bad))
    p = run_cli("check", root=root)
    assert p.returncode == 1 and b"audit chain broken" in p.stdout and b":8:" not in p.stdout
