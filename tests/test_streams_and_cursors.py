"""Streams a process starts without, and cursors as files and texts (each found by review,
reproduced first): a closed stdout is a discarding one (an append whose record cannot be shown
still succeeded); a cursor file that is a FIFO, a device or huge is refused, never waited on or
read whole; a cursor naming a log twice is refused; a filtered `tail -f` stopped by Ctrl-C saves
a cursor past every event it read, filtered ones too."""
from __future__ import annotations

import base64
import os
import signal
import subprocess
import time

import pytest

from conftest import WARDRIK, run_cli
from follow_util import wait_registered

DATA = '{"trigger": {"name": "x"}}'


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [["head"], ["page", "t/a"], ["activity"],
                                  ["append", "t/a", "trigger.fired", "-d", DATA]], ids=lambda a: a[0])
def test_a_closed_stdout_is_a_discarding_one(tmp_path, args):
    root = tmp_path / "r"
    assert run_cli("append", "t/a", "trigger.fired", "-d", DATA, root=root).returncode == 0
    p = subprocess.run([WARDRIK, "--root", str(root), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=60, close_fds=True, preexec_fn=lambda: os.close(1))
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    n = len(run_cli("page", "t/a", root=root).stdout.splitlines())
    assert n == (2 if args[0] == "append" else 1)  # the append happened, once


@pytest.mark.subprocess
def test_a_closed_stdin_is_an_empty_one(tmp_path):
    root = tmp_path / "r"
    p = subprocess.run([WARDRIK, "--root", str(root), "append", "t/a", "--batch", "-"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60, preexec_fn=lambda: os.close(0))
    assert p.returncode == 2 and p.stderr.startswith(b"error:") and b"Traceback" not in p.stderr, p.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_cursor_file_that_is_not_a_cursor_is_refused_at_once(tmp_path, kind):
    root = tmp_path / "r"
    assert run_cli("append", "t/a", "trigger.fired", "-d", DATA, root=root).returncode == 0
    cf = tmp_path / "cursor"
    if kind == "fifo":
        os.mkfifo(cf)
    elif kind == "device":
        cf = "/dev/zero"  # type: ignore[assignment]
    else:
        with open(cf, "wb") as f:
            f.truncate(3 << 30)  # sparse: 3 GB of NULs, never read
    for cmd in (["page", "t/a"], ["tail", "t/a"]):
        p = run_cli(*cmd, "--cursor-file", str(cf), root=root, process=True, timeout=30)
        assert p.returncode == 2 and p.stderr.startswith(b"error: cannot read cursor file"), p.stderr
        assert len(p.stderr) < 300 and p.stdout == b""


def test_a_cursor_naming_a_log_twice_is_refused(tmp_path):
    root = tmp_path / "r"
    assert run_cli("append", "t/a", "trigger.fired", "-d", DATA, root=root).returncode == 0
    dup = base64.urlsafe_b64encode(b'{"t/a":0,"t/a":1}').decode().rstrip("=")
    p = run_cli("page", "t/a", "--after", dup, root=root)
    assert p.returncode == 2 and b"each once" in p.stderr and p.stdout == b"", p.stderr


def test_a_huge_cursor_is_shown_short_in_its_error(tmp_path):
    root = tmp_path / "r"
    assert run_cli("append", "t/a", "trigger.fired", "-d", DATA, root=root).returncode == 0
    (tmp_path / "c").write_text("A" * 3_000_001)
    p = run_cli("page", "t/a", "--cursor-file", str(tmp_path / "c"), root=root)
    assert p.returncode == 2 and len(p.stderr) < 300 and b"3,000,001 characters" in p.stderr, p.stderr[:300]


@pytest.mark.subprocess
def test_a_filtered_follow_stopped_saves_a_cursor_past_what_it_filtered_out(tmp_path):
    """tail -f -t run.started --cursor-file C from after event 1: it shows the run.started (2)
    and reads the trigger.fired (3), filtered out, before it starts waiting; Ctrl-C then: the
    cursor is past the trigger too (it was read), so nothing is told missing later."""
    from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor

    root = tmp_path / "r"
    for typ, data in (("run.started", "{}"), ("run.started", "{}"), ("trigger.fired", DATA)):
        assert run_cli("append", "t/a", typ, "-d", data, root=root).returncode == 0
    cf = tmp_path / "c"
    cf.write_text(encode_cursor({"t/a": 1}) + "\n")
    proc = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "t/a", "-t", "run.started",
                             "--cursor-file", str(cf), "-F", "jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_registered(root, proc)  # in its follow loop: the read after the cursor is done
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert [line.count(b"run.started") for line in out.splitlines()] == [1]
    assert decode_cursor(cf.read_text()) == {"t/a": 3}, (cf.read_text(), err)


@pytest.mark.subprocess
def test_every_live_event_a_follower_misses_is_told():
    """A burst of 2,000 message.delta through `append --stream` to a follower: the kernel's
    short queue overflows (here, every run); each live event the follower did not get is
    counted in a warning, so what it printed plus what it was told it missed is all of it."""
    import re
    import tempfile

    from follow_util import LIVE_WAIT

    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "r")
        assert run_cli("append", "st/a", "run.started", "-d", "{}", root=root).returncode == 0  # type: ignore[arg-type]
        out_path, err_path = os.path.join(d, "out"), os.path.join(d, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen([WARDRIK, "--root", root, "tail", "-f", "st/*", "-n", "0", "-F", "jsonl"],
                                    stdout=out, stderr=err)
        try:
            from pathlib import Path

            wait_registered(Path(root), proc)
            lines = "".join('{"type":"message.delta","data":{"message":{"id":"m"},"delta":"d' + str(i) + '"}}\n'
                            for i in range(2000))
            p = subprocess.run([WARDRIK, "--root", root, "append", "st/a", "--stream"], input=lines.encode(),
                               capture_output=True, timeout=120)
            assert p.returncode == 0 and len(p.stdout.splitlines()) == 2000, p.stderr

            def told() -> tuple[int, int]:
                got = open(out_path, "rb").read().count(b"message.delta")
                missed = sum(int(n) for n in re.findall(rb"dropped (\d+) live event", open(err_path, "rb").read()))
                return got, missed

            deadline = time.monotonic() + LIVE_WAIT  # a ceiling: all accounted for ends the wait
            while sum(told()) < 2000 and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        got, missed = told()
        assert got + missed == 2000, (got, missed, open(err_path, "rb").read()[-500:])
        assert not [n for n in os.listdir(os.path.join(root, ".wardrik", "live")) if not n.startswith(".")]


@pytest.mark.subprocess
def test_data_from_a_device_is_refused_past_its_bound(tmp_path):
    """--data @/dev/zero (or an endless pipe) is read up to a bound, then refused (exit 2):
    never until memory runs out (here under a 1 GiB address-space limit)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run([WARDRIK, "--root", str(tmp_path / "r"), "append", "t/a", "run.started", "-d", "@/dev/zero"],
                       capture_output=True, timeout=120, preexec_fn=limit)
    assert p.returncode == 2 and p.stderr.startswith(b"error: --data from '/dev/zero' is over"), p.stderr
    assert not (tmp_path / "r" / "t" / "a.jsonl").exists()
