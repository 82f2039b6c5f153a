"""Shared fixtures: every test gets its own root, and runs the real CLI.

``run_cli`` runs the command line in this process by default (``wardrik_cli.cli.app.run``
over the same argv and environment, with in-memory streams): the same code as the
executable, without a Python start-up per call. A follow (``-f``, ``--watch``) or
``process=True`` launches the real ``wardrik`` executable instead; tests that need a real
process (signals, kill -9, terminals, fault injection, /proc/<pid>/io, start-up) are marked
``subprocess``. ``WARDRIK_TESTS_IN_PROCESS=0`` in the environment runs every call as a
process (to check that both ways agree).
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    # No test may see the developer's own root or deployment.
    monkeypatch.delenv("WARDRIK_ROOT", raising=False)
    monkeypatch.delenv("WARDRIK_DEPLOYMENT", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root as `wardrik init` makes it (a folder with .wardrik/): compact and audit record
    refuse a folder that is not one."""
    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    return r


# What makes a command line a follower: it runs until signalled, so never in this process.
FOLLOW_FLAGS = frozenset({"-f", "--follow", "-w", "--watch"})
IN_PROCESS = os.environ.get("WARDRIK_TESTS_IN_PROCESS", "1") != "0"


def in_process(argv: list[str], env: dict, input: bytes | None = None) -> subprocess.CompletedProcess:
    """``wardrik ARGV`` through ``cli.app.run`` in this process: a CompletedProcess like the
    executable's (exit code, stdout and stderr bytes); stdin is ``input`` (else empty)."""
    from wardrik_cli.cli.app import run

    out, err = io.BytesIO(), io.BytesIO()
    code = run(argv, env, stdin=io.BytesIO(input or b""), stdout=out, stderr=err)
    return subprocess.CompletedProcess([WARDRIK, *argv], code, out.getvalue(), err.getvalue())


def needs_process(argv: list[str], process: bool = False) -> bool:
    return process or not IN_PROCESS or any(a in FOLLOW_FLAGS for a in argv)


def run_cli(*args: str, root: Path | None = None, input: bytes | str | None = None,
            env: dict | None = None, timeout: float = 60, check: bool = False,
            process: bool = False) -> subprocess.CompletedProcess:
    """Run `wardrik [--root ROOT] ARGS...` (in this process unless it follows or ``process``);
    returns a CompletedProcess (bytes stdout/stderr). ``timeout`` bounds a process only."""
    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    if isinstance(input, str):
        input = input.encode()
    cmd = [WARDRIK, *argv]
    if needs_process(argv, process):
        p = subprocess.run(cmd, input=input, capture_output=True, env=full_env, timeout=timeout)
    else:
        p = in_process(argv, full_env, input)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p


@pytest.fixture
def cli(root):
    """cli(*args) runs wardrik against this test's root."""
    def _run(*args, **kw):
        return run_cli(*args, root=root, **kw)
    return _run


def jsonl(out: bytes) -> list[dict]:
    return [orjson.loads(l) for l in out.splitlines() if l.strip()]


@pytest.fixture(scope="session")
def _seal_key_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("state-home")


@pytest.fixture(autouse=True)
def _own_seal_key(monkeypatch, _seal_key_home):
    # The key that seals the caches under a root (store.seal) lives under $XDG_STATE_HOME:
    # the test session's own (shared by in-process runs and the executable), never the
    # developer's home.
    monkeypatch.setenv("XDG_STATE_HOME", str(_seal_key_home))
