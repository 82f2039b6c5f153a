"""A shipper killed mid-write leaves ``write_atomic``'s temp beside a file under
``.wardrik/ship/`` (or beside ``.wardrik/root-id``); ``compact`` removes those older than
``ship_slots.STALE_TMP_S`` and leaves a younger one (a running shipper may be writing it)."""
from __future__ import annotations

import os
import time

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
