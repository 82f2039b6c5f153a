"""A 200 MB line: one event whose data holds a 200 MB string, read back whole.

    python benchmarks/bench_long_line.py [--mb 200] [--repeats 5] [--workdir DIR] [--wardrik PATH]

The log (``<workdir>/root/acme/one.jsonl``, workdir default ``$TMPDIR/wardrik-bench/long-line``)
is one ``message.completed`` event in the stored format whose ``data.text`` is ``--mb`` MB of
fixed-seed words (printable ASCII, nothing to escape); it is written once, streamed (this
process never holds the line), and reused while its parameters are unchanged.

- time: `wardrik page acme/one -F jsonl` and `wardrik tail -n 1 acme/one` against `wc -l` of
  the file; target at most 3x (the issue's). Each is the median wall time of --repeats
  whole-process runs, stdout /dev/null, after one untimed warm-up of each (the log in the page
  cache for all), the commands taking turns; user and system CPU from ``os.wait4``. An info row
  gives the floor: the same commands on a log of one small event (start-up).
- rchar: bytes each command read (/proc/<pid>/io, read before it is reaped) less those of the
  same command on the small log (start-up), vs the file's bytes (info, at most 6x): the line is
  read once whole; the searches for its ends and its envelope go through one reused 4 MiB
  buffer, each a pass, since the file is never mapped (a file cut under a map kills its reader).
- peak memory: ``ru_maxrss`` of each command (info: the line's size for scale).
- correctness, once: each command prints the stored line byte for byte (SHA-256), else FAIL.
Prints a table with PASS/MISS; exits 1 on a MISS or a FAIL.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"
SEED = 11
_HEAD = (b'{"specversion":"1.0","id":"01934a1b-0000-7000-8000-000000000001","type":"wardrik.message.completed",'
         b'"source":"wardrik://local/agents/acme/one","subject":"agents/acme/one","time":"2026-11-30T12:00:00.000000Z",'
         b'"sequence":"000000000001","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",'
         b'"data":{"message":{"id":"m1"},"text":"')
_TAIL = b'"}}\n'


def write_log(path: Path, text_bytes: int) -> None:
    """The one-line log, streamed in 1 MiB blocks of fixed-seed words."""
    rng = random.Random(SEED)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 9))) for _ in range(500)]
    block = " ".join(rng.choice(words) for _ in range(200_000)).encode()[:1 << 20]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(_HEAD)
        left = text_bytes
        while left > 0:
            f.write(block[:left])
            left -= len(block)
        f.write(_TAIL)


def ensure_log(root: Path, mb: float) -> Path:
    path = root / "acme" / "one.jsonl"
    params = {"seed": SEED, "text_bytes": int(mb * 1e6), "head": _HEAD.decode(), "generator": 1}
    marker = root / ".params.json"
    if not (path.exists() and marker.exists() and json.loads(marker.read_text()) == params):
        print(f"generating a {mb:g} MB line in {path} ...", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
        (root / ".wardrik").mkdir(parents=True)  # a root, as `wardrik init` makes it
        write_log(path, params["text_bytes"])
        marker.write_text(json.dumps(params))
    return path


def run_measured(cmd: list[str], *, keep_output: bool = False) -> dict:
    """One whole process: wall seconds, user and system CPU, rchar, peak RSS, and (when asked)
    the SHA-256 and size of its stdout (else stdout is /dev/null)."""
    with open(os.devnull, "wb") as null:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE if keep_output else null, stderr=subprocess.PIPE)
        digest, size = hashlib.sha256(), 0
        if keep_output:
            assert p.stdout is not None
            while chunk := p.stdout.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its io is still there
        with open(f"/proc/{p.pid}/io") as f:
            io = {k: int(v) for k, v in (line.split(": ") for line in f.read().splitlines())}
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t
    err = p.stderr.read() if p.stderr else b""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return {"wall": dt, "user": ru.ru_utime, "sys": ru.ru_stime, "rchar": io["rchar"], "rss": ru.ru_maxrss * 1024,
            "sha": digest.hexdigest(), "size": size}


def main() -> int:
    ap = argparse.ArgumentParser(description="long-line figures")
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench" / "long-line")
    ap.add_argument("--wardrik", default=WARDRIK)
    a = ap.parse_args()
    log = ensure_log(a.workdir / "root", a.mb)
    small = a.workdir / "small"
    if not (small / "acme" / "one.jsonl").exists():
        shutil.rmtree(small, ignore_errors=True)
        (small / ".wardrik").mkdir(parents=True)
        write_log(small / "acme" / "one.jsonl", 300)
    size = log.stat().st_size
    stored = hashlib.sha256()
    with open(log, "rb") as f:
        while chunk := f.read(1 << 20):
            stored.update(chunk)

    def wardrik(root: Path, *args: str) -> list[str]:
        return [a.wardrik, "--root", str(root), *args]

    commands = {"page -F jsonl": ("page", "acme/one", "-F", "jsonl"), "tail -n 1": ("tail", "-n", "1", "acme/one")}
    sides = {"wc -l": ["wc", "-l", str(log)]}
    sides.update({name: wardrik(a.workdir / "root", *args) for name, args in commands.items()})
    checks = {name: run_measured(cmd, keep_output=True) for name, cmd in sides.items() if name != "wc -l"}
    for cmd in sides.values():
        run_measured(cmd)  # warm-up: the log in the page cache for every side
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    for _ in range(a.repeats):
        for name, cmd in sides.items():
            runs[name].append(run_measured(cmd))
    starts = {name: [run_measured(wardrik(small, *args)) for _ in range(a.repeats)] for name, args in commands.items()}

    def med(name: str, key: str, of: dict[str, list[dict]] = runs) -> float:
        return statistics.median(r[key] for r in of[name])

    wc = med("wc -l", "wall")
    rows = []
    for name in commands:
        w, startup = med(name, "wall"), med(name, "wall", starts)
        ok = checks[name]["sha"] == stored.hexdigest() and checks[name]["size"] == size
        rows.append((f"{name} vs wc -l", f"{w:.3f}s vs {wc:.3f}s = {w / wc:.1f}x", "<= 3x",
                     "PASS" if w <= 3 * wc else "MISS"))
        rows.append((f"(info) {name}: user, sys; start-up", f"{med(name, 'user'):.2f}s, {med(name, 'sys'):.2f}s; "
                     f"{startup:.3f}s (above it: {(w - startup) / wc:.1f}x wc -l)", "info", ""))
        read = checks[name]["rchar"] - statistics.median(r["rchar"] for r in starts[name])
        rows.append((f"rchar of {name} (less start-up) vs the log's bytes",
                     f"{read / 1e6:.1f} MB vs {size / 1e6:.1f} MB = {read / size:.2f}x", "<= 6x (passes)",
                     "PASS" if read <= 6 * size else "MISS"))
        rows.append((f"peak memory of {name}", f"{max(r['rss'] for r in runs[name]) / 1e6:.0f} MB "
                     f"(the line: {size / 1e6:.0f} MB)", "info", ""))
        rows.append((f"{name} prints the stored line", "same bytes" if ok else "different bytes", "same",
                     "PASS" if ok else "FAIL"))
    print(f"log: one line of {size / 1e6:.1f} MB; {a.repeats} runs each (median)")
    w_ = max(len(r[0]) for r in rows)
    v_ = max(len(r[1]) for r in rows)
    print(f"{'figure':<{w_}}  {'measured':<{v_}}  {'target':<8}  result")
    for name, val, target, result in rows:
        print(f"{name:<{w_}}  {val:<{v_}}  {target:<8}  {result}".rstrip())
    return 0 if all(r[3] in ("PASS", "") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
