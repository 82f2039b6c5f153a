"""`check` refuses a time no clock shows: a date that does not exist (2026-02-30) or an hour
past 23 (T24:00:00). Such a time has the stored shape, but a shipped segment's day and every
reader's order depend on it (DuckDB reads 24:00 as the next day's midnight)."""
from __future__ import annotations

import pytest

from conftest import run_cli
from ledgergen import START, write_log


@pytest.mark.parametrize("bad", ["2026-01-01T24:00:00.000000Z", "2026-02-30T10:00:00.000000Z",
                                 "2026-13-01T10:00:00.000000Z", "2026-01-01T10:60:00.000000Z"])
def test_a_time_no_clock_shows_is_an_error(root, bad):
    path = root / "acme" / "a.jsonl"
    write_log(path, 3, start=START, pad=20, log_id="acme/a")
    assert run_cli("check", root=root).returncode == 0
    lines = path.read_bytes().splitlines(keepends=True)
    i = lines[1].index(b'"time":"') + 8
    lines[1] = lines[1][:i] + bad.encode() + lines[1][i + 27:]
    path.write_bytes(b"".join(lines))
    p = run_cli("check", root=root)
    assert p.returncode == 1, p.stdout
    assert f"a.jsonl:2: {len(lines[0])}: corrupt line: time {bad} is not a time a clock shows".encode() in p.stdout


@pytest.mark.parametrize("what", ["another log's", "not wardrik's", "prevhash"])
def test_an_event_whose_source_is_not_its_logs_or_that_is_chained_is_an_error(root, what):
    """The contract's source is wardrik://DEPLOYMENT/agents/LOG and prevhash is the audit
    log's only: a file copied under another log's name, or lines another tool wrote, passed
    check before."""
    import orjson

    path = root / "acme" / "a.jsonl"
    write_log(path, 3, start=START, pad=20, log_id="acme/a")
    lines = path.read_bytes().splitlines(keepends=True)
    ev = orjson.loads(lines[1])
    if what == "another log's":
        ev["source"] = "wardrik://local/agents/acme/b"
    elif what == "not wardrik's":
        ev["source"] = "http://example.com/x"
    else:
        ev["prevhash"] = "0" * 64
    lines[1] = orjson.dumps(ev) + b"\n"
    path.write_bytes(b"".join(lines))
    p = run_cli("check", root=root)
    assert p.returncode == 1 and p.stdout.count(b"corrupt line") == 1, p.stdout
    assert f"a.jsonl:2: {len(lines[0])}: corrupt line: ".encode() in p.stdout
    assert (b"prevhash" if what == "prevhash" else b"source") in p.stdout
