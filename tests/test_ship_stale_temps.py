"""A shipper killed mid-write leaves ``write_atomic``'s temp beside a file under
``.wardrik/ship/`` (or beside ``.wardrik/root-id``); ``compact`` removes those older than
``ship_slots.STALE_TMP_S`` and leaves a younger one (a running shipper may be writing it)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import run_cli
from wardrik_cli.store.ship_slots import STALE_TMP_S


def test_compact_removes_a_dead_shippers_temps_and_keeps_a_fresh_one(tmp_path):
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r, check=True)
    share = tmp_path / "share"
    share.mkdir()
    run_cli("ship", f"file://{share}", root=r, check=True)
    ship = r / ".wardrik/ship"
    kept = sorted(p.name for p in ship.iterdir())
    assert kept and (r / ".wardrik/root-id").exists()
    old = [ship / f".{kept[0]}.4242-0badc0de.tmp", r / ".wardrik/.root-id.4242-0badc0de.tmp"]
    fresh = ship / f".{kept[0]}.4343-12345678.tmp"
    other = r / ".wardrik/.someone-else.4242-0badc0de.tmp"  # not ship's: left alone
    for p in (*old, fresh, other):
        p.write_bytes(b'{"target": "file:///x", "lo')  # cut short by the kill
    past = time.time() - STALE_TMP_S - 60
    for p in (*old, other):
        os.utime(p, (past, past))
    p = run_cli("compact", "--retention", "30d", "-q", root=r)
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p.stderr
    assert not any(q.exists() for q in old)
    assert fresh.exists() and other.exists()
    assert sorted(q.name for q in ship.iterdir() if not q.name.startswith(".")) == kept  # the files themselves stay
    assert run_cli("ship", f"file://{share}", root=r).returncode == 0  # and ship still reads them


def test_the_clean_up_never_follows_a_link_out_of_the_root(tmp_path):
    """`.wardrik/ship`, `.wardrik/watermarks` or a log folder replaced by a link to a folder
    outside the root: compact removes nothing there (it runs as root on roots it did not write)."""
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r, check=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    bait = [outside / ".passwd.4242-deadbeef.tmp", outside / ".x.wm.tmp", outside / ".a.jsonl.tmp",
            outside / ".root-id.4242-0badc0de.tmp"]
    past = time.time() - STALE_TMP_S - 3600
    for p in bait:
        p.write_bytes(b"precious")
        os.utime(p, (past, past))
    (r / ".wardrik/ship").mkdir(exist_ok=True)
    os.rmdir(r / ".wardrik/ship")
    os.symlink(outside, r / ".wardrik/ship")
    os.makedirs(r / ".wardrik/watermarks", exist_ok=True)
    os.symlink(outside, r / ".wardrik/watermarks/team")
    os.symlink(outside, r / "agents")  # a log folder that is a link
    p = run_cli("compact", "--retention", "30d", "-q", root=r)
    assert "Traceback" not in p.stderr.decode()
    assert all(b.read_bytes() == b"precious" for b in bait)


def test_a_tool_folder_that_is_a_link_is_not_swept(tmp_path):
    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    outside = tmp_path / "outside"
    (outside / "ship").mkdir(parents=True)
    bait = outside / "ship" / ".slot.4242-deadbeef.tmp"
    bait.write_bytes(b"precious")
    past = time.time() - STALE_TMP_S - 3600
    os.utime(bait, (past, past))
    from wardrik_cli.store.layout import Root
    from wardrik_cli.store.retention import clean_stale

    os.rename(r / ".wardrik", tmp_path / "real-tool")
    os.symlink(outside, r / ".wardrik")
    clean_stale(Root(r))
    assert bait.read_bytes() == b"precious"


def _stale_sweep_temp(log: Path) -> Path:
    from wardrik_cli.store.retention import TMP_SUFFIX

    p = log.with_name(f".{log.name}{TMP_SUFFIX}")
    p.write_bytes(b"half a copy")
    return p


def test_a_root_given_through_a_link_is_cleaned(tmp_path):
    """The root may be a link (the operator's choice): a killed sweep's temp beside a log is
    still removed, else every later sweep of that log fails on it."""
    r = tmp_path / "real"
    run_cli("init", root=r, check=True)
    run_cli("append", "acme/a", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', root=r, check=True)
    left = _stale_sweep_temp(r / "acme" / "a.jsonl")
    link = tmp_path / "link"
    os.symlink(r, link)
    p = run_cli("compact", "--retention", "30d", root=link)
    assert p.returncode == 0, p.stderr
    assert not left.exists()


def test_thousands_of_folders_under_a_low_open_files_limit(tmp_path):
    """One folder open per level, not one per sibling: 400 agent folders, each with a killed
    sweep's temp, are all cleaned by a compact allowed 64 open files."""
    import resource
    import subprocess

    from conftest import WARDRIK

    r = tmp_path / "root"
    run_cli("init", root=r, check=True)
    temps = []
    for i in range(400):
        log = r / f"team{i:03d}" / "a.jsonl"
        log.parent.mkdir()
        log.write_bytes(b"")
        temps.append(_stale_sweep_temp(log))

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    p = subprocess.run([WARDRIK, "--root", str(r), "compact", "-q", "--retention", "30d"], preexec_fn=low,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert [t for t in temps if t.exists()] == []
