"""The layer rule, checked on the source: a layer imports only the layers below it.

Ranks, lowest first: ``errors`` and ``settings`` 0, ``extras`` (the optional dependencies) and ``protocol`` 1, ``store`` 2, ``read`` 3,
``folding`` 4, ``follow`` 5, ``cli`` 6 (``cli/render`` counts as ``cli``). ``errors`` imports no
wardrik module at all and ``settings`` only ``errors``. Typer, Click and Rich are imported only
under ``wardrik_cli/cli/``, and Rich only under ``wardrik_cli/cli/render/``.

Every module under ``wardrik_cli/`` is parsed with ``ast`` (nothing is imported), and every
import counts wherever it is: at module level, inside functions, under ``TYPE_CHECKING``,
relative (``from ..store import log``), and ``importlib.import_module("...")`` /
``__import__("...")`` calls whose module name is a string (for an f-string, its literal
start up to the last dot: ``f"wardrik_cli.cli.{name}"`` is ``wardrik_cli.cli``).

The package's own ``__init__`` (the public API, which loads any layer on first use) is the
one module exempt; a library module importing a name from it is judged by the module
``wardrik_cli._DEFINED_IN`` says defines that name.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "wardrik_cli"
TOP = "wardrik_cli"

RANKS = {"errors": 0, "settings": 0, "extras": 1, "protocol": 1, "store": 2, "read": 3, "remote": 3, "folding": 4, "follow": 5, "cli": 6}
UI_LIBRARIES = ("typer", "click", "rich")


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module under the package, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _defined_in() -> dict[str, str]:
    """``wardrik_cli._DEFINED_IN``, read from the source (nothing is imported)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "_DEFINED_IN" and node.value is not None:
            return ast.literal_eval(node.value)
    raise AssertionError("wardrik_cli/__init__.py defines no _DEFINED_IN")


MODULES = _modules()
DEFINED_IN = _defined_in()


def layer_of(module: str) -> str | None:
    """The layer a wardrik module belongs to (``None`` for the package itself, the public API)."""
    if module == TOP:
        return None
    first = module.split(".")[1]
    return first if first in RANKS else "?" + first


def is_render(module: str) -> bool:
    return module == f"{TOP}.cli.render" or module.startswith(f"{TOP}.cli.render.")


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # a dotted module name (a wardrik module, or e.g. "rich.console")
    text: str  # how it was written, for the message


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _name_in(package: str, name: str, known: dict[str, Path]) -> str:
    """What ``from PACKAGE import NAME`` loads: the submodule NAME if there is one, else, for the
    package itself, the module that defines NAME (its lazy public API), else the package."""
    if f"{package}.{name}" in known:
        return f"{package}.{name}"
    if package == TOP and name in DEFINED_IN:
        return DEFINED_IN[name]
    return package


def _literal_start(node: ast.expr) -> str | None:
    """The module named by a string argument, or the literal start of an f-string up to its last dot."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and "." in first.value:
            return first.value.rsplit(".", 1)[0]
    return None


def _is_import_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("import_module", "__import__")
    if isinstance(func, ast.Attribute):
        return func.attr in ("import_module", "__import__")
    return False


def imports_of(source: str, importer: str, *, is_package: bool = False,
               known: dict[str, Path] | None = None) -> Iterator[Import]:
    """Every import in ``source`` (the module ``importer``), at any depth."""
    known = MODULES if known is None else known
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(importer, is_package, node.level, node.module)
            dots = "." * node.level
            for alias in node.names:
                text = f"from {dots}{node.module or ''} import {alias.name}"
                if base == TOP or base.startswith(TOP + ".") or node.level:
                    yield Import(node.lineno, _name_in(base, alias.name, known), text)
                else:
                    yield Import(node.lineno, base, text)
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            name = _literal_start(node.args[0])
            if name is None:
                continue  # a name known only at run time (e.g. a user's own view module)
            if name.startswith("."):
                package = next((_literal_start(k.value) for k in node.keywords if k.arg == "package"), None)
                if package is None:
                    continue
                level = len(name) - len(name.lstrip("."))
                name = _resolve_relative(package, True, level, name.lstrip(".") or None)
            yield Import(node.lineno, name, f"{ast.unparse(node.func)}({ast.unparse(node.args[0])})")


def violations_in(source: str, importer: str, path: str = "<source>", *, is_package: bool = False,
                  known: dict[str, Path] | None = None) -> list[str]:
    """Each import in ``source`` that breaks the layer rule or the UI-library rule, as a message."""
    found = []
    mine = layer_of(importer)
    for imp in imports_of(source, importer, is_package=is_package, known=known):
        where = f"{path}:{imp.line}: {importer} ({mine}) has `{imp.text}`"
        root = imp.target.split(".")[0]
        if root in UI_LIBRARIES:
            if mine != "cli":
                found.append(f"{where}: {root} may be imported only under wardrik_cli/cli/")
            elif root == "rich" and not is_render(importer):
                found.append(f"{where}: rich may be imported only under wardrik_cli/cli/render/")
            continue
        if root != TOP or importer == TOP:
            continue  # the standard library or a third-party package; or the public API itself
        theirs = layer_of(imp.target)
        if theirs is None:
            if mine != "cli":  # the bare package: its lazy names can load any layer
                found.append(f"{where}: imports the package itself (which loads any layer); import the module")
            continue
        if mine is None or mine.startswith("?") or theirs.startswith("?"):
            bad = mine if (mine or "").startswith("?") else theirs
            found.append(f"{where}: {bad[1:]!r} is no layer (add it to RANKS in tests/test_layers.py)")
            continue
        if is_render(imp.target) and mine != "cli":
            found.append(f"{where}: cli/render may be imported only by cli")
        elif RANKS[theirs] > RANKS[mine]:
            found.append(f"{where}: {mine} (rank {RANKS[mine]}) imports {imp.target} ({theirs}, rank "
                         f"{RANKS[theirs]}), a higher layer")
        elif mine == "errors" or (mine == "settings" and theirs != "errors" and theirs != "settings"):
            found.append(f"{where}: {mine} imports nothing of wardrik" + ("" if mine == "errors" else " but errors"))
    return found


def check_tree(modules: dict[str, Path] = MODULES) -> list[str]:
    found = []
    for name, path in modules.items():
        found += violations_in(path.read_text(), name, str(path.relative_to(REPO)),
                               is_package=path.name == "__init__.py", known=modules)
    return found


# --- the real tree -----------------------------------------------------------------------

def test_every_module_is_in_a_layer():
    assert len(MODULES) >= 40, sorted(MODULES)  # the walk really found the package
    for layer in RANKS:
        assert any(layer_of(m) == layer for m in MODULES), f"no module in layer {layer}"
    strays = sorted(m for m in MODULES if m != TOP and layer_of(m) not in RANKS)
    assert not strays, f"modules in no layer (give them a rank in RANKS): {strays}"


def test_the_checker_sees_the_real_imports():
    """Guards against a checker that silently sees nothing."""
    seen = {imp.target for imp in imports_of((PACKAGE / "cli" / "app.py").read_text(), f"{TOP}.cli.app")}
    assert "typer" in seen
    assert f"{TOP}.cli" in seen  # import_module(f"wardrik_cli.cli.{module}")
    assert any(t.startswith(f"{TOP}.") and layer_of(t) != "cli" for t in seen)
    total = sum(1 for name, path in MODULES.items()
                for imp in imports_of(path.read_text(), name, is_package=path.name == "__init__.py")
                if imp.target.startswith(TOP + "."))
    assert total >= 50


def test_no_layer_imports_a_higher_one():
    found = check_tree()
    assert not found, "layer rule broken (a layer imports only those below it):\n" + "\n".join(found)


def test_defined_in_names_real_modules():
    missing = sorted({m for m in DEFINED_IN.values() if m not in MODULES})
    assert not missing, missing


# --- the checker can fail ----------------------------------------------------------------

FAKE = {**MODULES}


@pytest.mark.parametrize("importer, source, expect", [
    # a lower layer importing a higher one, in every spelling
    ("wardrik_cli.store.log", "from wardrik_cli.folding.engine import fold\n", "a higher layer"),
    ("wardrik_cli.store.log", "def f():\n    if True:\n        import wardrik_cli.follow.live\n", "a higher layer"),
    ("wardrik_cli.store.log", "from ..folding import engine\n", "a higher layer"),
    ("wardrik_cli.store.log", "from ..cli.render import console\n", "cli/render may be imported only by cli"),
    ("wardrik_cli.protocol.names", "from wardrik_cli import Reader\n", "a higher layer"),
    ("wardrik_cli.protocol.names", "from wardrik_cli import store\n", "a higher layer"),
    ("wardrik_cli.read.reader", "import importlib\nm = importlib.import_module('wardrik_cli.folding.views')\n",
     "a higher layer"),
    ("wardrik_cli.read.reader", "from importlib import import_module\nimport_module(f'wardrik_cli.cli.{x}')\n",
     "a higher layer"),
    ("wardrik_cli.read.reader", "__import__('wardrik_cli.follow.follower')\n", "a higher layer"),
    ("wardrik_cli.folding.engine", "import importlib\nimportlib.import_module('..follow', package='wardrik_cli.folding')\n",
     "a higher layer"),
    ("wardrik_cli.follow.live", "import wardrik_cli\n", "the package itself"),
    ("wardrik_cli.errors", "from wardrik_cli.settings import load\n", "imports nothing of wardrik"),
    ("wardrik_cli.settings", "from wardrik_cli.protocol import times\n", "a higher layer"),
    # the UI libraries
    ("wardrik_cli.store.log", "import typer\n", "typer may be imported only under wardrik_cli/cli/"),
    ("wardrik_cli.folding.views", "def f():\n    from click import echo\n", "click may be imported only"),
    ("wardrik_cli.follow.live", "from rich.console import Console\n", "rich may be imported only under"),
    ("wardrik_cli.cli.app", "from rich.table import Table\n", "only under wardrik_cli/cli/render/"),
    ("wardrik_cli.cli.app", "import importlib\nimportlib.import_module('rich.console')\n", "rich may be imported"),
    # a module outside every layer
    ("wardrik_cli.gadgets", "from wardrik_cli.store import log\n", "no layer"),
])
def test_checker_flags_a_fake_offending_import(importer, source, expect):
    found = violations_in(source, importer, known=FAKE)
    assert len(found) == 1 and expect in found[0], found
    assert importer in found[0]  # the message names the module and the import


@pytest.mark.parametrize("importer, source", [
    ("wardrik_cli.folding.engine", "from wardrik_cli.store.log import Log\nfrom ..read import reader\n"),
    ("wardrik_cli.folding.engine", "from . import checkpoint\nfrom .views import load_view\n"),
    ("wardrik_cli.follow.listener", "from wardrik_cli import fold, Reader\n"),
    ("wardrik_cli.protocol.names", "from wardrik_cli.errors import BadLogId\nimport re, os.path\n"),
    ("wardrik_cli.settings", "from wardrik_cli.errors import BadInput\n"),
    ("wardrik_cli.cli.app", "import typer\nimport click\nfrom wardrik_cli.cli.render import console\n"),
    ("wardrik_cli.cli.render.console", "from rich.console import Console\nimport wardrik_cli.folding.views\n"),
    ("wardrik_cli.folding.views", "import importlib\nimportlib.import_module(module_name)\n"),
    ("wardrik_cli", "from wardrik_cli.cli.app import run\n"),
])
def test_checker_allows_what_the_rule_allows(importer, source):
    assert violations_in(source, importer, known=FAKE) == []


def test_checker_finds_a_violation_in_a_fake_tree(tmp_path):
    pkg = tmp_path / "wardrik_cli"
    for sub in ("store", "folding"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text('"""x"""\n')
    (pkg / "__init__.py").write_text("")
    (pkg / "folding" / "engine.py").write_text("from wardrik_cli.store import log\n")
    (pkg / "store" / "log.py").write_text("import os\n\n\ndef late():\n    from ..folding.engine import fold\n")
    modules = _modules(pkg)
    assert set(modules) == {"wardrik_cli", "wardrik_cli.store", "wardrik_cli.store.log", "wardrik_cli.folding",
                            "wardrik_cli.folding.engine"}
    found = []
    for name, path in modules.items():
        found += violations_in(path.read_text(), name, path.name, is_package=path.name == "__init__.py",
                               known=modules)
    assert len(found) == 1
    assert found[0].startswith("log.py:5: wardrik_cli.store.log (store)")
    assert "wardrik_cli.folding.engine (folding, rank 4)" in found[0]
