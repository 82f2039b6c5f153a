"""A hostile store cannot make `pull` or a remote read hang, exhaust memory or read outside it.

Whoever can write to the share (or bucket) can put a FIFO where a segment or its metadata
sidecar should be, a link to ``/dev/zero`` or to a file elsewhere, or a metadata object of
gigabytes. A folder store opens only regular files below its folder, following no link, and
small objects read whole (sidecars, gap records, watermarks) are refused over a size bound on
either kind of store: one ``error:`` line naming the object, exit 1, never a traceback, and
no byte of it written locally; the other logs still pull.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

import s3_server
from conftest import WARDRIK, jsonl, run_cli
from s3_server import FolderTarget

s3_endpoint, bucket = s3_server.s3_endpoint, s3_server.bucket


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("WARDRIK_CACHE", raising=False)


def shipped(tmp_path: Path, url: str) -> Path:
    """A root with two logs of three events, shipped to ``url``."""
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    for log in ("acme/a", "acme/b"):
        for i in range(3):
            run_cli("append", log, "run.started", "--data", orjson.dumps({"task": f"t{i}"}).decode(), root=r,
                    check=True)
    p = run_cli("ship", url, root=r)
    assert p.returncode == 0, p.stderr
    return r


def segment_of(t: FolderTarget, log: str) -> str:
    [key] = [k for k in t.segments() if f"/log={log.replace('/', '~')}/" in k]
    return key


def bounded(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """The real executable, with 2 GiB of address space and a generous time: a hang or a read
    without end shows as a timeout or an out-of-memory, never as a stuck test run."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    try:
        return subprocess.run([WARDRIK, *args], capture_output=True, timeout=60, env=env, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"wardrik {' '.join(args)} hung on a hostile store")


def one_error(p: subprocess.CompletedProcess, *said: str) -> str:
    err = p.stderr.decode()
    assert p.returncode == 1 and "Traceback" not in err, (p.returncode, err[-2000:])
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(s in lines[0] for s in said), err
    return lines[0]


def plant(path: Path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.subprocess
@pytest.mark.parametrize("what", ["sidecar", "segment"])
@pytest.mark.parametrize("how, kind", [("fifo", "a FIFO"), ("zero", "a symbolic link")])
def test_a_fifo_or_dev_zero_in_the_store_is_one_error_not_a_hang(tmp_path, what, how, kind):
    t = FolderTarget(tmp_path / "store")
    shipped(tmp_path, t.url)
    key = segment_of(t, "acme/a") + (".meta" if what == "sidecar" else "")
    plant(t.path / key, how)
    where = f"{t.url}/{key}"

    ev = tmp_path / "ev"
    p = bounded(["pull", t.url, "--into", str(ev), "-o", "json"], tmp_path)
    one_error(p, where, kind)
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["acme/a"]["events"] == 0 and "error" in rows["acme/a"]
    assert (ev / "acme/a.jsonl").read_bytes() == b""  # nothing of it written
    assert rows["acme/b"]["events"] == 3 and (ev / "acme/b.jsonl").read_bytes().count(b"\n") == 3

    for args in (["page", "acme/a"], ["page", "acme/*"], ["tail", "acme/a"], ["check"]):
        p = bounded(["--root", t.url, *args], tmp_path)
        one_error(p, where, kind)
        assert p.stdout == b""


def test_a_link_out_of_the_folder_is_never_followed(tmp_path):
    """A sidecar replaced by a link to a copy of itself outside the store: it says what the
    sidecar said, but it is not in the store; and a link as one of the store's folders."""
    t = FolderTarget(tmp_path / "store")
    shipped(tmp_path, t.url)
    key = segment_of(t, "acme/a") + ".meta"
    outside = tmp_path / "elsewhere.meta"
    shutil.copyfile(t.path / key, outside)
    (t.path / key).unlink()
    (t.path / key).symlink_to(outside)
    p = run_cli("pull", t.url, "--into", str(tmp_path / "ev"), "-o", "json")
    one_error(p, f"{t.url}/{key}", "a symbolic link")
    p = run_cli("--root", t.url, "page", "acme/a")
    one_error(p, f"{t.url}/{key}", "a symbolic link")

    # the top folder of the keys moved elsewhere and linked in
    (t.path / key).unlink()
    shutil.copyfile(outside, t.path / key)
    shutil.move(t.path / "v1", tmp_path / "v1-elsewhere")
    (t.path / "v1").symlink_to(tmp_path / "v1-elsewhere")
    p = run_cli("pull", t.url, "--into", str(tmp_path / "ev2"), "-o", "json")
    assert p.returncode == 1 and "Traceback" not in p.stderr.decode()
    errs = p.stderr.decode().splitlines()
    assert errs and all(f"{t.url}/v1 is a symbolic link, not a folder of this store" in e for e in errs), errs
    p = run_cli("--root", t.url, "page", "acme/a")
    one_error(p, f"{t.url}/v1 is a symbolic link")


def test_an_oversized_sidecar_is_refused_unread(tmp_path):
    """A sidecar of 64 MiB (sparse: cheap to make) is not metadata: refused by its size, before
    its bytes are read."""
    t = FolderTarget(tmp_path / "store")
    shipped(tmp_path, t.url)
    key = segment_of(t, "acme/a") + ".meta"
    with open(t.path / key, "r+b") as f:
        f.truncate(64 << 20)
    for args in (["pull", t.url, "--into", str(tmp_path / "ev")], ["--root", t.url, "page", "acme/a"]):
        p = run_cli(*args)
        one_error(p, f"{t.url}/{key}: it is {64 << 20} bytes, more than the")


def _big_watermark() -> bytes:
    """A valid watermark that drops nothing, padded to past the bound: JSON all the same."""
    return b'{"next_sequence": 1, "time": null, "hash": null}' + b" " * (5 << 20) + b"\n"


def test_an_oversized_watermark_in_a_folder_is_refused(tmp_path):
    t = FolderTarget(tmp_path / "store")
    shipped(tmp_path, t.url)
    key = segment_of(t, "acme/a").split("/day=")[0] + "/watermark/000000000001.json"
    (t.path / key).parent.mkdir(parents=True)
    (t.path / key).write_bytes(_big_watermark())
    (t.path / (key + ".meta")).write_bytes(orjson.dumps({"last_sequence": 0, "sha256": "0" * 64, "root_id": "x"}))
    p = run_cli("pull", t.url, "--into", str(tmp_path / "ev"), "-o", "json")
    one_error(p, f"{t.url}/{key}: it is {len(_big_watermark())} bytes, more than the")
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["acme/b"]["events"] == 3 and not (tmp_path / "ev/acme/a.jsonl").exists()
    p = run_cli("--root", t.url, "page", "acme/a")
    one_error(p, f"{t.url}/{key}: it is ")


def test_an_oversized_watermark_in_a_bucket_is_refused(tmp_path, bucket):
    shipped(tmp_path, bucket.url)
    [seg] = [k for k in bucket.segments() if "/log=acme~a/" in k]
    key = seg.split("/day=")[0] + "/watermark/000000000001.json"
    bucket.put(key, _big_watermark(), {"wardrik-last-sequence": "000000000000", "wardrik-sha256": "0" * 64,
                                       "wardrik-root-id": "x"})
    where = f"{bucket.url.rstrip('/')}/{key[len(bucket.prefix) + 1:]}"
    p = run_cli("pull", bucket.url, "--into", str(tmp_path / "ev"), "-o", "json")
    one_error(p, f"{where}: it is {len(_big_watermark())} bytes, more than the")
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert rows["acme/b"]["events"] == 3
    p = run_cli("--root", bucket.url, "page", "acme/a")
    one_error(p, f"{where}: it is ")
    ok = run_cli("--root", bucket.url, "page", "acme/b", "-o", "jsonl")  # the rest still reads
    assert ok.returncode == 0 and len(jsonl(ok.stdout)) == 3


def test_objects_planted_in_a_bucket_are_said_and_never_block_a_read(tmp_path, bucket):
    """A key no log has (a log id that cannot be one) is left out of a pull with a warning
    (before: silently); a folder `deployment=..` under the prefix is no deployment, so readers
    do not ask which deployment to read (before: every remote read failed, exit 2)."""
    shipped(tmp_path, bucket.url)
    meta = {"wardrik-last-sequence": "000000000001", "wardrik-sha256": "0" * 64, "wardrik-root-id": "x"}
    bucket.put("fleet/v1/deployment=local/kind=agents/log=..~..~PWNED/day=2026-12-01/000000000001.jsonl", b"x\n", meta)
    bucket.put("fleet/v1/deployment=../junk", b"y", {})
    ok = run_cli("--root", bucket.url, "page", "acme/*", "-o", "jsonl")
    assert ok.returncode == 0 and len(jsonl(ok.stdout)) == 6, ok.stderr
    p = run_cli("pull", bucket.url, "--into", str(tmp_path / "ev"), "-o", "json")
    assert p.returncode == 0, p.stderr
    assert b"2 object(s)" in p.stderr and b"not wardrik's" in p.stderr
    assert sorted(x.name for x in (tmp_path / "ev").rglob("*.jsonl")) == ["a.jsonl", "b.jsonl"]
    c = run_cli("--root", bucket.url, "check")  # said by check too, as a warning (before: nothing)
    assert c.returncode == 0 and b"not wardrik's" in c.stdout and b"(warning)" in c.stdout, (c.stdout, c.stderr)


def test_a_key_the_s3_client_cannot_list_past_is_named_and_blocks_only_its_log(tmp_path, bucket):
    """S3 takes a key with a '..' part; the client refuses to list past it. Before, that read as
    an unreachable store: ship shipped nothing after it and --follow backed off for ever."""
    r = shipped(tmp_path, bucket.url)
    bad = "fleet/v1/deployment=local/kind=agents/log=acme~a/day=2026-12-01/../x.jsonl"
    bucket.put(bad, b"x", {})
    shutil.rmtree(r / ".wardrik/ship")  # no positions cache: ship lists each log's keys
    run_cli("append", "acme/b", "run.started", "--data", "{}", root=r, check=True)
    p = run_cli("ship", bucket.url, "-o", "json", root=r)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.count("error:") == 1 and bad in err and "cannot reach" not in err, err
    rows = {row["log"]: row for row in orjson.loads(p.stdout)["logs"]}
    assert "error" in rows["acme/a"] and rows["acme/b"]["events"] == 1  # the other log still ships
    for args in (["--root", bucket.url, "page", "acme/*"], ["pull", bucket.url, "--into", str(tmp_path / "ev")]):
        one_error(run_cli(*args), bad)


def test_ship_never_writes_through_a_link_planted_in_a_folder_store(tmp_path):
    """A ``log=...`` folder planted as a link to elsewhere: ship wrote the segment there (mkdir
    and link by path), recorded it as stored, and compact then dropped the only copy. Now ship
    refuses it (exit 1, naming the link), nothing lands outside, and nothing is recorded."""
    r = tmp_path / "root"
    run_cli("init", "--deployment", "d1", root=r, check=True)
    run_cli("append", "acme/a", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=r, check=True)
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    (store / "v1/deployment=d1/kind=agents").mkdir(parents=True)
    elsewhere.mkdir()
    (store / "v1/deployment=d1/kind=agents/log=acme~a").symlink_to(elsewhere)
    p = run_cli("ship", f"file://{store}", root=r)
    assert p.returncode == 1, p.stderr
    assert b"symbolic link" in p.stderr and b"never followed" in p.stderr
    assert list(elsewhere.rglob("*")) == []
    p = run_cli("ship", f"file://{store}", "-o", "json", root=r)  # again: still refused, still nothing recorded
    assert p.returncode == 1
    assert list(elsewhere.rglob("*")) == []
    (store / "v1/deployment=d1/kind=agents/log=acme~a").unlink()
    assert run_cli("ship", f"file://{store}", root=r).returncode == 0  # the link gone: shipped into the store
    assert [k.name for k in store.rglob("*.jsonl")] == ["000000000001.jsonl"]


def test_folders_ship_makes_in_a_folder_store_follow_the_umask(tmp_path):
    """A shared mount: folders made with the umask (775 under umask 002), as before the
    folder walk that refuses links."""
    r = tmp_path / "root"
    run_cli("append", "a", "run.started", root=r, check=True)
    store = tmp_path / "store"
    store.mkdir()
    old = os.umask(0o002)
    try:
        p = subprocess.run([WARDRIK, "--root", str(r), "ship", f"file://{store}"], capture_output=True, timeout=60)
    finally:
        os.umask(old)
    assert p.returncode == 0, p.stderr
    modes = {oct(d.stat().st_mode & 0o777) for d in store.rglob("*") if d.is_dir()}
    assert modes == {oct(0o775)}, modes
