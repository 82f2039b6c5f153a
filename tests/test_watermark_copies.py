"""The compaction record (watermark) of a log compaction emptied, in an evidence copy and when
damaged (``store.log``: which record describes which file).

- A copy made without keeping inodes or mtimes (``cp -r``, tar, ``shutil.copy``) of a root whose
  log compaction emptied keeps the count: the reader of the copy gets the ``events.dropped``,
  ``head`` gives the original's cursor, a cursor from the original is good there, and the next
  append goes on after the highest sequence ever written, never back to 1.
- A record that is there but is not one is said: readers warn naming the file and go on; an
  append into a log with no event refuses (one ``error:``, exit 1, nothing written), since it
  cannot tell where the sequence goes on; a log with events goes on from its last event.
- An emptied log whose file is deleted and made again by an append goes on after its count.
- A follower sees an emptied log's file made again as the log going on (``_classify``).

In process (``run_cli``); a reader's warning may go to this process's stderr (``store.log.tell``
when no sink is installed), so both are looked at.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402

DAY_NS = 86_400 * 10**9
DROPPED = "wardrik.events.dropped"


def emptied(root: Path, log: str = "acme/a", events: int = 3) -> Path:
    """A root whose log ``log`` held ``events`` events, every one dropped by ``compact``."""
    write_spread(root / f"{log}.jsonl", events=events, days=3, end_ns=time.time_ns() - 2 * DAY_NS, log_id=log, pad=8)
    p = run_cli("compact", "-r", "1d", "-q", root=root)
    assert p.returncode == 0, p.stderr
    assert (root / f"{log}.jsonl").read_bytes() == b""
    return root / ".wardrik" / "watermarks" / f"{log}@json"


def copy_plain(src: Path, dst: Path) -> Path:
    """``cp -r``: new inodes, and mtimes of the copy's own (content only)."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    return dst


def cli(root: Path, *args: str):
    return run_cli(*args, root=root)


def warnings(p, capsys) -> str:
    return p.stderr.decode() + capsys.readouterr().err


def test_a_plain_copy_of_an_emptied_log_keeps_its_count(root, tmp_path):
    emptied(root)
    cursor = cli(root, "head", "acme/a").stdout
    copy = copy_plain(root, tmp_path / "copy")
    st, st0 = os.stat(copy / "acme/a.jsonl"), os.stat(root / "acme/a.jsonl")
    assert (st.st_ino, st.st_mtime_ns) != (st0.st_ino, st0.st_mtime_ns)

    p = cli(copy, "page", "acme/a", "-o", "jsonl")
    assert p.returncode == 0, p.stderr
    [notice] = jsonl(p.stdout)
    assert notice["type"] == DROPPED and notice["data"] == {"log": "acme/a", "count": 3}
    assert cli(copy, "head", "acme/a").stdout == cursor
    p = cli(copy, "page", "acme/a", "--after", cursor.decode().strip(), "-o", "json")
    assert p.returncode == 0, p.stderr
    assert orjson.loads(p.stdout)["events"] == []

    p = cli(copy, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}')
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout)[0]["sequence"] == "000000000004"  # never 1 again


def test_an_emptied_log_deleted_and_made_again_goes_on_after_its_count(root, tmp_path):
    emptied(root)
    os.link(root / "acme/a.jsonl", tmp_path / "kept")  # its inode stays taken: the new file has another
    (root / "acme/a.jsonl").unlink()
    p = cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}')
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout)[0]["sequence"] == "000000000004"


@pytest.mark.parametrize("body", [b"garbage\n", b'{"inode": "12", "next_sequence": 4}', b"[]",
                                  b'{"inode": 12, "next_sequence": 0}'])
def test_a_damaged_record_is_said_and_refuses_an_append_into_an_emptied_log(root, capsys, body):
    wm = emptied(root)
    wm.write_bytes(body)
    p = cli(root, "page", "acme/a", "-o", "jsonl")
    assert p.returncode == 0, p.stderr
    told = warnings(p, capsys)
    assert "warning: " in told and str(wm) in told and "damaged" in told, told

    p = cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}')
    err = p.stderr.decode()
    assert p.returncode == 1 and p.stdout == b"", err
    assert err.count("error:") == 1 and err.startswith("error: ") and str(wm) in err, err
    assert (root / "acme/a.jsonl").read_bytes() == b""  # nothing written

    (root / "acme/a.jsonl").unlink()  # the log gone too: refused the same, and no file left behind
    p = cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}')
    assert p.returncode == 1, p.stderr
    assert not (root / "acme/a.jsonl").exists()

    # as the error says: without the record the log starts again at 1; a damaged record of a
    # log with events does not stop its appends (they go on from its last event)
    wm.unlink()
    assert jsonl(cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}').stdout)[0][
        "sequence"] == "000000000001"
    wm.write_bytes(body)
    p = cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"z"}}')
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout)[0]["sequence"] == "000000000002"


def test_a_follower_sees_an_emptied_log_made_again_go_on(root, tmp_path):
    from wardrik_cli.follow import follower as follow
    from wardrik_cli.store.layout import Root
    from wardrik_cli.store.log import Log

    emptied(root)
    lg = Log.agent(Root(root), "acme/a")
    os.link(root / "acme/a.jsonl", tmp_path / "kept")  # its inode stays taken: the new file has another
    (root / "acme/a.jsonl").unlink()
    (root / "acme/a.jsonl").write_bytes(b"")  # made again, before its first line
    with lg.open() as v:
        assert (v.first_seq(), v.last_seq()) == (4, 3)
        assert follow._classify(v, 3, "an-id", replaced=True) == "continue"
    assert cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"y"}}').returncode == 0
    with lg.open() as v:
        assert follow._classify(v, 3, "an-id", replaced=True) == "continue"
    # made again by another hand, from sequence 1: not the log followed
    (root / "acme/a.jsonl").unlink()
    write_spread(root / "acme/a.jsonl", events=2, days=1, log_id="acme/a", pad=8)
    with lg.open() as v:
        assert follow._classify(v, 3, "an-id", replaced=True) == "recreated"


def test_an_emptied_logs_notice_keeps_its_source_and_stays_out_of_a_full_tail(root):
    """The notice of an emptied log has the source its events had, whatever the reader's
    deployment (before: the reader's, so its id changed with it); and `tail -n 1` with a newer
    event elsewhere gives no notice of drops its window never reached (before: always)."""
    write_spread(root / "acme/a.jsonl", events=3, days=3, end_ns=time.time_ns() - 2 * DAY_NS, log_id="acme/a", pad=8)
    first = (root / "acme/a.jsonl").read_bytes().split(b"\n")[0]
    source = orjson.loads(first)["source"]
    assert run_cli("compact", "-r", "1d", "-q", root=root).returncode == 0
    assert (root / "acme/a.jsonl").read_bytes() == b""
    seen = set()
    for dep in ("other-deployment", "local"):
        p = run_cli("page", "-o", "jsonl", root=root, env={"WARDRIK_DEPLOYMENT": dep})
        [notice] = [e for e in jsonl(p.stdout) if e["type"] == DROPPED]
        assert notice["source"] == source
        seen.add(notice["id"])
    assert len(seen) == 1
    assert run_cli("append", "b", "trigger.fired", "--data", '{"trigger": {"name": "x"}}', root=root).returncode == 0
    got = jsonl(run_cli("tail", "-n", "1", "-o", "jsonl", root=root).stdout)
    assert [e["type"] for e in got] == ["wardrik.trigger.fired"]
    got = jsonl(run_cli("tail", "-n", "5", "-o", "jsonl", root=root).stdout)  # the window reaches back past it
    assert [e["type"] for e in got] == [DROPPED, "wardrik.trigger.fired"]
