"""Output is written in blocks, not a write per event, even with PYTHONUNBUFFERED set: the
write system calls a real process made (/proc/<pid>/io syscw) stay few for thousands of events."""
from __future__ import annotations

import os

import pytest

from ledgergen import write_log
from procio import run_with_io
from conftest import WARDRIK

pytestmark = pytest.mark.subprocess
N = 5000


@pytest.mark.parametrize("args", [["page", "--all"], ["tail", "-n", str(N)], ["page", "--all", "-F", "json"],
                                  ["page", "--all", "--grep", "x"]])
def test_thousands_of_events_few_writes(root, args):
    write_log(root / "acme" / "big.jsonl", N, pad=50)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p, io = run_with_io([WARDRIK, "--root", str(root), *args], env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count(b'"specversion"') == N
    assert io["syscw"] < 50, io  # a write per event would be thousands
