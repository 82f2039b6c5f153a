"""A root is a boundary: symlinks are never followed to a log, FIFOs and devices never waited on.

Every command runs as a real process with a timeout, so a hang fails the test instead of the run.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import WARDRIK

pytestmark = pytest.mark.subprocess
DATA = '{"trigger": {"name": "x"}}'


def wr(root, *args, timeout=20):
    return subprocess.run([WARDRIK, "--root", str(root), *args], capture_output=True, timeout=timeout,
                          env=dict(os.environ, NO_COLOR="1"), stdin=subprocess.DEVNULL)


@pytest.fixture
def fifo_root(tmp_path):
    root = tmp_path / "root"
    assert wr(root, "append", "a/ok", "trigger.fired", "--data", DATA).returncode == 0
    os.mkfifo(root / "a" / "pipe.jsonl")
    return root


@pytest.mark.parametrize("args", [
    ("page", "a/*"), ("tail", "a/*"), ("head", "a/*"), ("check",), ("activity", "a/*"),
    ("compact", "--retention", "1d"), ("compact", "--dry-run"),
])
def test_a_fifo_named_like_a_log_is_skipped_by_patterns(fifo_root, args):
    p = wr(fifo_root, *args)  # before: open(O_RDONLY) blocked on the FIFO for ever
    assert p.returncode == 0, p.stderr
    assert b"pipe" not in p.stdout


@pytest.mark.parametrize("args", [("page", "a/pipe"), ("fold", "a/pipe"), ("append", "a/pipe", "trigger.fired", "--data", DATA)])
def test_a_fifo_named_literally_is_one_error_line(fifo_root, args):
    p = wr(fifo_root, *args)
    lines = p.stderr.decode().splitlines()
    assert p.returncode in (1, 2) and len(lines) == 1 and lines[0].startswith("error:") and "FIFO" in lines[0], lines


def test_append_never_writes_through_a_symlinked_log(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious first line\nprecious last line without newline")
    before = outside.read_bytes()
    root = tmp_path / "root"
    assert wr(root, "append", "a/ok", "trigger.fired", "--data", DATA).returncode == 0
    (root / "a" / "evil.jsonl").symlink_to(outside)
    p = wr(root, "append", "a/evil", "trigger.fired", "--data", DATA)
    assert p.returncode == 1 and p.stderr.decode().startswith("error:") and "symbolic link" in p.stderr.decode()
    assert outside.read_bytes() == before  # before: its "torn tail" was cut through the link
    assert not list(tmp_path.glob("outside.txt.torn-*"))


def test_readers_and_compact_do_not_follow_a_symlinked_log(tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    root = tmp_path / "root"
    assert wr(tmp_path / "other", "append", "x", "trigger.fired", "--data", DATA).returncode == 0
    outside.write_bytes((tmp_path / "other" / "x.jsonl").read_bytes())
    before = outside.read_bytes()
    assert wr(root, "append", "a/ok", "trigger.fired", "--data", DATA).returncode == 0
    (root / "a" / "link.jsonl").symlink_to(outside)
    p = wr(root, "page", "a/*")
    assert p.returncode == 0 and b"elsewhere" not in p.stdout and len(p.stdout.splitlines()) == 1
    assert wr(root, "compact", "--retention", "1s").returncode == 0
    assert outside.read_bytes() == before
    p = wr(root, "page", "a/link")
    assert p.returncode == 1 and b"symbolic link" in p.stderr


def test_a_symlinked_folder_is_neither_written_nor_read(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "root"
    assert wr(root, "append", "a/ok", "trigger.fired", "--data", DATA).returncode == 0
    (root / "acme").symlink_to(elsewhere, target_is_directory=True)
    p = wr(root, "append", "acme/x", "trigger.fired", "--data", DATA)
    assert p.returncode == 1 and b"symbolic link" in p.stderr
    assert list(elsewhere.iterdir()) == []  # before: acme/x.jsonl was created outside the root
    (elsewhere / "y.jsonl").write_bytes((root / "a" / "ok.jsonl").read_bytes())
    assert wr(root, "page", "acme/y").returncode == 1
    p = wr(root, "page", "*")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 1  # only a/ok


def _edit_last_line(path, **changes):
    import orjson

    lines = path.read_bytes().splitlines()
    ev = orjson.loads(lines[-1])
    ev.update(changes)
    lines[-1] = orjson.dumps(ev)
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_append_refuses_past_the_twelve_digit_sequence(tmp_path):
    root = tmp_path / "root"
    assert wr(root, "append", "a/x", "trigger.fired", "--data", DATA).returncode == 0
    _edit_last_line(root / "a" / "x.jsonl", sequence="999999999999")
    before = (root / "a" / "x.jsonl").read_bytes()
    p = wr(root, "append", "a/x", "trigger.fired", "--data", DATA)
    assert p.returncode == 1 and b"999999999999" in p.stderr and p.stdout == b""
    assert (root / "a" / "x.jsonl").read_bytes() == before  # before: a 13-digit sequence was written


def test_append_refuses_after_a_malformed_time(tmp_path):
    root = tmp_path / "root"
    assert wr(root, "append", "a/x", "trigger.fired", "--data", DATA).returncode == 0
    _edit_last_line(root / "a" / "x.jsonl", time="zzzz")
    before = (root / "a" / "x.jsonl").read_bytes()
    p = wr(root, "append", "a/x", "trigger.fired", "--data", DATA)
    assert p.returncode == 1 and b"zzzz" in p.stderr and b"x.jsonl:1:" in p.stderr
    assert (root / "a" / "x.jsonl").read_bytes() == before  # before: "zzzz" was copied into the new line


@pytest.mark.subprocess
def test_a_symlinked_folder_is_refused_from_a_relative_root(tmp_path):
    """The root given as "." (the default) or as a relative path: its logs' paths are
    relative (pathlib drops "./"), and a folder that is a link is still refused, deep down too."""
    import subprocess

    from tests.conftest import WARDRIK

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    root = tmp_path / "root"
    (root / "acme").mkdir(parents=True)
    (root / "acme" / "team").symlink_to(elsewhere, target_is_directory=True)
    (root / "ops").symlink_to(elsewhere, target_is_directory=True)
    for cwd, args in ((root, []), (tmp_path, ["--root", "root"]), (tmp_path, ["--root", "./root"])):
        for log in ("ops/x", "acme/team/x", "acme/team/deep/x"):
            p = subprocess.run([WARDRIK, *args, "append", log, "trigger.fired", "--data", DATA], cwd=cwd,
                               capture_output=True, timeout=60)
            assert p.returncode == 1 and b"symbolic link" in p.stderr, (cwd, args, log, p.stderr)
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["deep"]  # nothing written outside the root
