"""`wardrik fold`: targets, formats, --at, and every bad input (one error line, right exit code)."""
from __future__ import annotations

import os

import orjson
import pytest

from foldhelp import SEED_FIXTURE, run_events, write


def one_error(p, code: int) -> str:
    assert p.returncode == code, (p.returncode, p.stderr)
    err = p.stderr.decode()
    assert err.startswith("error: ") and "Traceback" not in err
    return err


def test_json_is_the_default_off_a_terminal(root, cli):
    write(root, "acme/t", run_events(1))
    out = orjson.loads(cli("fold", "acme/t").stdout)
    assert set(out) == {"log", "view", "through", "state"} and out["log"] == "acme/t"
    line = cli("fold", "acme/t", "-F", "jsonl").stdout
    assert line.count(b"\n") == 1 and orjson.loads(line) == out


def test_path_outside_root_is_folded_without_checkpoint(root, cli, tmp_path):
    ev = tmp_path / "evidence" / "copy.jsonl"
    ev.parent.mkdir()
    write(tmp_path / "evidence", "copy", run_events(2))
    before = sorted(os.listdir(tmp_path / "evidence"))
    p = cli("fold", str(ev), "-F", "json")
    assert p.returncode == 0, p.stderr
    assert orjson.loads(p.stdout)["state"]["tool_calls"] == 2
    assert sorted(os.listdir(tmp_path / "evidence")) == before
    assert os.listdir(root / ".wardrik") == []


def test_path_of_a_log_under_the_root_is_that_log(root, cli):
    write(root, "acme/t", run_events(1))
    p = cli("fold", str(root / "acme" / "t.jsonl"), "-F", "json")
    assert p.returncode == 0
    assert (root / ".wardrik" / "checkpoints" / "acme" / "t@state.json").exists()


def test_not_a_ledger(root, cli, tmp_path):
    f = tmp_path / "notes.jsonl"
    f.write_text('{"name": "alice", "age": 3}\n{"name": "bob"}\n')
    err = one_error(cli("fold", str(f)), 2)
    assert "not a ledger" in err
    g = tmp_path / "text.jsonl"
    g.write_text("hello world")
    assert "not a ledger" in one_error(cli("fold", str(g)), 2)
    assert "no file" in one_error(cli("fold", str(tmp_path / "missing.jsonl")), 2)


def test_mixed_formats_are_refused_naming_the_line(root, cli, tmp_path):
    lines = write(root, "acme/t", run_events(1))
    seed_line = SEED_FIXTURE.read_bytes().splitlines(keepends=True)[0]
    f = tmp_path / "mixed.jsonl"
    f.write_bytes(lines[0] + lines[1] + seed_line + lines[2])
    err = one_error(cli("fold", str(f)), 1)
    assert f"{f}:3: {len(lines[0]) + len(lines[1])}:" in err and "mixing the two formats" in err
    g = tmp_path / "mixed2.jsonl"
    seed = SEED_FIXTURE.read_bytes().splitlines(keepends=True)
    g.write_bytes(seed[0] + seed[1] + lines[0])
    err = one_error(cli("fold", str(g)), 1)
    assert f"{g}:3: {len(seed[0]) + len(seed[1])}:" in err and "mixing the two formats" in err


def test_corrupt_middle_line(root, cli):
    lines = write(root, "acme/t", run_events(2))
    path = root / "acme" / "t.jsonl"
    bad = b'{"specversion":"1.0","id":"x", this is not json}\n'
    path.write_bytes(b"".join(lines[:3]) + bad + b"".join(lines[3:]))
    offset = sum(len(l) for l in lines[:3])
    err = one_error(cli("fold", "acme/t"), 1)
    assert f"{path}:4: {offset}:" in err
    p = cli("fold", "acme/t", "--skip-corrupt", "-F", "json")
    assert p.returncode == 0 and b"warning:" in p.stderr and b":4:" in p.stderr
    assert orjson.loads(p.stdout)["state"]["tool_calls"] == 2
    # a skipped corrupt line never makes a checkpoint (it would hide the corruption later)
    assert not (root / ".wardrik" / "checkpoints" / "acme" / "t@state.json").exists()
    # a corrupt line in a view's skipped types is still caught (it does not have the shape)
    err = one_error(cli("fold", "acme/t", "--view", "activity"), 1)
    assert ":4:" in err


def test_torn_tail_is_not_an_error(root, cli):
    lines = write(root, "acme/t", run_events(1))
    with open(root / "acme" / "t.jsonl", "ab") as f:
        f.write(lines[0][:40])
    p = cli("fold", "acme/t", "-F", "json")
    assert p.returncode == 0 and orjson.loads(p.stdout)["through"] == len(lines)


@pytest.mark.parametrize("at", ["99", "-1", "x"])
def test_bad_at(root, cli, at):
    write(root, "acme/t", run_events(1))
    err = one_error(cli("fold", "acme/t", "--at", at), 2)
    if at == "99":
        assert "past the end" in err and str(len(run_events(1))) in err


def test_at_in_range_and_zero(root, cli):
    write(root, "acme/t", run_events(1))
    out = orjson.loads(cli("fold", "acme/t", "--at", "2").stdout)
    assert out["through"] == 2 and out["state"]["status"] == "running" and out["state"]["applied_through"] == 2
    out = orjson.loads(cli("fold", "acme/t", "--at", "0").stdout)
    assert out["through"] == 0 and out["state"]["status"] == "empty"


def test_bad_log_ids_and_missing_logs(root, cli):
    assert "no log" in one_error(cli("fold", "acme/nothing"), 2)
    one_error(cli("fold", "../etc/passwd"), 2)
    one_error(cli("fold", "acme/t", "--view", "state", "--root", "/nonexistent"), 2)
