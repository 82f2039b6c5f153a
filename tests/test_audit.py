"""`audit record/page/tail` and the prevhash chain `check` verifies (wardrik_cli/audit.py)."""
from __future__ import annotations

import hashlib
import os

import orjson
import pytest

from conftest import jsonl, run_cli

AGENT = '{"agent": {"id": "acme/triage"}}'
GENESIS = "0" * 64


def record(cli, *extra, type_="agent.created", subject="agents/acme/triage", data=AGENT, actor="user:alice@example.com"):
    args = ["audit", "record", type_, subject]
    if data is not None:
        args += ["--data", data]
    if actor is not None:
        args += ["--actor", actor]
    return cli(*args, *extra)


def test_record_stores_actor_chain_and_prevhash(cli, root):
    p = record(cli, "--assumed-by", "role:ops", "--assumed-by", "svc:deploy-bot")
    assert p.returncode == 0, p.stderr
    [e] = jsonl(p.stdout)
    assert e["type"] == "wardrik.agent.created" and e["source"] == "wardrik://local/audit"
    assert e["subject"] == "agents/acme/triage" and e["sequence"] == "000000000001"
    assert e["data"] == {"agent": {"id": "acme/triage"}, "actor": "user:alice@example.com",
                         "assumed_by": ["role:ops", "svc:deploy-bot"]}
    assert e["prevhash"] == GENESIS
    p2 = record(cli, type_="trigger.created", subject="triggers/daily", data='{"trigger": {"name": "daily"}}')
    [e2] = jsonl(p2.stdout)
    stored = (root / ".wardrik/audit.jsonl").read_bytes().splitlines(keepends=True)
    assert len(stored) == 2 and stored[1].rstrip(b"\n") == p2.stdout.rstrip(b"\n")
    assert e2["sequence"] == "000000000002" and e2["data"]["assumed_by"] == []
    assert e2["prevhash"] == hashlib.sha256(stored[0]).hexdigest()
    assert cli("check").returncode == 0


def test_record_needs_a_root_and_uses_deployment(tmp_path):
    r = tmp_path / "new"
    args = ("--deployment", "acme-prod", "audit", "record", "agent.forgotten", "agents/x", "--data",
            '{"agent": {"id": "x"}}', "--actor", "user:bob")
    for made in (False, True):  # a bare folder (cron's cwd, say) is refused; `wardrik init` makes it a root
        r.mkdir(exist_ok=True)
        p = run_cli(*args, root=r)
        if not made:
            assert p.returncode == 2 and b"wardrik --root" in p.stderr and b"init" in p.stderr, p.stderr
            assert os.listdir(r) == []
            assert run_cli("init", root=r).returncode == 0
    assert p.returncode == 0, p.stderr
    assert jsonl(p.stdout)[0]["source"] == "wardrik://acme-prod/audit"
    assert (r / ".wardrik/audit.jsonl").is_file()


def test_audit_log_is_apart_from_agents(cli, root):
    record(cli)
    cli("append", "acme/triage", "trigger.fired", "--data", '{"trigger": {"name": "t"}}', check=True)
    evs = jsonl(cli("page", "*").stdout)
    assert [e["type"] for e in evs] == ["wardrik.trigger.fired"]
    assert cli("page", "audit").returncode == 2  # no agent log named audit
    # and an agent type cannot be appended to it, nor an audit type to an agent's log
    p = cli("append", "acme/triage", "agent.created", "--data", AGENT)
    assert p.returncode == 2 and b"audit record" in p.stderr


@pytest.mark.parametrize("kw, needle", [
    ({"actor": None}, b"--actor"),
    ({"type_": "run.started", "data": "{}"}, b"not an audit type"),
    ({"type_": "message.delta", "data": "{}"}, b"not an audit type"),
    ({"type_": "events.dropped", "data": '{"log": "a", "count": 1}'}, b"not an audit type"),
    ({"type_": "nosuch.type"}, b"unknown event type"),
    ({"data": "{}"}, b"data.agent.id"),
    ({"type_": "trigger.deleted", "data": AGENT}, b"data.trigger.name"),
    ({"data": "[1]"}, b"JSON object"),
    ({"data": "{bad"}, b"not valid JSON"),
    ({"actor": "alice smith"}, b"principal"),
    ({"actor": ""}, b"principal"),
    ({"actor": "a" * 201}, b"at most 200"),
    ({"actor": "user:al\u00efce"}, b"principal"),
    ({"data": '{"agent": {"id": "x"}, "actor": "mallory"}'}, b"data.actor"),
    ({"subject": ""}, b"SUBJECT"),
])
def test_bad_records_refused_nothing_written(tmp_path, kw, needle):
    r = tmp_path / "root"
    args = dict(type_="agent.created", subject="agents/acme/triage", data=AGENT, actor="user:alice")
    args.update(kw)
    cmd = ["audit", "record", args["type_"], args["subject"]]
    if args["data"] is not None:
        cmd += ["--data", args["data"]]
    if args["actor"] is not None:
        cmd += ["--actor", args["actor"]]
    p = run_cli(*cmd, root=r)
    assert p.returncode == 2, p
    err = p.stderr.decode()
    assert err.startswith("error: ") and "Traceback" not in err and needle.decode() in err
    assert not r.exists()  # nothing written: not even the root


def test_bad_assumed_by_refused(cli, root):
    p = record(cli, "--assumed-by", "ok:one", "--assumed-by", "bad one")
    assert p.returncode == 2 and b"--assumed-by" in p.stderr
    assert os.listdir(root / ".wardrik") == []


def test_principal_of_200_chars_and_all_allowed_characters(cli):
    p = record(cli, actor="a" * 200)
    assert p.returncode == 0
    p = record(cli, actor="User_1.x:y@z/w+v-u")
    assert p.returncode == 0 and jsonl(p.stdout)[0]["data"]["actor"] == "User_1.x:y@z/w+v-u"


def _three(cli):
    for i in range(4):
        assert record(cli, actor=f"user:u{i}").returncode == 0


def test_edited_line_named_by_check(cli, root):
    _three(cli)
    path = root / ".wardrik/audit.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"user:u1", b"user:u9")  # still a valid event: only the chain shows it
    path.write_bytes(b"".join(lines))
    p = cli("check")
    assert p.returncode == 1
    out = p.stdout.decode()
    off = len(lines[0]) + len(lines[1])
    assert f"{path}:3: {off}: audit chain broken" in out and "line 2" in out
    assert out.count("audit chain broken") == 1  # the first break is named, the rest of the chain holds
    j = orjson.loads(cli("check", "--format", "json").stdout)
    assert j["ok"] is False and j["problems"][0]["line"] == 3


def test_removed_line_breaks_chain(cli, root):
    _three(cli)
    path = root / ".wardrik/audit.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2] + lines[3])
    p = cli("check")
    assert p.returncode == 1 and b"audit chain broken" in p.stdout and b"sequence gap" in p.stdout


def test_edited_prevhash_named(cli, root):
    _three(cli)
    path = root / ".wardrik/audit.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    e = orjson.loads(lines[2])
    e["prevhash"] = "f" * 64
    lines[2] = orjson.dumps(e) + b"\n"
    path.write_bytes(b"".join(lines))
    p = cli("check")
    assert p.returncode == 1
    out = p.stdout.decode()
    assert ":3:" in out and ":4:" in out  # line 3's own link, and line 4's link to line 3's changed bytes


def test_audit_page_cursor_and_tail(cli, root):
    _three(cli)
    doc = orjson.loads(cli("audit", "page", "--limit", "2", "--format", "json").stdout)
    assert [e["sequence"] for e in doc["events"]] == ["000000000001", "000000000002"]
    from wardrik_cli.protocol.cursor import decode_cursor
    assert decode_cursor(doc["next"]) == {"audit": 2}
    rest = jsonl(cli("audit", "page", "--after", doc["next"]).stdout)
    assert [e["sequence"] for e in rest] == ["000000000003", "000000000004"]
    tail = jsonl(cli("audit", "tail", "-n", "2").stdout)
    assert [e["sequence"] for e in tail] == ["000000000003", "000000000004"]
    tail = jsonl(cli("audit", "tail", "--after", doc["next"]).stdout)
    assert [e["sequence"] for e in tail] == ["000000000003", "000000000004"]
    # cursor files
    cf = root.parent / "cur"
    assert len(jsonl(cli("audit", "page", "--limit", "3", "--cursor-file", str(cf)).stdout)) == 3
    assert decode_cursor(cf.read_text()) == {"audit": 3}
    assert [e["sequence"] for e in jsonl(cli("audit", "page", "--cursor-file", str(cf)).stdout)] == ["000000000004"]
    # a position past the end is refused
    from wardrik_cli.protocol.cursor import encode_cursor
    p = cli("audit", "page", "--after", encode_cursor({"audit": 9}))
    assert p.returncode == 2 and p.stderr.startswith(b"error: ")
    # --types filters, and the audit types are accepted
    only = jsonl(cli("audit", "page", "--types", "trigger.created").stdout)
    assert only == []


def test_audit_page_on_root_without_audit_log(cli):
    p = cli("audit", "page", "--format", "json")
    assert p.returncode == 0 and orjson.loads(p.stdout)["events"] == []


def test_audit_readers_never_write(cli, root):
    _three(cli)
    import os
    before = {str(p): p.stat().st_mtime_ns for p in root.rglob("*")}
    names = sorted(os.listdir(root / ".wardrik"))
    cli("audit", "page")
    cli("audit", "tail")
    cli("check")
    assert sorted(os.listdir(root / ".wardrik")) == names
    assert {str(p): p.stat().st_mtime_ns for p in root.rglob("*")} == before
