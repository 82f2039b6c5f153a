"""`wardrik init` makes a root and changes only what it is given; `compact -q` is silent when
all is well and still loud when a log fails; `compact -F json` is one line."""
from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

from conftest import run_cli
from ledgergen import START, write_log


def test_init_makes_a_root_and_keeps_what_it_is_not_given(tmp_path):
    r = tmp_path / "new" / "root"
    p = run_cli("init", "--deployment", "acme-prod", "-r", "7d", root=r)
    assert p.returncode == 0 and p.stdout == b"", p.stderr
    cfg = r / ".wardrik" / "config.toml"
    import tomllib
    assert tomllib.loads(cfg.read_text()) == {"deployment": "acme-prod", "retention": "7d"}
    assert cfg.read_text().endswith('deployment = "acme-prod"\nretention = "7d"\n')  # after the template's comments
    cfg.write_text(cfg.read_text() + "# mine\nfuture_key = 3\n[later]\nretention = \"keep\"\n")
    before = cfg.read_bytes()
    p = run_cli("init", root=r)
    assert p.returncode == 0 and b"already a root" in p.stderr and b"nothing changed" in p.stderr
    assert cfg.read_bytes() == before
    p = run_cli("init", "-r", "30d", root=r)
    assert p.returncode == 0, p.stderr
    text = cfg.read_text()
    assert 'retention = "30d"' in text.split("[later]")[0] and 'retention = "keep"' in text  # the table's own key kept
    assert 'deployment = "acme-prod"' in text and "future_key = 3" in text and "# mine" in text
    assert run_cli("compact", "--dry-run", "-F", "json", root=r).returncode == 0
    assert orjson.loads(run_cli("compact", "--dry-run", "-F", "json", root=r).stdout)["retention"] == "30d"


def test_init_takes_the_folder_as_an_argument_and_always_writes_its_config(tmp_path, monkeypatch):
    """`wardrik init DIR` as `wardrik --root DIR init`; a new root gets a config.toml even with
    no setting given (its help says it makes one): the settings shown as comments."""
    import tomllib
    d = tmp_path / "a" / "root"
    p = run_cli("init", str(d))
    assert p.returncode == 0 and (d / ".wardrik").is_dir(), p.stderr
    cfg = (d / ".wardrik" / "config.toml").read_text()
    assert tomllib.loads(cfg) == {} and "# retention" in cfg and "# max_bytes" in cfg
    assert run_cli("compact", "-q", root=d).returncode == 0  # a root
    assert run_cli("init", str(d), "--retention", "9d").returncode == 0
    assert tomllib.loads((d / ".wardrik" / "config.toml").read_text()) == {"retention": "9d"}
    p = run_cli("--root", str(tmp_path / "other"), "init", str(d))
    assert p.returncode == 2 and p.stderr.startswith(b"error:") and not (tmp_path / "other").exists()
    monkeypatch.chdir(tmp_path)  # where a folder named after the URL was made
    for url in (f"file://{tmp_path}/remote", "s3://bucket/prefix"):  # as --root URL: a remote root is read only
        p = run_cli("init", url)
        assert p.returncode == 2 and b"remote root" in p.stderr, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a"]  # no folder named after the URL


def test_init_refuses_bad_values_and_makes_nothing(tmp_path):
    for args, word in ((["--deployment", "Bad Name"], "deployment"), (["-r", "0s"], "0s"), (["-r", "5x"], "5x")):
        r = tmp_path / "r"
        p = run_cli("init", *args, root=r)
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.decode().splitlines()
        assert lines[0].startswith("error:") and word in lines[0], lines
        assert not r.exists()


def test_compact_quiet_is_silent_when_well_and_loud_when_not(root):
    write_log(root / "acme" / "old.jsonl", 50, start=START - timedelta(days=400))
    p = run_cli("compact", "-q", "--retention", "30d", root=root)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert run_cli("page", "acme/old", "-F", "json", root=root).stdout.count(b"events.dropped") == 1  # it did sweep
    with open(root / "acme" / "old.jsonl", "ab") as f:
        f.write(b'{"half')  # a torn tail: cut, its bytes kept beside, and no word under --quiet
    p = run_cli("compact", "-q", "--retention", "30d", root=root)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert [x.read_bytes() for x in (root / "acme").glob("old.jsonl.torn-*")] == [b'{"half']
    with open(root / "acme" / "bad.jsonl", "wb") as f:
        f.write(b"not json\n")
    p = run_cli("compact", "-q", "--retention", "30d", root=root)
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.startswith(b"error: acme/bad: not swept") and b"Traceback" not in p.stderr


def test_compact_json_is_one_line(root):
    write_log(root / "acme" / "a.jsonl", 5, start=START - timedelta(days=400))
    p = run_cli("compact", "--retention", "30d", "-F", "json", root=root)
    assert p.returncode == 0 and p.stdout.count(b"\n") == 1, p.stdout
    doc = orjson.loads(p.stdout)
    assert doc["dropped"] == 5 and doc["logs"][0]["log"] == "acme/a"


def test_compact_and_audit_record_refuse_a_folder_that_is_not_a_root(tmp_path):
    """Cron runs in $HOME: a compact there must not make it a root or sweep its files."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.jsonl").write_bytes(b"my own notes, not a ledger\n")
    for args in (["compact", "-q"], ["audit", "record", "agent.created", "agents/a", "--actor", "u",
                                      "--data", '{"agent": {"id": "a"}}']):
        p = run_cli("--root", str(home), *args)
        assert p.returncode == 2 and p.stdout == b"", (args, p.stderr)
        lines = p.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and str(home) in lines[0] and "init" in lines[0]
        assert sorted(x.name for x in home.iterdir()) == ["notes.jsonl"]  # nothing made
    p = run_cli("--root", str(home), "page", "notes")  # readers still read any folder (and say what is wrong)
    assert p.returncode == 1 and b"corrupt line" in p.stderr
    assert run_cli("--root", str(home), "init").returncode == 0
    assert run_cli("--root", str(home), "append", "acme/a", "run.started").returncode == 0


def test_readers_never_make_a_plain_folder_a_root(tmp_path):
    """An evidence copy without .wardrik/: fold, activity and stats read it and save no
    checkpoint (before, they made .wardrik/checkpoints/, and the next compact swept the copy)."""
    ev = tmp_path / "evidence"
    write_log(ev / "acme" / "a.jsonl", 5, start=START - timedelta(days=400), log_id="acme/a")
    before = (ev / "acme" / "a.jsonl").read_bytes()
    for args in (["fold", "acme/a"], ["fold", "acme/a", "--view", "activity"], ["activity", "acme/*"],
                 ["stats", "--by", "agent"], ["page", "acme/*"], ["check"]):
        p = run_cli("--root", str(ev), *args)
        assert p.returncode == 0, (args, p.stderr)
    assert sorted(x.name for x in ev.iterdir()) == ["acme"]
    p = run_cli("--root", str(ev), "compact", "-q")
    assert p.returncode == 2 and (ev / "acme" / "a.jsonl").read_bytes() == before


def test_first_append_still_makes_a_root(tmp_path):
    r = tmp_path / "fresh"
    assert run_cli("append", "acme/a", "run.started", root=r).returncode == 0
    assert (r / ".wardrik").is_dir()
    assert run_cli("compact", "-q", root=r).returncode == 0


def test_audit_record_makes_a_root_that_does_not_exist(tmp_path):
    """The contract's root rule: a root that does not exist is made by append and audit record
    (a folder that exists without .wardrik/ is still refused, above)."""
    r = tmp_path / "new" / "root"
    p = run_cli("audit", "record", "agent.created", "agents/a", "--actor", "u", "--data", '{"agent": {"id": "a"}}',
                root=r)
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert (r / ".wardrik" / "audit.jsonl").read_bytes() == p.stdout
    assert run_cli("check", root=r).returncode == 0


@pytest.mark.subprocess
def test_the_readmes_cron_line_runs_as_cron_runs_it(tmp_path):
    """The crontab line from the README, run the way cron does: `env -i`, a short PATH, no
    terminal, the working directory elsewhere; silent on a healthy root, and it sweeps."""
    import re
    import subprocess
    from pathlib import Path

    from conftest import WARDRIK

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if re.match(r"0 \* \* \* \* ", ln))
    command = line.split(None, 5)[5]
    root = tmp_path / "var" / "lib" / "wardrik"
    assert run_cli("init", "--retention", "30d", root=root).returncode == 0
    write_log(root / "acme" / "old.jsonl", 20, start=START - timedelta(days=400))
    command = command.replace("/path/to/.venv/bin/wardrik", WARDRIK).replace("/var/lib/wardrik", str(root))
    home = tmp_path / "home"
    home.mkdir()
    p = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "sh", "-c", command], cwd=home, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert list(home.iterdir()) == []
    assert run_cli("page", "acme/old", "-F", "json", root=root).stdout.count(b"events.dropped") == 1


@pytest.mark.subprocess
def test_the_readmes_systemd_unit_runs_as_systemd_runs_it(tmp_path):
    """The service unit from the README: its ExecStart, with no shell and an empty environment
    (systemd gives a service neither), working directory `/`; silent on a healthy root, and it
    sweeps. The timer beside it names the service's schedule."""
    import shlex
    import subprocess
    from pathlib import Path

    from conftest import WARDRIK

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    unit = readme.split("# /etc/systemd/system/wardrik-compact.service", 1)[1].split("```", 1)[0]
    service, timer = unit.split("# /etc/systemd/system/wardrik-compact.timer")
    assert "Type=oneshot" in service and "OnCalendar=hourly" in timer and "WantedBy=timers.target" in timer
    exec_start = next(ln for ln in service.splitlines() if ln.startswith("ExecStart="))[len("ExecStart="):]
    root = tmp_path / "var" / "lib" / "wardrik"
    assert run_cli("init", "--retention", "30d", root=root).returncode == 0
    write_log(root / "acme" / "old.jsonl", 20, start=START - timedelta(days=400))
    argv = [a.replace("/path/to/.venv/bin/wardrik", WARDRIK).replace("/var/lib/wardrik", str(root))
            for a in shlex.split(exec_start)]
    p = subprocess.run(argv, env={}, cwd="/", capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert run_cli("page", "acme/old", "-F", "json", root=root).stdout.count(b"events.dropped") == 1


def test_writers_refuse_a_root_made_read_only_and_change_nothing(root):
    """An evidence copy made read-only with chmod: compact, append and audit record exit 1 with
    one line and change nothing, even as root (who could still write there; before, compact
    swept it and append wrote)."""
    import os
    import stat

    write_log(root / "acme" / "a.jsonl", 5, start=START - timedelta(days=400), log_id="acme/a")
    assert run_cli("compact", "-q", "--retention", "1000d", root=root).returncode == 0  # a root made, nothing due
    files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    dirs = [p for p in [root, *root.rglob("*")] if p.is_dir()]
    for d in dirs:
        os.chmod(d, stat.S_IMODE(os.stat(d).st_mode) & ~0o222)
    try:
        share = root.parent / "share"
        share.mkdir(exist_ok=True)
        for args in (["compact", "-q"], ["append", "acme/a", "run.started"],
                     ["audit", "record", "agent.created", "agents/a", "--actor", "u", "--data", '{"agent": {"id": "a"}}'],
                     ["ship", share.as_uri()]):  # before: it wrote its root id and registration there
            p = run_cli(*args, root=root)
            lines = p.stderr.decode().splitlines()
            assert p.returncode == 1 and len(lines) == 1 and "read-only" in lines[0] and p.stdout == b"", (args, lines)
            assert f"cannot {' '.join(args[:2]) if args[0] == 'audit' else args[0]} " in lines[0], lines
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == files
    finally:
        for d in dirs:
            os.chmod(d, stat.S_IMODE(os.stat(d).st_mode) | 0o200)
