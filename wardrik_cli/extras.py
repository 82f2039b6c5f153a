"""The optional dependencies (pyproject's extras), imported only by the features that need them.

Contract: ``need(module, extra)`` returns the imported module, or raises ``MissingExtra``,
which the CLI prints as one ``error:`` line naming the pip command that installs the extra
(exit 1). Nothing else in wardrik imports an extra's module at its top level, so the core
commands start as fast with every extra installed as with none.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from wardrik_cli.errors import MissingExtra

EXTRAS = {"s3": "ship, pull and s3:// roots", "sql": "wardrik sql", "otlp": "wardrik export otlp"}


def need(module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        what = EXTRAS.get(extra, extra)
        raise MissingExtra(f"{what} needs the {extra!r} extra ({module} is not installed): "
                           f"pip install 'wardrik[{extra}]'") from None
