"""A log's folder swapped for a symbolic link while a sweep or an append works on it (by
whoever may write the root: the agent whose folder it is) leads nowhere: the folder is held
open from the first look and every file beside the log is made, opened, renamed and removed by
name in it. Before, the sweep's new file was made through the link, in any folder of the
machine, and left there, as root, with the log's owner.

The swap lands mid-sweep for certain: ``compact_log``'s ``_after_bulk`` hook runs it after the
bulk of the kept bytes is copied, before the log's lock is taken."""
from __future__ import annotations

import os
from datetime import timedelta

from conftest import run_cli
from ledgergen import START, write_log
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.retention import compact_log


def _setup(tmp_path):
    root = tmp_path / "root"
    (root / ".wardrik").mkdir(parents=True)
    write_log(root / "acme" / "a.jsonl", 40, start=START - timedelta(days=400), log_id="acme/a")
    write_log(tmp_path / "new.jsonl", 3, first_seq=41, start=START + timedelta(days=10_000), log_id="acme/a")
    with open(root / "acme" / "a.jsonl", "ab") as f:
        f.write((tmp_path / "new.jsonl").read_bytes() + b'{"torn')  # events to keep, and a torn tail to cut
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "a.jsonl").write_bytes(b"someone else's file\n")
    return root, victim


def _swap(root, victim):
    os.rename(root / "acme", root / ".held")
    os.symlink(victim, root / "acme")


def _unswap(root):
    os.unlink(root / "acme")
    os.rename(root / ".held", root / "acme")


def test_a_folder_swapped_mid_sweep_and_back_is_swept_in_place(tmp_path):
    root, victim = _setup(tmp_path)
    log = Log.agent(Root(root), "acme/a")

    def attacker():
        _swap(root, victim)  # the sweep now opens the log again, cuts its torn tail, makes its files
        calls.append(1)

    calls: list[int] = []
    res = compact_log(log, "2026-01-01T00:00:00Z", _after_bulk=attacker)
    assert calls == [1]
    # still swapped at the commit: nothing is synced or renamed through the link, the log kept
    assert res.error is not None and "nothing was changed" in res.error, res
    assert sorted(os.listdir(victim)) == ["a.jsonl"] and (victim / "a.jsonl").read_bytes() == b"someone else's file\n"
    _unswap(root)
    p = run_cli("compact", "-F", "json", root=root)  # the next sweep tidies and sweeps
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(victim)) == ["a.jsonl"]
    names = sorted(os.listdir(root / "acme"))  # the temporary left in the held folder went too
    assert names[0] == "a.jsonl" and len(names) == 2 and names[1].startswith("a.jsonl.torn-"), names
    assert run_cli("check", root=root).returncode == 0
    assert [int(line.split(b'"sequence":"')[1][:12]) for line in (root / "acme" / "a.jsonl").read_bytes().splitlines()] \
        == [41, 42, 43]


def test_a_folder_swapped_and_put_back_before_the_commit_leaves_nothing_outside(tmp_path):
    root, victim = _setup(tmp_path)
    log = Log.agent(Root(root), "acme/a")
    from wardrik_cli.store.replace import Batch

    batch = Batch()

    def attacker():
        _swap(root, victim)

    res = compact_log(log, "2026-01-01T00:00:00Z", _after_bulk=attacker, batch=batch)
    assert sorted(os.listdir(victim)) == ["a.jsonl"] and (victim / "a.jsonl").read_bytes() == b"someone else's file\n"
    _unswap(root)
    batch.commit()
    res.settle()
    assert res.error is None and (res.dropped, res.kept) == (40, 3), res
    assert sorted(os.listdir(victim)) == ["a.jsonl"]
    names = sorted(os.listdir(root / "acme"))
    assert names[0] == "a.jsonl" and all(n.startswith("a.jsonl.torn-") for n in names[1:]) and len(names) == 2
    assert run_cli("check", root=root).returncode == 0


def test_a_folder_swapped_before_the_new_file_is_made_and_back_after_leaves_nothing_outside(tmp_path):
    """The reviewer's race: swapped once the sweep has looked at the log, put back while the
    bulk is copied. Before, the new file was made through the link and left in the victim."""
    root, victim = _setup(tmp_path)
    log = Log.agent(Root(root), "acme/a")
    res = compact_log(log, "2026-01-01T00:00:00Z", before_drop=lambda: _swap(root, victim),
                      _after_bulk=lambda: _unswap(root))
    assert sorted(os.listdir(victim)) == ["a.jsonl"] and (victim / "a.jsonl").read_bytes() == b"someone else's file\n"
    assert res.error is None and (res.dropped, res.kept) == (40, 3), res
    assert run_cli("check", root=root).returncode == 0


def test_open_folder_makes_missing_levels_in_the_one_above_never_through_a_link(tmp_path):
    """append makes a log's missing folders this way: a level swapped for a link is refused,
    and nothing is made where the link points."""
    from wardrik_cli.errors import NotRegular
    from wardrik_cli.store.fsutil import open_folder

    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "acme")
    try:
        open_folder(root, root / "acme" / "new" / "deeper", create=True, sync=True)
        raise AssertionError("went through the link")
    except NotRegular as e:
        assert "acme is a symbolic link" in str(e)
    assert list(outside.iterdir()) == []
    fd = open_folder(root, root / "real" / "new" / "deeper", create=True, sync=True)
    os.close(fd)
    assert (root / "real" / "new" / "deeper").is_dir()


def test_a_sweep_error_names_a_file_beside_the_log_by_its_path(tmp_path):
    root, _victim = _setup(tmp_path)
    (root / "acme" / ".a.jsonl.compact.tmp").mkdir()  # planted where the sweep makes its new file
    (root / "acme" / ".a.jsonl.compact.tmp" / "x").write_bytes(b"")
    p = run_cli("compact", "-q", root=root)
    assert p.returncode == 1
    assert str(root / "acme" / ".a.jsonl.compact.tmp").encode() in p.stderr, p.stderr
