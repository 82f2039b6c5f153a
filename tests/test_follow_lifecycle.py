"""What a follower leaves behind when it stops, and what it survives: real processes, real
signals.

- ``tail [-f] --exec``: a follower stopped while a hook runs ends the hook's whole process
  group (children too, one that ignores SIGTERM after a grace), saves the cursor only past
  hooks that exited 0 (the interrupted event comes again next run) and ends as a signal stop
  does: exit 0 with -f.
- ``tail -f`` over a root deleted and recreated (``rm -rf ROOT``, then an append makes it
  again) sees the new logs at once, not at the next safety sweep: the follower here runs with
  ``FULL_SWEEP_S`` set to an hour, so the sweep cannot be what delivers them.
"""
from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import WARDRIK, run_cli  # noqa: E402
from follow_util import LIVE_WAIT, Tailer, add  # noqa: E402

from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor  # noqa: E402

pytestmark = pytest.mark.subprocess
CEILING = 20.0  # waited out only by a failing test, never a latency assertion


def _wait(cond, what: str, timeout: float = CEILING) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.02)


def _marked(marker: str, but: int | None = None) -> list[int]:
    """Live processes whose command line holds ``marker`` (but pid ``but``, the follower)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == but:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if marker.encode() in f.read():  # a zombie's is empty: it runs nothing
                    found.append(int(name))
        except OSError:
            pass
    return found


def _kill_marked(marker: str) -> None:
    """What a failing test may leave running, gone (never left to outlive the test run)."""
    for pid in _marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


CHILD = ("import signal, sys, time\n"
         "if sys.argv[2] == 'stubborn':\n"
         "    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
         "open(sys.argv[1], 'w').close()\n"
         "time.sleep(120)\n")


def _hook(tmp_path: Path, marker: str, *, stubborn: bool) -> tuple[Path, Path]:
    """A hook script (its path holds ``marker``): event 1 exits 0 at once; event 2 starts
    children whose command lines hold ``marker`` (one ignoring SIGTERM/SIGINT/SIGHUP with
    ``stubborn``) and waits on one. Returns (script, the file written if event 2 completes)."""
    done = tmp_path / "done"
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    script = tmp_path / f"{marker}.sh"
    bg = f"{sys.executable} {child} {tmp_path}/ready.stubborn stubborn {marker} &\n  " if stubborn else ""
    script.write_text(f"""#!/bin/sh
exec >/dev/null 2>&1  # a child left running must not hold the follower's pipes open: the test reports it
ev=$(cat)
case "$ev" in *'"sequence":"000000000002"'*)
  {bg}{sys.executable} {child} {tmp_path}/ready.sleeper plain {marker}
  echo done >> {done} ;;
esac
exit 0
""")
    script.chmod(0o755)
    return script, done


def _signal(t: Tailer, sig: int) -> int:
    """Send ``sig`` to the follower alone and wait for it to end (its output is read to the
    end later: a hook left running would hold its pipes open)."""
    t.proc.send_signal(sig)
    return t.proc.wait(LIVE_WAIT)


def _hook_running(tmp_path: Path, stubborn: bool) -> bool:
    return (tmp_path / "ready.sleeper").exists() and (not stubborn or (tmp_path / "ready.stubborn").exists())


def test_sigterm_ends_the_hook_and_its_children_and_the_event_comes_again(root, tmp_path):
    """Before: the follower exited 0 and the hook's children (both) ran on without it."""
    marker = f"wardrikhook{uuid.uuid4().hex}"
    script, done = _hook(tmp_path, marker, stubborn=True)
    add(root, "e/a", "one")
    add(root, "e/a", "two")
    cf = tmp_path / "cursor"
    t = Tailer(root, "-f", "e/a", "--after", encode_cursor({}), "--cursor-file", str(cf), "--exec", str(script))
    try:
        _wait(lambda: _hook_running(tmp_path, True), f"the hook's children started; stderr {t.err!r}")
        assert decode_cursor(cf.read_text()) == {"e/a": 1}  # event 1's hook exited 0
        assert len(_marked(marker, but=t.proc.pid)) >= 3  # the hook's shell and its two children
        rc = _signal(t, signal.SIGTERM)
        _wait(lambda: not _marked(marker), "no hook process left")
        t.kill()  # its output read to the end
        assert rc == 0, t.err  # the contract: a signal ends a follow with exit 0
        assert not done.exists()
        assert decode_cursor(cf.read_text()) == {"e/a": 1}  # not past the interrupted event
        assert b"Traceback" not in t.err, t.err
    finally:
        _kill_marked(marker)
        t.kill()
    # at least once: the next run hands event 2 over again
    out = tmp_path / "again"
    p = run_cli("tail", "e/a", "--cursor-file", str(cf), "--exec", f"cat >> {out}", root=root)
    assert p.returncode == 0, p.stderr
    assert [orjson.loads(line)["data"]["trigger"]["name"] for line in out.read_bytes().splitlines()] == ["two"]
    assert decode_cursor(cf.read_text()) == {"e/a": 2}


@pytest.mark.parametrize("follow,sig,code", [
    (True, signal.SIGINT, 0),  # Ctrl-C sent to the follower alone: forwarded to the hook's group
    (True, signal.SIGHUP, 0),  # before: the follower died of it (-1), the hook ran on
    (False, signal.SIGTERM, -signal.SIGTERM),  # without -f: it still dies of it, once the hook is gone
])
def test_a_stop_signal_leaves_no_hook_running(root, tmp_path, follow, sig, code):
    marker = f"wardrikhook{uuid.uuid4().hex}"
    script, done = _hook(tmp_path, marker, stubborn=False)
    add(root, "e/a", "one")
    add(root, "e/a", "two")
    cf = tmp_path / "cursor"
    args = ["-f"] if follow else []
    t = Tailer(root, *args, "e/a", "--after", encode_cursor({}), "--cursor-file", str(cf), "--exec", str(script))
    try:
        _wait(lambda: _hook_running(tmp_path, False), f"the hook's child started; stderr {t.err!r}")
        rc = _signal(t, sig)
        _wait(lambda: not _marked(marker), "no hook process left")
        t.kill()
        assert rc == code, t.err
        assert not done.exists()
        assert decode_cursor(cf.read_text()) == {"e/a": 1}
        assert b"Traceback" not in t.err, t.err
    finally:
        _kill_marked(marker)
        t.kill()


# The CLI's entry point with the safety sweep an hour apart: only a prompt notice of the new
# root can deliver what is written there within the test's ceiling.
LAUNCH = ("import sys\n"
          "import wardrik_cli.follow.follower as f\n"
          "f.FULL_SWEEP_S = 3600.0\n"
          "from wardrik_cli.cli.entry import main\n"
          "sys.argv = ['wardrik', *sys.argv[1:]]\n"
          "main()\n")


class _SlowSweepTailer(Tailer):
    """``Tailer``, but the follower is the CLI run with ``FULL_SWEEP_S`` = 3600 s."""

    def __init__(self, root: Path, *args: str):
        self.root = root
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "--root", str(root), "tail", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.err = b""
        self.got: list[bytes] = []
        self._pumps = [threading.Thread(target=self._pump_err, daemon=True),
                       threading.Thread(target=self._pump, daemon=True)]
        for th in self._pumps:
            th.start()


def test_a_root_deleted_and_recreated_is_followed_again_at_once(tmp_path):
    """Before: its watch stayed on the deleted directory, and the new logs showed only at the
    safety sweep (here an hour away)."""
    root = tmp_path / "root"
    add(root, "a/x", "old")
    t = _SlowSweepTailer(root, "-f", "a/*")
    try:
        assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["old"]
        t.wait_registered()
        shutil.rmtree(root)
        assert t.wait_err(b"a/x: the log was deleted", LIVE_WAIT), t.err
        add(root, "a/y", "new-y")  # makes the root again: a log the follower never knew
        [ev] = t.events(1, CEILING)
        assert (ev["data"]["trigger"]["name"], ev["sequence"]) == ("new-y", "000000000001")
        add(root, "a/x", "new-x")  # the old log, recreated: read again from its start
        [ev] = t.events(1, CEILING)
        assert (ev["data"]["trigger"]["name"], ev["sequence"]) == ("new-x", "000000000001")
        assert t.wait_err(b"a/x: the log was deleted and recreated; reading it again from its start"), t.err
        t.wait_registered()  # registered for live events in the new root too
        assert t.nothing_more(0) == []
    finally:
        rc = t.stop()
    assert rc == 0 and b"Traceback" not in t.err, t.err


def test_activity_watch_waits_out_a_deleted_root_and_shows_the_new_one(tmp_path):
    """Before: the next redraw found no root and the watch ended with `error: root ... does not
    exist` (exit 2). Now it says once that the root was deleted, waits, and shows the root made
    again."""
    from conftest import WARDRIK

    root = tmp_path / "root"
    add(root, "a/x", "old")
    p = subprocess.Popen([WARDRIK, "--root", str(root), "activity", "--watch", "-o", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: queue.Queue[bytes] = queue.Queue()
    err = bytearray()
    threading.Thread(target=lambda: [lines.put(line) for line in p.stdout], daemon=True).start()  # type: ignore[union-attr]
    threading.Thread(target=lambda: [err.extend(line) for line in p.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        assert set(orjson.loads(lines.get(timeout=CEILING))) == {"a/x"}
        shutil.rmtree(root)
        _wait(lambda: b"was deleted; waiting" in err or p.poll() is not None, "the deletion noticed")
        assert p.poll() is None, bytes(err)
        add(root, "a/y", "new")
        seen: set[str] = set()
        deadline = time.monotonic() + CEILING
        while "a/y" not in seen and time.monotonic() < deadline:
            try:
                seen = set(orjson.loads(lines.get(timeout=0.5)))
            except queue.Empty:
                assert p.poll() is None, bytes(err)
        assert seen == {"a/y"}
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(CEILING)
    assert rc == 0 and b"Traceback" not in err and b"error" not in err, bytes(err)
    assert err.count(b"was deleted; waiting for it to be made again") == 1, bytes(err)


def test_a_follower_of_a_plain_folder_registers_once_an_append_makes_it_a_root(tmp_path):
    """tail -f on a folder without .wardrik/ (an evidence copy) makes nothing there (before: it
    made .wardrik/live/, and compact then took the folder for a root); once an append makes the
    root, the follower registers and live events reach it."""
    root = tmp_path / "plain"
    root.mkdir()
    t = Tailer(root, "-f", "-n", "0", "a")
    try:
        deadline = time.monotonic() + LIVE_WAIT
        while not _polling(t.proc.pid) and time.monotonic() < deadline:  # following, its read-back done
            time.sleep(0.02)
        assert not (root / ".wardrik").exists()
        add(root, "a", "first")  # the first append makes the root
        assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["first"]
        t.wait_registered()
        run_cli("append", "a", "message.delta", "--data", '{"message": {"id": "m"}, "delta": "hi"}', root=root,
                check=True)
        [ev] = t.events(1)
        assert ev["type"] == "wardrik.message.delta"
    finally:
        rc = t.stop()
    assert rc == 0 and b"Traceback" not in t.err, t.err


def _polling(pid: int) -> bool:
    from follow_util import _in_poll

    return _in_poll(pid)


def _delta(root: Path, log: str, text: str) -> None:
    run_cli("append", log, "message.delta", "--data", orjson.dumps({"message": {"id": "m"}, "delta": text}).decode(),
            root=root, check=True)


def test_a_folder_pattern_gets_live_events(tmp_path):
    """`tail -f acme` follows every log under acme/, live events too (before: the sender
    matched the pattern as a glob only, so they never came, and nothing said so)."""
    root = tmp_path / "root"
    add(root, "acme/a", "old")
    t = Tailer(root, "-f", "-n", "0", "acme")
    try:
        t.wait_registered()
        _delta(root, "acme/a", "hi")
        [ev] = t.events(1)
        assert ev["type"] == "wardrik.message.delta" and ev["data"]["delta"] == "hi"
    finally:
        rc = t.stop()
    assert rc == 0, t.err


def test_a_follower_registers_again_in_a_root_made_again_in_two_steps_or_when_its_registration_goes(tmp_path):
    """The root deleted, then made again by mkdir and, later, init: the follower registers in
    the new .wardrik/ (before: never again, and live events were lost unsaid); and when
    .wardrik/live/ is removed under it, it registers again and says live events were missed."""
    root = tmp_path / "root"
    add(root, "z/a", "old")
    t = Tailer(root, "-f", "-n", "0", "z/a")
    try:
        t.wait_registered()
        shutil.rmtree(root)
        assert t.wait_err(b"was deleted", LIVE_WAIT), t.err
        root.mkdir()
        _wait(lambda: b"root" in t.err and not (root / ".wardrik").exists(), "the new root seen")
        time.sleep(1.5)  # a follow-loop turn or more with the root there and no .wardrik/ in it
        run_cli("init", root=root, check=True)
        t.wait_registered()
        _delta(root, "z/a", "back")
        assert [e["data"]["delta"] for e in t.events(1)] == ["back"]
        shutil.rmtree(root / ".wardrik" / "live")
        assert t.wait_err(b"registration for live events was removed; registered again", LIVE_WAIT), t.err
        t.wait_registered()
        _delta(root, "z/a", "again")
        assert [e["data"]["delta"] for e in t.events(1)] == ["again"]
    finally:
        rc = t.stop()
    assert rc == 0 and b"Traceback" not in t.err, t.err


def test_sighup_ends_a_follow_cleanly_and_leaves_no_registration(tmp_path):
    """A terminal closed under `tail -f` (SIGHUP): exit 0 and its registration removed, as on
    Ctrl-C (before: killed, exit 129, the registration left behind)."""
    root = tmp_path / "root"
    add(root, "a", "x")
    t = Tailer(root, "-f", "a")
    t.wait_registered()
    rc = t.stop(signal.SIGHUP)
    assert rc == 0, t.err
    assert [n for n in os.listdir(root / ".wardrik" / "live") if n.startswith(f"{t.proc.pid}-")] == []


def test_stream_appends_every_item_when_its_reader_goes_away(tmp_path):
    """`append --stream | head -1`: every item sent on stdin is appended, as with stdout on
    /dev/null (before: the rest of stdin was left unappended, exit 0)."""
    root = tmp_path / "root"
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"".join(orjson.dumps({"type": "trigger.fired", "data": {"trigger": {"name": f"x{i}"}}}) + b"\n"
                               for i in range(5)))
    # the first item; once head has taken its line and gone, each other item after the one
    # before it is stored (so each is appended, and printed, on its own), up to a ceiling
    log = root / "s/a.jsonl"
    script = (f"(head -1 {items}; for n in 1 2 3 4; do i=0; while [ $i -lt 400 ] && ! {{ [ -e {tmp_path}/gone ] && "
              f"[ \"$(cat {log} 2>/dev/null | wc -l)\" -ge $n ]; }}; do sleep 0.05; i=$((i+1)); done; "
              f"sed -n \"$((n+1))p\" {items}; done) | {WARDRIK} --root {root} append s/a --stream | "
              f"(head -1 > /dev/null; touch {tmp_path}/gone); echo ${{PIPESTATUS[1]}}")
    p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60)
    assert p.stdout.strip() == b"0" and b"Traceback" not in p.stderr, p.stderr
    assert log.read_bytes().count(b"\n") == 5


def test_tail_f_exec_ends_when_its_output_pipe_closes(tmp_path):
    """The hooks write to tail's stdout; its reader gone, a hook's write fails (SIGPIPE): the
    follow ends, exit 0, as it does while idle (before: it retried the hook for ever)."""
    root = tmp_path / "root"
    add(root, "p/a", "x")
    script = f"{WARDRIK} --root {root} tail -f p/a -n 1 --exec cat | true; echo ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60)
    assert p.stdout.strip() == b"0", p


@pytest.mark.parametrize("hook", [False, True], ids=["tail", "exec"])
def test_a_follower_killed_before_its_first_event_restarts_from_where_it_began(tmp_path, hook):
    """`tail -n 0 -f --cursor-file F` (the README's hook recipe) saves F once following begins:
    killed -9 before any event, its restart reads what came meanwhile (before: F was never
    made, and the restart with -n 0 began at the end: the event was lost to it)."""
    root = tmp_path / "root"
    add(root, "a", "before")
    cur = tmp_path / "c.cur"
    out = tmp_path / "hooked"
    extra = ["--exec", f"cat >> {out}"] if hook else []
    t = Tailer(root, "-f", "-n", "0", "--cursor-file", str(cur), "a", *extra)
    _wait(cur.exists, "the cursor file saved as following begins")
    t.stop(signal.SIGKILL)
    add(root, "a", "meanwhile")
    t = Tailer(root, "-f", "-n", "0", "--cursor-file", str(cur), "a", *extra)
    try:
        if hook:
            _wait(lambda: out.exists() and b"meanwhile" in out.read_bytes(), "the hook got the event")
        else:
            assert [e["data"]["trigger"]["name"] for e in t.events(1)] == ["meanwhile"]
    finally:
        rc = t.stop()
    assert rc == 0, t.err
