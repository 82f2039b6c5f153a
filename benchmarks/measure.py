"""What several benchmarks share: timing one whole process, and a local S3 server.

- ``timed(cmd)``: (seconds, peak RSS in bytes) of one run of ``cmd``, stdout to /dev/null,
  start-up included; a failing command ends the benchmark with its stderr.
- ``moto_server()``: moto's S3 server as its own process on 127.0.0.1 (a free port), yielding
  (endpoint, a boto3 client, the environment a `wardrik` run needs to reach it); stopped after.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

S3_ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}


def timed(cmd: list[str]) -> tuple[float, int]:
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    err = p.stderr.read() if p.stderr else b""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return dt, ru.ru_maxrss * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[tuple[str, Any, dict[str, str]]]:
    import boto3

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("moto's server did not start") from None
                time.sleep(0.1)
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
                              region_name=S3_ENV["AWS_REGION"])
        yield endpoint, client, {**os.environ, **S3_ENV, "AWS_ENDPOINT_URL": endpoint}
    finally:
        server.terminate()
        server.wait()
