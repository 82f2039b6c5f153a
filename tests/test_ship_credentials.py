"""Bad credentials: a store that checks them (moto's server with authentication on, on
loopback) refuses `ship`, `pull` and a remote read with one `error:` line and exit 1; nothing
is claimed shipped."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import WARDRIK
from s3_server import free_port

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def authed_endpoint():
    port = free_port()
    # INITIAL_NO_AUTH_ACTION_COUNT=0: every request is checked against moto's IAM users
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60  # a ceiling for the server to come up, not a margin
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError as e:
            if getattr(e, "code", None) is not None:  # it answered (403 without credentials): up
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("moto's server did not start")
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.subprocess
@pytest.mark.parametrize("argv", [
    ["--root", "{root}", "ship", "s3://ledgers/fleet"],
    ["pull", "s3://ledgers/fleet", "--into", "{into}"],
    ["--root", "s3://ledgers/fleet", "page"],
])
def test_bad_credentials_are_one_error_line(tmp_path, authed_endpoint, argv):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(REPO / "sample_ledgers", root)
    args = [a.replace("{root}", str(root)).replace("{into}", str(tmp_path / "into")) for a in argv]
    env = dict(os.environ, AWS_ENDPOINT_URL=authed_endpoint, AWS_ACCESS_KEY_ID="bogus",
               AWS_SECRET_ACCESS_KEY="bogus", AWS_REGION="us-east-1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    p = subprocess.run([WARDRIK, *args], env=env, capture_output=True, timeout=120)
    assert p.returncode == 1, p.stderr
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "AWS_ACCESS_KEY_ID" in lines[0], lines
    assert p.stdout == b""
    # nothing claimed: no ship position nor registration (a target is registered only once reached)
    assert not list((root / ".wardrik").glob("ship/*"))
