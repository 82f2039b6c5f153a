"""Values nested too deep to write, cut at a depth: what renderers and JSON outputs show of them.

``append`` refuses data nested more than 128 levels deep (``store.append.MAX_DEPTH``), but a
line written by hand may hold anything orjson reads (1,023 levels): deeper than orjson
writes (255 levels, counted from the top of the document written), and deeper than
Python's ``json`` and ``repr`` go (they stop at the recursion limit, less what the caller's
stack already uses). Contract:
- A value's top is level 1; each object or array inside a container is one level deeper.
- ``clip(value, depth=DEPTH)`` is ``value`` itself (no copy) when no object or array in it
  is deeper than ``depth``, so normal data is written byte for byte as before; else a copy
  in which every object or array deeper than ``depth`` is the string ``TOO_DEEP`` (valid
  JSON still, and saying where it was cut; the stored line keeps the whole value).
- ``too_deep(value, depth)``: whether ``clip`` would change it.
- Both walk with a stack of their own, never by recursion, so no depth can exhaust it.
- ``DEPTH`` is ``append``'s limit: any data ``append`` wrote is never cut.
"""
from __future__ import annotations

from typing import Any

DEPTH = 128  # store.append.MAX_DEPTH (not imported: readers would pay for the writer's imports)
TOO_DEEP = "[nested too deep]"


def too_deep(value: Any, depth: int = DEPTH) -> bool:
    """Whether an object or array in ``value`` is deeper than ``depth`` levels."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, level = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if level > depth:
            return True
        stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
    return False


def clip(value: Any, depth: int = DEPTH) -> Any:
    """``value`` with every object or array deeper than ``depth`` levels replaced by
    ``TOO_DEEP``; ``value`` itself when there is none (see the module's contract)."""
    if not too_deep(value, depth):
        return value
    if depth < 1:
        return TOO_DEEP
    top: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any, int]] = [(value, top, 1)]
    while stack:
        src, dst, level = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for k, v in items:
            if isinstance(v, (dict, list)):
                if level >= depth:
                    v = TOO_DEEP
                else:
                    copy: Any = {} if isinstance(v, dict) else []
                    stack.append((v, copy, level + 1))
                    v = copy
            if isinstance(dst, dict):
                dst[k] = v
            else:
                dst.append(v)
    return top
