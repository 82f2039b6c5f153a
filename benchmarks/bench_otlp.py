"""The ``export otlp`` figure of issue 15: spans per second of ``export otlp -o FILE`` on a 200 MB log.

    python benchmarks/bench_otlp.py [--mb 200] [--repeats 3] [--workdir DIR] [--wardrik PATH]

- ``wardrik --root R export otlp -o FILE`` over one log of ``--mb`` MB (10**6 bytes) written
  by ``gen_ledger.py`` with its fixed seed (log ``acme/big``; reused while it exists): spans
  written / wall-clock seconds of the whole process (start-up included), median of
  ``--repeats`` runs after one untimed warm-up (the log is in the page cache). Target: at
  least 50,000 spans per second.
- peak RSS of a run (``ru_maxrss``): flat, whatever the size (info).
- correctness, once: the file's spans are counted by decoding every line (OTLP JSON).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import timed  # noqa: E402
from gen_ledger import write_log  # noqa: E402

TARGET = 50_000


def count_spans(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            for rs in orjson.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    n += len(ss["spans"])
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench-otlp")
    ap.add_argument("--wardrik", default=str(Path(sys.executable).with_name("wardrik")))
    a = ap.parse_args()
    root = a.workdir / f"root-{a.mb:g}mb"
    log = root / "acme" / "big.jsonl"
    if not log.exists():
        print(f"writing {a.mb:g} MB to {log} ...", file=sys.stderr)
        write_log(log, "acme/big", mb=a.mb, events=None)
    (root / ".wardrik").mkdir(exist_ok=True)
    out = a.workdir / "spans.jsonl"
    cmd = [a.wardrik, "--root", str(root), "export", "otlp", "-o", str(out)]
    out.unlink(missing_ok=True)
    timed(cmd)  # warm-up: the log into the page cache
    spans = count_spans(out)
    times, rss = [], 0
    for _ in range(a.repeats):
        out.unlink(missing_ok=True)  # -o appends: each run writes a file of its own
        dt, r = timed(cmd)
        times.append(dt)
        rss = max(rss, r)
    assert count_spans(out) == spans
    out.unlink(missing_ok=True)
    med = statistics.median(times)
    rate = spans / med
    size = log.stat().st_size
    print(f"log: {size / 1e6:.0f} MB, {spans:,} spans")
    print(f"export otlp -o FILE: median {med:.2f} s of {a.repeats} (best {min(times):.2f} s) "
          f"= {rate:,.0f} spans/s (target >= {TARGET:,}: {'ok' if rate >= TARGET else 'MISSED'}); "
          f"peak RSS {rss / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
