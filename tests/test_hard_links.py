"""A log with another name (a hard link) is never written or cut in place: the other name may
be a file anywhere on the file system, outside the root. Compaction that replaces the log by
rename writes a new file and leaves the other name's bytes alone."""
from __future__ import annotations

import os
from datetime import timedelta

import orjson

from conftest import run_cli
from ledgergen import START, write_log

OUTSIDE = b"IMPORTANT CONFIG, no newline"


def _linked(root, tmp_path, name="acme/x", body=OUTSIDE):
    outside = tmp_path / "outside" / "important.conf"
    outside.parent.mkdir(exist_ok=True)
    outside.write_bytes(body)
    log = root / f"{name}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    os.link(outside, log)
    return outside, log


def test_append_refuses_a_log_with_another_name(root, tmp_path):
    outside, _log = _linked(root, tmp_path)  # all of it a torn tail: append would cut it
    p = run_cli("append", "acme/x", "run.started", root=root)
    assert p.returncode == 1 and p.stdout == b""
    assert b"has 2 names (hard links)" in p.stderr and p.stderr.count(b"\n") == 1
    assert outside.read_bytes() == OUTSIDE


def test_audit_record_refuses_an_audit_log_with_another_name(root, tmp_path):
    outside, _log = _linked(root, tmp_path, name=".wardrik/audit")
    p = run_cli("audit", "record", "agent.created", "x", "--data", '{"agent":{"id":"x"}}', "--actor", "a", root=root)
    assert p.returncode == 1 and b"has 2 names" in p.stderr
    assert outside.read_bytes() == OUTSIDE


def test_compact_does_not_cut_a_torn_tail_through_another_name(root, tmp_path):
    outside, _log = _linked(root, tmp_path)
    p = run_cli("compact", "-q", "--retention", "30d", root=root)
    assert p.returncode == 1 and b"acme/x: not swept" in p.stderr and b"has 2 names" in p.stderr
    assert outside.read_bytes() == OUTSIDE
    assert list(outside.parent.iterdir()) == [outside]


def test_compact_replacing_a_linked_log_leaves_the_other_name_as_it_was(root, tmp_path):
    src = tmp_path / "src.jsonl"
    write_log(src, 10, start=START - timedelta(days=400), log_id="acme/x")
    write_log(tmp_path / "new.jsonl", 2, first_seq=11, start=START + timedelta(days=10_000), log_id="acme/x")
    body = src.read_bytes() + (tmp_path / "new.jsonl").read_bytes()
    outside, log = _linked(root, tmp_path, body=body)
    p = run_cli("compact", "-F", "json", "--retention", "30d", root=root)
    assert p.returncode == 0, p.stderr
    [row] = [r for r in orjson.loads(p.stdout)["logs"] if r["log"] == "acme/x"]
    assert (row["dropped"], row["kept"]) == (10, 2)
    assert outside.read_bytes() == body  # the other name keeps its bytes; the log is a file of its own
    assert os.stat(log).st_nlink == 1 and log.read_bytes() == (tmp_path / "new.jsonl").read_bytes()
    # and with the torn tail a writer left, the cut in place is refused, the outside untouched
    outside2, _ = _linked(root, tmp_path, name="acme/y", body=body.replace(b"acme/x", b"acme/y") + b'{"half')
    before = outside2.read_bytes()
    p = run_cli("compact", "-q", "--retention", "30d", root=root)
    assert p.returncode == 1 and b"acme/y: not swept" in p.stderr and outside2.read_bytes() == before


def test_compact_refuses_before_any_drop_when_the_audit_log_has_another_name(root, tmp_path):
    """The sweep's ledger.compacted could not be written (the audit log is refused as append
    refuses it): no log is cut, and no sweep is left half-recorded to stop the next one."""
    write_log(root / "acme" / "a.jsonl", 5, start=START - timedelta(days=400), log_id="acme/a")
    before = (root / "acme" / "a.jsonl").read_bytes()
    assert run_cli("audit", "record", "agent.created", "x", "--data", '{"agent":{"id":"x"}}', "--actor", "a",
                   root=root).returncode == 0
    os.link(root / ".wardrik" / "audit.jsonl", tmp_path / "audit-elsewhere.jsonl")
    for _ in range(2):
        p = run_cli("compact", "-q", "--retention", "30d", root=root)
        assert p.returncode == 1 and b"has 2 names" in p.stderr and b"not compacted" in p.stderr, p.stderr
        assert (root / "acme" / "a.jsonl").read_bytes() == before
        assert not (root / ".wardrik" / "compact-intent.jsonl").exists()
