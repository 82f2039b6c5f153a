"""Helpers for the black-box contract tests: they only run the `wardrik` command line and look at
bytes on disk, never at the implementation (the contract in CONTRACT.md decides what is right).

``run`` runs the command line in this process by default, through its public entry
``wardrik_cli.cli.app.run(argv, env, stdin=, stdout=, stderr=)``: the same argv, environment
and bytes in and out as the executable, without a Python start-up per call. A call with
``cwd=``, a follow (``-f``, ``--watch``) or ``process=True`` launches the real executable.
``WARDRIK_TESTS_IN_PROCESS=0`` in the environment makes every call a process."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
SEQ = re.compile(r"^\d{12}$")
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
HEX32 = re.compile(r"^[0-9a-f]{32}$")

# Minimal valid data for every kept type in the protocol (required fields only).
KEPT = {
    "run.started": {},
    "run.completed": {},
    "run.failed": {"error": {"message": "boom"}},
    "message.received": {"message": {"id": "m1"}},
    "message.started": {"message": {"id": "m1"}},
    "message.completed": {"message": {"id": "m1"}},
    "reasoning.completed": {"message": {"id": "m1"}},
    "tool_call.started": {"tool": {"name": "grep", "call": {"id": "c1"}}},
    "tool_call.completed": {"tool": {"call": {"id": "c1"}}},
    "tool_call.failed": {"tool": {"call": {"id": "c1"}}},
    "input.requested": {"request": {"id": "r1"}},
    "input.received": {"request": {"id": "r1"}},
    "trigger.fired": {"trigger": {"name": "nightly"}},
}
LIVE = ["message.delta", "reasoning.delta", "tool_call.progress", "activity.changed"]
AUDIT = ["agent.created", "agent.configured", "agent.forgotten", "trigger.created", "trigger.deleted"]
REQUIRED = {
    "run.failed": ["error.message"],
    "message.received": ["message.id"],
    "message.started": ["message.id"],
    "message.completed": ["message.id"],
    "reasoning.completed": ["message.id"],
    "tool_call.started": ["tool.name", "tool.call.id"],
    "tool_call.completed": ["tool.call.id"],
    "tool_call.failed": ["tool.call.id"],
    "input.requested": ["request.id"],
    "input.received": ["request.id"],
    "trigger.fired": ["trigger.name"],
    "agent.created": ["agent.id"],
    "agent.configured": ["agent.id"],
    "agent.forgotten": ["agent.id"],
    "trigger.created": ["trigger.name"],
    "trigger.deleted": ["trigger.name"],
    "events.dropped": ["log", "count"],
}


FOLLOW_FLAGS = frozenset({"-f", "--follow", "-w", "--watch"})  # followers run until signalled: a process
IN_PROCESS = os.environ.get("WARDRIK_TESTS_IN_PROCESS", "1") != "0"


def run(*args, root: Path | None = None, input: bytes | str | None = None, env: dict | None = None,
        cwd: Path | None = None, timeout: float = 60, process: bool = False) -> subprocess.CompletedProcess:
    """`wardrik [--root ROOT] ARGS...` with the environment less WARDRIK_ROOT/WARDRIK_DEPLOYMENT,
    NO_COLOR=1, then ``env``. In this process unless ``cwd``, a follow or ``process`` asks for
    the executable (``timeout`` bounds a process only). Returns a CompletedProcess (bytes)."""
    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    cmd = [WARDRIK, *argv]
    full_env = dict(os.environ)
    full_env.pop("WARDRIK_ROOT", None)
    full_env.pop("WARDRIK_DEPLOYMENT", None)
    full_env["NO_COLOR"] = "1"
    if env:
        full_env.update(env)
    if isinstance(input, str):
        input = input.encode()
    if process or cwd is not None or not IN_PROCESS or any(a in FOLLOW_FLAGS for a in argv):
        return subprocess.run(cmd, input=input, capture_output=True, env=full_env, cwd=cwd, timeout=timeout)
    from wardrik_cli.cli.app import run as run_argv

    out, err = io.BytesIO(), io.BytesIO()
    code = run_argv(argv, full_env, stdin=io.BytesIO(input or b""), stdout=out, stderr=err)
    return subprocess.CompletedProcess(cmd, code, out.getvalue(), err.getvalue())


def ok(p: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout!r}\nstderr: {p.stderr.decode(errors='replace')}"
    assert b"Traceback" not in p.stderr
    return p


def assert_refused(p: subprocess.CompletedProcess, code: int | None = 2) -> None:
    """A refused command: the exit code, one `error:` line on stderr, no traceback."""
    err = p.stderr.decode(errors="replace")
    if code is None:
        assert p.returncode != 0, f"expected failure, got 0; stderr: {err}"
    else:
        assert p.returncode == code, f"expected exit {code}, got {p.returncode}\nstdout: {p.stdout!r}\nstderr: {err}"
    assert "Traceback" not in err, err
    error_lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(error_lines) == 1, f"expected exactly one 'error:' line on stderr, got: {err!r}"


def jsonl(out: bytes) -> list[dict]:
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def log_path(root: Path, log: str) -> Path:
    return root / (log + ".jsonl")


def append(root: Path, log: str, type_: str, data: dict | None = None, *extra) -> dict:
    args = ["append", log, type_]
    if data is not None:
        args += ["--data", json.dumps(data)]
    p = ok(run(*args, *extra, root=root))
    events = jsonl(p.stdout)
    assert len(events) == 1, p.stdout
    return events[0]


def batch(root: Path, log: str, items: list[dict]) -> list[dict]:
    body = "".join(json.dumps(i) + "\n" for i in items)
    p = ok(run("append", log, "--batch", "-", root=root, input=body))
    events = jsonl(p.stdout)
    assert len(events) == len(items)
    return events


def fill(root: Path, log: str, n: int) -> list[dict]:
    """n kept events in one batch (message.received, ids m1..mn)."""
    return batch(root, log, [{"type": "message.received", "data": {"message": {"id": f"m{i}"}}}
                             for i in range(1, n + 1)])


def seqs(events: list[dict]) -> list[int]:
    return [int(e["sequence"]) for e in events]


def log_of(event: dict) -> str:
    m = re.match(r"^wardrik://[a-z0-9][a-z0-9.-]*/agents/(.+)$", event["source"])
    assert m, event["source"]
    return m.group(1)


def encode_cursor(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def b64(raw: bytes | str, *, urlsafe: bool = True, pad: bool = False) -> str:
    if isinstance(raw, str):
        raw = raw.encode()
    s = (base64.urlsafe_b64encode(raw) if urlsafe else base64.standard_b64encode(raw)).decode()
    return s if pad else s.rstrip("=")


def decode_cursor(cursor: str) -> dict:
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    obj = json.loads(raw)
    assert raw == json.dumps(obj, separators=(",", ":"), sort_keys=True).encode(), \
        f"cursor is not compact JSON with sorted keys: {raw!r}"
    assert "=" not in cursor and "+" not in cursor and "/" not in cursor, f"not URL-safe unpadded: {cursor}"
    return obj


def snapshot(root: Path) -> dict:
    """Every directory and file under root (with a hash of its bytes)."""
    snap = {}
    if not root.exists():
        return snap
    for dirpath, _dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        snap[rel + "/"] = None
        for f in filenames:
            p = Path(dirpath) / f
            snap[os.path.join(rel, f)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return snap


def files_containing(root: Path, needle: bytes, exclude: Path | None = None) -> list[Path]:
    found = []
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = Path(dirpath) / f
            if exclude is not None and p == exclude:
                continue
            if needle in p.read_bytes():
                found.append(p)
    return found


def page_json(root: Path, *args) -> dict:
    p = ok(run("page", *args, "--format", "json", root=root))
    doc = json.loads(p.stdout)
    return doc
