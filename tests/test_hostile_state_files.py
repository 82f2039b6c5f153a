"""The tool's own files under ``.wardrik/`` are as hostile as the logs: a FIFO, a device, a
symbolic link (file or folder) or a huge sparse file planted there never hangs a command,
never costs its size in memory, and is never read or written through (``fsutil.read_small``,
``fsutil.state_dirs``, ``Root.state_dir``). Records, notes and checkpoints that are not
regular files read as none; a config.toml that is not one is refused (exit 2, named); a lock
or state folder that is a link fails the write (exit 1, named) with nothing made outside.

Real FIFOs, links and sparse files, and the real executable for anything that could hang.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import WARDRIK, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

T = 20  # seconds: the bound a hanging command runs into (every one here takes well under 2)


def spread(root: Path, log: str = "a", events: int = 10, days: float = 10, end_ns: int | None = None) -> Path:
    path = root / f"{log}.jsonl"
    write_spread(path, events=events, days=days, log_id=log, pad=20, end_ns=end_ns)
    return path


def run_small(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The executable with 1 GiB of address space: a file read whole fails it (MemoryError)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([WARDRIK, "--root", str(root), *args], capture_output=True, timeout=T,
                          preexec_fn=limit, env={**os.environ, "NO_COLOR": "1"})


def cli(root: Path, *args: str):
    return run_cli(*args, root=root, process=True, timeout=T)


def listing(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def one_error(p, code: int, *words: str) -> str:
    err = p.stderr.decode()
    assert p.returncode == code, err
    assert err.startswith("error: ") and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


def compacted(root: Path) -> Path:
    """A root whose log ``a`` was compacted once (so it has a watermark and a verified note)."""
    spread(root)
    assert cli(root, "append", "a", "run.started", "-d", "{}").returncode == 0
    p = cli(root, "compact", "-r", "5d", "-q")
    assert p.returncode == 0, p.stderr
    return root / ".wardrik/watermarks/a@json"


# -- BUG 1: records, notes and checkpoints that are not regular files ------------------
@pytest.mark.subprocess
def test_fifo_verified_note_neither_hangs_compact_nor_append(root):
    spread(root)
    (root / ".wardrik/verified").mkdir()
    os.mkfifo(root / ".wardrik/verified/a@json")
    p = cli(root, "compact", "-r", "5d", "-q")
    assert p.returncode == 0, p.stderr
    assert len((root / "a.jsonl").read_bytes().splitlines()) < 10
    os.mkfifo(root / ".wardrik/verified/a@json")  # compact removed the void note
    p = cli(root, "append", "a", "run.started", "-d", "{}")
    assert p.returncode == 0, p.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [("page", "a"), ("tail", "a"), ("check",), ("compact", "-r", "3d", "-q")])
def test_fifo_watermark_is_no_record(root, args):
    wm = compacted(root)
    wm.unlink()
    os.mkfifo(wm)
    p = cli(root, *args)
    assert p.returncode in (0, 1), p.stderr  # check may report the prefix it cannot vouch for
    assert b"Traceback" not in p.stderr


@pytest.mark.subprocess
def test_watermark_linked_to_dev_zero_is_not_read(root):
    wm = compacted(root)
    wm.unlink()
    wm.symlink_to("/dev/zero")
    p = run_small(root, "page", "a")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.splitlines()) >= 1


@pytest.mark.subprocess
def test_huge_sparse_watermark_is_not_read_whole(root):
    wm = compacted(root)
    wm.unlink()
    with open(wm, "wb") as f:
        f.truncate(3 << 30)
    p = run_small(root, "page", "a")
    assert p.returncode == 0, p.stderr


@pytest.mark.subprocess
def test_fifo_watermark_of_an_emptied_log_does_not_hang_append(root):
    spread(root, end_ns=time.time_ns() - 2 * 86400 * 10**9)
    assert cli(root, "compact", "-r", "1d", "-q").returncode == 0
    assert (root / "a.jsonl").read_bytes() == b""  # every event dropped: the record says where to go on
    wm = root / ".wardrik/watermarks/a@json"
    wm.unlink()
    os.mkfifo(wm)
    p = cli(root, "append", "a", "run.started", "-d", "{}")
    assert p.returncode == 0, p.stderr  # no record: sequences go on from the log (an empty one)


@pytest.mark.subprocess
@pytest.mark.parametrize("command", [("fold", "a"), ("activity",)])
def test_fifo_checkpoints_neither_hang_fold_nor_activity(root, command):
    spread(root)
    assert cli(root, "fold", "a").returncode == 0
    assert cli(root, "activity").returncode == 0
    ck = root / ".wardrik/checkpoints"
    names = listing(ck)
    assert names
    for n in names:
        (ck / n).unlink()
        os.mkfifo(ck / n)
    p = cli(root, *command)
    assert p.returncode == 0, p.stderr


# -- BUG 2: config.toml -------------------------------------------------------------
@pytest.mark.subprocess
@pytest.mark.parametrize("command", [("compact", "-q"), ("page", "a"), ("append", "a", "run.started", "-d", "{}")])
def test_fifo_config_is_refused_not_waited_on(root, command):
    spread(root)
    os.mkfifo(root / ".wardrik/config.toml")
    one_error(cli(root, *command), 2, "config.toml", "FIFO")


@pytest.mark.subprocess
def test_linked_config_is_refused_not_obeyed(root, tmp_path):
    spread(root)
    outside = tmp_path / "outside.toml"
    outside.write_text('deployment = "outside"\n')
    (root / ".wardrik/config.toml").symlink_to(outside)
    one_error(cli(root, "append", "a", "run.started", "-d", "{}"), 2, "config.toml", "symbolic link")
    assert b"outside" not in (root / "a.jsonl").read_bytes()


@pytest.mark.subprocess
def test_config_linked_to_dev_zero_is_refused(root):
    spread(root)
    (root / ".wardrik/config.toml").symlink_to("/dev/zero")
    one_error(cli(root, "page", "a"), 2, "config.toml")


@pytest.mark.subprocess
def test_huge_sparse_config_is_refused_at_once(root):
    spread(root)
    with open(root / ".wardrik/config.toml", "wb") as f:
        f.truncate(3 << 30)
    one_error(run_cli("compact", "-q", root=root, process=True, timeout=5), 2, "config.toml", "bytes")


@pytest.mark.subprocess
def test_config_under_a_linked_tool_folder_is_not_obeyed(tmp_path):
    root, elsewhere = tmp_path / "r", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text('deployment = "outside"\n')
    (root / ".wardrik").symlink_to(elsewhere)
    spread(root)
    one_error(cli(root, "page", "a"), 2, ".wardrik", "symbolic link")


# -- BUG 3: writes through links planted in .wardrik/ --------------------------------
@pytest.mark.subprocess
@pytest.mark.parametrize("folder", ["watermarks", "locks", "verified"])
def test_linked_state_folder_is_never_written_through(root, tmp_path, folder):
    spread(root)
    if folder == "verified":
        assert cli(root, "append", "a", "run.started", "-d", "{}").returncode == 0
        for n in os.listdir(root / ".wardrik/verified"):
            os.unlink(root / ".wardrik/verified" / n)
        os.rmdir(root / ".wardrik/verified")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".wardrik" / folder).symlink_to(outside)
    p = cli(root, "compact", "-r", "5d")
    if folder == "verified":
        assert p.returncode == 0, p.stderr  # only a cache: the next append verifies the file
        p = cli(root, "append", "a", "run.started", "-d", "{}")
        assert p.returncode == 0, p.stderr
    else:
        one_error(p, 1, f".wardrik/{folder}", "symbolic link")
    assert listing(outside) == []


@pytest.mark.subprocess
@pytest.mark.parametrize(("lock", "args"), [("@compact@lock", ["compact", "-q"]),
                                            ("a@lock", ["append", "a", "run.started", "-d", "{}"])],
                         ids=["compaction", "log"])
def test_a_linked_lock_is_refused_and_nothing_made(root, tmp_path, lock, args):
    spread(root)
    (root / ".wardrik/locks").mkdir()
    target = tmp_path / "X"
    (root / ".wardrik/locks" / lock).symlink_to(target)
    one_error(cli(root, *args), 1, lock, "symbolic link")
    assert not target.exists()


@pytest.mark.subprocess
def test_fifo_lock_is_refused_not_waited_on(root):
    spread(root)
    (root / ".wardrik/locks").mkdir()
    os.mkfifo(root / ".wardrik/locks/a@lock")
    one_error(cli(root, "append", "a", "run.started", "-d", "{}"), 1, "a@lock", "FIFO")


@pytest.mark.subprocess
def test_linked_checkpoint_folder_is_neither_read_nor_written(root, tmp_path):
    spread(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".wardrik/checkpoints").symlink_to(outside)
    p = cli(root, "fold", "a")
    assert p.returncode == 0, p.stderr
    assert listing(outside) == []
