"""A real S3-compatible server on loopback for the fleet tests: moto's, started once per test
process (``ThreadedMotoServer`` on 127.0.0.1, a free port), and a fresh bucket per test.

The endpoint and credentials reach wardrik as they would in production, through the standard
``AWS_*`` variables (set in the test's environment, so in-process runs and subprocesses alike
see them). ``Bucket`` reads and tampers with what is stored through boto3, a second client,
so the tests never judge the shipper by its own code.
"""
from __future__ import annotations

import re
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

KEY = re.compile(r"(?:.*/)?v1/deployment=([^/]+)/kind=(agents|audit)/log=([^/]+)/day=(\d{4}-\d\d-\d\d)/(\d{12})\.jsonl")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_env(endpoint: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1"}


def free_port() -> int:
    """A port nothing listens on (bound, then released): an unreachable endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Bucket:
    name: str
    prefix: str
    env: dict[str, str]
    client: Any

    @property
    def url(self) -> str:
        return f"s3://{self.name}/{self.prefix}"

    def keys(self) -> list[str]:
        out: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name):
            out += [o["Key"] for o in page.get("Contents", [])]
        return sorted(out)

    def segments(self) -> list[str]:
        return [k for k in self.keys() if KEY.fullmatch(k)]

    def get(self, key: str) -> tuple[bytes, dict[str, str]]:
        o = self.client.get_object(Bucket=self.name, Key=key)
        return o["Body"].read(), o["Metadata"]

    def put(self, key: str, body: bytes, metadata: dict[str, str]) -> None:
        self.client.put_object(Bucket=self.name, Key=key, Body=body, Metadata=metadata)


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    import boto3

    env = s3_env(s3_endpoint)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    name = f"wardrik-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return Bucket(name, "fleet", env, client)


# ---------------------------------------------------------------------------
# the two kinds of target, read without wardrik
# ---------------------------------------------------------------------------
class FolderTarget:
    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.url = f"file://{path}"

    def segments(self) -> list[str]:
        return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob("*.jsonl")
                      if not p.name.startswith("."))

    def get(self, key: str) -> tuple[bytes, dict]:
        meta = orjson.loads((self.path / (key + ".meta")).read_bytes())
        return (self.path / key).read_bytes(), {"wardrik-last-sequence": f"{meta['last_sequence']:012d}",
                                                 "wardrik-sha256": meta["sha256"], "wardrik-root-id": meta["root_id"]}

    def put(self, key: str, body: bytes, metadata: dict) -> None:
        (self.path / key).write_bytes(body)

    def copy(self, key: str, to: str) -> None:
        for end in ("", ".meta"):
            (self.path / (to + end)).parent.mkdir(parents=True, exist_ok=True)
            (self.path / (to + end)).write_bytes((self.path / (key + end)).read_bytes())

    def delete(self, key: str) -> None:
        for end in ("", ".meta"):
            (self.path / (key + end)).unlink()


class S3Target:
    def __init__(self, b: Bucket):
        self.b, self.url = b, b.url

    def segments(self) -> list[str]:
        return self.b.segments()

    def get(self, key: str) -> tuple[bytes, dict]:
        return self.b.get(key)

    def put(self, key: str, body: bytes, metadata: dict) -> None:
        self.b.put(key, body, metadata)

    def copy(self, key: str, to: str) -> None:
        self.b.client.copy_object(Bucket=self.b.name, Key=to, CopySource={"Bucket": self.b.name, "Key": key})

    def delete(self, key: str) -> None:
        self.b.client.delete_object(Bucket=self.b.name, Key=key)


@pytest.fixture(params=["s3", "file"])
def target(request, tmp_path):
    if request.param == "s3":
        return S3Target(request.getfixturevalue("bucket"))
    return FolderTarget(tmp_path / "share")
