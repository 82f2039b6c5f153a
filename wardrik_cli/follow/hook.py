"""A hook: ``sh -c CMD`` run for one event (``tail --exec``), never outliving its follower.

Contract kept here:
- Each run is ``/bin/sh -c CMD`` in a process group of its own (its pgid is its pid), with
  the bytes given on its stdin and the follower's stdout and stderr. ``run`` returns its exit
  status (negative: the signal that ended it).
- A run interrupted by an exception (a stop signal turned into ``KeyboardInterrupt``, any
  failure) ends the hook's whole group before the exception goes on: the signal that stopped
  the follower (``stop_signal()``, else SIGTERM) is sent to the group, since in a group of
  its own the hook gets nothing from the terminal's Ctrl-C; then, once ``grace_s`` has
  passed with a member left (or at once if the follower is asked to stop again), SIGKILL.
  So a stopped follower leaves no hook running, and an interrupted run is never taken for
  a success: its event is handed over again (at least once).
- ``guard`` (e.g. the CLI's signal hold) is held while the hook is started, so a stop never
  lands between the start and the moment the group is known.
- Run by hand in a terminal (the follower's group is its foreground), the hook's group is
  made the terminal's foreground while it runs, as a shell does for a job: a hook may read the
  terminal (a prompt, a pager), and Ctrl-C goes to the hook; a hook ended by it (SIGINT,
  SIGQUIT, exit 130) stops the follower as Ctrl-C does. The terminal is taken back after.
- What a hook that exited by itself left behind (``cmd &``) is left alone; so is a process
  that moved itself out of the group (``setsid``).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

HOOK_GRACE_S = 2.0  # a hook's group signalled to stop is killed after this long


class Hook:
    """Runs ``cmd`` once per ``run`` (see the module docstring)."""

    def __init__(self, cmd: str, *, grace_s: float = HOOK_GRACE_S,
                 stop_signal: Callable[[], int | None] | None = None):
        self.cmd = cmd
        self.grace_s = grace_s
        self._stop_signal = stop_signal

    def run(self, data: bytes, env: Mapping[str, str],
            guard: Callable[[], AbstractContextManager[Any]] | None = None) -> int:
        proc: subprocess.Popen[bytes] | None = None
        tty = _our_terminal()  # a terminal whose foreground we are: the hook gets it while it runs
        try:
            with guard() if guard is not None else contextlib.nullcontext():
                proc = subprocess.Popen(self.cmd, shell=True, stdin=subprocess.PIPE, env=dict(env),
                                        process_group=0)
                if tty is not None:
                    _give_terminal(tty, proc.pid)
            # Popen waits up to 0.25 s after a KeyboardInterrupt for a child that got the same
            # Ctrl-C from the terminal; ours, in its own group, did not: _end tells it instead.
            proc._sigint_wait_secs = 0  # type: ignore[attr-defined]
            proc.communicate(data)
            rc = proc.returncode
        except BaseException:
            if proc is not None:
                self._end(proc)
            raise
        finally:
            if tty is not None:
                _take_terminal_back(tty)
        if tty is not None and rc in (-signal.SIGINT, -signal.SIGQUIT, 128 + signal.SIGINT):
            # Ctrl-C at the terminal went to the hook, which had the terminal: the follower
            # stops as a shell does when its foreground job dies of it
            raise KeyboardInterrupt
        return rc

    def _end(self, proc: subprocess.Popen[bytes]) -> None:
        """Signal the hook's group to stop, then kill what is left after the grace; reap it."""
        sig = (self._stop_signal() if self._stop_signal is not None else None) or signal.SIGTERM
        sent = hurry = False
        deadline = 0.0
        while True:
            try:  # a second stop may land anywhere in here: it only cuts the grace short
                if not sent:
                    sent = True
                    _signal_group(proc, sig)
                    _signal_group(proc, signal.SIGCONT)  # a stopped member acts on it only once continued
                    deadline = time.monotonic() + self.grace_s
                while not hurry and time.monotonic() < deadline and _group_alive(proc):
                    time.sleep(0.01)
                if _group_alive(proc):
                    _signal_group(proc, signal.SIGKILL)
                proc.wait()
                return
            except KeyboardInterrupt:
                hurry = True


def _our_terminal() -> int | None:
    """An open descriptor of the controlling terminal when this process's group is its
    foreground (a tail run by hand); else None (no terminal, or run in the background)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.tcgetpgrp(fd) == os.getpgrp():
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _give_terminal(tty: int, pgid: int) -> None:
    """Make the hook's group the terminal's foreground, as a shell does for a job: it may read
    the terminal (a prompt, a pager), and Ctrl-C goes to it."""
    with contextlib.suppress(OSError):
        os.setpgid(pgid, pgid)  # done by the child too; whichever comes first (as shells do)
    with contextlib.suppress(OSError):
        os.tcsetpgrp(tty, pgid)
        # A hook that read the terminal before it was given it was stopped (SIGTTIN): it goes on
        # now and reads again (a shell's child takes the terminal itself, before it runs).
        os.killpg(pgid, signal.SIGCONT)


def _take_terminal_back(tty: int) -> None:
    """The follower's group is the terminal's foreground again (SIGTTOU held off meanwhile: a
    background group that sets the foreground is otherwise stopped)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        os.tcsetpgrp(tty, os.getpgrp())
    except OSError:
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        os.close(tty)


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    """Is any process of the hook's group left? (The shell is reaped here once it has ended;
    Linux never reuses a group's id while a member is left in it.)"""
    if proc.poll() is None:
        return True
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone (or what is left is not ours to signal)
