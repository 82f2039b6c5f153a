"""What wakes a follower: the one wake-up source of ``tail -f``, ``activity --watch`` and listeners.

Contract kept here:
- File changes under the root come from watchfiles (inotify, through its public ``watch``),
  on a thread, with its step tuned down (``WARDRIK_WATCH_STEP_MS``, default 20 ms, instead
  of its 50 ms / 1.6 s): only ``*.jsonl`` paths and folders are kept (a new folder means
  "look for new logs": a log written into it at once may never be reported by itself). ``Wakeups`` returns only once the
  watches are in place (watchfiles polls the stop event only from its watch loop, after
  setting them up), so nothing written after it returns can go unnoticed. Where inotify is
  unavailable (limits, odd file systems) ``watching`` is False and callers poll instead.
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


def _identity(path: str) -> tuple[int, int] | None:
    """The directory at ``path`` (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _logs_and_folders(_change: object, path: str) -> bool:
    """Log files, and folders (a folder made just now may already hold a log that the
    recursive watch, added after the folder appeared, never reports)."""
    return path.endswith(".jsonl") or ("/." not in path and os.path.isdir(path))


class _Watcher(threading.Thread):
    def __init__(self, path: str, waker: Waker, step_ms: int):
        super().__init__(name="wardrik-watch", daemon=True)
        self.path, self.waker, self.step_ms = path, waker, step_ms
        self.events = _ReadyStop()
        self.failed: BaseException | None = None
        self.changed: set[str] = set()
        self.lock = threading.Lock()

    def _wanted(self, change: object, path: str) -> bool:
        # the root too once it is gone (no folder then): its deletion is seen to at once
        return path == self.path or _logs_and_folders(change, path)

    def run(self) -> None:
        from watchfiles import watch

        try:
            for changes in watch(self.path, watch_filter=self._wanted,
                                 debounce=self.step_ms, step=self.step_ms, stop_event=self.events,
                                 rust_timeout=0, raise_interrupt=False, ignore_permission_denied=True):
                with self.lock:
                    self.changed |= {p for _c, p in changes}
                self.waker.ring()
        except Exception as e:  # noqa: BLE001 - no inotify here: the caller polls instead
            self.failed = e
        finally:
            self.events.ready.set()
            self.waker.ring()

    def take(self) -> set[str]:
        with self.lock:
            out, self.changed = self.changed, set()
        return out

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
        self._root, self._step_ms, self._warn = root_path, step_ms, warn
        # Taken before the watch is set: a root replaced meanwhile is told apart at the next check.
        self._root_id = _identity(root_path)
        self._rewatch = False  # may check_root() set a new watch (it worked once)?
        self._watcher: _Watcher | None = None
        self._poll = select.poll()
        self._poll.register(self.waker.r, select.POLLIN)
        if hangup_fd is not None:
            self._poll.register(hangup_fd, 0)  # POLLERR/POLLHUP are always reported
        if watch:
            self._rewatch = self._start_watch()

    def _start_watch(self) -> bool:
        w = _Watcher(self._root, self.waker, self._step_ms)
        w.start()
        w.events.ready.wait(READY_CEILING_S)
        if w.failed is None and w.is_alive():
            self._watcher, self.watching = w, True
            return True
        w.events.stop.set()
        if self._warn is not None:
            why = w.failed if w.failed is not None else "the watcher did not start"
            self._warn(f"file notifications unavailable ({why}); polling instead")
        return False

    def check_root(self) -> str | None:
        """Is the root still the directory watched? None: yes (or nothing is watched); ``GONE``
        or ``NEW``: see the module docstring."""
        if not self._rewatch:
            return None
        now = _identity(self._root)
        if now == self._root_id:
            return None
        self._root_id = now
        if self._watcher is not None:
            self._watcher.stop()  # its inode is gone: it would never report anything again
            self._watcher, self.watching = None, False
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
        with_changes = self._watcher is not None and bool(self._watcher.changed)
        return CHANGES if with_changes else RING

    def take_changes(self) -> set[str]:
        """The ``*.jsonl`` paths changed since the last call (absolute)."""
        return self._watcher.take() if self._watcher is not None else set()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        self.waker.close()
