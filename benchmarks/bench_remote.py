"""Remote `page` after a cursor 10 events before the end of a 200 MB remote log, against the same
on a 10-event remote log: each with a warm mirror (the figure) and a cold one (info).

    python benchmarks/bench_remote.py [--mb 200] [--days 30] [--repeat 7]

moto's server runs as its own process on 127.0.0.1. Both logs are shipped with `wardrik ship`
(64 MB segments, one UTC day at most each: a 200 MB log over --days days). Each run is the
`wardrik` executable as a user runs it (start-up, the store's listing and the sync included):

    wardrik --root s3://BUCKET/PREFIX page LOG --after CURSOR -o jsonl

warm: the mirror (under a cache folder of the benchmark's own) holds the log already, so the
sync lists the log's keys and fetches nothing; cold: the cache folder is emptied before each
run, so the sync fetches the segment holding the cursor (and none before it). The output of
every run is checked (the last 10 events). Target: warm at most 3x the 10-event log's.
"""
from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import moto_server  # noqa: E402
from spread_ledger import write_spread  # noqa: E402

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


def _cursor(log: str, seq: int) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({log: seq})).rstrip(b"=").decode()


def _time(cmd: list[str], env: dict[str, str], repeat: int, cache: Path, cold: bool, want: int) -> float:
    runs = []
    for _ in range(repeat):
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        t = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, check=True)
        runs.append(time.perf_counter() - t)
        assert p.stdout.count(b"\n") == want, (p.stdout[-300:], p.stderr)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    try:
        with moto_server() as (_endpoint, client, env):
            cache = tmp / "cache"
            env = {**env, "WARDRIK_CACHE": str(cache)}
            env.pop("WARDRIK_ROOT", None)
            return _run(a, tmp, cache, env, client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(a: argparse.Namespace, tmp: Path, cache: Path, env: dict[str, str], client: Any) -> int:
    rows = []
    for name, kw in (("big", {"mb": a.mb, "days": a.days}), ("small", {"events": 10, "days": 0.001})):
        root = tmp / name
        subprocess.run([WARDRIK, "--root", str(root), "init"], check=True, capture_output=True)
        info = write_spread(root / f"{name}.jsonl", log_id=name, end_ns=time.time_ns() - 60 * 10**9, **kw)
        client.create_bucket(Bucket=f"bench-{name}")
        url = f"s3://bench-{name}/fleet"
        subprocess.run([WARDRIK, "--root", str(root), "ship", url, "-q"], env=env, check=True)
        segs = sum(1 for p in client.get_paginator("list_objects_v2").paginate(Bucket=f"bench-{name}")
                   for o in p.get("Contents", []) if o["Key"].endswith(".jsonl"))
        cmd = [WARDRIK, "--root", url, "page", name, "--after", _cursor(name, info["events"] - 10), "-o", "jsonl"]
        subprocess.run(cmd, env=env, check=True, capture_output=True)  # warms the mirror
        warm = _time(cmd, env, a.repeat, cache, False, 10)
        cold = _time(cmd, env, a.repeat, cache, True, 10)
        rows.append((name, info["bytes"], info["events"], segs, warm, cold))
    print(f"remote page after a cursor 10 events before the end (moto on loopback, median of {a.repeat}, "
          "the wardrik executable):")
    for name, size, events, segs, warm, cold in rows:
        print(f"  {name:5}  {size / 1e6:8.1f} MB  {events:9,} events  {segs:4} segments   "
              f"warm {warm * 1000:7.1f} ms   cold {cold * 1000:8.1f} ms")
    ratio = rows[0][4] / rows[1][4]
    print(f"  warm ratio big/small {ratio:5.2f}x (target at most 3x); cold ratio {rows[0][5] / rows[1][5]:5.2f}x "
          "(info: the cold run fetches the segment holding the cursor)")
    return 0 if ratio <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
