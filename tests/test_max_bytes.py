"""Size-bounded retention: `compact --max-bytes SIZE` (or max_bytes in config.toml) keeps at
most SIZE bytes of each agent log's newest whole events, after the time rule; readers are told
what was dropped; the audit log is bounded by time only."""
from __future__ import annotations

import os
import orjson
import pytest

from conftest import run_cli
from ledgergen import START, write_log


@pytest.mark.parametrize("size, limit", [("10K", 10 << 10), ("4096", 4096), ("0.5K", 512), ("1k", 1024)])
def test_keeps_the_newest_whole_events_within_the_bound(root, size, limit):
    write_log(root / "acme" / "a.jsonl", 200, start=START, pad=100)
    write_log(root / "acme" / "small.jsonl", 1, start=START, pad=0, log_id="acme/small")
    before = (root / "acme" / "a.jsonl").read_bytes().splitlines(keepends=True)
    small = (root / "acme" / "small.jsonl").read_bytes()
    p = run_cli("compact", "--retention", "100000d", "--max-bytes", size, "-F", "json", root=root)
    assert p.returncode == 0, p.stderr
    after = (root / "acme" / "a.jsonl").read_bytes()
    assert len(after) <= limit
    kept = after.splitlines(keepends=True)
    assert kept == before[len(before) - len(kept):]  # a suffix of whole lines...
    assert len(after) + len(before[-len(kept) - 1]) > limit  # ...and the longest one that fits
    assert (root / "acme" / "small.jsonl").read_bytes() == small  # under the bound: untouched
    doc = orjson.loads(p.stdout)
    assert doc["max_bytes"] == limit and doc["dropped"] == 200 - len(kept)
    page = orjson.loads(run_cli("page", "acme/a", "--all", "-F", "json", root=root).stdout)["events"]
    assert page[0]["type"] == "wardrik.events.dropped" and page[0]["data"]["count"] == 200 - len(kept)
    nxt = orjson.loads(run_cli("append", "acme/a", "run.started", root=root).stdout)
    assert int(nxt["sequence"]) == 201  # sequences go on


def test_audit_log_is_bounded_by_time_only_and_config_sets_the_default(root):
    write_log(root / "acme" / "a.jsonl", 100, start=START, pad=100)
    for i in range(30):
        assert run_cli("audit", "record", "agent.created", f"agents/a{i}", "--actor", "u",
                       "--data", orjson.dumps({"agent": {"id": f"a{i}"}}).decode(), root=root).returncode == 0
    audit = (root / ".wardrik" / "audit.jsonl").read_bytes()
    assert len(audit) > 2048
    assert run_cli("init", "--max-bytes", "2K", root=root).returncode == 0
    p = run_cli("compact", "-q", root=root)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert os.path.getsize(root / "acme" / "a.jsonl") <= 2048
    after = (root / ".wardrik" / "audit.jsonl").read_bytes()
    assert after.startswith(audit)  # nothing of it dropped; the sweep's own record follows
    assert orjson.loads(after[len(audit):])["type"] == "wardrik.ledger.compacted"
    assert run_cli("check", root=root).returncode == 0


@pytest.mark.parametrize("bad", ["0", "-1", "12Q", "1.5.5G", "", "2 GB extra"])
def test_bad_sizes_refused_nothing_changed(root, bad):
    write_log(root / "acme" / "a.jsonl", 50, start=START, pad=100)
    before = (root / "acme" / "a.jsonl").read_bytes()
    for args in (["compact", "--max-bytes", bad], ["init", "--max-bytes", bad]):
        p = run_cli(*args, root=root)
        lines = p.stderr.decode().splitlines()
        assert p.returncode == 2 and lines[0].startswith("error:") and "--max-bytes" in lines[0], (args, lines)
    assert (root / "acme" / "a.jsonl").read_bytes() == before
    assert not (root / ".wardrik" / "config.toml").exists()


@pytest.mark.parametrize("value", ['"12Q"', "0", "true", "[1]"])
def test_bad_max_bytes_in_config_names_file_and_key(root, value):
    write_log(root / "acme" / "a.jsonl", 5, start=START)
    (root / ".wardrik" / "config.toml").write_text(f"max_bytes = {value}\n")
    p = run_cli("compact", root=root)
    err = p.stderr.decode()
    assert p.returncode == 2 and "config.toml" in err and "max_bytes" in err, err
