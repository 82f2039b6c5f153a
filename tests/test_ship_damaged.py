"""A local log with a hole or a repeat (a line deleted or copied by hand) is refused by `ship`
with one error naming the sequence, never stored as a segment that readers would refuse for
good; the logs around it still ship. Messages about a remote root name its URL, never the
private mirror under the cache folder."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from conftest import run_cli
from s3_server import FolderTarget


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("WARDRIK_CACHE", raising=False)


def _root(tmp_path: Path, n: int = 6) -> Path:
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    for log in ("acme/a", "acme/b"):
        for i in range(n):
            run_cli("append", log, "run.started", "--data", orjson.dumps({"task": f"t{i}"}).decode(), root=r, check=True)
    return r


def _edit(path: Path, fn) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(fn(lines)))


@pytest.mark.parametrize("damage, said", [
    (lambda ls: ls[:2] + ls[3:], "sequence 3 is missing (the next line is 4)"),
    (lambda ls: ls[:3] + ls[2:], "sequence 3 repeats or goes back after 3"),
])
def test_a_damaged_log_is_refused_and_the_others_ship(tmp_path, damage, said):
    r = _root(tmp_path)
    _edit(r / "acme/a.jsonl", damage)
    t = FolderTarget(tmp_path / "store")
    p = run_cli("ship", t.url, "-o", "json", root=r)
    assert p.returncode == 1
    err = p.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith("error: acme/a: ") and said in err[0], err
    assert "Traceback" not in p.stderr.decode()
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["acme/a"]["segments"] == 0 and rows["acme/b"]["events"] == 6
    assert not [k for k in t.segments() if "log=acme~a" in k]  # nothing a reader would refuse
    # the healthy log reads remotely as it does locally
    here = run_cli("page", "acme/b", "--all", "-o", "jsonl", root=r)
    there = run_cli("--root", t.url, "page", "acme/b", "--all", "-o", "jsonl")
    assert there.returncode == 0 and there.stdout == here.stdout


def test_a_hole_after_what_was_shipped_is_refused_too(tmp_path):
    r = _root(tmp_path)
    t = FolderTarget(tmp_path / "store")
    run_cli("ship", t.url, root=r, check=True)
    for i in range(3):
        run_cli("append", "acme/a", "run.started", "--data", orjson.dumps({"task": f"u{i}"}).decode(), root=r, check=True)
    _edit(r / "acme/a.jsonl", lambda ls: ls[:6] + ls[7:])  # sequence 7, the first not yet shipped
    p = run_cli("ship", t.url, root=r)
    assert p.returncode == 1 and "sequence 7 is missing (the next line is 8)" in p.stderr.decode()
    there = run_cli("--root", t.url, "page", "acme/a", "--all", "-o", "jsonl")
    assert there.returncode == 0 and there.stdout.count(b"\n") == 6  # what was shipped still reads


def test_messages_name_the_remote_root_not_the_mirror(tmp_path):
    r = _root(tmp_path)
    t = FolderTarget(tmp_path / "store")
    run_cli("ship", t.url, root=r, check=True)
    cache = str(tmp_path / "cache")
    p = run_cli("--root", t.url, "page", "acme/nope")
    err = p.stderr.decode()
    assert p.returncode == 2 and f"under {t.url}" in err and cache not in err, err
    c = run_cli("--root", t.url, "check", "-o", "json")
    assert c.returncode == 0 and cache not in c.stdout.decode() and cache not in c.stderr.decode()


def test_a_gap_record_that_goes_backwards_is_refused_never_looped_on(tmp_path):
    """A gap object whose last sequence is before its first (something else wrote it): remote
    readers and pull say so in one error line instead of stepping over it forever."""
    r = _root(tmp_path, n=3)
    t = FolderTarget(tmp_path / "store")
    run_cli("ship", t.url, root=r, check=True)
    [seg] = [k for k in t.segments() if "log=acme~a" in k]
    gap = seg.split("/day=")[0] + "/gaps/000000000001.json"
    (t.path / gap).parent.mkdir(parents=True, exist_ok=True)
    (t.path / gap).write_bytes(b'{"first": 1, "last": 0}\n')
    (t.path / (gap + ".meta")).write_bytes(orjson.dumps({"last_sequence": 0, "sha256": "0" * 64, "root_id": "x"}))
    for args in (["--root", t.url, "page", "acme/a"], ["pull", t.url, "acme/*", "--into", str(tmp_path / "ev")]):
        p = run_cli(*args, process=True, timeout=60)
        err = p.stderr.decode()
        assert p.returncode == 1 and "not a wardrik gap record" in err and "Traceback" not in err, (args, err)
