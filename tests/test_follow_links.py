"""``tail -f`` sets its inotify watches only inside the root: a folder that is a link (made
before the follower started or after) gets none, and neither does anything behind it; a real
folder made later is watched (watches count against the user's system-wide inotify limit, and
``evil -> /`` would have walked the whole machine, /proc included)."""
from __future__ import annotations

import os

import pytest

from follow_util import Tailer, add


def watched_inodes(pid: int) -> set[int]:
    """The inode of every inotify watch the process holds (``/proc/PID/fdinfo``)."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue  # closed meanwhile
        for line in text.splitlines():
            if line.startswith("inotify wd:"):
                fields = dict(kv.split(":", 1) for kv in line.split()[1:] if ":" in kv)
                out.add(int(fields["ino"], 16))
    return out


@pytest.mark.subprocess
def test_tail_f_sets_no_watch_through_a_linked_folder(root, tmp_path):
    outside = tmp_path / "outside"
    for i in range(20):
        (outside / f"d{i}" / "deeper").mkdir(parents=True)
    add(root, "a")
    add(root, "team/b")
    (root / "evil").symlink_to(outside, target_is_directory=True)
    t = Tailer(root, "-f", "-n", "0", "-o", "jsonl")
    try:
        t.wait_registered()
        (root / "evil2").symlink_to(outside, target_is_directory=True)  # one planted while it follows
        add(root, "new/c", "c")  # no doorbell: the watch on the root finds the new folder
        assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["c"]
        add(root, "new/c", "c2")  # and the new folder is watched by then
        assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["c2"]
        inodes = watched_inodes(t.proc.pid)
        behind = {os.lstat(p).st_ino for p in (outside, *outside.rglob("*"))}
        assert not inodes & behind, f"{len(inodes & behind)} watches outside the root"
        for real in (root, root / "team", root / "new"):
            assert os.lstat(real).st_ino in inodes, real
    finally:
        t.kill()


def test_a_folder_made_while_the_watches_are_set_is_told(tmp_path, monkeypatch):
    """A writer makes a folder (and a log in it) between the listing of the folders to watch
    and the watch of their parent: no event ever comes for it. It is told as a change once the
    watches are set, and watched from then on (before: unseen until the 30 s safety sweep)."""
    import time

    from wardrik_cli.follow import wakeup

    root = tmp_path / "r"
    root.mkdir()
    listed = wakeup.watched_folders

    def racing(where: str) -> list[str]:
        got = listed(where)
        if not (root / "h").exists():  # the race, made to land: after the listing, before the watch
            (root / "h").mkdir()
            (root / "h" / "l0.jsonl").write_bytes(b"")
        return got

    monkeypatch.setattr(wakeup, "watched_folders", racing)
    w = wakeup.Wakeups(str(root))
    try:
        assert w.watching
        seen: set[str] = set()
        deadline = time.monotonic() + 20
        while str(root / "h") not in seen and time.monotonic() < deadline:
            w.wait(0.1)
            seen |= w.take_changes()
        assert str(root / "h") in seen  # told, and watched again meanwhile
        with open(root / "h" / "l0.jsonl", "ab") as f:
            f.write(b"x\n")
        seen = set()
        while str(root / "h" / "l0.jsonl") not in seen and time.monotonic() < deadline:
            w.wait(0.1)
            seen |= w.take_changes()
        assert str(root / "h" / "l0.jsonl") in seen
    finally:
        w.close()


def test_a_new_folder_gets_a_watch_of_its_own_not_a_new_watch_of_every_folder(tmp_path):
    """Before, each folder made set every watch again (0.2 s of CPU per new folder over 2,000
    folders). Now the folder and those below it get a watcher of their own; a watched folder
    removed, or more than MAX_WATCHERS added, sets them all again."""
    import time

    from wardrik_cli.follow import wakeup

    root = tmp_path / "r"
    for i in range(5):
        (root / f"f{i}").mkdir(parents=True)
    w = wakeup.Wakeups(str(root))
    deadline = time.monotonic() + 20

    def until_seen(path) -> None:
        seen: set[str] = set()
        while str(path) not in seen:
            assert time.monotonic() < deadline, seen
            w.wait(0.1)
            seen |= w.take_changes()

    try:
        first = w._watcher
        (root / "new" / "deeper").mkdir(parents=True)  # a folder and one below it at once
        until_seen(root / "new")
        assert w._watcher is first and len(w._extra) >= 1  # one more watcher, none set again
        with open(root / "new" / "deeper" / "l.jsonl", "ab") as f:
            f.write(b"x\n")
        until_seen(root / "new" / "deeper" / "l.jsonl")  # the folder below it is watched too
        for i in range(wakeup.MAX_WATCHERS + 1):
            (root / f"g{i}").mkdir()
            until_seen(root / f"g{i}")
        assert w._watcher is not first and len(w._extra) <= wakeup.MAX_WATCHERS  # set again as one
        with open(root / f"g{wakeup.MAX_WATCHERS}" / "m.jsonl", "ab") as f:
            f.write(b"y\n")
        until_seen(root / f"g{wakeup.MAX_WATCHERS}" / "m.jsonl")
    finally:
        w.close()


@pytest.mark.subprocess
def test_a_followed_folder_swapped_for_a_link_is_not_read_through(root, tmp_path):
    """The root remembered a folder was no link for as long as it lived: a follower whose
    folder was then replaced by a link to elsewhere read the log there (as a log "deleted and
    recreated"). Now the follower looks again when it opens a log again, and says so."""
    add(root, "acme/a", "in")
    outside = tmp_path / "outside"
    outside.mkdir()
    t = Tailer(root, "-f", "-n", "0", "-o", "jsonl")
    try:
        t.wait_registered()
        add(root, "acme/a", "seen")
        assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["seen"]
        add(root.parent / "other", "a", "OUTSIDE")
        (outside / "a.jsonl").write_bytes((root.parent / "other" / "a.jsonl").read_bytes())
        (root / "acme").rename(root / "acme.old")
        (root / "acme").symlink_to(outside, target_is_directory=True)
        assert t.wait_err(b"is a symbolic link")
        add(root, "b", "after")  # the follow goes on (acme.old/a is a new log to it: read whole)
        assert sorted(e["data"]["trigger"]["name"] for e in t.events(3)) == ["after", "in", "seen"]
    finally:
        t.kill()
    assert b"OUTSIDE" not in b"".join(t.got)
