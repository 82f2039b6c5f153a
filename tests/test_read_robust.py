"""Hostile roots and data met by readers (a review's findings, each a regression test).

- A chain of folders deeper than a log id can reach (1,100 levels) is walked no deeper than
  that, without recursion: every whole-root command works on the logs there are.
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from conftest import jsonl, run_cli

TRIGGER = '{"trigger":{"name":"x"}}'


def _ok(p) -> None:
    assert p.returncode == 0, p.stderr
    assert b"internal error" not in p.stderr and b"Traceback" not in p.stderr, p.stderr


# -- a chain of folders deeper than any log id ---------------------------------------------------
def _chain(base: Path, depth: int) -> list[Path]:
    """``base/d/d/...`` ``depth`` levels deep (made one level at a time: ``os.makedirs``
    recurses); the folders, top first."""
    made, p = [], base
    for _ in range(depth):
        p = p / "d"
        p.mkdir()
        made.append(p)
    return made


def _unchain(made: list[Path]) -> None:
    """Remove the chain bottom up (``shutil.rmtree``, and pytest's clean-up, recurse)."""
    for p in reversed(made):
        for e in os.scandir(p):
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.path)
        p.rmdir()


def test_a_chain_of_folders_deeper_than_a_log_id_is_walked_only_as_deep_as_one(root):
    run_cli("append", "ok", "trigger.fired", "-d", TRIGGER, root=root, check=True)
    made = _chain(root, 1100)
    try:
        deepest = "d/" * 99 + "x"  # 199 characters: a log id as deep as one can be
        run_cli("append", deepest, "trigger.fired", "-d", TRIGGER, root=root, check=True)
        (root / ("d/" * 100 + "y.jsonl")).write_bytes((root / "ok.jsonl").read_bytes())  # 201: no log id
        p = run_cli("page", "-o", "jsonl", root=root)
        _ok(p)
        assert sorted(e["subject"] for e in jsonl(p.stdout)) == sorted(["agents/ok", f"agents/{deepest}"])
        p = run_cli("head", "-o", "json", root=root)
        _ok(p)
        assert p.stdout.strip()
        for args in (("check",), ("activity", "-o", "json"), ("stats", "-o", "json"), ("compact", "-q"),
                     ("page", "d", "-o", "jsonl")):
            _ok(run_cli(*args, root=root))
        act = orjson.loads(run_cli("activity", "-o", "json", root=root).stdout)
        assert set(act) == {"ok", deepest}
    finally:
        _unchain(made)
