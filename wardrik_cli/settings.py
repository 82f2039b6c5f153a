"""Environment tunables: every variable wardrik reads, read in one place and validated.

Nothing is read at import time. ``Settings.from_env(env)`` reads a mapping (the CLI passes
the environment it was given; the library, ``os.environ`` when it is called), and a bad
value is ``BadSetting`` naming the variable and what it takes: ``error:`` and exit 2.

| variable | what | default |
|---|---|---|
| ``WARDRIK_ROOT`` | the root, when ``--root`` is not given | ``.`` |
| ``WARDRIK_DEPLOYMENT`` | the deployment, when ``--deployment`` is not given | config.toml, else ``local`` |
| ``WARDRIK_LOCK_TIMEOUT`` | seconds a writer waits for a log's lock | 30 |
| ``WARDRIK_POLL_S`` | seconds between a follower's stat polls | 1 with inotify, 0.2 without |
| ``WARDRIK_WATCH_STEP_MS`` | milliseconds the file watcher waits for more changes | 20 |
| ``WARDRIK_TRACEBACK`` | non-empty: an internal error also prints its traceback | off |
| ``WARDRIK_EXEC_BACKOFF_S`` | seconds ``tail --exec`` waits to retry a failed command (doubled, up to 30) | 0.5 |
| ``WARDRIK_REMOTE_INTERVAL`` | seconds between polls of the store by ``tail -f`` on a remote root | 5 |
| ``WARDRIK_CACHE`` | where remote roots are mirrored (read by ``remote.mirror``) | ``$XDG_CACHE_HOME/wardrik`` |
| ``XDG_STATE_HOME``, ``HOME`` | where the key sealing caches lives (``store.seal``) | ``~/.local/state/wardrik`` |

``from_env(env)`` given a mapping also makes it the environment in force for the running
context (``environment()``; ``cli.app.run`` calls it with the environment it was given, in a
context of its own): the layers below the CLI that need a variable of the user's (the seal
key's folder) read it there, so a command line run in-process with an environment of its own
never reads the process's.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import overload

from wardrik_cli.errors import BadInput


class BadSetting(BadInput):
    """An environment variable wardrik reads holds a value it cannot use."""


class Settings:
    """The tunables in force (a plain class: dataclasses cost start-up time)."""

    __slots__ = ("root", "deployment", "lock_timeout", "poll_s", "watch_step_ms", "traceback", "remote_interval",
                 "exec_backoff_s")

    def __init__(self, *, root: str | None = None, deployment: str | None = None,
                 lock_timeout: float = 30.0, poll_s: float | None = None, watch_step_ms: int = 20,
                 traceback: bool = False, remote_interval: float = 5.0, exec_backoff_s: float = 0.5):
        self.root, self.deployment = root, deployment
        self.lock_timeout, self.poll_s, self.watch_step_ms = lock_timeout, poll_s, watch_step_ms
        self.traceback = traceback
        self.remote_interval = remote_interval
        self.exec_backoff_s = exec_backoff_s

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        if env is not None:
            _ENVIRONMENT.set(env)  # see the module's docstring: the store reads HOME from it
        e = os.environ if env is None else env
        return cls(
            root=e.get("WARDRIK_ROOT") or None,
            deployment=e.get("WARDRIK_DEPLOYMENT"),
            lock_timeout=_seconds(e, "WARDRIK_LOCK_TIMEOUT", 30.0),
            poll_s=_seconds(e, "WARDRIK_POLL_S", None),
            watch_step_ms=_whole(e, "WARDRIK_WATCH_STEP_MS", 20),
            traceback=bool(e.get("WARDRIK_TRACEBACK")),
            remote_interval=_seconds(e, "WARDRIK_REMOTE_INTERVAL", 5.0),
            exec_backoff_s=_seconds(e, "WARDRIK_EXEC_BACKOFF_S", 0.5),
        )


_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("wardrik_environment", default=None)


def environment() -> Mapping[str, str]:
    """The environment in force: the one ``from_env`` was last given in this context (a
    command line's own), else the process's."""
    env = _ENVIRONMENT.get()
    return os.environ if env is None else env


@overload
def _seconds(env: Mapping[str, str], name: str, default: float) -> float: ...
@overload
def _seconds(env: Mapping[str, str], name: str, default: None) -> float | None: ...
def _seconds(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 86400):
        raise BadSetting(f"{name}={text!r}: give a number of seconds greater than 0 and at most 86400, e.g. 30 or 0.5")
    return value


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 60000):
        raise BadSetting(f"{name}={text!r}: give a whole number of milliseconds from 1 to 60000, e.g. 20")
    return int(text)
