"""Root and deployment selection; formats; errors are one `error:` line."""
from __future__ import annotations


import pytest

from contract_util import assert_refused, jsonl, log_path, ok, run


def test_root_option_creates_missing_root_on_append(tmp_path):
    r = tmp_path / "new" / "deeper"
    ok(run("append", "a/b", "run.started", "--data", "{}", root=r))
    assert (r / "a" / "b.jsonl").is_file()


@pytest.mark.subprocess
def test_env_root(tmp_path, root):
    env = {"WARDRIK_ROOT": str(root)}
    p = ok(run("append", "x", "run.started", "--data", "{}", env=env, cwd=tmp_path))
    assert (root / "x.jsonl").read_bytes() == p.stdout
    assert ok(run("page", "x", env=env, cwd=tmp_path)).stdout == p.stdout


def test_root_option_beats_env(tmp_path, root):
    other = tmp_path / "other"
    other.mkdir()
    ok(run("append", "x", "run.started", "--data", "{}", root=root, env={"WARDRIK_ROOT": str(other)}))
    assert (root / "x.jsonl").exists() and not (other / "x.jsonl").exists()


@pytest.mark.subprocess
def test_cwd_is_default_root(root):
    p = ok(run("append", "x", "run.started", "--data", "{}", cwd=root))
    assert (root / "x.jsonl").read_bytes() == p.stdout
    assert ok(run("head", "x", cwd=root)).stdout.strip() == b"eyJ4IjoxfQ"


@pytest.mark.subprocess
def test_env_root_missing_for_reader(tmp_path):
    missing = tmp_path / "nope"
    p = run("page", "*", env={"WARDRIK_ROOT": str(missing)}, cwd=tmp_path)
    assert_refused(p, None)
    assert not missing.exists()


@pytest.mark.subprocess
def test_env_root_missing_created_by_append(tmp_path):
    missing = tmp_path / "nope"
    ok(run("append", "x", "run.started", "--data", "{}", env={"WARDRIK_ROOT": str(missing)}, cwd=tmp_path))
    assert (missing / "x.jsonl").is_file()


# --- deployment -------------------------------------------------------------------------------

def source(root, **kw):
    p = ok(run("append", "acme/triage", "run.started", "--data", "{}", root=root, **kw))
    return jsonl(p.stdout)[0]["source"]


def test_default_deployment_is_local(root):
    assert source(root) == "wardrik://local/agents/acme/triage"


def test_deployment_from_config(root):
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text('deployment = "acme-prod"\nretention = "30d"\n')
    assert source(root) == "wardrik://acme-prod/agents/acme/triage"


def test_env_beats_config(root):
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text('deployment = "acme-prod"\n')
    assert source(root, env={"WARDRIK_DEPLOYMENT": "from-env"}) == "wardrik://from-env/agents/acme/triage"


def test_option_beats_env_and_config(root):
    (root / ".wardrik").mkdir(exist_ok=True)
    (root / ".wardrik" / "config.toml").write_text('deployment = "acme-prod"\n')
    p = ok(run("--deployment", "from-flag", "append", "acme/triage", "run.started", "--data", "{}",
               root=root, env={"WARDRIK_DEPLOYMENT": "from-env"}))
    assert jsonl(p.stdout)[0]["source"] == "wardrik://from-flag/agents/acme/triage"


@pytest.mark.parametrize("name", ["Acme", "-x", ".x", "a_b", "a" * 64, "a/b", "a b", ""])
def test_bad_deployment_refused(root, name):
    p = run("--deployment", name, "append", "a", "run.started", "--data", "{}", root=root)
    assert_refused(p, 2)
    assert not log_path(root, "a").exists()


@pytest.mark.parametrize("name", ["Acme", "a_b", "a" * 64])
def test_bad_deployment_env_refused(root, name):
    p = run("append", "a", "run.started", "--data", "{}", root=root, env={"WARDRIK_DEPLOYMENT": name})
    assert_refused(p, 2)
    assert not log_path(root, "a").exists()


def test_longest_deployment_accepted(root):
    name = "a" + "b.c-" * 15 + "xy"
    assert len(name) == 63
    assert source(root, env={"WARDRIK_DEPLOYMENT": name}) == f"wardrik://{name}/agents/acme/triage"


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["append"],
    ["append", "a"],
    ["page", "--limit", "-1"],
    ["nosuchcommand"],
    ["page", "a", "--no-such-option"],
])
def test_usage_errors(root, args):
    p = run(*args, root=root)
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "Traceback" not in err
    assert any(l.startswith("error:") for l in err.splitlines()), err
    assert len([l for l in err.splitlines() if l.strip()]) <= 2, err


def test_help_works(root):
    p = ok(run("--help", root=root))
    for cmd in ("append", "page", "head", "check", "types"):
        assert cmd.encode() in p.stdout
