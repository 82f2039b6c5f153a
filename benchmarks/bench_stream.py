"""Sustained rate of `wardrik append LOG --stream` beside the library's `append_event`, both with fsync.

    python benchmarks/bench_stream.py [--workdir DIR] [--repeats 3]

Fixed parameters: 2,000 kept events (`tool_call.completed`, input lines of 300 bytes) into a
fresh log, fsync on every append (the default).

- library: `append_event(root, log, ...)` called 2,000 times in this process; events/s over
  the loop.
- stream (pipe): `wardrik append bench/s --stream`, stdin a pipe. One warm-up item is written
  and its echo awaited (start-up is not a sustained rate); then the clock starts, the 2,000
  lines are written as fast as the pipe takes them, and the clock stops when the 2,000th
  event is printed (printed means durable).
- stream (lockstep), for information: the same, but the writer waits for each event's echo
  before writing the next line, so every event is its own lock, write and fsync.

Each side runs ``--repeats`` times, taking turns; the median rate is reported. Every run is
checked: the log holds exactly the events printed, byte for byte, sequences 1..N. Prints
both rates, the ratio stream/library and PASS/MISS against >= 0.5; exit 1 on a MISS.
"""
from __future__ import annotations

import argparse
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"
EVENTS = 2000
LINE_BYTES = 300
TARGET = 0.5
LOG = "bench/s"


def items() -> list[bytes]:
    out = []
    for i in range(EVENTS):
        head = {"type": "tool_call.completed", "data": {"tool": {"call": {"id": f"c{i:06d}"}}, "output": ""}}
        pad = LINE_BYTES - 1 - len(orjson.dumps(head))
        head["data"]["output"] = "o" * pad
        line = orjson.dumps(head) + b"\n"
        assert len(line) == LINE_BYTES
        out.append(line)
    return out


def check(root: Path, printed: bytes, n: int) -> None:
    data = (root / (LOG + ".jsonl")).read_bytes()
    assert data.endswith(printed), "printed lines are not the log's last lines"
    seqs = [int(orjson.loads(line)["sequence"]) for line in data.splitlines()]
    assert seqs == list(range(1, n + 1)), "sequences are not 1..N"


def library_rate(workdir: Path, lines: list[bytes]) -> float:
    from wardrik_cli import Root, append_event

    root = Path(tempfile.mkdtemp(dir=workdir, prefix="lib-"))
    try:
        r = Root(root)
        objs = [orjson.loads(line) for line in lines]
        t0 = time.perf_counter()
        for o in objs:
            append_event(r, LOG, o["type"], o["data"])
        rate = len(objs) / (time.perf_counter() - t0)
        data = (root / (LOG + ".jsonl")).read_bytes()
        check(root, data, len(objs))
        return rate
    finally:
        shutil.rmtree(root, ignore_errors=True)


def stream_rate(workdir: Path, lines: list[bytes], lockstep: bool) -> float:
    root = Path(tempfile.mkdtemp(dir=workdir, prefix="stream-"))
    proc = subprocess.Popen([WARDRIK, "--root", str(root), "append", LOG, "--stream"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            got.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert proc.stdin is not None
        warm = lines[0].replace(b'"c000000"', b'"warmup"')
        proc.stdin.write(warm)
        proc.stdin.flush()
        got.get(timeout=60)  # started and appending: from here on the rate is sustained
        printed = []
        t0 = time.perf_counter()
        if lockstep:
            for line in lines:
                proc.stdin.write(line)
                proc.stdin.flush()
                printed.append(got.get(timeout=60))
        else:
            feeder = threading.Thread(target=lambda: (proc.stdin.write(b"".join(lines)), proc.stdin.flush()))
            feeder.start()
            for _ in lines:
                printed.append(got.get(timeout=60))
            feeder.join()
        elapsed = time.perf_counter() - t0
        proc.stdin.close()
        rc = proc.wait(timeout=60)
        err = proc.stderr.read() if proc.stderr else b""
        if rc != 0:
            raise SystemExit(f"wardrik append --stream exited {rc}: {err.decode(errors='replace')}")
        check(root, b"".join(printed), len(lines) + 1)
        return len(lines) / elapsed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    lines = items()
    lib, pipe, step = [], [], []
    for _ in range(args.repeats):
        lib.append(library_rate(args.workdir, lines))
        pipe.append(stream_rate(args.workdir, lines, lockstep=False))
        step.append(stream_rate(args.workdir, lines, lockstep=True))
    lib_r, pipe_r, step_r = (statistics.median(x) for x in (lib, pipe, step))
    ratio = pipe_r / lib_r
    print(f"{EVENTS} kept events, input lines of {LINE_BYTES} bytes, fsync on; median of {args.repeats} runs; "
          f"work directory {args.workdir}")
    print(f"{'figure':<44} {'events/s':>10} {'ratio':>7}  verdict")
    print(f"{'library append_event (one process)':<44} {lib_r:>10,.0f}")
    print(f"{'append --stream, fed by a pipe':<44} {pipe_r:>10,.0f} {ratio:>7.2f}  "
          f"{'PASS' if ratio >= TARGET else 'MISS'} (target >= {TARGET})")
    print(f"{'append --stream, lockstep (info)':<44} {step_r:>10,.0f} {step_r / lib_r:>7.2f}  info")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
