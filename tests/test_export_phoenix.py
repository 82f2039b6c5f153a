"""A run exported to a real tracing backend and read back through its own API: Arize Phoenix
(from PyPI, in the test extra), started here on 127.0.0.1 with its own SQLite in a temp folder.

`wardrik export otlp --endpoint` sends sample_ledgers' acme/triage over OTLP/HTTP; Phoenix's
REST API (`/v1/projects/default/spans`) must then hold every span `export otlp -o FILE` writes
for the same log, with the same trace ids (the run ids), span ids, parents, names, times and
GenAI token counts: what a team sees when it opens the run in Phoenix."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from conftest import run_cli
from s3_server import free_port

SAMPLES = Path(__file__).resolve().parent.parent / "sample_ledgers"
LOG = "acme/triage"


def _get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
        return r.read()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    exe = Path(sys.executable).parent / "phoenix"
    assert exe.exists(), "the test extra installs arize-phoenix"
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(PHOENIX_WORKING_DIR=str(work), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(grpc), PHOENIX_TELEMETRY_ENABLED="false", DO_NOT_TRACK="1")
    log = open(work / "serve.log", "wb")
    p = subprocess.Popen([str(exe), "serve"], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a generous ceiling: it is up in about 15 s here
    try:
        while True:
            if p.poll() is not None:
                pytest.fail(f"phoenix serve exited {p.returncode}: {(work / 'serve.log').read_text()[-2000:]}")
            try:
                if _get(f"{base}/healthz", timeout=2):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix did not answer in 180 s: {(work / 'serve.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        p.terminate()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def _file_spans(tmp_path: Path) -> dict[str, dict]:
    out = tmp_path / "spans.jsonl"
    p = run_cli("export", "otlp", LOG, "-o", str(out), root=SAMPLES)
    assert p.returncode == 0, p.stderr
    spans = {}
    for line in out.read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    spans[s["spanId"]] = s
    return spans


def _ns(iso: str) -> int:
    dt = datetime.fromisoformat(iso)
    return int(dt.timestamp()) * 10**9 + dt.microsecond * 1000


@pytest.mark.subprocess
def test_a_run_opens_in_phoenix(phoenix, tmp_path):
    want = _file_spans(tmp_path)
    assert len(want) > 5
    p = run_cli("export", "otlp", LOG, "--endpoint", f"{phoenix}/v1/traces", root=SAMPLES, process=True)
    assert p.returncode == 0, p.stderr
    got: dict[str, dict] = {}
    deadline = time.monotonic() + 60  # Phoenix stores what it receives a moment later
    while len(got) < len(want) and time.monotonic() < deadline:
        doc = json.loads(_get(f"{phoenix}/v1/projects/default/spans?limit=1000"))
        got = {s["context"]["span_id"]: s for s in doc["data"]}
        if len(got) < len(want):
            time.sleep(0.5)
    assert set(got) == set(want)
    for sid, w in want.items():
        g = got[sid]
        assert g["name"] == w["name"], sid
        assert g["context"]["trace_id"] == w["traceId"]
        assert (g["parent_id"] or "") == w.get("parentSpanId", "")
        assert _ns(g["start_time"]) == int(w["startTimeUnixNano"]) // 1000 * 1000
        assert _ns(g["end_time"]) == int(w["endTimeUnixNano"]) // 1000 * 1000
        attrs = {a["key"]: a["value"] for a in w.get("attributes", [])}
        for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
            if key in attrs:
                assert g["attributes"][key] == int(attrs[key]["intValue"]), (sid, key)
    roots = [s for s in got.values() if s["parent_id"] is None]
    assert roots and all(s["name"] == f"invoke_agent {LOG}" for s in roots)
    assert {s["span_kind"] for s in got.values()} >= {"AGENT", "LLM"}  # Phoenix reads the GenAI names
