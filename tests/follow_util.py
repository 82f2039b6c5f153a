"""Helpers for the follow tests: a real `wardrik tail -f` subprocess, appends, a simulated compaction."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

import orjson

from conftest import WARDRIK

from wardrik_cli.store.append import append, make_item
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.locking import locked

LIVE_WAIT = 10.0  # generous upper bound for liveness, never a latency assertion


def add(root: Path, log_id: str, name: str = "t", **kw) -> dict:
    """One kept event through the library's appender, with no doorbell (``append_event`` rings
    followers; this does not), so the follower must notice the file change by itself."""
    r = Root(root)
    item = make_item("trigger.fired", {"trigger": {"name": name}}, kw.pop("subject", None), kw.pop("traceparent", None))
    line = append(r, Log.agent(r, log_id), [item], deployment=r.deployment(kw.pop("deployment", None)), sync=False)[0]
    return orjson.loads(line)


class Tailer:
    """`wardrik --root ROOT tail ARGS...` with its stdout and stderr read by threads."""

    def __init__(self, root: Path, *args: str, stdout=subprocess.PIPE, env: Optional[dict] = None):
        full_env = dict(os.environ, **(env or {}))
        self.root = root
        self.proc = subprocess.Popen([WARDRIK, "--root", str(root), "tail", *args], stdout=stdout,
                                     stderr=subprocess.PIPE, env=full_env)
        self.lines: "queue.Queue[bytes]" = queue.Queue()
        self.err = b""
        self.got: list[bytes] = []
        if stdout == subprocess.PIPE:
            threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip(b"\n"))

    def _pump_err(self) -> None:
        for line in self.proc.stderr:
            self.err += line

    def take(self, k: int, timeout: float = LIVE_WAIT) -> list[bytes]:
        deadline = time.monotonic() + timeout
        out = []
        while len(out) < k:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"got {len(out)} of {k} lines: {out!r}; stderr: {self.err!r}")
            try:
                out.append(self.lines.get(timeout=left))
            except queue.Empty:
                continue
        self.got += out
        return out

    def events(self, k: int, timeout: float = LIVE_WAIT) -> list[dict]:
        return [orjson.loads(l) for l in self.take(k, timeout)]

    def nothing_more(self, wait: float = 0.5) -> list[bytes]:
        time.sleep(wait)
        out = []
        while True:
            try:
                out.append(self.lines.get_nowait())
            except queue.Empty:
                return out

    def wait_registered(self, timeout: float = LIVE_WAIT) -> None:
        d = self.root / ".wardrik" / "live"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if d.is_dir() and any(n.startswith(f"{self.proc.pid}-") and n.endswith(".json") for n in os.listdir(d)):
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"tail exited {self.proc.returncode}: {self.err!r}")
            time.sleep(0.02)
        raise AssertionError("the follower never registered")

    def sync(self, log_id: str, timeout: float = LIVE_WAIT) -> None:
        """Append markers until one comes through: from then on the follower is following."""
        deadline = time.monotonic() + timeout
        n = 0
        while time.monotonic() < deadline:
            n += 1
            add(self.root, log_id, f"sync{n}")
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if b'"sync' in line:
                while True:  # drain the other markers that made it
                    try:
                        self.lines.get(timeout=0.3)
                    except queue.Empty:
                        return
        raise AssertionError(f"the follower never followed: {self.err!r}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = LIVE_WAIT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        time.sleep(0.05)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def compact(root: Path, log_id: str, keep_from: int) -> None:
    """What `compact` does to a log, by hand: under the log's lock, atomically replace the file
    with its events from sequence ``keep_from`` on, and write the watermark."""
    lg = Log.agent(Root(root), log_id)
    with locked(lg.lock_path):
        lines = lg.path.read_bytes().splitlines(keepends=True)
        kept = [l for l in lines if int(orjson.loads(l)["sequence"]) >= keep_from]
        last = orjson.loads(lines[-1])
        tmp = lg.path.with_name(lg.path.name + ".compact-tmp")
        tmp.write_bytes(b"".join(kept))
        os.replace(tmp, lg.path)
        nxt = keep_from if kept else int(last["sequence"]) + 1
        wm = {"inode": os.stat(lg.path).st_ino, "next_sequence": nxt, "time": last["time"], "hash": None,
              "first_time_kept": orjson.loads(kept[0])["time"] if kept else None}
        lg.watermark_path.parent.mkdir(parents=True, exist_ok=True)
        lg.watermark_path.write_bytes(orjson.dumps(wm))


def seqs(events: list[dict]) -> list[int]:
    return [int(e["sequence"]) for e in events if e.get("sequence")]
