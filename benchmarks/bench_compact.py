"""The retention figures: compacting a 200 MB log that drops 90%.

    python benchmarks/bench_compact.py [--mb 200] [--repeats 3] [--workdir DIR]

- time: `wardrik compact --retention 10d` on a log whose events span 100 days (so 90% are
  dropped) vs `dd if=LOG of=COPY bs=1M conv=fsync` (copying the whole file, with an fsync);
  target at most 3x. Each side is the median of --repeats whole-process runs, the log in the
  page cache for both (each compact run gets a fresh copy of the log, made before the clock
  starts).
- rchar: bytes the compact process read (/proc/<pid>/io, read before it is reaped), minus
  those of the same command on an empty root (Python's own start-up), vs the log's bytes (the
  part dropped is read too: every line of it is checked); target within 1.2x of them.
- peak memory: ru_maxrss of the compact process (os.wait4); target under 120 MB.
- many logs (--logs 10000 --log-kb 20): `compact --retention 10d` over that many logs whose
  events span 100 days (90% dropped) vs `cat` of every file (through xargs, to /dev/null);
  target at most 10x. Then `compact` again on the result (nothing to drop): at most 3x `cat`.
  Each run gets a fresh copy of the root, made before the clock starts. The root has the
  lock files appenders leave (one per log), as a root written by `wardrik append` has. An
  info row gives this machine's floor: a Python loop doing only what the sweep must do to
  the file system per log (create the new file, copy the kept bytes, write the new record,
  one syncfs per 512 logs, two renames), so the ratio can be read against what the disk allows.
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
    ap.add_argument("--logs", type=int, default=10000, help="logs in the many-logs root (0: skip it)")
    ap.add_argument("--log-kb", type=float, default=20)
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
    if a.logs:
        rows += many_logs(a, work)
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


def _cat_all(root: Path) -> float:
    t = time.perf_counter()
    subprocess.run(f"find {root} -name '*.jsonl' -print0 | xargs -0 cat > /dev/null", shell=True, check=True)
    return time.perf_counter() - t


def _floor(root: Path) -> float:
    """The file-system work a sweep dropping 90% of each log cannot avoid, in a plain loop."""
    import ctypes

    syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    logs = sorted(root.glob("*/*.jsonl"))
    t = time.perf_counter()
    pending: list[tuple[str, str, str, str]] = []
    for i, p in enumerate(logs):
        fd = os.open(p, os.O_RDONLY)
        size = os.fstat(fd).st_size
        tmp = str(p.with_name(f".{p.name}.floor"))
        tfd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        os.copy_file_range(fd, tfd, size - size * 9 // 10, size * 9 // 10, 0)
        os.close(tfd)
        os.close(fd)
        wm = root / ".wardrik/floor" / p.parent.name / p.name
        wm.parent.mkdir(parents=True, exist_ok=True)
        wtmp = str(wm.with_name("." + wm.name + ".tmp"))
        wfd = os.open(wtmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.write(wfd, b'{"inode":1,"next_sequence":2}' * 8)
        os.close(wfd)
        pending.append((tmp, str(p), wtmp, str(wm)))
        if len(pending) == 512 or i == len(logs) - 1:
            dfd = os.open(root, os.O_RDONLY)
            syncfs(dfd)
            os.close(dfd)
            for tmp_, log, wtmp_, wm_ in pending:
                os.rename(wtmp_, wm_)
                os.rename(tmp_, log)
            pending = []
    return time.perf_counter() - t


def many_logs(a: argparse.Namespace, work: Path) -> list[tuple[str, str, str, bool]]:
    src = work / "many-src"
    print(f"generating {a.logs} logs of {a.log_kb:g} KB over 100 days ...", file=sys.stderr)
    shutil.rmtree(src, ignore_errors=True)
    (src / ".wardrik").mkdir(parents=True)
    total = 0
    for i in range(a.logs):
        log_id = f"team{i // 100:03d}/agent{i % 100:02d}"
        total += write_spread(src / f"{log_id}.jsonl", mb=a.log_kb / 1000, days=100, log_id=log_id, pad=200)["bytes"]
        # the lock file every log written by `wardrik append` has (the generator writes the
        # logs directly): without it the first sweep would also create 10,000 lock files
        lock = src / ".wardrik/locks" / f"{log_id}@lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.touch()
    drop, nothing, cats = [], [], []
    for i in range(a.repeats + 1):  # the first round is a warm-up
        root = work / "many"
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["cp", "-a", str(src), str(root)], check=True)
        os.sync()
        cat = _cat_all(root)  # also brings the copy into the page cache for both sides
        d1, rc1, *_ = run_measured([a.wardrik, "--root", str(root), "compact", "-q", "--retention", "10d"])
        os.sync()
        d2, rc2, *_ = run_measured([a.wardrik, "--root", str(root), "compact", "-q", "--retention", "10d"])
        if rc1 or rc2:
            print("compact failed", file=sys.stderr)
            sys.exit(1)
        if i:
            drop.append(d1)
            nothing.append(d2)
            cats.append(cat)
    floor = []
    for _ in range(a.repeats):
        root = work / "many"
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["cp", "-a", str(src), str(root)], check=True)
        os.sync()
        floor.append(_floor(root))
    c = statistics.median(cats)
    f = statistics.median(floor)
    d1, d2 = statistics.median(drop), statistics.median(nothing)
    what = f"{a.logs} logs of {a.log_kb:g} KB ({total / 1e6:.0f} MB)"
    return [(f"compact {what}, drops 90%, vs cat", f"{d1:.2f}s vs {c:.2f}s = {d1 / c:.1f}x", "<= 10x", d1 / c <= 10),
            ("(info) the file system's floor for that sweep vs cat", f"{f:.2f}s vs {c:.2f}s = {f / c:.1f}x", "info",
             True),
            (f"compact {what}, nothing to drop, vs cat", f"{d2:.2f}s vs {c:.2f}s = {d2 / c:.1f}x", "<= 3x",
             d2 / c <= 3)]


if __name__ == "__main__":
    sys.exit(main())
