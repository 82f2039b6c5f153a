"""Appenders in several processes at once: sequences 1..N, none reused, none skipped."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from contract_util import jsonl, log_path, run, seqs


def worker(root, w: int, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        p = run("append", "shared/log", "message.received", "--data",
                json.dumps({"message": {"id": f"w{w}-{i}"}}), root=root, timeout=120)
        assert p.returncode == 0, p.stderr
        out.append(p.stdout)
    return out


def test_eight_processes_25_each(root):
    # 200 appends from 8 threads through the command line in this process (each its own lock
    # file descriptor); test_eight_batches_at_once below is 8 real processes.
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda w: worker(root, w, 25), range(8)))
    raw = log_path(root, "shared/log").read_bytes()
    events = jsonl(raw)
    assert seqs(events) == list(range(1, 201))
    assert len({e["id"] for e in events}) == 200
    assert sorted(e["data"]["message"]["id"] for e in events) == sorted(f"w{w}-{i}" for w in range(8) for i in range(25))
    lines = set(raw.splitlines(keepends=True))
    printed = [line for r in results for line in r]
    assert all(p.count(b"\n") == 1 and p in lines for p in printed)
    times = [e["time"] for e in events]
    assert times == sorted(times)


@pytest.mark.subprocess
def test_eight_batches_at_once(root):
    """Eight real `wardrik` processes at once: the lock holds across processes."""
    def one(w):
        body = "".join(json.dumps({"type": "message.received", "data": {"message": {"id": f"w{w}-{i}"}}}) + "\n"
                       for i in range(25))
        p = run("append", "shared/log", "--batch", "-", input=body, root=root, timeout=120, process=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(one, range(8)))
    raw = log_path(root, "shared/log").read_bytes()
    events = jsonl(raw)
    assert seqs(events) == list(range(1, 201))
    for out in outs:
        assert out in raw  # one batch, one contiguous write
        s = seqs(jsonl(out))
        assert s == list(range(s[0], s[0] + 25))
