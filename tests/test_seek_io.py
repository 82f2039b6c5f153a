"""Seeks read kilobytes, not the file: asserted through /proc/<pid>/io (rchar), never timings."""
from __future__ import annotations

import orjson
import pytest

from tests.conftest import WARDRIK
from tests.ledgergen import write_log
from tests.procio import run_with_io
from wardrik_cli.protocol.cursor import encode_cursor

pytestmark = pytest.mark.subprocess  # /proc/<pid>/io of a real process

N_BIG = 110_000  # about 50 MB at ~470 bytes an event


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    big = tmp_path_factory.mktemp("big")
    times = write_log(big / "acme" / "big.jsonl", N_BIG)
    assert (big / "acme" / "big.jsonl").stat().st_size > 50_000_000
    small = tmp_path_factory.mktemp("small")
    write_log(small / "acme" / "big.jsonl", 20)
    return big, small, times


def _rchar(root, *args):
    p, io = run_with_io([WARDRIK, "--root", str(root), *args])
    assert p.returncode == 0, p.stderr
    return p, io["rchar"]


def test_page_after_cursor_near_end_reads_kilobytes(roots):
    big, small, _ = roots
    p_big, r_big = _rchar(big, "page", "acme/big", "--after", encode_cursor({"acme/big": N_BIG - 10}), "--format", "jsonl")
    p_small, r_small = _rchar(small, "page", "acme/big", "--after", encode_cursor({"acme/big": 10}), "--format", "jsonl")
    seqs = [int(orjson.loads(l)["sequence"]) for l in p_big.stdout.splitlines()]
    assert seqs == list(range(N_BIG - 9, N_BIG + 1))
    # Interpreter start-up reads the same modules in both runs; what differs is the log.
    assert r_big - r_small < 1_000_000, (r_big, r_small)


def test_page_since_seeks_by_time(roots):
    big, small, times = roots
    p_big, r_big = _rchar(big, "page", "acme/big", "--since", times[-5], "--format", "jsonl")
    _, r_small = _rchar(small, "page", "acme/big", "--format", "jsonl", "--limit", "5")
    assert [orjson.loads(l)["time"] for l in p_big.stdout.splitlines()] == times[-5:]
    assert r_big - r_small < 1_000_000, (r_big, r_small)


def test_head_reads_only_the_end(roots):
    big, small, _ = roots
    p_big, r_big = _rchar(big, "head", "acme/big")
    _, r_small = _rchar(small, "head", "acme/big")
    assert p_big.stdout.strip().decode() == encode_cursor({"acme/big": N_BIG})
    assert r_big - r_small < 200_000, (r_big, r_small)


def test_full_page_reads_the_file(roots):
    # The control: the same measurement does see a whole-file read, so the tests above could fail.
    big, small, _ = roots
    _, r_big = _rchar(big, "page", "acme/big", "--types", "run.started", "--limit", "5")
    _, r_small = _rchar(small, "page", "acme/big", "--types", "run.started", "--limit", "5")
    assert r_big - r_small > 50_000_000
