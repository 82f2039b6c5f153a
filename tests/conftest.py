"""Shared fixtures: every test gets its own root, and runs the real CLI as a subprocess."""
from __future__ import annotations

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
    r = tmp_path / "root"
    r.mkdir()
    return r


def run_cli(*args: str, root: Path | None = None, input: bytes | str | None = None,
            env: dict | None = None, timeout: float = 60, check: bool = False) -> subprocess.CompletedProcess:
    """Run the real `wardrik` executable; returns the CompletedProcess (bytes stdout/stderr)."""
    cmd = [WARDRIK]
    if root is not None:
        cmd += ["--root", str(root)]
    cmd += [str(a) for a in args]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    if isinstance(input, str):
        input = input.encode()
    p = subprocess.run(cmd, input=input, capture_output=True, env=full_env, timeout=timeout)
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
