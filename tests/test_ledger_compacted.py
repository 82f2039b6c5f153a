"""A sweep that drops anything records one `ledger.compacted` audit event: who pruned what, when."""
from __future__ import annotations

import getpass
import socket
from datetime import timedelta

import orjson

from conftest import run_cli
from ledgergen import START, write_log


def audit_sweeps(root) -> list[dict]:
    p = run_cli("audit", "page", "-t", "ledger.compacted", "--all", "-F", "json", root=root)
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)["events"]


def test_a_sweep_that_drops_records_who_and_what(root):
    write_log(root / "acme" / "a.jsonl", 30, start=START - timedelta(days=400), log_id="acme/a")
    write_log(root / "acme" / "b.jsonl", 10, start=START - timedelta(days=400), log_id="acme/b")
    write_log(root / "acme" / "new.jsonl", 5, start=START + timedelta(days=10_000), log_id="acme/new")
    assert run_cli("compact", "-q", "--actor", "cron:ops@acme", root=root).returncode == 0
    (ev,) = audit_sweeps(root)
    assert ev["data"]["logs"] == {"acme/a": 30, "acme/b": 10}
    assert ev["data"]["retention"] == "30d" and ev["data"]["actor"] == "cron:ops@acme"
    assert run_cli("check", root=root).returncode == 0  # the audit chain holds
    # nothing more to drop, or a dry run: no record
    assert run_cli("compact", "-q", root=root).returncode == 0
    write_log(root / "acme" / "c.jsonl", 5, start=START - timedelta(days=400), log_id="acme/c")
    assert run_cli("compact", "--dry-run", "-q", root=root).returncode == 0
    assert len(audit_sweeps(root)) == 1
    # the default actor is user@host; a size bound is recorded with the sweep
    assert run_cli("compact", "-q", "--max-bytes", "1G", root=root).returncode == 0
    last = audit_sweeps(root)[-1]
    assert last["data"]["logs"] == {"acme/c": 5} and last["data"]["max_bytes"] == 1 << 30
    assert last["data"]["actor"].startswith(getpass.getuser() + "@" + socket.gethostname()[:10])


def test_the_record_names_the_deployment_given(root):
    """--deployment (or $WARDRIK_DEPLOYMENT) names the source of the sweep's record, as it does
    for audit record; before, the record took the process's environment's."""
    write_log(root / "acme" / "a.jsonl", 3, start=START - timedelta(days=400), log_id="acme/a")
    assert run_cli("compact", "-q", "--deployment", "acme-x", root=root, env={"WARDRIK_DEPLOYMENT": ""}).returncode == 0
    write_log(root / "acme" / "b.jsonl", 3, start=START - timedelta(days=400), log_id="acme/b")
    assert run_cli("compact", "-q", root=root, env={"WARDRIK_DEPLOYMENT": "acme-y"}).returncode == 0
    assert [(ev["source"], ev["data"]["assumed_by"]) for ev in audit_sweeps(root)] == [
        ("wardrik://acme-x/audit", []), ("wardrik://acme-y/audit", [])]


def test_a_bad_actor_is_refused_before_anything_is_swept(root):
    write_log(root / "acme" / "a.jsonl", 5, start=START - timedelta(days=400), log_id="acme/a")
    before = (root / "acme" / "a.jsonl").read_bytes()
    p = run_cli("compact", "--actor", "bad one", root=root)
    assert p.returncode == 2 and p.stderr.startswith(b"error:") and b"--actor" in p.stderr
    assert (root / "acme" / "a.jsonl").read_bytes() == before


def test_an_audit_log_that_cannot_take_the_record_stops_the_sweep_before_it_drops(root):
    """Before, the sweep dropped the events and then found the audit log's lock was a folder:
    events gone, no ledger.compacted."""
    write_log(root / "acme" / "a.jsonl", 5, start=START - timedelta(days=400), log_id="acme/a")
    before = (root / "acme" / "a.jsonl").read_bytes()
    lock = root / ".wardrik" / "locks" / "@audit@lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.mkdir()
    p = run_cli("compact", "-q", root=root)
    err = p.stderr.decode()
    assert p.returncode == 1 and "ledger.compacted" in err and "not compacted" in err, err
    assert (root / "acme" / "a.jsonl").read_bytes() == before
    write_log(root / "acme" / "b.jsonl", 5, start=START + timedelta(days=10_000), log_id="acme/b")
    (root / "acme" / "a.jsonl").unlink()
    assert run_cli("compact", "-q", root=root).returncode == 0  # nothing to drop: no record needed
    (root / "acme" / "a.jsonl").write_bytes(before)
    lock.rmdir()
    assert run_cli("compact", "-q", root=root).returncode == 0
    assert audit_sweeps(root)[-1]["data"]["logs"] == {"acme/a": 5}


def test_the_pretty_summary_names_the_log_once_or_counts_each():
    from wardrik_cli.cli.render.summary import summarize as summary

    one = {"type": "wardrik.ledger.compacted", "data": {"logs": {"acme/old": 50}, "actor": "root@vm"}}
    assert summary(one) == "dropped 50 from acme/old · by root@vm"
    many = {"type": "wardrik.ledger.compacted",
            "data": {"logs": {"a/1": 1, "a/2": 2, "a/3": 3, "a/4": 4}, "actor": "cron@h"}}
    assert summary(many) == "dropped 10 from a/1 1, a/2 2, a/3 3 +1 logs · by cron@h"


def test_types_lists_every_field_a_sweep_records(root):
    """`wardrik types` is the protocol: each data field compact writes into ledger.compacted
    (besides the actor fields every audit event has) is listed as required or optional."""
    write_log(root / "acme" / "a.jsonl", 4, start=START - timedelta(days=400), log_id="acme/a")
    assert run_cli("compact", "-q", "--max-bytes", "1G", root=root).returncode == 0
    (ev,) = audit_sweeps(root)
    p = run_cli("types", "-F", "json", root=root)
    (entry,) = [t for t in orjson.loads(p.stdout) if t["type"] == ev["type"]]
    listed = {f.removeprefix("data.") for f in entry["required"] + entry["optional"]}
    assert set(ev["data"]) - {"actor", "assumed_by"} <= listed, (sorted(ev["data"]), sorted(listed))
    assert {"recovered", "started"} <= listed  # what a recovered sweep's record adds


def test_audit_record_refuses_ledger_compacted(tmp_path):
    """Who pruned what is recorded by compact itself: anyone could forge it before."""
    from conftest import run_cli

    root = tmp_path / "r"
    run_cli("init", root=root, check=True)
    p = run_cli("audit", "record", "ledger.compacted", "ledger", "--data", '{"logs": {}}', "--actor", "bob",
                root=root)
    assert p.returncode == 2 and b"recorded by compact only" in p.stderr
    assert not (root / ".wardrik" / "audit.jsonl").exists()


def test_a_misspelt_config_key_is_refused_by_compact(tmp_path):
    """``retentoin = "1d"``: ignored before, the sweep kept 30 days, and cron never said so.
    A key that is no near miss of a known one is left alone (another version's)."""
    from conftest import run_cli

    root = tmp_path / "r"
    run_cli("init", root=root, check=True)
    cfg = root / ".wardrik" / "config.toml"
    cfg.write_text(cfg.read_text() + 'retentoin = "1d"\n')
    for args in (["compact", "-q"], ["compact", "--dry-run"], ["compact", "--retention", "2d"]):
        p = run_cli(*args, root=root)
        assert p.returncode == 2 and b"unknown key 'retentoin': did you mean 'retention'" in p.stderr
        assert str(cfg).encode() in p.stderr
    cfg.write_text('max_byte = "1M"\n')
    assert b"did you mean 'max_bytes'" in run_cli("compact", "-q", root=root).stderr
    cfg.write_text('deploymnet = "acme-prod"\n')  # every command: events would be stored under `local`
    p = run_cli("append", "a", "run.started", root=root)
    assert p.returncode == 2 and b"did you mean 'deployment'" in p.stderr and not (root / "a.jsonl").exists()
    cfg.write_text('retention_days = 30\n[retention_policy]\nx = 1\n')  # another's keys: left alone
    assert run_cli("compact", "-q", "--retention", "7d", root=root).returncode == 0
    cfg.write_text('retention = "1d"\nmax_bytes = "1M"\nfuture_key = 3\n[prices."a:b"]\ninput_per_mtok = 1\n')
    assert run_cli("compact", "-q", root=root).returncode == 0
