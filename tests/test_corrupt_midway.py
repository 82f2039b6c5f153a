"""A reader that meets a corrupt complete line shows what came before it, then stops with the
error; a read whose answer never reaches the line is not stopped by it (contract: "A reader
that meets a corrupt complete line in the middle of a log stops with an error").

Before: the read decoded a block before giving any of it, so the events before the line were
never printed, `page --limit 1` and `tail -n 1` failed for a line they did not need, and
`page -o json` left `{"events": [` on stdout when the first line was the bad one.
"""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli


def _log(root: Path, name: str, n: int, bad: int | None) -> list[bytes]:
    """``n`` events appended to ``name``; line ``bad`` (1-based) then replaced by garbage.
    The stored lines, the bad one as written."""
    for i in range(n):
        run_cli("append", name, "trigger.fired", "--data", orjson.dumps({"trigger": {"name": f"t{i}"}}).decode(),
                "--no-sync", root=root, check=True)
    path = root / f"{name}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    if bad is not None:
        lines[bad - 1] = b"{garbage}\n"
        path.write_bytes(b"".join(lines))
    return lines


def _seqs(out: bytes) -> list[int]:
    return [int(e["sequence"]) for e in jsonl(out)]


def _corrupt(p, name: str, line: int) -> None:
    err = p.stderr.decode()
    assert p.returncode == 1 and f"{name}.jsonl:{line}:" in err and "corrupt line" in err and "Traceback" not in err, \
        (p.returncode, err)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    _log(r, "L", 5, bad=4)
    return r


def test_page_shows_the_events_before_the_line_then_stops(root):
    p = run_cli("page", "L", "--all", "-o", "jsonl", root=root)
    assert _seqs(p.stdout) == [1, 2, 3]
    _corrupt(p, "L", 4)


def test_a_page_whose_limit_ends_before_the_line_never_meets_it(root):
    p = run_cli("page", "L", "--limit", "2", "-o", "jsonl", root=root)
    assert p.returncode == 0 and _seqs(p.stdout) == [1, 2], p.stderr
    assert b"error" not in p.stderr and b"note: stopped at --limit 2" in p.stderr


def test_tail_of_the_events_after_the_line_never_meets_it(root):
    p = run_cli("tail", "L", "-n", "1", "-o", "jsonl", root=root)
    assert p.returncode == 0 and _seqs(p.stdout) == [5], p.stderr
    _corrupt(run_cli("tail", "L", "-n", "2", "-o", "jsonl", root=root), "L", 4)


def test_json_prints_nothing_when_the_first_line_read_is_corrupt(tmp_path):
    r = tmp_path / "root"
    _log(r, "M", 3, bad=2)
    p = run_cli("page", "M", "--after", "eyJNIjoxfQ", "-o", "json", root=r)  # {"M":1}: line 2 is read first
    assert p.stdout == b""
    _corrupt(p, "M", 2)
    _log(r, "N", 4, bad=3)
    q = run_cli("page", "N", "--limit", "1", "-o", "json", root=r)  # it ends before the line: a whole document
    assert q.returncode == 0 and [int(e["sequence"]) for e in orjson.loads(q.stdout)["events"]] == [1]


def test_json_after_some_events_is_a_whole_document_of_them_with_no_cursor(root):
    """A script's `jq` reads what was printed; `next` is null, as a cursor file is left as it
    was (the read did not end); the error and exit 1 say why."""
    p = run_cli("page", "L", "--all", "-o", "json", root=root)
    _corrupt(p, "L", 4)
    doc = orjson.loads(p.stdout)
    assert doc["next"] is None and [int(e["sequence"]) for e in doc["events"]] == [1, 2, 3]


def test_over_many_logs_the_events_before_the_line_in_time_are_shown(tmp_path):
    """Two logs written turn about: the merge shows every event older than the bad line's
    neighbours, then the error."""
    r = tmp_path / "root"
    for i in range(6):
        for name in ("a", "b"):
            run_cli("append", name, "trigger.fired", "--data", orjson.dumps({"trigger": {"name": f"{name}{i}"}}).decode(),
                    "--no-sync", root=r, check=True)
    path = r / "b.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{garbage}\n"  # b's 4th event
    path.write_bytes(b"".join(lines))
    p = run_cli("page", "--all", "-o", "jsonl", root=r)
    _corrupt(p, "b", 4)
    shown = [(e["subject"], int(e["sequence"])) for e in jsonl(p.stdout)]
    # a1 b1 a2 b2 a3 b3 are older than b's bad line's place; a4 is not known to be
    assert shown[:6] == [("agents/a", 1), ("agents/b", 1), ("agents/a", 2), ("agents/b", 2), ("agents/a", 3),
                         ("agents/b", 3)], shown
    assert ("agents/b", 5) not in shown


@pytest.mark.parametrize("n", [5, 3000])
def test_a_cursor_just_before_the_line_starts_there_not_at_the_log_start(tmp_path, n):
    """The seek by sequence gave up (answered 0) when it met a corrupt line, so a read after
    the cursor read the log again from its start and told each event it passed over as out
    of order (3000 events: the bisection's probes meet the line too)."""
    r = tmp_path / "root"
    path = r / "L.jsonl"
    if n > 10:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
        from spread_ledger import write_spread

        r.mkdir()
        write_spread(path, events=n, days=1, log_id="L")
    else:
        _log(r, "L", n, bad=None)
    lines = path.read_bytes().splitlines(keepends=True)
    bad = n - 1  # the line of sequence n-1
    lines[bad - 1] = b"{garbage}\n"
    path.write_bytes(b"".join(lines))
    cursor = f"--after={_cursor({'L': bad - 1})}"
    p = run_cli("page", "L", cursor, "--skip-corrupt", "-o", "jsonl", root=r)
    assert p.returncode == 0 and _seqs(p.stdout) == [n], p.stderr
    assert b"out of order" not in p.stderr and p.stderr.count(b"skipping") == 1, p.stderr
    q = run_cli("page", "L", cursor, "-o", "jsonl", root=r)
    _corrupt(q, "L", bad)
    assert b"out of order" not in q.stderr and q.stdout == b""


def _cursor(c: dict) -> str:
    from wardrik_cli.protocol.cursor import encode_cursor

    return encode_cursor(c)


@pytest.mark.parametrize("args", [["fold", "M", "-o", "json"], ["activity", "-o", "json"]])
def test_skip_corrupt_reads_on_past_a_corrupt_first_line(tmp_path, args):
    """The look for a missing start read the first line outside --skip-corrupt and stopped there."""
    r = tmp_path / "root"
    _log(r, "M", 3, bad=1)
    p = run_cli(*args, "--skip-corrupt", root=r)
    assert p.returncode == 0 and b"skipping" in p.stderr and b"error:" not in p.stderr, p.stderr


def test_since_past_a_corrupt_line_does_not_call_the_times_unsorted(tmp_path):
    r = tmp_path / "root"
    lines = _log(r, "M", 5, bad=2)
    since = orjson.loads(lines[3])["time"]
    p = run_cli("page", "M", "--since", since, "--skip-corrupt", "-o", "jsonl", root=r)
    assert p.returncode == 0 and _seqs(p.stdout) == [4, 5] and b"not in order" not in p.stderr, p.stderr
