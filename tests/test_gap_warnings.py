"""A sequence gap met while reading is a warning, from every reader that meets it (page,
fold, activity), and only from one that meets it: a page that stops at its limit before
the gap says nothing of it."""
from __future__ import annotations

import orjson
import pytest

from conftest import run_cli


@pytest.fixture
def gapped(tmp_path):
    """Log ``a``: sequences 1..8 with 6 deleted by hand."""
    root = tmp_path / "r"
    for i in range(1, 9):
        run_cli("append", "a", "trigger.fired", "--data", orjson.dumps({"trigger": {"name": f"t{i}"}}).decode(),
                "--no-sync", root=root, check=True)
    path = root / "a.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + lines[6:]))
    return root


WARNING = b"warning: a: sequence 6 is missing (1 event)"


def test_a_page_that_stops_before_the_gap_says_nothing_of_it(gapped):
    p = run_cli("page", "a", "--limit", "2", root=gapped)
    assert p.returncode == 0 and WARNING not in p.stderr, p.stderr  # before: warned on every page
    nxt = orjson.loads(run_cli("page", "a", "--limit", "2", "-o", "json", root=gapped).stdout)["next"]
    p = run_cli("page", "a", "--limit", "2", "--after", nxt, root=gapped)
    assert WARNING not in p.stderr
    p = run_cli("page", "a", "--limit", "5", root=gapped)  # 1..5: sequence 7 is not reached
    assert WARNING not in p.stderr
    p = run_cli("page", "a", "--limit", "6", root=gapped)  # 7 is read: the gap before it is met
    assert p.stderr.count(WARNING) == 1
    run_cli("append", "b", "run.started", root=gapped, check=True)
    for args in (["--all"], ["--limit", "100"]):  # over two logs, read to the end: told once
        p = run_cli("page", *args, root=gapped)
        assert p.returncode == 0 and p.stderr.count(WARNING) == 1, p.stderr
    assert WARNING not in run_cli("page", "--limit", "2", root=gapped).stderr


@pytest.mark.parametrize("args", [["fold", "a"], ["fold", "a", "--view", "timeline"], ["activity"],
                                  ["activity", "-o", "pretty"]])
def test_fold_and_activity_warn_of_a_gap_each_time(gapped, args):
    """Before: both folded the damaged log without a word. No checkpoint is saved past a gap,
    so the next fold reads it again and says so again."""
    for _ in range(2):
        p = run_cli(*args, root=gapped)
        assert p.returncode == 0 and p.stderr.count(WARNING) == 1, p.stderr


@pytest.mark.parametrize("args", [["fold", "a"], ["fold", "a", "--view", "usage"], ["fold", "a", "--view", "timeline"],
                                  ["activity", "-o", "json"], ["export", "otlp", "a", "-o", "{out}"],
                                  ["page", "a", "--all"], ["stats", "a"]])
def test_a_start_deleted_by_hand_is_a_gap_every_reader_tells(tmp_path, args):
    """Sequences 1..3 gone with no compaction record (an evidence copy without .wardrik/, a
    hand edit): page and stats warned; fold, activity and export otlp said nothing."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", root=root, check=True)
    for i in range(5):
        run_cli("append", "a", "trigger.fired", "--data", orjson.dumps({"trigger": {"name": f"t{i}"}}).decode(),
                "--no-sync", root=root, check=True)
    path = root / "a.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[3:]))
    args = [x.format(out=tmp_path / "spans.json") for x in args]
    for _ in range(2):  # no checkpoint is saved past it: told again
        p = run_cli(*args, root=root)
        assert p.returncode == 0 and p.stderr.count(b"warning: a: sequences 1..3 are missing (3 events)") == 1, \
            p.stderr


def test_where_compares_the_sequence_as_a_number(gapped):
    def seqs(*where):
        p = run_cli("page", "a", "--all", *(x for w in where for x in ("--where", w)), root=gapped)
        assert p.returncode == 0, p.stderr
        return [int(orjson.loads(line)["sequence"]) for line in p.stdout.splitlines()]

    assert seqs("sequence>4") == [5, 7, 8]  # before: nothing (a string of 12 digits is no number)
    assert seqs("sequence=7") == [7]
    assert seqs("sequence>=2", "sequence<4") == [2, 3]
    assert seqs("sequence!=1", "sequence<=3") == [2, 3]
    assert seqs("sequence~^0+3$") == [3]  # a regex still looks at the text
    for bad in ("sequence>x", "sequence=\u00b2", "sequence>=\u0661"):  # digits, but not ASCII ones
        p = run_cli("page", "a", "--where", bad, root=gapped)
        assert p.returncode == 2 and p.stderr.startswith(b"error: bad --where"), p.stderr
