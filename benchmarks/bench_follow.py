"""Follow latency and idle cost: `wardrik tail -f` beside coreutils `tail -f` on the same file.

    python benchmarks/bench_follow.py [--appends 200] [--idle 10]

Latency: from `wardrik append` returning (the CLI, which rings followers) to each follower
printing the event, p50/p99 over N appends, paced 20 ms apart. A second run appends through
the library (no doorbell), so the wake-up comes from the file watcher alone, as it does for
writers other than `wardrik append`. Idle CPU: utime+stime from /proc/<pid>/stat over the
idle window, after the appends stop.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


class Watch:
    def __init__(self, name: str, cmd: list[str]):
        self.name = name
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.arrived: dict[str, float] = {}
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            t = time.monotonic()
            try:
                self.arrived[orjson.loads(line)["id"]] = t
            except (ValueError, KeyError):
                pass

    def cpu_s(self) -> float:
        f = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def wait_for(watchers: list[Watch], ids: list[str], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(i in w.arrived for w in watchers for i in ids):
        time.sleep(0.005)


def main() -> None:
    global WARDRIK
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=200)
    ap.add_argument("--idle", type=float, default=10.0)
    ap.add_argument("--wardrik", default=WARDRIK, help="the wardrik executable to measure")
    a = ap.parse_args()
    WARDRIK = a.wardrik
    tmp = Path(tempfile.mkdtemp(prefix="wardrik-bench-"))
    root = tmp / "root"
    root.mkdir()
    from wardrik_cli import append_event
    from wardrik_cli.store.layout import Root

    for i in range(100):
        append_event(Root(root), "bench/a", "trigger.fired", {"trigger": {"name": f"seed{i}"}}, sync=False)
    path = root / "bench" / "a.jsonl"
    ws = [Watch("wardrik tail -f", [WARDRIK, "--root", str(root), "tail", "-f", "-n", "0", "bench/a"]),
          Watch("coreutils tail -f", ["tail", "-n", "0", "-f", str(path)])]
    time.sleep(1.5)
    rows = []
    try:
        # 1. CLI appends (with the doorbell)
        lat: dict[str, list[float]] = {w.name: [] for w in ws}
        for _ in range(a.appends):
            p = subprocess.run([WARDRIK, "--root", str(root), "append", "bench/a", "trigger.fired", "--data",
                                '{"trigger": {"name": "b"}}'], capture_output=True, check=True)
            t_ret = time.monotonic()
            eid = orjson.loads(p.stdout)["id"]
            wait_for(ws, [eid])
            for w in ws:
                if eid in w.arrived:
                    lat[w.name].append((w.arrived[eid] - t_ret) * 1000)  # < 0: printed before append exited
            time.sleep(0.02)
        for w in ws:
            xs = lat[w.name]
            rows.append((w.name, "wardrik append (CLI)", len(xs), pct(xs, 50), pct(xs, 99), max(xs)))
        # 2. library appends: the file watcher alone wakes the follower
        lat = {w.name: [] for w in ws}
        for _ in range(a.appends):
            ev = append_event(Root(root), "bench/a", "trigger.fired", {"trigger": {"name": "lib"}}, sync=False)
            t_ret = time.monotonic()
            wait_for(ws, [ev["id"]])
            for w in ws:
                if ev["id"] in w.arrived:
                    lat[w.name].append(max(0.0, w.arrived[ev["id"]] - t_ret) * 1000)
            time.sleep(0.02)
        for w in ws:
            xs = lat[w.name]
            rows.append((w.name, "library append (watcher only)", len(xs), pct(xs, 50), pct(xs, 99), max(xs)))
        # 3. idle CPU
        time.sleep(1.0)
        c0 = {w.name: w.cpu_s() for w in ws}
        time.sleep(a.idle)
        idle = {w.name: (w.cpu_s() - c0[w.name]) * 1000 for w in ws}
    finally:
        for w in ws:
            w.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'follower':<20} {'appended by':<30} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, how, n, p50, p99, mx in rows:
        print(f"{name:<20} {how:<30} {n:>4} {p50:>8.1f} {p99:>8.1f} {mx:>8.1f}")
    print()
    print(f"{'follower':<20} {'idle CPU over %gs (ms)' % a.idle:>28}")
    for name, ms in idle.items():
        print(f"{name:<20} {ms:>28.0f}")
    print(f"\n(clock tick {1000 / os.sysconf('SC_CLK_TCK'):.0f} ms; "
          f"WARDRIK_WATCH_STEP_MS={os.environ.get('WARDRIK_WATCH_STEP_MS', '20')})")


if __name__ == "__main__":
    main()
