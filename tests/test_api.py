"""The public API (``wardrik_cli.__all__``): every name resolves to the object its module
defines under that very name, whatever was imported before; importing the package loads no
command-line library; the example in the package docstring runs; ``dir`` and ``help`` show
every name.

Name resolution runs in fresh interpreters (``python -c``): the package loads its names on
first use (PEP 562), so what this test process happened to import earlier must not decide it.
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import wardrik_cli

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "wardrik_cli"
UI_LIBRARIES = ("typer", "click", "rich")
ALL = list(wardrik_cli.__all__)
DEFINED_IN = dict(wardrik_cli._DEFINED_IN)


def _python(code: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WARDRIK_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    p = subprocess.run([sys.executable, "-c", code], cwd=cwd or REPO, capture_output=True, text=True, env=env,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr
    return p


def _module_path(module: str) -> Path:
    rel = Path(*module.split(".")[1:])
    return PACKAGE / rel / "__init__.py" if (PACKAGE / rel).is_dir() else PACKAGE / rel.with_suffix(".py")


def _top_level_names(path: Path) -> set[str]:
    """Names a module itself defines at top level (def, class, assignment), not ones it imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


# --- __all__ and _DEFINED_IN ---------------------------------------------------------------

def test_all_and_defined_in_agree():
    assert len(ALL) == len(set(ALL)), "a name is listed twice in __all__"
    assert set(ALL) == set(DEFINED_IN), (sorted(set(ALL) - set(DEFINED_IN)), sorted(set(DEFINED_IN) - set(ALL)))
    for name in ("Root", "Reader", "Filters", "resolve_logs", "fold", "compact", "record_audit", "append_event",
                 "publish_live", "Listener", "encode_cursor", "decode_cursor"):
        assert name in ALL, name


@pytest.mark.parametrize("name", ALL)
def test_each_name_is_defined_in_its_module_under_that_name(name):
    module = DEFINED_IN[name]
    assert module.startswith("wardrik_cli.")
    path = _module_path(module)
    assert path.exists(), f"{name}: _DEFINED_IN says {module}, which has no file"
    assert name in _top_level_names(path), f"{module} does not itself define {name} (it only imports it?)"


RESOLVE = textwrap.dedent("""
    import importlib, json, sys
    import wardrik_cli
    first = {first!r}
    for module in first:
        importlib.import_module(module)
    bad = {{}}
    for name in wardrik_cli.__all__:
        where = wardrik_cli._DEFINED_IN[name]
        try:
            got = getattr(wardrik_cli, name)
        except Exception as e:
            bad[name] = "does not resolve: %r" % (e,)
            continue
        want = getattr(importlib.import_module(where), name)
        if got is not want:
            bad[name] = "wardrik_cli.%s is %r, not %s.%s" % (name, got, where, name)
        elif getattr(want, "__module__", where) != where or getattr(want, "__name__", name) != name:
            bad[name] = "defined as %s.%s" % (want.__module__, want.__name__)
    print(json.dumps(bad))
""")


def _library_modules() -> list[str]:
    mods = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods.append(".".join(parts))
    return mods


@pytest.mark.parametrize("first", ["nothing", "every module", "their own modules"])
def test_every_name_resolves_whatever_was_imported_first(first):
    """``wardrik_cli.NAME`` is ``DEFINED_IN[NAME].NAME``, in a fresh interpreter, whether nothing,
    every library module, or the defining modules (in order) were imported first. (A public
    name that is also a subpackage's name, like ``fold``, is where this goes wrong.)"""
    modules = {"nothing": [], "every module": [m for m in _library_modules() if m != "wardrik_cli"],
               "their own modules": sorted(set(DEFINED_IN.values()))}[first]
    bad = json.loads(_python(RESOLVE.format(first=modules)).stdout)
    assert not bad, bad


def test_from_import_of_every_name_in_one_statement():
    """``from wardrik_cli import <every name>`` gives each name its own object, in either order."""
    for names in (ALL, list(reversed(ALL))):
        code = (f"from wardrik_cli import {', '.join(names)}\n"
                "import importlib, json, wardrik_cli\n"
                f"bad = [n for n in {names!r} if globals()[n] is not "
                "getattr(importlib.import_module(wardrik_cli._DEFINED_IN[n]), n)]\n"
                "print(json.dumps(bad))\n")
        bad = json.loads(_python(code).stdout)
        assert not bad, f"wrong objects for {bad} (order: {names[0]} first)"


# --- what importing the package loads --------------------------------------------------------

def test_import_loads_no_command_line_library():
    code = ("import sys, json\nimport wardrik_cli\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {UI_LIBRARIES!r})))\n")
    assert json.loads(_python(code).stdout) == []


def test_using_every_name_loads_no_command_line_library():
    """The whole library (every public name loaded) still needs no Typer, Click or Rich."""
    code = ("import sys, json\nimport wardrik_cli\n"
            "for name in wardrik_cli.__all__: getattr(wardrik_cli, name)\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {UI_LIBRARIES!r})))\n")
    assert json.loads(_python(code).stdout) == []


def test_import_is_lazy():
    """``import wardrik_cli`` alone loads none of the layers (start-up is a measured figure)."""
    code = ("import sys, json\nimport wardrik_cli\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('wardrik_cli.'))))\n")
    assert json.loads(_python(code).stdout) == []


# --- introspection ------------------------------------------------------------------------------

def test_dir_lists_every_name():
    code = "import json, wardrik_cli\nprint(json.dumps(dir(wardrik_cli)))\n"
    listed = set(json.loads(_python(code).stdout))
    assert set(ALL) <= listed, sorted(set(ALL) - listed)
    assert set(ALL) <= set(dir(wardrik_cli))


def test_help_shows_every_name():
    """``help(wardrik_cli)`` documents each public class and function (the README points there)."""
    code = "import pydoc, wardrik_cli\nprint(pydoc.render_doc(wardrik_cli, renderer=pydoc.plaintext))\n"
    text = _python(code).stdout
    assert "wardrik: the event ledgers" in text
    sections = dict(re.findall(r"^([A-Z][A-Z ]+)\n(.*?)(?=^[A-Z][A-Z ]+\n|\Z)", text, re.M | re.S))
    classes, functions = sections.get("CLASSES", ""), sections.get("FUNCTIONS", "")
    for name in ALL:
        obj = getattr(importlib.import_module(DEFINED_IN[name]), name)
        if isinstance(obj, type):
            assert re.search(rf"^    class {name}\b", classes, re.M), f"help() shows no class {name}"
        elif callable(obj):
            assert re.search(rf"^    {name}\(", functions, re.M), f"help() shows no function {name} (got {obj!r})"


# --- the docstring's example ----------------------------------------------------------------------

def _docstring_example() -> str:
    doc = wardrik_cli.__doc__ or ""
    m = re.search(r"::\n\n((?:[ ]{4}.*\n|\n)+)", doc)
    assert m, "the package docstring has no example (a `::` block)"
    return textwrap.dedent(m.group(1)).strip() + "\n"


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "sample_ledgers", tmp_path / "sample_ledgers",
                    ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    return tmp_path


def _tree(path: Path) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


def test_docstring_example_runs_on_a_copy_of_the_samples(sample_copy):
    example = _docstring_example()
    assert 'Root("sample_ledgers")' in example
    before = _tree(REPO / "sample_ledgers")
    logs = sorted(p.stem for p in (sample_copy / "sample_ledgers" / "acme").glob("*.jsonl"))
    counts = {f"acme/{n}": len((sample_copy / "sample_ledgers" / "acme" / f"{n}.jsonl").read_bytes().splitlines())
              for n in logs}

    out = _python(example, cwd=sample_copy).stdout.splitlines()

    # One line per event of every acme log, the appended one included, each "LOG TYPE".
    assert len(out) == sum(counts.values()) + 1, out
    rows = [line.split(" ") for line in out]
    assert all(len(r) == 2 and r[0] in counts and r[1].startswith("wardrik.") for r in rows), out
    assert {r[0] for r in rows} == set(counts)
    for log, n in counts.items():
        assert sum(r[0] == log for r in rows) == n + (log == "acme/triage"), log
    assert "acme/triage wardrik.trigger.fired" in out
    assert out[-1] == "acme/triage wardrik.trigger.fired"  # logs interleave by time: the new event is latest

    # The append really landed in the copy, and the original samples were never touched.
    *_, before_last, last = [json.loads(line) for line in
                             (sample_copy / "sample_ledgers" / "acme" / "triage.jsonl").read_bytes().splitlines()]
    assert last["type"] == "wardrik.trigger.fired" and last["data"] == {"trigger": {"name": "daily"}}
    assert last["source"] == "wardrik://acme-prod/agents/acme/triage"
    assert int(last["sequence"]) == int(before_last["sequence"]) + 1
    assert _tree(REPO / "sample_ledgers") == before
