"""Helpers for the follow tests: a real `wardrik tail -f` subprocess, appends, a simulated compaction."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import orjson

from conftest import WARDRIK

from wardrik_cli.store.append import append, make_item
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.store.locking import locked

LIVE_WAIT = 30.0  # generous upper bound for liveness (waited out only by a failing test), never a latency assertion


def wait_registered(root: Path, proc: subprocess.Popen, err=lambda: b"", timeout: float = LIVE_WAIT) -> None:
    """Wait until the follower process ``proc`` is following: registered for live events
    under ROOT (which it does before its read-back) and its main thread idle in the poll of
    its follow loop (so the read-back is done: with ``-n 0``, what is written now is shown)."""
    d = root / ".wardrik" / "live"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (d.is_dir() and any(n.startswith(f"{proc.pid}-") and n.endswith(".json") for n in os.listdir(d))
                and _in_poll(proc.pid)):
            return
        if proc.poll() is not None:
            raise AssertionError(f"tail exited {proc.returncode}: {err()!r}")
        time.sleep(0.02)
    raise AssertionError("the follower never registered")


def _in_poll(pid: int) -> bool:
    """Is the main thread of ``pid`` blocked in poll(2)/ppoll(2)? (True where /proc cannot say.)"""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read()
        with open(f"/proc/{pid}/syscall") as f:
            nr = f.read().split()[0]
    except (OSError, IndexError):
        return True
    if wchan in ("", "0") and nr == "running":
        return False
    return "poll" in wchan or (wchan in ("", "0") and nr in ("7", "271", "73"))  # x86_64 poll/ppoll, arm64 ppoll


def wait_stopped(pid: int, timeout: float = LIVE_WAIT) -> None:
    """Wait until process ``pid`` is stopped (state T in /proc/PID/stat), e.g. after SIGSTOP:
    the signal is only queued when ``kill`` returns."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]  # after "(comm)", which may hold spaces
        if state in (b"T", b"t"):
            return
        time.sleep(0.005)
    raise AssertionError(f"process {pid} never stopped")


def add(root: Path, log_id: str, name: str = "t", **kw) -> dict:
    """One kept event through the library's appender, with no doorbell (``append_event`` rings
    followers; this does not), so the follower must notice the file change by itself."""
    r = Root(root)
    item = make_item("trigger.fired", {"trigger": {"name": name}}, kw.pop("subject", None), kw.pop("traceparent", None))
    line = append(r, Log.agent(r, log_id), [item], deployment=r.deployment(kw.pop("deployment", None)), sync=False)[0]
    return orjson.loads(line)


class Tailer:
    """`wardrik --root ROOT tail ARGS...` with its stdout and stderr read by threads."""

    def __init__(self, root: Path, *args: str, stdout=subprocess.PIPE, env: dict | None = None):
        full_env = dict(os.environ, **(env or {}))
        self.root = root
        self.proc = subprocess.Popen([WARDRIK, "--root", str(root), "tail", *args], stdout=stdout,
                                     stderr=subprocess.PIPE, env=full_env)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.err = b""
        self.got: list[bytes] = []
        self._pumps = [threading.Thread(target=self._pump_err, daemon=True)]
        if stdout == subprocess.PIPE:
            self._pumps.append(threading.Thread(target=self._pump, daemon=True))
        for th in self._pumps:
            th.start()

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
        wait_registered(self.root, self.proc, lambda: self.err, timeout)

    def wait_err(self, needle: bytes, timeout: float = LIVE_WAIT) -> bool:
        """Wait until ``needle`` shows on the follower's stderr (read by a thread of its own,
        so it may lag behind stdout): True when it did, False after ``timeout``."""
        deadline = time.monotonic() + timeout
        while needle not in self.err:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def pause(self) -> None:
        """SIGSTOP the follower and wait until it is stopped."""
        self.proc.send_signal(signal.SIGSTOP)
        wait_stopped(self.proc.pid)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

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
        self._drain(timeout)
        return rc

    def _drain(self, timeout: float = LIVE_WAIT) -> None:
        """After the process ended: wait for the reader threads to reach the end of its output,
        so ``err`` and ``nothing_more()`` hold everything it wrote."""
        for th in self._pumps:
            th.join(timeout)
            assert not th.is_alive(), "the follower's output never ended"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._drain()


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
