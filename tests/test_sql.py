"""``wardrik sql``: DuckDB's answers agree with page and fold on the same root, in every format;
nothing but one read query runs; nothing is written; torn tails, corrupt lines and links."""
from __future__ import annotations

import csv
import hashlib
import io
import os
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli

pytest.importorskip("duckdb")

SAMPLES = Path(__file__).resolve().parent.parent / "sample_ledgers"
RUN_A = "a" * 32
RUN_B = "b" * 32


def _append(root: Path, log: str, type_: str, data: dict, trace: str | None = None) -> None:
    args = ["append", log, type_, "--data", orjson.dumps(data).decode(), "--no-sync"]
    if trace:
        args += ["--trace", f"00-{trace}-{'1' * 16}-01"]
    run_cli(*args, root=root, check=True)


@pytest.fixture
def sroot(tmp_path: Path) -> Path:
    """The sample ledgers, plus a log with token usage, a run abandoned by the next one
    (its tool call left unfinished) and a run still running."""
    r = tmp_path / "s"
    shutil.copytree(SAMPLES, r, ignore=shutil.ignore_patterns("__pycache__", "build.py"))
    log = "team/extra"
    _append(r, log, "run.started", {"run": {"id": RUN_A}, "task": "first"})
    _append(r, log, "message.started", {"message": {"id": "m1"}, "model": "m-small"})
    _append(r, log, "message.completed", {"message": {"id": "m1"}, "usage": {"input_tokens": 10, "output_tokens": 3}})
    _append(r, log, "tool_call.started", {"tool": {"name": "grep", "call": {"id": "c1"}}})
    _append(r, log, "run.started", {"run": {"id": RUN_B}, "task": "second"})
    _append(r, log, "message.started", {"message": {"id": "m2"}, "model": "m-big"})
    _append(r, log, "message.completed", {"message": {"id": "m2"}})
    _append(r, log, "tool_call.started", {"tool": {"name": "bash", "call": {"id": "c1"}}})
    _append(r, log, "tool_call.failed", {"tool": {"call": {"id": "c1"}}, "error": {"message": "boom\nmore"}})
    _append(r, log, "tool_call.started", {"tool": {"name": "bash", "call": {"id": "c2"}}})
    return r


def sql(root: Path, query: str, *extra: str, fmt: str = "jsonl"):
    return run_cli("sql", query, "-o", fmt, *extra, root=root)


def rows(root: Path, query: str) -> list[dict]:
    p = sql(root, query)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    return jsonl(p.stdout)


def tree(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` (links as their target), with its size and hash."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath, name)
            if p.is_symlink():
                out[str(p)] = (-1, os.readlink(p))
            else:
                out[str(p)] = (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


# --- the same answers as page and fold ------------------------------------------------------

def test_type_counts_equal_page(sroot):
    p = run_cli("page", "--all", "-o", "jsonl", root=sroot, check=True)
    want = Counter(e["type"].removeprefix("wardrik.") for e in jsonl(p.stdout))
    got = {r["type"]: r["n"] for r in rows(sroot, "select type, count(*) as n from events group by 1")}
    assert got == dict(want) and sum(want.values()) > 60


def test_events_match_page_event_by_event(sroot):
    page = jsonl(run_cli("page", "--all", "-o", "jsonl", root=sroot, check=True).stdout)
    got = rows(sroot, "select * from events order by log, seq")
    want = sorted(page, key=lambda e: (e["source"].split("/agents/", 1)[1], e["sequence"]))
    assert len(got) == len(want)
    for g, e in zip(got, want, strict=True):
        assert g["log"] == e["source"].split("/agents/", 1)[1]
        assert g["seq"] == int(e["sequence"]) and g["time"] == e["time"]
        assert g["type"] == e["type"].removeprefix("wardrik.") and g["subject"] == e["subject"]
        assert g["run_id"] == e["traceparent"][3:35] and g["data"] == e["data"]


def _logs(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("*.jsonl")
                  if ".wardrik" not in p.parts)


def test_runs_equal_fold_timeline_and_state(sroot):
    runs = rows(sroot, "select * from runs order by log, started")
    for log in _logs(sroot):
        tl = orjson.loads(run_cli("fold", log, "--view", "timeline", "-o", "json", root=sroot, check=True).stdout)
        want = [(r["run"], r["status"], r["started"], r["ended"]) for r in tl["state"]["runs"]
                if r["status"] != "outside a run"]
        mine = [r for r in runs if r["log"] == log]
        assert [(r["run_id"], r["status"], r["started"], r["ended"]) for r in mine] == want
        st = orjson.loads(run_cli("fold", log, "-o", "json", root=sroot, check=True).stdout)["state"]
        if mine:
            last = mine[-1]
            assert (last["status"], last["turns"], last["tool_calls"]) == (st["status"], st["turns"], st["tool_calls"])
    assert {r["status"] for r in runs} >= {"completed", "failed", "running", "abandoned"}


def test_tool_and_model_calls_equal_fold_timeline(sroot):
    calls = rows(sroot, "select * from tool_calls order by log, started")
    models = rows(sroot, "select * from model_calls order by log, started")
    for log in _logs(sroot):
        tl = orjson.loads(run_cli("fold", log, "--view", "timeline", "-o", "json", root=sroot, check=True).stdout)
        items = [(run["run"], i) for run in tl["state"]["runs"] for i in run["items"]]
        want = [(rid, i["id"], i["name"], i["status"], i["started"], i["ended"],
                 None if i["duration_ms"] is None else round(i["duration_ms"] / 1000, 6)) for rid, i in items if i["kind"] == "tool"]
        got = [(c["run_id"], c["call_id"], c["name"], c["status"], c["started"], c["ended"],
                c["seconds"] if c["seconds"] is None else round(c["seconds"], 6))
               for c in calls if c["log"] == log]
        assert got == want, log
        want_m = [(rid, i["id"], i["started"], i["ended"]) for rid, i in items if i["kind"] == "model"]
        assert [(m["run_id"], m["message_id"], m["started"], m["ended"]) for m in models if m["log"] == log] == want_m
    failed = [c for c in calls if c["status"] == "failed"]
    assert {c["error"] for c in failed} >= {"boom\nmore", "upstream timeout after 30s"}
    assert [c["status"] for c in calls if c["log"] == "team/extra"] == ["unfinished", "failed", "running"]
    extra = [m for m in models if m["log"] == "team/extra"]
    assert [(m["model"], m["input_tokens"], m["output_tokens"]) for m in extra] == [("m-small", 10, 3),
                                                                                   ("m-big", None, None)]


# --- formats ---------------------------------------------------------------------------------

Q = "select log, seq, time, type, data from events where log = 'acme/billing' order by seq"


def test_every_format_gives_the_same_rows(sroot):
    want = rows(sroot, Q)
    assert len(want) > 5 and want[0]["time"].endswith("Z") and isinstance(want[0]["data"], dict)
    as_json = sql(sroot, Q, fmt="json")
    assert as_json.returncode == 0 and orjson.loads(as_json.stdout) == want
    as_csv = sql(sroot, Q, fmt="csv")
    assert as_csv.returncode == 0 and b"\r\n" in as_csv.stdout
    got = list(csv.DictReader(io.StringIO(as_csv.stdout.decode(), newline="")))
    assert [(r["log"], int(r["seq"]), r["time"], r["type"], orjson.loads(r["data"])) for r in got] == \
        [(r["log"], r["seq"], r["time"], r["type"], r["data"]) for r in want]
    pretty = sql(sroot, Q, fmt="pretty")
    assert pretty.returncode == 0
    text = pretty.stdout.decode()
    assert text.splitlines()[0].split() == ["log", "seq", "time", "type", "data"]
    assert "message.received" in text and f"({len(want)} rows)" in text


def test_empty_result_and_empty_root(sroot, tmp_path):
    assert sql(sroot, "select * from events where false", fmt="json").stdout == b"[]\n"
    assert sql(sroot, "select * from events where false", fmt="jsonl").stdout == b""
    assert sql(sroot, "select * from events where false", fmt="csv").stdout.startswith(b"log,seq,time,type")
    empty = tmp_path / "empty"
    empty.mkdir()
    for view in ("events", "runs", "tool_calls", "model_calls"):
        p = sql(empty, f"select count(*) as n from {view}")
        assert p.returncode == 0 and jsonl(p.stdout) == [{"n": 0}], p.stderr


def test_pretty_cells_are_sanitised(sroot):
    _append(sroot, "acme/evil", "trigger.fired", {"trigger": {"name": "x\x1b]0;pwned\x07\u202e"}})
    p = sql(sroot, "select data->>'$.trigger.name' as name from events where log = 'acme/evil'", fmt="pretty")
    assert p.returncode == 0
    assert b"\x1b" not in p.stdout and b"\x07" not in p.stdout and "\u202e".encode() not in p.stdout
    assert b"\\x1b]0;pwned\\x07\\u202e" in p.stdout


# --- bad input: one error line, exit 2, nothing written ---------------------------------------

@pytest.mark.parametrize("query, says", [
    ("create table t as select 1", "not CREATE"),
    ("insert into events values (1)", "not INSERT"),
    ("copy (select 1) to 'out.csv'", "not COPY"),
    ("attach 'x.db' as x", "not ATTACH"),
    ("install httpfs", "not LOAD"),
    ("load json", "not LOAD"),
    ("set threads = 1", "not SET"),
    ("pragma version", "not PRAGMA"),
    ("call pragma_version()", "not CALL"),
    ("explain select 1", "not EXPLAIN"),
    ("select 1; drop view events", "exactly one"),
    ("select 1; select 2", "exactly one"),
    ("", "no SQL statement"),
    ("selec type from events", "Parser Error"),
    ("select nope from events", 'Binder Error: Referenced column "nope" not found'),
    ("select * from no_such_table", "Catalog Error"),
    ("select * from read_text('/etc/hostname')", "Permission Error"),
    ("select * from read_csv('out.csv')", "Permission Error"),
    ("select * from query('create table z as select 1')", "Parser Error"),
    ("select getenv('HOME')", "getenv"),
    ("select '\udcff'", "not valid UTF-8"),  # a byte that is not UTF-8 on the command line: an internal error before
])
def test_refused_with_one_error_line_and_nothing_written(sroot, tmp_path, monkeypatch, query, says):
    monkeypatch.chdir(tmp_path)  # DuckDB writes relative files (copy, attach, .tmp) to the working dir
    before, cwd_before = tree(sroot), sorted(os.listdir(tmp_path))
    p = sql(sroot, query)
    assert p.returncode == 2, p
    assert p.stdout == b"" and p.stderr.count(b"\n") == 1 and p.stderr.startswith(b"error: "), p.stderr
    assert says.encode() in p.stderr
    assert tree(sroot) == before and sorted(os.listdir(tmp_path)) == cwd_before


def test_a_good_query_writes_nothing(sroot, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before, cwd_before = tree(sroot), sorted(os.listdir(tmp_path))
    big = "select * from events a, events b order by a.time, b.seq limit 3"  # a sort big enough to spill, if it could
    for q in (big, "select * from runs", "select * from tool_calls", "select * from model_calls"):
        assert sql(sroot, q).returncode == 0
    assert tree(sroot) == before and sorted(os.listdir(tmp_path)) == cwd_before


def test_no_root_is_an_error(tmp_path):
    p = sql(tmp_path / "nope", "select 1")
    assert p.returncode == 2 and p.stderr.startswith(b"error: root")


# --- torn tails, corrupt lines, links ---------------------------------------------------------

def _count(root: Path, log: str, *extra: str) -> tuple[int, bytes]:
    p = sql(root, f"select count(*) as n from events where log = '{log}'", *extra)
    return (jsonl(p.stdout)[0]["n"] if p.returncode == 0 else -p.returncode), p.stderr


def test_torn_tails_are_skipped(sroot):
    f = sroot / "acme" / "triage.jsonl"
    n = len(f.read_bytes().splitlines())
    last = f.read_bytes().splitlines()[-1]
    event = orjson.loads(last)
    event["sequence"] = f"{int(event['sequence']) + 1:012d}"
    whole_but_newline = orjson.dumps(event)
    for tail in (whole_but_newline[:40], b"\x00" * 30, whole_but_newline):
        before = f.read_bytes()
        f.write_bytes(before + tail)
        assert _count(sroot, "acme/triage") == (n, b""), tail
        assert rows(sroot, "select count(*) as n from events")[0]["n"] > n
        f.write_bytes(before)


def test_a_corrupt_line_stops_the_query_naming_it(sroot):
    f = sroot / "acme" / "triage.jsonl"
    lines = f.read_bytes().splitlines(keepends=True)
    offset = sum(map(len, lines[:3]))
    f.write_bytes(b"".join(lines[:3]) + b'{"not": "an event"}\n' + b"".join(lines[3:]))  # no torn tail: DuckDB's own check
    code, err = _count(sroot, "acme/triage")
    assert code == -1 and err.count(b"\n") == 1
    assert err.startswith(f"error: {f}:4: {offset}: corrupt line".encode()), err
    # every view meets it, whatever the query filters on
    for q in ("select count(*) from runs", "select * from events where type = 'run.started'"):
        p = sql(sroot, q)
        assert p.returncode == 1 and b"triage.jsonl:4:" in p.stderr, (q, p.stderr)
    # --skip-corrupt: a warning naming the line, and the rest of the log
    code, err = _count(sroot, "acme/triage", "--skip-corrupt")
    assert code == len(lines) and err == f"warning: skipping {f}:4: {offset}: corrupt line (not an event: needs a " \
        f"12-digit sequence, a type and a time)\n".encode()


def test_a_corrupt_line_in_a_log_with_a_torn_tail(sroot):
    f = sroot / "acme" / "billing.jsonl"
    f.write_bytes(b"not json\n" + f.read_bytes() + b'{"half')
    code, err = _count(sroot, "acme/billing")
    assert code == -1 and err.startswith(f"error: {f}:1: 0: corrupt line (not valid JSON)".encode()), err


def test_links_under_the_root_are_never_read(sroot, tmp_path):
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    secret = b"".join((SAMPLES / "acme" / "triage.jsonl").read_bytes().splitlines(keepends=True)[:3])
    (outside / "secret.jsonl").write_bytes(secret)
    (outside / "dir" / "more.jsonl").write_bytes(secret)
    (sroot / "leak.jsonl").symlink_to(outside / "secret.jsonl")
    (sroot / "acme" / "linked").symlink_to(outside / "dir")
    logs = {r["log"] for r in rows(sroot, "select distinct log from events")}
    assert logs == {"acme/billing", "acme/digest", "acme/support", "acme/triage", "team/extra"}
    p = sql(sroot, f"select count(*) from read_ndjson('{outside / 'secret.jsonl'}')")
    assert p.returncode == 2 and b"Permission Error" in p.stderr


def test_help_lists_the_views():
    p = run_cli("sql", "--help", env={"COLUMNS": "120"})
    assert p.returncode == 0
    for word in (b"events", b"runs", b"tool_calls", b"model_calls", b"--skip-corrupt", b"csv"):
        assert word in p.stdout


# ---------------------------------------------------------------------------
# scope: what a query can read (pruning on remote roots)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("query, logs, day", [
    ("select type, count(*) from events where log = 'a/b' and time >= '2026-01-01' group by 1", {"a/b"}, "2026-01-01"),
    ("select * from events e where e.LOG in ('a', 'b', '../x') and '2026-02-03T23:00:00-02:00' < e.time",
     {"a", "b"}, "2026-02-04"),  # an id that is no log id names no log; the bound read in UTC
    ("select * from runs where log = 'a' or log = 'c'", {"a", "c"}, None),
    ("select * from events where time between timestamptz '2026-01-05 10:00' and '2026-02-01' "
     "and (log = 'x' or log = 'y')", {"x", "y"}, "2026-01-05"),
    ("select * from events where time >= '2026-01-03' or time > '2025-12-31'", None, "2025-12-31"),
    ("select * from events where log = 'a' and log = 'b'", set(), None),
    ("select * from runs where started >= '2026-01-01' and log = 'q'", {"q"}, None),  # time: events only
    # a typed constant is read through its own cast, as the query reads it: TIMESTAMP and DATE
    # drop the offset the text holds (12:00-12 is 11-28 12:00 to the query, not 11-29 00:00)
    ("select * from events where time >= TIMESTAMP '2026-11-28 12:00:00-12'", None, "2026-11-28"),
    ("select * from events where time >= '2026-11-28 23:00:00-10'::TIMESTAMP", None, "2026-11-28"),
    ("select * from events where time >= DATE '2026-12-01'", None, "2026-12-01"),
    ("select * from events where time >= TIMESTAMPTZ '2026-11-28 23:00:00-10'", None, "2026-11-29"),
    ("select * from events where time >= CAST('2026' AS INTEGER)", None, None),  # not a time cast: no bound
    ("select * from events where time >= 'CAST:DATE:2026-01-01'", None, None),  # a string, read as the query does
    ("select * from events where log = CAST('a' AS VARCHAR)", {"a"}, None),
    ("select * from events where log = CAST('1' AS INTEGER)", None, None),
    # never narrowed: anything but a plain SELECT over one view, filtered by constants
    ("select * from runs where log = 'a' or status = 'x'", None, None),
    ("select * from events where log = 'a' and seq > (select max(seq) from events where log = 'b')", None, None),
    ("with x as (select * from events) select * from x where log = 'a'", None, None),
    ("select * from events where log = 'a' union all select * from events where log = 'b'", None, None),
    ("select * from events join runs using (log) where log = 'a'", None, None),
    ("select * from events where time >= now() - interval 3 day", None, None),
    ("select * from events where lower(log) = 'a'", None, None),
    ("select 1", None, None),
])
def test_scope_is_what_the_where_can_touch(query, logs, day):
    from wardrik_cli.read.sql import Scope, scope

    assert scope(query) == Scope(frozenset(logs) if logs is not None else None, day)


def test_scope_refuses_what_query_refuses():
    from wardrik_cli.read.sql import SqlRefused, scope

    for bad in ("delete from events", "select 1; select 2", "selec 1"):
        with pytest.raises(SqlRefused):
            scope(bad)


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "pretty"])
def test_maps_with_keys_that_are_not_text_and_integers_past_64_bits_are_written(sroot, fmt):
    """histogram() gives a MAP keyed by numbers, and a HUGEINT sum passes 64 bits: orjson
    refuses both, which was an internal error (exit 1) and half a JSON document."""
    p = run_cli("sql", "select histogram(x) h, (1::hugeint << 70) + x v from (select 1 x) t group by x",
                "-o", fmt, root=sroot)
    assert p.returncode == 0 and b"internal error" not in p.stderr, p.stderr
    big = str((1 << 70) + 1)
    if fmt in ("json", "jsonl"):
        import json  # reads a big integer as one (orjson reads it as a float)

        text = p.stdout.decode()
        rows = json.loads(text) if fmt == "json" else [json.loads(line) for line in text.splitlines()]
        assert rows == [{"h": {"1": 1}, "v": int(big)}]
        assert big.encode() in p.stdout  # written whole, not as a float
    else:
        assert big.encode() in p.stdout and b'"1":1' in p.stdout.replace(b'""', b'"')
