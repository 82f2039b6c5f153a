"""A line that is not an event inside the part compact drops is never thrown away unseen: its
bytes are kept beside the log, the log's row says so, and the sweep exits 1 unless
--skip-corrupt."""
from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

from conftest import run_cli
from ledgergen import START, write_log

GARBAGE = b"this line was edited by hand \x1b[31m and is not JSON"


def damaged_log(root):
    path = root / "acme" / "a.jsonl"
    write_log(path, 200, start=START - timedelta(days=400), log_id="acme/a")
    with open(path, "ab") as f:  # and some events to keep
        f.write(b"")
    write_log(root / "acme" / "b.jsonl", 5, start=START + timedelta(days=10_000), log_id="acme/b")
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, GARBAGE + b"\n")  # an extra, damaged line early in what will be dropped
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("skip", [False, True])
def test_damaged_line_in_dropped_part_is_kept_and_reported(root, skip):
    path = damaged_log(root)
    p = run_cli("compact", "-q", "-F", "json", *(["--skip-corrupt"] if skip else []), root=root)
    err = p.stderr.decode()
    assert p.returncode == (0 if skip else 1), err
    kept = list(path.parent.glob("a.jsonl.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == GARBAGE + b"\n"
    if not skip:
        assert "acme/a" in err and str(kept[0]) in err and err.splitlines()[-1].startswith("error:")
        assert "Traceback" not in err
    assert path.read_bytes() == b""  # every event was old: the sweep itself went ahead
    assert run_cli("check", root=root).returncode == 0


def test_dry_run_says_so_and_keeps_nothing(root):
    path = damaged_log(root)
    before = path.read_bytes()
    p = run_cli("compact", "--dry-run", "-F", "json", root=root)
    assert p.returncode == 1
    [row] = [r for r in orjson.loads(p.stdout)["logs"] if r["log"] == "acme/a"]
    assert row["damaged"] == 1 and "damaged_kept" not in row
    assert path.read_bytes() == before and not list(path.parent.glob("*.damaged-*"))


def test_a_damaged_line_after_the_last_old_event_is_not_dropped_on_a_guess(root):
    """Events 1-4 past the retention, a line that is not an event, then 5 recent ones: its
    time cannot be read, so it is not shown to be old, and the log cannot be cut after it
    (the kept part must start with an event): the log is not swept, and the sweep says so
    (exit 1, naming the byte). Before: it went with the part dropped, counted as a dropped
    event, and `check` was clean afterwards."""
    path = root / "acme" / "a.jsonl"
    write_log(path, 4, start=START - timedelta(days=400), log_id="acme/a")
    old = path.read_bytes()
    write_log(path, 5, first_seq=5, start=START + timedelta(days=10_000), log_id="acme/a")
    path.write_bytes(old + GARBAGE + b"\n" + path.read_bytes())
    before = path.read_bytes()
    p = run_cli("compact", "-q", root=root)
    assert p.returncode == 1
    assert f"at byte {len(old)}".encode() in p.stderr and b"not compacted" in p.stderr
    assert path.read_bytes() == before and not list(path.parent.glob("*.damaged-*"))
    assert run_cli("check", root=root).returncode == 1  # still there for check to name


def test_dry_run_words_what_would_happen(root):
    damaged_log(root)
    p = run_cli("compact", "--dry-run", root=root)
    err = p.stderr.decode()
    assert p.returncode == 1
    assert "their bytes would be kept beside the log" in err and "are would" not in err
    assert "would keep their bytes" in err and "were in the part dropped" not in err


def test_a_sweep_refused_before_its_drop_leaves_no_copy_of_the_damaged_lines(root):
    """The audit log cannot take ledger.compacted (its lock is a folder): the log is not cut, so
    its damaged line is still in it, and run after run leaves no copy of it beside the log."""
    path = damaged_log(root)
    before = path.read_bytes()
    (root / ".wardrik" / "locks" / "@audit@lock").mkdir(parents=True)
    for _ in range(2):
        p = run_cli("compact", "-F", "json", "--skip-corrupt", root=root)
        assert p.returncode == 1 and b"cannot record ledger.compacted" in p.stderr
        [row] = [r for r in orjson.loads(p.stdout)["logs"] if r["log"] == "acme/a"]
        assert "damaged_kept" not in row and "error" in row
    assert path.read_bytes() == before
    assert list(path.parent.glob("a.jsonl.damaged-*")) == []
    (root / ".wardrik" / "locks" / "@audit@lock").rmdir()
    assert run_cli("compact", "-q", "--skip-corrupt", root=root).returncode == 0
    assert [p.read_bytes() for p in path.parent.glob("a.jsonl.damaged-*")] == [GARBAGE + b"\n"]
