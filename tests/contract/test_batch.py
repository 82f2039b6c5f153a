"""append --batch: validated as a whole, one write, printed bytes are the stored bytes."""
from __future__ import annotations

import json

import pytest

from contract_util import (KEPT, TRACEPARENT, append, assert_refused, jsonl, log_path, ok, run,
                           seqs, snapshot)


def body(items) -> bytes:
    return "".join(json.dumps(i) + "\n" for i in items).encode()


ITEMS = [
    {"type": "run.started", "data": {"task": "t"}},
    {"type": "wardrik.message.received", "data": {"message": {"id": "m1"}}, "subject": "messages/m1"},
    {"type": "tool_call.started", "data": {"tool": {"name": "grep", "call": {"id": "c1"}}}},
    {"type": "run.completed", "data": {"answer": "42"}},
]


def test_batch_from_stdin(root):
    p = ok(run("append", "acme/triage", "--batch", "-", input=body(ITEMS), root=root))
    f = log_path(root, "acme/triage")
    assert p.stdout == f.read_bytes()
    evs = jsonl(p.stdout)
    assert seqs(evs) == [1, 2, 3, 4]
    assert [e["type"] for e in evs] == ["wardrik.run.started", "wardrik.message.received",
                                        "wardrik.tool_call.started", "wardrik.run.completed"]
    assert evs[1]["subject"] == "messages/m1"
    assert evs[0]["subject"] == "agents/acme/triage"
    assert evs[3]["data"] == {"answer": "42"}
    times = [e["time"] for e in evs]
    assert times == sorted(times)


def test_batch_from_file_after_existing_events(root, tmp_path):
    append(root, "a", "run.started", {})
    f = log_path(root, "a")
    size = f.stat().st_size
    bf = tmp_path / "batch.jsonl"
    bf.write_bytes(body(ITEMS[1:]))
    p = ok(run("append", "a", "--batch", str(bf), root=root))
    assert p.stdout == f.read_bytes()[size:]
    assert seqs(jsonl(f.read_bytes())) == [1, 2, 3, 4]


def test_batch_run_shares_trace(root):
    evs = jsonl(ok(run("append", "a", "--batch", "-", input=body(ITEMS), root=root)).stdout)
    tids = {TRACEPARENT.match(e["traceparent"]).group(1) for e in evs}
    assert tids == {evs[0]["data"]["run"]["id"]}


def test_batch_item_traceparent(root):
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    items = [{"type": "trigger.fired", "data": {"trigger": {"name": "x"}},
              "traceparent": f"00-{tid}-00f067aa0ba902b7-01"}]
    ev = jsonl(ok(run("append", "a", "--batch", "-", input=body(items), root=root)).stdout)[0]
    assert TRACEPARENT.match(ev["traceparent"]).group(1) == tid


BAD_ITEMS = {
    "unknown-type": {"type": "run.exploded", "data": {}},
    "missing-field": {"type": "tool_call.started", "data": {"tool": {"name": "grep"}}},
    "data-not-object": {"type": "run.completed", "data": [1]},
    "live-type": {"type": "message.delta", "data": {"message": {"id": "m1"}, "delta": "x"}},
    "live-type-prefixed": {"type": "wardrik.tool_call.progress", "data": {"tool": {"call": {"id": "c1"}}}},
    "audit-type": {"type": "agent.created", "data": {"agent": {"id": "x"}}},
    "run-id-uppercase": {"type": "run.started", "data": {"run": {"id": "0AF7651916CD43DD8448EB211C80319C"}}},
}


@pytest.mark.parametrize("name", sorted(BAD_ITEMS))
def test_one_bad_item_refuses_the_batch_new_log(root, name):
    items = ITEMS[:2] + [BAD_ITEMS[name]] + ITEMS[2:]
    before = snapshot(root)
    p = run("append", "acme/triage", "--batch", "-", input=body(items), root=root)
    assert_refused(p, 2)
    assert p.stdout == b""
    assert snapshot(root) == before


@pytest.mark.parametrize("name", sorted(BAD_ITEMS))
def test_one_bad_item_refuses_the_batch_existing_log(root, name):
    append(root, "a", "run.started", {})
    raw = log_path(root, "a").read_bytes()
    items = [ITEMS[1], BAD_ITEMS[name]]
    p = run("append", "a", "--batch", "-", input=body(items), root=root)
    assert_refused(p, 2)
    assert log_path(root, "a").read_bytes() == raw


@pytest.mark.parametrize("raw", [
    b'{"type": "run.started", "data": {}}\n{not json\n',
    b'{"type": "run.started", "data": {}}\n[1, 2]\n',
    b'{"type": "run.started", "data": {"a": NaN}}\n',
    b'{"type": "run.started", "data": {"a": "\\ud800"}}\n',
    b'{"type": "run.started", "data": {"a": "\xff"}}\n',
    b'{"data": {}}\n',
])
def test_malformed_batch_refused(root, raw):
    before = snapshot(root)
    p = run("append", "a", "--batch", "-", input=raw, root=root)
    assert_refused(p, 2)
    assert snapshot(root) == before


def test_batch_cuts_torn_tail(root):
    append(root, "a", "run.started", {})
    f = log_path(root, "a")
    good = f.read_bytes()
    with open(f, "ab") as fh:
        fh.write(b'{"spec')
    p = ok(run("append", "a", "--batch", "-", input=body(ITEMS[1:3]), root=root))
    assert p.stderr.strip()
    assert f.read_bytes() == good + p.stdout
    assert seqs(jsonl(f.read_bytes())) == [1, 2, 3]


def test_batch_refuses_after_corrupt_line(root):
    append(root, "a", "run.started", {})
    f = log_path(root, "a")
    with open(f, "ab") as fh:
        fh.write(b"garbage\n")
    raw = f.read_bytes()
    p = run("append", "a", "--batch", "-", input=body(ITEMS[1:3]), root=root)
    assert_refused(p, 1)
    assert f.read_bytes() == raw


@pytest.mark.parametrize("type_", sorted(KEPT))
def test_every_kept_type_in_a_batch(root, type_):
    ev = jsonl(ok(run("append", "a", "--batch", "-", input=body([{"type": type_, "data": KEPT[type_]}]),
                      root=root)).stdout)[0]
    assert ev["type"] == "wardrik." + type_


@pytest.mark.subprocess
def test_failed_write_keeps_whole_events_and_says_how_many(root):
    import resource
    import subprocess
    from contract_util import WARDRIK
    append(root, "a", "run.started", {})
    f = log_path(root, "a")
    size = f.stat().st_size
    line = size  # one event is about this long
    limit = size + line + line // 2  # room for one more whole event and half of the next

    def lim():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    items = [{"type": "message.received", "data": {"message": {"id": f"m{i}"}}} for i in range(3)]
    p = subprocess.run([WARDRIK, "--root", str(root), "append", "a", "--batch", "-"], input=body(items),
                       capture_output=True, preexec_fn=lim, timeout=60)
    assert p.returncode == 1, p
    err = p.stderr.decode()
    assert "Traceback" not in err
    [error] = [l for l in err.splitlines() if l.startswith("error:")]
    raw = f.read_bytes()
    whole = raw[: raw.rfind(b"\n") + 1]
    written = len(whole.splitlines()) - 1
    assert 0 < written < 3
    assert str(written) in error
    assert seqs(jsonl(whole)) == list(range(1, written + 2))
    for printed in p.stdout.splitlines(keepends=True):
        assert printed in whole.splitlines(keepends=True)  # printed means durable
    more = ok(run("append", "a", "run.completed", "--data", "{}", root=root))
    assert seqs(jsonl(f.read_bytes())) == list(range(1, written + 3))
    assert f.read_bytes() == whole + more.stdout
