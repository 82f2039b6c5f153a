"""``wardrik export otlp``: runs as OpenTelemetry traces, checked against the events themselves.

A real OTLP/HTTP receiver (``http.server`` on 127.0.0.1, started here) records what is POSTed;
bodies are decoded with the OpenTelemetry proto package (protobuf) or as JSON, and every span's
trace id, span id, parent, name, kind, attributes, status and times are compared with what the
stored events say (the expectation is built here from the events, not by the code under test).
"""
from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import threading
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli
from wardrik_cli.errors import MissingExtra

LOG = "acme/triage"
MODEL = "anthropic:claude-haiku-4-5"


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("OTEL_"):
            monkeypatch.delenv(k)


# -- a receiver ------------------------------------------------------------------------------
class Receiver:
    """An OTLP/HTTP endpoint on 127.0.0.1: records (path, headers, body) of each POST."""

    def __init__(self, status: int = 200):
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                n = int(self.headers.get("Content-Length") or 0)
                outer.posts.append((self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(n)))
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[dict]:
        out = []
        for _path, headers, body in self.posts:
            if headers.get("content-type") == "application/json":
                out += spans_of_json(orjson.loads(body))
            else:
                out += spans_of_proto(body)
        return out


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


# -- decoding, to one normal form ------------------------------------------------------------
def spans_of_proto(body: bytes) -> list[dict]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest.FromString(body)
    out = []
    for rs in req.resource_spans:
        res = {a.key: a.value.string_value for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            assert ss.scope.name == "wardrik"
            for sp in ss.spans:
                out.append({
                    "service": res["service.name"], "trace": sp.trace_id.hex(), "span": sp.span_id.hex(),
                    "parent": sp.parent_span_id.hex() or None, "name": sp.name, "kind": sp.kind,
                    "start": sp.start_time_unix_nano, "end": sp.end_time_unix_nano,
                    "attrs": {a.key: _pb_value(a.value) for a in sp.attributes},
                    "status": (sp.status.code, sp.status.message)})
    return out


def _pb_value(v):
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_pb_value(x) for x in v.array_value.values]
    return getattr(v, which)


def spans_of_json(req: dict) -> list[dict]:
    out = []
    for rs in req["resourceSpans"]:
        res = {a["key"]: a["value"]["stringValue"] for a in rs["resource"]["attributes"]}
        for ss in rs["scopeSpans"]:
            assert ss["scope"]["name"] == "wardrik"
            for sp in ss["spans"]:
                out.append({
                    "service": res["service.name"], "trace": sp["traceId"], "span": sp["spanId"],
                    "parent": sp.get("parentSpanId") or None, "name": sp["name"], "kind": sp["kind"],
                    "start": int(sp["startTimeUnixNano"]), "end": int(sp["endTimeUnixNano"]),
                    "attrs": {a["key"]: _json_value(a["value"]) for a in sp["attributes"]},
                    "status": (sp["status"].get("code", 0), sp["status"].get("message", ""))})
    return out


def _json_value(v):
    (kind, x), = v.items()
    if kind == "arrayValue":
        return [_json_value(y) for y in x["values"]]
    return int(x) if kind == "intValue" else x


# -- the expectation, from the events --------------------------------------------------------
def ns(t: str) -> int:
    dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def sid(log: str, trace: str, kind: str, ident: str) -> str:
    return hashlib.sha256(f"{log}\0{trace}\0{kind}\0{ident}".encode()).hexdigest()[:16]


def events_of(root: Path, log: str = LOG) -> list[dict]:
    return [orjson.loads(l) for l in (root / (log + ".jsonl")).read_bytes().splitlines()]


def by_type(events: list[dict], short: str) -> list[dict]:
    return [e for e in events if e["type"] == "wardrik." + short]


def trace_of(e: dict) -> str:
    return e["traceparent"][3:35]


def append(cli, items: list[tuple[str, dict]], log: str = LOG):
    body = "\n".join(json.dumps({"type": t, "data": d}) for t, d in items) + "\n"
    p = cli("append", log, "--batch", "-", input=body)
    assert p.returncode == 0, p.stderr
    return jsonl(p.stdout)


def a_run(cli, n: int, *, fail_tool: bool = False, end: str = "run.completed", log: str = LOG) -> None:
    """A run: a model call (with usage), a tool call (failed if asked), a wait on a person,
    another model call; ``end`` None leaves it open."""
    items = [
        ("run.started", {"task": f"task {n}", "session": {"id": "conv-1"}}),
        ("message.started", {"message": {"id": f"m{n}a"}, "model": MODEL}),
        ("message.completed", {"message": {"id": f"m{n}a"}, "stop_reason": "tool_use", "text": f"thinking {n}",
                               "usage": {"input_tokens": 1204 + n, "output_tokens": 310,
                                         "cache_read": {"input_tokens": 100}}, "cost_usd": 0.0123}),
        ("tool_call.started", {"tool": {"name": "query_metrics", "call": {"id": f"c{n}"},
                                        "args": {"service": "checkout"}}}),
    ]
    if fail_tool:
        items.append(("tool_call.failed", {"tool": {"call": {"id": f"c{n}"}},
                                           "error": {"message": "timeout after 30s\nstack", "type": "TimeoutError"}}))
    else:
        items.append(("tool_call.completed", {"tool": {"call": {"id": f"c{n}"}}, "output": f"p99 {n} ms"}))
    items += [
        ("input.requested", {"request": {"id": f"r{n}"}, "prompt": "roll back?"}),
        ("input.received", {"request": {"id": f"r{n}"}, "answer": "yes"}),
        ("message.started", {"message": {"id": f"m{n}b"}}),  # no model here: the run's has none either
        ("message.completed", {"message": {"id": f"m{n}b"}, "usage": {"input_tokens": 5, "output_tokens": 7}}),
    ]
    if end == "run.completed":
        items.append(("run.completed", {"answer": f"answer {n}"}))
    elif end == "run.failed":
        items.append(("run.failed", {"error": {"message": "model call timed out"}}))
    append(cli, items, log)


def expected(events: list[dict], log: str = LOG, content: bool = False) -> list[dict]:
    """The spans the events stand for, worked out here from the conventions."""
    out = []
    starts = {}
    run = None
    for e in events:
        t, d = e["type"][len("wardrik."):], e["data"]
        if t == "run.started":
            run = e
            continue
        if t in ("message.started", "tool_call.started", "input.requested"):
            key = d.get("message", d.get("request", d.get("tool", {}).get("call")))["id"]
            starts[key] = e
            continue
        if t in ("run.completed", "run.failed"):
            tr = trace_of(run)
            attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": log, "wardrik.run.id": tr,
                     "wardrik.log": log, "gen_ai.conversation.id": run["data"]["session"]["id"]}
            status = (0, "")
            if t == "run.failed":
                attrs["error.type"] = "_OTHER"
                status = (2, d["error"]["message"])
            if content:
                attrs["gen_ai.input.messages"] = json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": run["data"]["task"]}]}],
                    separators=(",", ":"))
                if t == "run.completed":
                    attrs["gen_ai.output.messages"] = json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": d["answer"]}]}],
                        separators=(",", ":"))
            out.append({"service": log, "trace": tr, "span": sid(log, tr, "run", ""), "parent": None,
                        "name": f"invoke_agent {log}", "kind": 1, "start": ns(run["time"]), "end": ns(e["time"]),
                        "attrs": attrs, "status": status})
            run = None
            continue
        key = d.get("message", d.get("request", d.get("tool", {}).get("call")))["id"]
        s = starts.pop(key)
        tr = trace_of(s)
        parent = sid(log, trace_of(run), "run", "") if run is not None else None
        status = (0, "")
        if t == "message.completed":
            model = s["data"].get("model")
            attrs = {"gen_ai.operation.name": "chat"}
            if model:
                attrs["gen_ai.provider.name"], attrs["gen_ai.request.model"] = model.split(":")
            attrs["wardrik.message.id"] = key
            for k, v in d.get("usage", {}).items():
                if isinstance(v, dict):
                    for k2, v2 in v.items():
                        attrs[f"gen_ai.usage.{k}.{k2}"] = v2
                else:
                    attrs[f"gen_ai.usage.{k}"] = v
            if "stop_reason" in d:
                attrs["gen_ai.response.finish_reasons"] = [d["stop_reason"]]
            if "cost_usd" in d:
                attrs["wardrik.cost_usd"] = d["cost_usd"]
            if content and "text" in d:
                msg = {"role": "assistant", "parts": [{"type": "text", "content": d["text"]}]}
                if "stop_reason" in d:
                    msg["finish_reason"] = d["stop_reason"]
                attrs["gen_ai.output.messages"] = json.dumps([msg], separators=(",", ":"))
            name, kind, skind = (f"chat {model.split(':')[1]}" if model else "chat"), "model", 3
        elif t.startswith("tool_call."):
            tname = s["data"]["tool"]["name"]
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tname, "gen_ai.tool.call.id": key}
            if content:
                attrs["gen_ai.tool.call.arguments"] = json.dumps(s["data"]["tool"]["args"], separators=(",", ":"))
            if t == "tool_call.failed":
                attrs["error.type"] = d["error"]["type"]
                status = (2, d["error"]["message"].splitlines()[0] + " …")
            elif content:
                attrs["gen_ai.tool.call.result"] = d["output"]
            name, kind, skind = f"execute_tool {tname}", "tool", 1
        else:
            attrs = {"wardrik.request.id": key}
            if content:
                attrs["wardrik.input.prompt"] = s["data"]["prompt"]
                attrs["wardrik.input.answer"] = d["answer"]
            name, kind, skind = "wait_for_input", "wait", 1
        out.append({"service": log, "trace": tr, "span": sid(log, tr, kind, key), "parent": parent, "name": name,
                    "kind": skind, "start": ns(s["time"]), "end": ns(e["time"]), "attrs": attrs, "status": status})
    return out


def keyed(spans: list[dict]) -> dict[str, dict]:
    out = {s["span"]: s for s in spans}
    assert len(out) == len(spans), "a span id came twice"
    return out


# -- the tests -------------------------------------------------------------------------------
def test_endpoint_gets_every_span_as_the_events_say(root, cli, receiver):
    a_run(cli, 1)
    a_run(cli, 2, fail_tool=True, end="run.failed")
    p = cli("export", "otlp", "--endpoint", receiver.url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b""
    assert receiver.posts and all(path == "/v1/traces" for path, _h, _b in receiver.posts)
    assert all(h["content-type"] == "application/x-protobuf" for _p, h, _b in receiver.posts)
    got = keyed(receiver.spans())
    want = keyed(expected(events_of(root)))
    assert len(want) == 2 * 5  # per run: itself, two model calls, a tool call, a wait
    assert got == want
    # the shape itself, spelled out once: the run is the parent of its calls, in its trace
    runs = [s for s in got.values() if s["name"].startswith("invoke_agent")]
    started = by_type(events_of(root), "run.started")
    assert sorted(r["trace"] for r in runs) == sorted(e["data"].get("run", {}).get("id", trace_of(e)) for e in started)
    for s in got.values():
        if s not in runs:
            parent = got[s["parent"]]
            assert parent in runs and parent["trace"] == s["trace"]
            assert parent["start"] <= s["start"] <= s["end"] <= parent["end"]
    failed = [s for s in got.values() if s["status"][0] == 2]
    assert {s["name"] for s in failed} == {"execute_tool query_metrics", f"invoke_agent {LOG}"}


def test_file_output_is_otlp_json_lines_with_the_same_spans(root, cli, receiver, tmp_path):
    a_run(cli, 1)
    a_run(cli, 2, fail_tool=True)
    out = tmp_path / "spans.jsonl"
    p = cli("export", "otlp", "-o", str(out))
    assert p.returncode == 0, p.stderr
    lines = out.read_bytes().splitlines()
    assert lines and all(l.startswith(b'{"resourceSpans":[') for l in lines)
    from_file = keyed([s for l in lines for s in spans_of_json(orjson.loads(l))])
    assert from_file == keyed(expected(events_of(root)))
    # -o - writes the same lines to stdout; and the same spans go to an endpoint
    p = cli("export", "otlp", "-o", "-")
    assert keyed([s for l in p.stdout.splitlines() for s in spans_of_json(orjson.loads(l))]) == from_file
    assert cli("export", "otlp", "--endpoint", receiver.url).returncode == 0
    assert keyed(receiver.spans()) == from_file


@pytest.mark.parametrize("how", ["json", "proto"])
def test_each_logs_namespace_is_the_deployment_its_events_name(root, cli, receiver, how):
    """Before, every resource got the reader's deployment ('local' on an evidence copy), so
    a root that holds two deployments' logs filed every trace under one."""
    a_run(lambda *a, **k: cli(*a, "--deployment", "ops-eu", **k), 1, log="ops/pager")
    a_run(lambda *a, **k: cli(*a, "--deployment", "acme-prod", **k), 2)
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf" if how == "proto" else "http/json"}
    assert cli("export", "otlp", "--endpoint", receiver.url, env=env).returncode == 0
    seen: dict[str, set[str]] = {}
    for _path, _headers, body in receiver.posts:
        if how == "json":
            for rs in orjson.loads(body)["resourceSpans"]:
                attrs = {a["key"]: a["value"]["stringValue"] for a in rs["resource"]["attributes"]}
                seen.setdefault(attrs["service.name"], set()).add(attrs["service.namespace"])
        else:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

            req = ExportTraceServiceRequest.FromString(body)
            for rs in req.resource_spans:
                attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
                seen.setdefault(attrs["service.name"], set()).add(attrs["service.namespace"])
    assert seen == {"ops/pager": {"ops-eu"}, LOG: {"acme-prod"}}, seen


def test_file_output_may_be_a_device_or_a_fifo(root, cli, tmp_path):
    """-o FILE that is not a regular file (/dev/null, a FIFO a reader drains): written, not
    fsynced (it has nothing to sync), exit 0."""
    import threading

    a_run(cli, 1)
    p = cli("export", "otlp", "-o", "/dev/null")
    assert (p.returncode, p.stderr) == (0, b""), p.stderr
    fifo = tmp_path / "spans.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    p = cli("export", "otlp", "-o", str(fifo))
    reader.join(60)
    assert (p.returncode, p.stderr) == (0, b""), p.stderr
    assert got and got[0].startswith(b'{"resourceSpans":[')


def test_content_only_with_the_flag(root, cli, receiver):
    a_run(cli, 1)
    assert cli("export", "otlp", "--endpoint", receiver.url).returncode == 0
    plain = keyed(receiver.spans())
    receiver.posts.clear()
    assert cli("export", "otlp", "--endpoint", receiver.url, "--content").returncode == 0
    rich = keyed(receiver.spans())
    assert rich == keyed(expected(events_of(root), content=True))
    assert plain.keys() == rich.keys()
    texts = ("thinking 1", "p99 1 ms", "checkout", "task 1", "answer 1", "roll back?")
    for s in plain.values():
        assert not any(t in str(v) for v in s["attrs"].values() for t in texts), s
    shown = " ".join(str(v) for s in rich.values() for v in s["attrs"].values())
    assert all(t in shown for t in texts)


def test_cursor_file_exports_only_what_is_new_and_repeats_keep_ids(root, cli, receiver, tmp_path):
    cur = tmp_path / "otlp.cursor"
    a_run(cli, 1)
    assert cli("export", "otlp", "--endpoint", receiver.url, "--cursor-file", str(cur)).returncode == 0
    first = keyed(receiver.spans())
    assert len(first) == 5 and cur.exists()
    receiver.posts.clear()
    assert cli("export", "otlp", "--endpoint", receiver.url, "--cursor-file", str(cur)).returncode == 0
    assert receiver.spans() == []  # nothing new
    a_run(cli, 2)
    assert cli("export", "otlp", "--endpoint", receiver.url, "--cursor-file", str(cur)).returncode == 0
    second = keyed(receiver.spans())
    assert len(second) == 5 and not (second.keys() & first.keys())
    assert {s["attrs"].get("wardrik.message.id") for s in second.values()} >= {"m2a", "m2b"}
    # exporting everything again gives the very same spans, ids included: a repeat replaces
    receiver.posts.clear()
    assert cli("export", "otlp", "--endpoint", receiver.url).returncode == 0
    assert keyed(receiver.spans()) == {**first, **second}
    # the cursor is the log's end
    head = cli("head", LOG).stdout.decode().strip()
    assert cur.read_text().strip() == head


def test_a_run_still_open_is_exported_when_it_ends(root, cli, receiver, tmp_path):
    cur = tmp_path / "otlp.cursor"
    a_run(cli, 1, end=None)  # open: every call ended, the run did not
    append(cli, [("tool_call.started", {"tool": {"name": "search_logs", "call": {"id": "slow"}}})])
    assert cli("export", "otlp", "--endpoint", receiver.url, "--cursor-file", str(cur)).returncode == 0
    early = keyed(receiver.spans())
    assert len(early) == 4 and not any(s["name"].startswith("invoke_agent") for s in early.values())
    run_trace = trace_of(by_type(events_of(root), "run.started")[0])
    assert all(s["parent"] == sid(LOG, run_trace, "run", "") for s in early.values())
    receiver.posts.clear()
    append(cli, [("tool_call.completed", {"tool": {"call": {"id": "slow"}}, "output": "none"}),
                 ("run.completed", {"answer": "done"})])
    assert cli("export", "otlp", "--endpoint", receiver.url, "--cursor-file", str(cur)).returncode == 0
    late = keyed(receiver.spans())
    events = events_of(root)
    whole = keyed(expected(events))
    # the run and the call that spanned the first export, each whole (start from its start event)
    assert late == {k: whole[k] for k in late}
    assert {s["name"] for s in late.values()} == {f"invoke_agent {LOG}", "execute_tool search_logs"}
    slow = whole[sid(LOG, run_trace, "tool", "slow")]
    assert slow["start"] == ns([e for e in by_type(events, "tool_call.started")
                                if e["data"]["tool"]["call"]["id"] == "slow"][0]["time"])
    assert {**early, **late} == whole


def test_unreachable_endpoint_fails_in_one_line_and_keeps_the_cursor(root, cli, tmp_path):
    a_run(cli, 1)
    cur = tmp_path / "otlp.cursor"
    url = f"http://127.0.0.1:{free_port()}"
    p = cli("export", "otlp", "--endpoint", url, "--cursor-file", str(cur))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert url in err and "exported" not in err
    assert p.stdout == b""
    assert not cur.exists()  # no cursor written
    # an existing cursor file stays as it was
    cur.write_text("eyJhY21lL3RyaWFnZSI6MX0\n")  # {"acme/triage":1}
    before = cur.read_bytes()
    p = cli("export", "otlp", "--endpoint", url, "--cursor-file", str(cur))
    assert p.returncode == 1 and cur.read_bytes() == before


def test_a_refusing_endpoint_is_a_failure_too(root, cli, tmp_path):
    a_run(cli, 1)
    r = Receiver(status=400)
    try:
        cur = tmp_path / "c"
        p = cli("export", "otlp", "--endpoint", r.url, "--cursor-file", str(cur))
    finally:
        r.close()
    assert p.returncode == 1 and b"HTTP 400" in p.stderr and not cur.exists()


def test_output_and_endpoint_together_are_refused(root, cli, tmp_path):
    a_run(cli, 1)
    p = cli("export", "otlp", "-o", str(tmp_path / "x.jsonl"), "--endpoint", "http://127.0.0.1:4318")
    assert p.returncode == 2 and p.stderr.startswith(b"error: ") and b"--endpoint" in p.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_nowhere_to_send_is_refused(root, cli):
    a_run(cli, 1)
    p = cli("export", "otlp")
    assert p.returncode == 2 and b"-o FILE" in p.stderr and b"OTEL_EXPORTER_OTLP_ENDPOINT" in p.stderr


def test_otel_environment_is_honoured(root, cli, receiver):
    a_run(cli, 1)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url + "/otel",
           "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20abc,x-team=sre",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    p = cli("export", "otlp", env=env)
    assert p.returncode == 0, p.stderr
    (path, headers, body), = receiver.posts  # header names: HTTP's are case-insensitive
    assert path == "/otel/v1/traces"  # the base endpoint gets /v1/traces, as the specification says
    assert headers["authorization"] == "Basic abc" and headers["x-team"] == "sre"
    assert headers["content-type"] == "application/json"
    assert keyed(spans_of_json(orjson.loads(body))) == keyed(expected(events_of(root)))
    # the traces endpoint is taken as it is; --endpoint wins over both
    receiver.posts.clear()
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.url + "/exact"
    assert cli("export", "otlp", env=env).returncode == 0
    assert receiver.posts[0][0] == "/exact"
    receiver.posts.clear()
    assert cli("export", "otlp", "--endpoint", receiver.url + "/mine", env=env).returncode == 0
    assert receiver.posts[0][0] == "/mine"


@pytest.mark.parametrize("env,words", [
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, b"gRPC is not supported"),
    ({"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, b"not key=value"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, b"http:// or https://"),
])
def test_bad_otel_environment_is_refused(root, cli, env, words):
    a_run(cli, 1)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", **env}
    p = cli("export", "otlp", env=env)
    assert p.returncode == 2 and words in p.stderr, p.stderr


def test_run_and_since_choose_what_is_exported(root, cli, tmp_path):
    a_run(cli, 1)
    a_run(cli, 2)
    events = events_of(root)
    second = trace_of(by_type(events, "run.started")[1])
    p = cli("export", "otlp", "-o", "-", "--run", second[:8])
    got = keyed([s for l in p.stdout.splitlines() for s in spans_of_json(orjson.loads(l))])
    assert got and {s["trace"] for s in got.values()} == {second}
    assert got == {k: v for k, v in keyed(expected(events)).items() if v["trace"] == second}
    # --since: the spans that end at or after it, each whole
    at = by_type(events, "input.received")[1]["time"]
    p = cli("export", "otlp", "-o", "-", "--since", at)
    got = keyed([s for l in p.stdout.splitlines() for s in spans_of_json(orjson.loads(l))])
    want = {k: v for k, v in keyed(expected(events)).items() if v["end"] >= ns(at)}
    assert got == want and len(want) == 3  # the wait, the last model call, the run


def test_missing_extra_names_the_pip_command():
    from wardrik_cli.extras import need

    with pytest.raises(MissingExtra, match=r"pip install 'wardrik\[otlp\]'"):
        need("opentelemetry.proto.no_such_module_here", "otlp")


def test_span_ids_are_stable_and_follow_the_documented_formula():
    from wardrik_cli.folding.otlp import span_id

    assert span_id("a/b", "0" * 31 + "1", "tool", "c1") == sid("a/b", "0" * 31 + "1", "tool", "c1")
    assert span_id("a/b", "0" * 31 + "1", "tool", "c1") != span_id("a/c", "0" * 31 + "1", "tool", "c1")


def test_an_export_refused_before_any_span_leaves_no_empty_file(tmp_path):
    """A corrupt line stops the export (exit 1): the -o file it would have made is not left
    behind empty; one that was there already is kept as it was."""
    import shutil

    root = tmp_path / "r"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_ledgers", root)
    log = root / "acme" / "billing.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[1] = b"garbage"
    log.write_bytes(b"\n".join(lines))
    out = tmp_path / "spans.json"
    p = run_cli("export", "otlp", "-o", str(out), root=root)
    assert p.returncode == 1 and b"corrupt line" in p.stderr and not out.exists()
    out.write_bytes(b"")
    assert run_cli("export", "otlp", "-o", str(out), root=root).returncode == 1 and out.read_bytes() == b""
