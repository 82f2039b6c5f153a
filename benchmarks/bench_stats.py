"""The ``stats`` figure of issue 15: ``stats --by tool`` against the page that reads the same ends.

    python benchmarks/bench_stats.py [--mb 1000] [--logs 4] [--repeats 3] [--workdir DIR] [--wardrik PATH]

- ``wardrik --root R stats --by tool -o json`` over the root vs ``wardrik --root R page --all
  --types tool_call.completed,tool_call.failed -o jsonl`` on the same root (stdout /dev/null):
  at most 1.5x. stats reads the tool_call.started lines too (a call's name and duration come
  from its start) and the run ends (which end the calls left open), so it decodes about twice
  the lines page does; the rest of each log is passed over by the same byte look.
- peak RSS of the stats run (``ru_maxrss``, measured before this process holds any output):
  flat, whatever the size (info).
- correctness, once: the calls stats counts equal the lines page prints.
- the second run: ``stats --by tool`` again after one event was appended to each log (``wardrik
  append``), when the first run left its per-log checkpoints (``.wardrik/checkpoints/<log>@
  wardrik.stats.tool.json``): at most 0.2x the first (it reads only what was appended). The
  first run of each repeat starts with no stats checkpoint (they are deleted before it).

The root is ``--logs`` logs of ``--mb / --logs`` MB each (10**6 bytes), written by
``gen_ledger.py`` with its fixed seed (log i with seed SEED + i), and reused while it exists.
Times are medians of whole-process runs after one untimed warm-up of each command (so the
logs are in the page cache), the two commands taking turns.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import timed  # noqa: E402
from gen_ledger import SEED, write_log  # noqa: E402

TARGET = 1.5
SECOND_TARGET = 0.2


def drop_stats_checkpoints(root: Path) -> None:
    """The first run reads every log: the checkpoints an earlier run left are removed."""
    for p in (root / ".wardrik" / "checkpoints").rglob("*@wardrik.stats.*.json"):
        p.unlink()


def make_root(root: Path, mb: float, logs: int) -> int:
    total = 0
    for i in range(logs):
        log = f"fleet/agent-{i}"
        path = root / (log + ".jsonl")
        if not path.exists():
            write_log(path, log, mb=mb / logs, events=None, seed=SEED + i)
        total += path.stat().st_size
    (root / ".wardrik").mkdir(exist_ok=True)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1000)
    ap.add_argument("--logs", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench-stats")
    ap.add_argument("--wardrik", default=str(Path(sys.executable).parent / "wardrik"))
    a = ap.parse_args(argv)
    root = a.workdir / f"root-{a.mb:g}MB-{a.logs}logs"
    root.mkdir(parents=True, exist_ok=True)
    size = make_root(root, a.mb, a.logs)
    w = [a.wardrik, "--root", str(root)]
    stats_cmd = [*w, "stats", "--by", "tool", "-o", "json"]
    page_cmd = [*w, "page", "--all", "--types", "tool_call.completed,tool_call.failed", "-o", "jsonl"]

    # Timed first: a child inherits its parent's RSS high-water mark, so the check below (which
    # holds stats' output) must come after the runs whose peak RSS is read.
    s_times, p_times, again_times, rss = [], [], [], []
    for r in range(a.repeats):
        drop_stats_checkpoints(root)
        t, m = timed(stats_cmd)
        s_times.append(t)
        rss.append(m)
        p_times.append(timed(page_cmd)[0])
        for i in range(a.logs):  # one event appended to each log, then stats again from its checkpoints
            data = f'{{"tool": {{"name": "bench", "call": {{"id": "bench-{time.time_ns()}-{r}-{i}"}}}}}}'
            subprocess.run([*w, "append", f"fleet/agent-{i}", "tool_call.started", "--data", data],
                           stdout=subprocess.DEVNULL, check=True)
        again_times.append(timed(stats_cmd)[0])
    import orjson  # the check, once: stats counts a call per line page prints

    counted = sum(r["calls"] for r in orjson.loads(subprocess.run(stats_cmd, capture_output=True, check=True).stdout)
                  ["groups"])
    with subprocess.Popen(page_cmd, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        printed = sum(block.count(b"\n") for block in iter(lambda: proc.stdout.read(1 << 20), b""))  # type: ignore[union-attr]
    ok = counted == printed
    s, p, again = statistics.median(s_times), statistics.median(p_times), statistics.median(again_times)
    ratio = s / p
    second = again / s
    print(f"root: {a.logs} logs, {size / 1e6:,.0f} MB; {printed:,} tool call ends; median of {a.repeats}")
    print(f"{'stats --by tool':<58} {s:7.2f} s  peak RSS {max(rss) / 2**20:,.0f} MiB")
    print(f"{'page --all --types tool_call.completed,tool_call.failed':<58} {p:7.2f} s")
    print(f"{'stats --by tool again, after one append to each log':<58} {again:7.2f} s")
    verdict = "PASS" if ratio <= TARGET and ok else "MISS" if ok else "FAIL (counts differ)"
    print(f"ratio {ratio:.2f}x (target at most {TARGET}x): {verdict}; calls counted {counted:,}, lines {printed:,}")
    verdict2 = "PASS" if second <= SECOND_TARGET else "MISS"
    print(f"second run {second:.3f}x the first (target at most {SECOND_TARGET}x): {verdict2}")
    return 0 if verdict == "PASS" and verdict2 == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
