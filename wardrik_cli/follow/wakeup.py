"""What wakes a follower: the one wake-up source of ``tail -f``, ``activity --watch`` and listeners.

Contract kept here:
- File changes under the root come from watchfiles (inotify, through its public ``watch``),
  on a thread, with its step tuned down (``WARDRIK_WATCH_STEP_MS``, default 20 ms, instead
  of its 50 ms / 1.6 s): only ``*.jsonl`` paths and folders are kept (a new folder means
  "look for new logs": a log written into it at once may never be reported by itself). ``Wakeups`` returns only once the
  watches are in place (watchfiles polls the stop event only from its watch loop, after
  setting them up), so nothing written after it returns can go unnoticed. Where inotify is
  unavailable (limits, odd file systems) ``watching`` is False and callers poll instead.
- Watches are set only on folders that can hold a log (``Root.iter_folders``: reached
  without a link, never deeper than a log id reaches) and on ``.wardrik`` (the audit log),
  each one alone (watchfiles' recursive watch follows links to folders: ``evil -> /``
  would cost a watch per folder of the machine, against the user's inotify limit). A folder
  made or moved in under a watched one is seen in ``take_changes``, which adds a watcher of
  it and the folders below it (``_watch_more``: one new folder costs its own watch, not a
  watch of every folder again); a watched folder removed or moved away, or more than
  ``MAX_WATCHERS`` (2: each is an inotify instance, of which a user has few) added, sets all
  the watches again (a new watcher, in place before the old
  ones stop). Either is done before it returns the change: a caller that then looks for new
  logs misses nothing written after it looked.
- Other threads ``ring()`` (a self-pipe): the live receiver, ``stop()``.
- A ``hangup_fd`` (stdout) that reports POLLERR/POLLHUP ends the wait with ``HANGUP``: the
  reader of a pipe went away, noticed even while nothing else happens.
- ``wait(timeout)`` blocks in one ``poll`` on all of it, so an idle follower costs nothing
  between its ticks, whatever the number of logs.
- An inotify watch follows an inode, not a path: once the root is deleted (``rm -rf``; the
  watcher reports it) or replaced, it sees nothing more. ``check_root()`` (one stat, at each
  wake-up) tells: ``GONE`` (the watch is dropped and ``watching`` is False: the caller polls
  until the root is back) or ``NEW`` (the watch is set on the new directory before it
  returns; what that directory already held was never reported, so look at everything).
"""
from __future__ import annotations

import os
import select
import stat
import threading
from collections.abc import Callable

from wardrik_cli.store.layout import Root, may_hold_logs

RING, CHANGES, TIMEOUT, HANGUP = "ring", "changes", "timeout", "hangup"
GONE, NEW = "gone", "new"  # what check_root() found
READY_CEILING_S = 5.0  # how long to wait for the watches to be in place before polling instead


class Waker:
    """A self-pipe: other threads ring it to wake a ``poll``."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def ring(self) -> None:
        try:
            os.write(self.w, b"\0")
        except OSError:
            pass  # already rung (pipe full) or closing

    def drain(self) -> None:
        try:
            while os.read(self.r, 4096):
                pass
        except OSError:
            pass

    def close(self) -> None:
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass


class _ReadyStop:
    """The stop event handed to watchfiles: its first ``is_set`` says the watches are in place."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self._told = False

    def is_set(self) -> bool:
        if not self._told:  # called every step: say "ready" once, then only answer
            self._told = True
            self.ready.set()
        return self.stop.is_set()


def dir_identity(path: str) -> tuple[int, int] | None:
    """The directory at ``path`` (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _real_dir(path: str) -> bool:
    """A folder at ``path`` itself (a link to one is not)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def watched_folders(root_path: str) -> list[str]:
    """The folders a watch is set on: the root, ``.wardrik`` when it is a folder (not a
    link), and every folder that can hold a log (``Root.iter_folders``), as absolute paths."""
    base = root_path.rstrip("/") or "/"
    out = [base]
    tool = os.path.join(base, ".wardrik")
    if _real_dir(tool):
        out.append(tool)
    try:
        out += [os.path.join(base, rel) for rel in Root(base).iter_folders(unreadable_ok=True) if rel]
    except OSError:
        pass  # the root itself cannot be listed: its own watch is all there is
    return out


REWATCH, ADDED = "rewatch", "added"  # what a folder's change asks of the watches (_Watcher._moved)
# Watchers added for new folders before the watches are set again as one. Each is an inotify
# instance of its own, and a user has 128 of them in all (every follower's, every program's):
# a few followers with 16 each left others none, and those fell back to polling.
MAX_WATCHERS = 2


class _Watcher(threading.Thread):
    """One watchfiles watch of ``folders`` (each alone, never recursively), reporting to
    ``sink(paths, rewatch, added)``: ``rewatch`` when a watched folder was removed or moved
    away (the watches must be set again), ``added`` the folders that can hold logs made or
    moved in (a watch of their own is added for them)."""

    def __init__(self, root: str, folders: list[str], sink: Callable[[set[str], bool, set[str]], None],
                 step_ms: int):
        super().__init__(name="wardrik-watch", daemon=True)
        self.root, self.sink, self.step_ms = root, sink, step_ms
        self.folders = folders
        self.watched = frozenset(folders)
        self._tool = os.path.join(root, ".wardrik")
        self._skip = len(root.rstrip("/"))  # "/." is looked for below the root only
        self.events = _ReadyStop()
        self.failed: BaseException | None = None

    def _wanted(self, _change: object, path: str) -> bool:
        """Log files (``.wardrik/audit.jsonl`` too), folders not under a dot-folder, ``.wardrik``
        itself (the audit log comes in it), the folders watched (removed: no folder then), and
        the root (once it is gone: its deletion is seen to at once)."""
        if path.endswith(".jsonl") or path == self.root or path == self._tool or path in self.watched:
            return True
        return "/." not in path[self._skip:] and _real_dir(path)

    def _moved(self, change: int, path: str, modified: int) -> str | None:
        """``REWATCH`` for a watched folder removed, moved away or made again (a new inode: the
        old watch is gone), ``ADDED`` for a new folder that can hold logs, else None."""
        if change == modified or path == self.root:
            return None
        if path in self.watched:
            return REWATCH
        if not _real_dir(path):
            return None
        return ADDED if path == self._tool or may_hold_logs(path[self._skip + 1:]) else None

    def run(self) -> None:
        from watchfiles import Change, watch

        modified = int(Change.modified)
        try:
            for changes in watch(*self.folders, watch_filter=self._wanted, recursive=False,
                                 debounce=self.step_ms, step=self.step_ms, stop_event=self.events,
                                 rust_timeout=0, raise_interrupt=False, ignore_permission_denied=True):
                kinds = {p: self._moved(int(c), p, modified) for c, p in changes}
                self.sink({p for _c, p in changes}, REWATCH in kinds.values(),
                          {p for p, k in kinds.items() if k == ADDED})
        except Exception as e:  # noqa: BLE001 - no inotify here: the caller polls instead
            self.failed = e
        finally:
            self.events.ready.set()
            self.sink(set(), False, set())

    def stop(self) -> None:
        self.events.stop.set()
        self.join(timeout=2)


class Wakeups:
    """File changes, rings and a hangup, waited on together (see the module docstring)."""

    def __init__(self, root_path: str, *, step_ms: int = 20, hangup_fd: int | None = None,
                 watch: bool = True, warn: Callable[[str], None] | None = None):
        self.waker = Waker()
        self.hangup_fd = hangup_fd
        self.watching = False
        # (as watchfiles names it: the root's own deletion is told by this path)
        self._root, self._step_ms, self._warn = root_path.rstrip("/") or "/", step_ms, warn
        # Taken before the watch is set: a root replaced meanwhile is told apart at the next check.
        self._root_id = dir_identity(root_path)
        self._rewatch = False  # may check_root() set a new watch (it worked once)?
        self._watcher: _Watcher | None = None
        self._extra: list[_Watcher] = []  # watchers of folders made since (see _watch_more)
        self._changed: set[str] = set()  # paths reported and not yet taken (every watcher's)
        self._moved = False  # a watched folder removed or moved since the last take_changes()
        self._added: set[str] = set()  # folders made or moved in since the last take_changes()
        self._retired: list[_Watcher] = []  # watchers replaced by _watch_again, maybe still stopping
        self._lock = threading.Lock()
        self._poll = select.poll()
        self._poll.register(self.waker.r, select.POLLIN)
        if hangup_fd is not None:
            self._poll.register(hangup_fd, 0)  # POLLERR/POLLHUP are always reported
        if watch:
            self._rewatch = self._start_watch()

    def _sink(self, paths: set[str], moved: bool, added: set[str] | None = None) -> None:
        """A watcher's report (an empty one: it stopped): kept, and the poll woken."""
        if paths:
            with self._lock:
                self._changed |= paths
                self._moved = self._moved or moved
                if added:
                    self._added |= added
        self.waker.ring()

    def _start_watch(self) -> bool:
        """Watch the folders there are now (``watched_folders``); True once the watches are in
        place. A folder removed between the listing and its watch: listed again (three tries)."""
        w: _Watcher | None = None
        for _ in range(3):
            folders = watched_folders(self._root)
            w = _Watcher(self._root, folders, self._sink, self._step_ms)
            w.start()
            w.events.ready.wait(READY_CEILING_S)
            if w.failed is None and w.is_alive():
                self._watcher, self.watching = w, True
                # A folder made between the listing and its parent's watch was never reported,
                # nor what was written into it: told now, as a change that sets the watches again.
                made = set(watched_folders(self._root)) - set(folders)
                if made:
                    self._sink(made, True)
                return True
            w.events.stop.set()
            if not isinstance(w.failed, FileNotFoundError) or not _real_dir(self._root):
                break
        if self._warn is not None:
            why = w.failed if w is not None and w.failed is not None else "the watcher did not start"
            self._warn(f"file notifications unavailable ({why}); polling instead")
        return False

    def _watch_again(self) -> None:
        """Set the watches on the folders there are now: the new watcher is in place before
        the old ones stop (all report to the same set meanwhile), so nothing is missed."""
        old = self._watcher
        if old is None:
            return
        self._watcher = None
        started = self._start_watch()
        # Told to stop, not waited for (they notice within a step): they may still report
        # meanwhile, which is harmless; close() waits for them before the waker goes.
        olds = [old, *self._extra]
        self._extra = []
        for w in olds:
            w.events.stop.set()
        self._retired = [w for w in self._retired if w.is_alive()] + olds
        if not started:
            self.watching = self._rewatch = False

    def _watch_more(self, added: set[str]) -> None:
        """Watch folders made since the watches were set, and the folders below them, with a
        watcher of their own, in place before this returns: one new folder costs a watch of
        it, not of every folder (a full set again, past ``MAX_WATCHERS``). A folder made below
        one of them before its watch was in place is told as a change, as ``_start_watch`` does."""
        if len(self._extra) >= MAX_WATCHERS:
            self._watch_again()
            return
        base = len(self._root.rstrip("/"))
        root = Root(self._root)
        folders: list[str] = []
        for path in sorted(added):
            rel = path[base + 1:]
            if path.rstrip("/") == os.path.join(self._root, ".wardrik"):
                folders.append(path)
                continue
            try:
                folders += [os.path.join(self._root, r) for r in root.iter_folders(rel, unreadable_ok=True)]
            except OSError:
                continue  # gone again, or not a folder a log can be in
        if not folders:
            return
        w = _Watcher(self._root, folders, self._sink, self._step_ms)
        w.start()
        w.events.ready.wait(READY_CEILING_S)
        if w.failed is not None or not w.is_alive():
            w.events.stop.set()
            # (the instances limit reached, say): the added watchers go first, so that the
            # whole set again has an instance to take; else polling
            for x in self._extra:
                x.stop()
            self._extra = []
            self._watch_again()
            return
        self._extra.append(w)
        made = set()
        for path in folders:
            try:
                made |= {os.path.join(self._root, r) for r in root.iter_folders(path[base + 1:], unreadable_ok=True)}
            except OSError:
                pass
        if made - set(folders):
            self._sink(made - set(folders), False, made - set(folders))

    def check_root(self) -> str | None:
        """Is the root still the directory watched? None: yes (or nothing is watched); ``GONE``
        or ``NEW``: see the module docstring."""
        if not self._rewatch:
            return None
        now = dir_identity(self._root)
        if now == self._root_id:
            return None
        self._root_id = now
        if self._watcher is not None:
            self._watcher.stop()  # its inode is gone: it would never report anything again
            self._watcher, self.watching = None, False
        for w in self._extra:
            w.stop()
        self._extra = []
        if now is None:
            return GONE
        self._rewatch = self._start_watch()
        return NEW

    def ring(self) -> None:
        self.waker.ring()

    def wait(self, timeout: float | None) -> str:
        """Block until a ring, a change, a hangup or ``timeout`` seconds (None: no limit)."""
        while True:
            try:
                ready = self._poll.poll(None if timeout is None else int(timeout * 1000))
            except InterruptedError:
                continue
            break
        for fd, ev in ready:
            if fd == self.hangup_fd and ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                return HANGUP
        if not ready:
            return TIMEOUT
        self.waker.drain()
        if self._watcher is not None and self._watcher.failed is not None:
            self._watcher, self.watching = None, False  # it stopped: poll from now on
        with self._lock:
            with_changes = self._watcher is not None and bool(self._changed)
        return CHANGES if with_changes else RING

    def take_changes(self) -> set[str]:
        """The ``*.jsonl`` paths and folders changed since the last call (absolute). A folder
        made or removed among them is watched (or not) again before this returns."""
        with self._lock:
            out, moved, added = self._changed, self._moved, self._added
            self._changed, self._moved, self._added = set(), False, set()
        if self._watcher is None:
            return set()
        if moved or any(w.failed is not None for w in self._extra):
            self._watch_again()
        elif added:
            self._watch_more(added)
        return out

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        for w in self._extra:
            w.stop()
        self._extra = []
        for w in self._retired:  # none may ring the waker's descriptors once closed (and reused)
            w.stop()
        self._retired = []
        self.waker.close()
