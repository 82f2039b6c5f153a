"""The README's fleet walk-through, run as written against moto's server on loopback (only the
port, the scratch folders and the executables' paths are swapped for the test's own)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import WARDRIK

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def _walkthrough() -> str:
    start = README.index("```\npython -m moto.server") + 4
    return README[start:README.index("```", start)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.subprocess
def test_the_fleet_walkthrough_runs_as_written(tmp_path):
    port = str(_free_port())
    host, evidence = tmp_path / "host1", tmp_path / "evidence"
    script = (_walkthrough().replace("5000", port).replace("/tmp/host1", str(host))
              .replace("/tmp/evidence", str(evidence)))
    bindir = str(Path(WARDRIK).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WARDRIK_"))}
    env["PATH"] = f"{bindir}:{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    # the server the block starts in the background goes when the test ends
    script = "set -e -o pipefail\ntrap 'kill %1 2>/dev/null' EXIT\n" + script
    proc = subprocess.Popen(["bash", "-c", script], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the server and anything else the block started
        except (ProcessLookupError, PermissionError):
            pass
    p = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert p.returncode == 0, (p.stdout.decode()[-2000:], p.stderr.decode()[-3000:])
    # the evidence root holds the sample's logs byte for byte, and the bucket reads like the root
    for log in (REPO / "sample_ledgers" / "acme").glob("*.jsonl"):
        assert (evidence / "acme" / log.name).read_bytes() == log.read_bytes()
    assert b"permission denied: role billing-ro lacks payouts:read" in p.stdout
    assert b"Traceback" not in p.stderr
