"""`wardrik ship` of 200 MB over 8 logs to a local S3 server, against the floor: the same bytes
put as the same number of objects, one after another, with the same client (obstore).

    python benchmarks/bench_ship.py [--mb 200] [--logs 8] [--repeat 3]

moto's server runs as its own process on 127.0.0.1 (so neither side shares its interpreter).
The ship is timed as a user runs it (the `wardrik` executable, start-up included); the floor
is a loop of `obstore.put` over the segments ship stored, read back first, to fresh keys.
Each run uses a fresh bucket, emptied afterwards. Target: ship at most 2x the floor.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import moto_server  # noqa: E402
from spread_ledger import write_spread  # noqa: E402

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--logs", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench-ship-"))
    try:
        with moto_server() as (endpoint, client, env):
            return _run(a, tmp, endpoint, env, client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(a: argparse.Namespace, tmp: Path, endpoint: str, env: dict[str, str], client: Any) -> int:
    import obstore
    from obstore.store import S3Store

    root = tmp / "root"
    subprocess.run([WARDRIK, "--root", str(root), "init"], check=True, capture_output=True)
    for i in range(a.logs):
        write_spread(root / f"fleet/agent{i}.jsonl", mb=a.mb / a.logs, days=0.01, log_id=f"fleet/agent{i}")
    total = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
    ship_s, floor_s, objects = [], [], 0
    for n in range(a.repeat):
        bucket = f"bench-{n}"
        client.create_bucket(Bucket=bucket)
        shutil.rmtree(root / ".wardrik/ship", ignore_errors=True)
        t = time.perf_counter()
        subprocess.run([WARDRIK, "--root", str(root), "ship", f"s3://{bucket}/ship", "-q"], env=env, check=True)
        ship_s.append(time.perf_counter() - t)
        store = S3Store(bucket, config={"endpoint": endpoint, **{k: v for k, v in (
            ("access_key_id", "bench"), ("secret_access_key", "bench"), ("region", "us-east-1"))}},
            client_options={"allow_http": True})
        keys = [o["path"] for batch in obstore.list(store, "ship/") for o in batch if o["path"].endswith(".jsonl")]
        blobs = [bytes(obstore.get(store, k).bytes()) for k in keys]
        assert sum(map(len, blobs)) == total, "ship stored other bytes than the logs hold"
        objects = len(blobs)
        t = time.perf_counter()
        for i, b in enumerate(blobs):
            obstore.put(store, f"floor/{i:06d}.jsonl", b, use_multipart=False)  # as ship puts
        floor_s.append(time.perf_counter() - t)
        del blobs
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for o in page.get("Contents", []):
                client.delete_object(Bucket=bucket, Key=o["Key"])
    s, f = statistics.median(ship_s), statistics.median(floor_s)
    print(f"ship {total / 1e6:.0f} MB over {a.logs} logs ({objects} segments) to moto on loopback, "
          f"median of {a.repeat}:")
    print(f"  wardrik ship                      {s:7.2f} s  {total / 1e6 / s:6.1f} MB/s")
    print(f"  obstore.put loop, same objects    {f:7.2f} s  {total / 1e6 / f:6.1f} MB/s")
    print(f"  ratio                             {s / f:7.2f}x  (target at most 2x)")
    return 0 if s / f <= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
