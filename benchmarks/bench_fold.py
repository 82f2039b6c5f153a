"""The fold figures of issue 4, each next to its baseline, as one table with PASS/MISS.

    python benchmarks/bench_fold.py [--mb 200] [--repeats 3] [--workdir DIR] [--wardrik PATH]

- cold ``fold --view state`` of the log (no checkpoint) vs seed 000's naive fold
  (``naive_fold.py``: read the whole file, json.loads each line, fold): at most 0.5x;
- ``fold`` after one more append (checkpoint + one event) vs the cold fold: at most 0.2x;
- ``activity`` on the big log vs on a 10-event log (both with their checkpoint, after one
  untimed run): at most 3x;
- peak RSS of a cold fold with every view (state, timeline, activity) on the big log: < 120 MB.

Times are medians of whole-process runs (``time.perf_counter`` around ``subprocess.run``,
stdout to /dev/null) after one untimed warm-up that puts the log in the page cache. Peak
memory is ``ru_maxrss`` from ``os.wait4`` on the command's own process. The log comes from
``gen_ledger.py`` (deterministic) and is reused while it exists; appends go to a copy.
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

HERE = Path(__file__).resolve().parent
MB = 1 << 20


def run(cmd: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.decode(errors='replace')}")
    return dt


def peak_rss(cmd: list[str]) -> int:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}")
    return ru.ru_maxrss * 1024


def median(f, n: int) -> float:
    return statistics.median(f() for _ in range(n))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench-fold")
    ap.add_argument("--wardrik", default=str(Path(sys.executable).parent / "wardrik"))
    a = ap.parse_args(argv)
    w, py, n = a.wardrik, sys.executable, a.repeats
    a.workdir.mkdir(parents=True, exist_ok=True)
    big_root, small_root, scratch = a.workdir / f"big{int(a.mb)}", a.workdir / "small", a.workdir / "scratch"
    big = big_root / "acme" / "big.jsonl"
    if not big.exists():
        print(f"generating a {a.mb:g} MB log in {big} ...", file=sys.stderr)
        subprocess.run([py, str(HERE / "gen_ledger.py"), "--root", str(big_root), "--log", "acme/big", "--mb", str(a.mb)],
                       check=True, stdout=subprocess.DEVNULL)
    if not (small_root / "acme" / "small.jsonl").exists():
        subprocess.run([py, str(HERE / "gen_ledger.py"), "--root", str(small_root), "--log", "acme/small", "--events", "10"],
                       check=True, stdout=subprocess.DEVNULL)
    size = big.stat().st_size
    ck = big_root / ".wardrik" / "checkpoints"

    def cold(view: str = "state") -> list[str]:
        shutil.rmtree(ck, ignore_errors=True)
        return [w, "--root", str(big_root), "fold", "acme/big", "--view", view]

    rows = []
    # 1. cold fold vs seed 000's naive fold
    naive_cmd = [py, str(HERE / "naive_fold.py"), str(big)]
    run(naive_cmd)
    run(cold())
    t_naive = median(lambda: run(naive_cmd), n)
    t_cold = median(lambda: run(cold()), n)
    rows.append((f"cold fold --view state ({size / 1e6:.0f} MB)", f"{t_cold:.2f} s", f"naive {t_naive:.2f} s",
                 t_cold / t_naive, "<= 0.5x", t_cold / t_naive <= 0.5))

    # 2. fold after one more append, on a copy of the log
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "acme").mkdir(parents=True)
    shutil.copyfile(big, scratch / "acme" / "big.jsonl")
    times = []
    for _i in range(n):
        run([w, "--root", str(scratch), "fold", "acme/big"])  # the checkpoint after the last append
        run([w, "--root", str(scratch), "append", "acme/big", "trigger.fired", "--no-sync",
             "--data", '{"trigger": {"name": "bench"}}'])
        times.append(run([w, "--root", str(scratch), "fold", "acme/big"]))
    t_inc = statistics.median(times)
    rows.append(("fold after one more append", f"{t_inc:.2f} s", f"cold {t_cold:.2f} s", t_inc / t_cold, "<= 0.2x",
                 t_inc / t_cold <= 0.2))

    # 3. activity on the big log vs on a 10-event log
    act_big = [w, "--root", str(big_root), "activity", "acme/big"]
    act_small = [w, "--root", str(small_root), "activity", "acme/small"]
    run(act_big)
    run(act_small)
    t_ab = median(lambda: run(act_big), n)
    t_as = median(lambda: run(act_small), n)
    rows.append((f"activity ({size / 1e6:.0f} MB log)", f"{t_ab:.2f} s", f"10 events {t_as:.2f} s", t_ab / t_as,
                 "<= 3x", t_ab / t_as <= 3))

    # 4. peak memory, cold, every view
    for view in ("state", "timeline", "activity"):
        rss = peak_rss(cold(view))
        rows.append((f"peak RSS: cold fold --view {view}", f"{rss / MB:.1f} MB", "-", None, "< 120 MB", rss < 120 * MB))
    shutil.rmtree(scratch, ignore_errors=True)

    head = ("figure", "wardrik", "baseline", "ratio", "target", "result")
    table = [head] + [(f, v, b, "-" if r is None else f"{r:.2f}x", t, "PASS" if ok else "MISS") for f, v, b, r, t, ok in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for j, r in enumerate(table):
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            print("  ".join("-" * x for x in widths))
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
