"""The README's examples really work as shown: its Python block and its safe shell lines run
against a copy of sample_ledgers/ (never the original), and the pictures it shows exist."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
NOT_RUN = ("tail -f", "--watch", "--exec")  # these follow forever; tests/test_tmux.py drives them


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


@pytest.fixture
def workdir(tmp_path):
    shutil.copytree(REPO / "sample_ledgers", tmp_path / "sample_ledgers",
                    ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    return tmp_path


def _env(workdir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("WARDRIK_ROOT", "WARDRIK_DEPLOYMENT")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["WARDRIK_ROOT"] = "sample_ledgers"
    env["HOME"] = str(workdir)
    return env


def test_two_commands_section_is_unchanged():
    assert "## Two commands" in README
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert "pip install -q . && .venv/bin/wardrik --root sample_ledgers page 'acme/*' --limit 20" in section
    assert "pip install -q -e '.[test]' && .venv/bin/python -m pytest -q" in section


def _section(title: str) -> str:
    assert title in README, title
    return README.split(title, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_python_example_runs(workdir):
    blocks = _blocks("python")
    assert len(blocks) == 1 and len(blocks[0].strip().splitlines()) == 6
    logs = lambda: {k: v for k, v in _tree(workdir / "sample_ledgers").items() if k.endswith(".jsonl")}  # noqa: E731
    before = logs()
    p = subprocess.run([sys.executable, "-c", blocks[0]], cwd=workdir, capture_output=True, env=_env(workdir),
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode().splitlines()
    assert out[0] == "completed"
    assert "acme/billing fetch_payouts permission denied: role billing-ro lacks payouts:read" in out
    assert "publish_live(" in blocks[0]
    assert logs() == before  # the live event was stored in no log (the fold may leave a checkpoint)


def test_python_api_section_names_the_api():
    section = _section("### The Python API")
    for name in ("fold(root, log_id, view)", "append_event", "publish_live", "message.delta", "Listener",
                 "compact", "record_audit", "encode_cursor", "decode_cursor", "wardrik_cli.cli.app.run(argv, env)"):
        assert name in section, name


def test_in_process_run_example_works(workdir):
    """The inline `run([...], {...})` example of the Python API section, as written."""
    calls = re.findall(r"`(run\(\[.*?\], \{.*?\}\))`", _section("### The Python API"))
    assert len(calls) == 1
    code = f"import sys\nfrom wardrik_cli.cli.app import run\nsys.exit({calls[0]})\n"
    p = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, env=_env(workdir),
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 5 and all(line.startswith('{"specversion":"1.0"') for line in lines), lines


def test_layout_section_names_every_layer():
    assert README.index("## How the code is laid out") < README.index("## Performance")
    section = _section("## How the code is laid out")
    package = REPO / "wardrik_cli"
    subpackages = sorted(str(p.parent.relative_to(package)) for p in package.rglob("__init__.py")
                         if p.parent != package)
    listed = re.findall(r"^- (.*?):", section, re.M)
    assert listed == ["`errors.py`, `settings.py`", "`protocol/`", "`extras.py`", "`store/`", "`read/`", "`remote/`",
                      "`folding/`", "`follow/`", "`cli/`", "`cli/render/`"], listed  # lowest first, as the rule reads
    assert sorted(x.strip("`/") for x in listed[1:] if not x.endswith(".py`")) == subpackages
    assert "tests/test_layers.py" in section and (REPO / "tests" / "test_layers.py").exists()


def test_module_paths_named_in_the_readme_exist():
    """Every `wardrik_cli.x.y` the README names is a module, or a name in one."""
    import importlib

    named = set(re.findall(r"\bwardrik_cli(?:\.\w+)+", README))
    assert named
    for dotted in sorted(named):
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                continue
            for attr in parts[i:]:
                assert hasattr(obj, attr), dotted
            break


def _shell_lines() -> list[str]:
    lines = []
    for block in _blocks("sh"):
        if "pip install" in block:
            continue  # the two set-up commands: CI runs them (.ci/run)
        for line in block.strip().splitlines():
            # the guide's set-up (the copy and the variables): the test makes its own copy
            if line.startswith(("export ", "cp -r sample_ledgers /tmp/ledgers")) or any(n in line for n in NOT_RUN):
                continue
            lines.append(line)
    return lines


SHELL = _shell_lines()


def test_the_guide_has_shell_examples():
    assert len(SHELL) >= 15
    for cmd in ("tail", "page", "fold", "activity", "compact", "head", "audit record", "audit page", "check"):
        assert any(re.search(rf"\bwardrik {cmd}\b", line) for line in SHELL), cmd


@pytest.mark.skipif(not shutil.which("jq"), reason="jq is not installed")
def test_shell_examples_run_in_order(workdir):
    """Every safe shell line, in order, as a reader would type them (cursor files and `cur=` carry on)."""
    before = _tree(REPO / "sample_ledgers")
    script = "set -e -o pipefail\n"
    for n, line in enumerate(SHELL):
        script += f"echo '>>> {n}' >&2\n{line}\n"
    p = subprocess.run(["bash", "-c", script], cwd=workdir, capture_output=True, env=_env(workdir), timeout=300)
    err = p.stderr.decode()
    ran = re.findall(r"^>>> (\d+)$", err, re.M)
    failed = SHELL[int(ran[-1])] if ran else None
    assert p.returncode == 0, (failed, err[-2000:])
    assert len(ran) == len(SHELL) and "Traceback" not in err
    out = p.stdout.decode()
    assert "permission denied: role billing-ro lacks payouts:read" in out  # the jq line found the failure
    assert _tree(REPO / "sample_ledgers") == before  # the examples ran on the copy only


def _tree(path: Path) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


def test_pictures_exist_and_are_made_by_the_script():
    shown = re.findall(r"\]\((docs/[^)]+\.svg)\)", README)
    assert len(shown) >= 6
    script = (REPO / "docs" / "make_pictures.py").read_text()
    for path in shown:
        svg = REPO / path
        assert svg.exists() and svg.read_text().startswith("<svg"), path
        assert f'"{Path(path).stem}"' in script, path
