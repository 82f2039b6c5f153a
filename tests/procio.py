"""Run a command and read its /proc/<pid>/io before it is reaped: bytes it really read."""
from __future__ import annotations

import os
import subprocess


def run_with_io(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, dict[str, int]]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    out_chunks, err = [], b""
    # Drain stdout while it runs so a big output cannot block it; stderr is small.
    while True:
        chunk = p.stdout.read(1 << 16)
        if not chunk:
            break
        out_chunks.append(chunk)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: /proc/<pid>/io still there
    with open(f"/proc/{p.pid}/io") as f:
        io = {k: int(v) for k, v in (line.split(": ") for line in f.read().splitlines())}
    err = p.stderr.read()
    p.wait()
    return subprocess.CompletedProcess(cmd, p.returncode, b"".join(out_chunks), err), io
