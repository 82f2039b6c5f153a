"""``wardrik sql`` over 1 GB of local logs (issue 14's figure), next to its two baselines.

    python benchmarks/bench_sql.py            # 1 GB over 4 logs (gen_review, fixed seeds), ~1 min
    python benchmarks/bench_sql.py --quick    # 40 MB over 4 logs, a smoke run

Data: ``gen_review.write_fleet(root, "team/agent-", 4, max_bytes=250 MB)`` (``--quick``: 10 MB
each), generated once under ``<workdir>/sql/`` and reused while its parameters are unchanged.

Figures (wall time, median of ``--repeats`` whole-process runs after one untimed warm-up of
each command, which also checks the answers; the contenders take turns):

- ``wardrik --root R sql "select type, count(*) from events group by 1" -o jsonl`` against
  ``grep -c '"type":"wardrik.tool_call.failed"' FILES`` (one type's count; stdout a pipe, as
  GNU grep stops at the first match when it is /dev/null): at most 2.5x.
- the same against ``wardrik --root R page '*' --all -o jsonl`` to a pipe read and thrown
  away (the events the same answer is counted from, without even counting them): sql must
  be faster (< 1x).

Correctness, once: sql's count of tool_call.failed equals grep's sum, and its counts of every
type equal those counted from page's output. Exit 1 when a figure misses or an answer differs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen_review import write_fleet  # noqa: E402

MB = 1_000_000
LOGS = 4
QUERY = "select type, count(*) as n from events group by 1"
RARE = "tool_call.failed"


def wardrik_exe(given: str | None) -> str:
    return given or str(Path(sys.executable).with_name("wardrik"))


def ensure_root(workdir: Path, mb: int) -> tuple[Path, list[Path]]:
    base = workdir / "sql" / f"{LOGS}x{mb}MB"
    root = base / "root"
    meta = base / "meta.json"
    want = {"logs": LOGS, "max_bytes": mb * MB, "generator": (HERE / "gen_review.py").stat().st_size}
    if not (meta.exists() and json.loads(meta.read_text()) == want):
        t0 = time.perf_counter()
        write_fleet(root, "team/agent-", LOGS, max_bytes=mb * MB)
        meta.write_text(json.dumps(want))
        print(f"generated {root} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    files = sorted(root.rglob("*.jsonl"))
    return root, [f for f in files if ".wardrik" not in f.parts]


def timed(cmd: list[str]) -> tuple[float, bytes]:
    """Wall time of ``cmd`` with stdout a pipe this process reads (and keeps)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1) or (p.returncode == 1 and cmd[0] != "grep"):
        raise SystemExit(f"{' '.join(cmd[:4])}... exited {p.returncode}: {p.stderr.decode(errors='replace')[:300]}")
    return dt, p.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--wardrik")
    a = ap.parse_args(argv)
    mb = 10 if a.quick else 250
    root, files = ensure_root(a.workdir, mb)
    size = sum(f.stat().st_size for f in files)
    w = wardrik_exe(a.wardrik)
    sql = [w, "--root", str(root), "sql", QUERY, "-o", "jsonl"]
    grep = ["grep", "-c", f'"type":"wardrik.{RARE}"', *map(str, files)]
    page = [w, "--root", str(root), "page", "*", "--all", "-o", "jsonl"]

    # warm-up and correctness
    _, out = timed(sql)
    counts = {r["type"]: r["n"] for r in map(json.loads, out.splitlines())}
    _, out = timed(grep)
    grep_n = sum(int(line.rsplit(b":", 1)[-1]) for line in out.splitlines())
    _, out = timed(page)
    page_counts = Counter(json.loads(line)["type"].removeprefix("wardrik.") for line in out.splitlines())
    ok = counts.get(RARE) == grep_n and counts == dict(page_counts)

    times: dict[str, list[float]] = {"sql": [], "grep": [], "page": []}
    for _ in range(a.repeats):
        for name, cmd in (("sql", sql), ("grep", grep), ("page", page)):
            times[name].append(timed(cmd)[0])
    med = {k: statistics.median(v) for k, v in times.items()}
    r_grep, r_page = med["sql"] / med["grep"], med["sql"] / med["page"]
    print(f"data: {len(files)} logs, {size / MB:.0f} MB, {sum(counts.values())} events ({root})")
    print(f"{'figure':<44} {'wardrik':>9} {'baseline':>9} {'ratio':>7}  target   result")
    rows = [("sql type counts vs grep -c one type", med["sql"], med["grep"], r_grep, "<= 2.5x", r_grep <= 2.5),
            ("sql type counts vs page --all", med["sql"], med["page"], r_page, "< 1x", r_page < 1)]
    for name, mine, base, ratio, target, good in rows:
        print(f"{name:<44} {mine:>8.2f}s {base:>8.2f}s {ratio:>6.2f}x  {target:<8} {'PASS' if good else 'MISS'}")
    print(f"answers: sql {RARE}={counts.get(RARE)}, grep={grep_n}, page's type counts "
          f"{'equal' if counts == dict(page_counts) else 'DIFFER'}: {'ok' if ok else 'FAIL'}")
    print(f"({a.repeats} runs each, median wall time; {os.cpu_count()} CPUs)")
    return 0 if ok and all(r[5] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
