"""Real faults during append: a file size limit, a full file system, kill -9 mid-batch, races.

Each test first proves its fault landed mid-operation (the file ends inside a line, the
process really died before printing), then that nothing printed was lost and that the
next append recovers: the torn tail cut with a warning and its bytes kept.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from tests.conftest import WARDRIK, jsonl, run_cli


def _batch(n: int, pad: int = 200) -> bytes:
    items = [{"type": "tool_call.completed", "data": {"tool": {"call": {"id": f"c{i}"}}, "output": "y" * pad}}
             for i in range(n)]
    return b"".join(orjson.dumps(i) + b"\n" for i in items)


def _seqs(path: Path) -> list[int]:
    raw = path.read_bytes()
    body = raw[: raw.rfind(b"\n") + 1]
    return [int(orjson.loads(l)["sequence"]) for l in body.splitlines()]


def _torn_keeps(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".torn-*"))


@pytest.mark.subprocess
def test_file_size_limit_mid_batch(root):
    log = root / "acme" / "a.jsonl"
    first = run_cli("append", "acme/a", "run.started", root=root, check=True)
    size0 = log.stat().st_size
    limit = size0 + 10_000  # room for a few whole events and part of one more

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.run([WARDRIK, "--root", str(root), "append", "acme/a", "--batch", "-"], input=_batch(100),
                       capture_output=True, preexec_fn=cap)
    # The fault landed mid-write: the file stops exactly at the limit, inside a line.
    assert p.returncode == 1, p.stderr
    assert log.stat().st_size == limit
    assert not log.read_bytes().endswith(b"\n")
    err = p.stderr.decode()
    assert err.startswith("error: ") and "Traceback" not in err
    written = len(_seqs(log)) - 1
    assert 0 < written < 100
    assert f"after {written} of 100 events" in err
    # What it printed is exactly what is whole on disk, and durable.
    printed = p.stdout
    assert log.read_bytes()[size0:size0 + len(printed)] == printed
    assert len(jsonl(printed)) == written

    torn_len = limit - (size0 + len(printed))
    nxt = run_cli("append", "acme/a", "run.completed", root=root)
    assert nxt.returncode == 0, nxt.stderr
    assert b"warning:" in nxt.stderr and b"torn tail" in nxt.stderr
    keeps = _torn_keeps(log)
    assert len(keeps) == 1 and keeps[0].stat().st_size == torn_len
    assert _seqs(log) == list(range(1, written + 3))
    assert log.read_bytes().startswith(first.stdout)
    assert run_cli("check", root=root).returncode == 0


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
@pytest.mark.subprocess
def test_full_file_system_mid_batch(tmp_path):
    """A 64 KiB tmpfs in a private mount namespace fills up during a batch."""
    out = tmp_path / "out"
    out.mkdir()
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(_batch(400))
    script = textwrap.dedent(f"""
        set -u
        R={tmp_path}/mnt
        mkdir -p $R
        mount -t tmpfs -o size=64k tmpfs $R || exit 97
        {WARDRIK} --root $R append acme/a --batch {batch} > {out}/stdout1 2> {out}/stderr1; echo $? > {out}/rc1
        cp $R/acme/a.jsonl {out}/after_fault.jsonl
        # Still full: cutting the torn tail needs room to keep its bytes, so the append refuses.
        {WARDRIK} --root $R append acme/a run.completed > {out}/stdout2 2> {out}/stderr2; echo $? > {out}/rc2
        cp $R/acme/a.jsonl {out}/after_refusal.jsonl
        mount -o remount,size=4m $R
        {WARDRIK} --root $R append acme/a run.completed > {out}/stdout3 2> {out}/stderr3; echo $? > {out}/rc3
        cp $R/acme/a.jsonl {out}/final.jsonl
        ls $R/acme > {out}/listing
        {WARDRIK} --root $R check > {out}/check 2>&1; echo $? > {out}/rc4
        umount $R
    """)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True)
    if r.returncode == 97:
        pytest.fail(f"could not mount a tmpfs: {r.stderr!r}")
    rd = lambda n: (out / n).read_bytes()
    # The fault landed mid-write.
    assert rd("rc1").strip() == b"1", rd("stderr1")
    fault = rd("after_fault.jsonl")
    assert not fault.endswith(b"\n") and 0 < fault.count(b"\n") < 400
    assert b"No space left on device" in rd("stderr1")
    assert fault.startswith(rd("stdout1")) and rd("stdout1").count(b"\n") == fault.count(b"\n")
    # Full: refused, nothing cut.
    assert rd("rc2").strip() == b"1" and b"could not keep" in rd("stderr2")
    assert rd("after_refusal.jsonl") == fault
    # Room again: the torn tail is cut and kept, the sequence goes on.
    assert rd("rc3").strip() == b"0", rd("stderr3")
    assert b"torn tail" in rd("stderr3")
    final = rd("final.jsonl")
    whole = fault.count(b"\n")
    assert [int(orjson.loads(l)["sequence"]) for l in final.splitlines()] == list(range(1, whole + 2))
    assert b"a.jsonl.torn-" in rd("listing")
    assert rd("rc4").strip() == b"0", rd("check")


@pytest.mark.subprocess
def test_kill_9_in_the_middle_of_a_batch(root):
    log = root / "acme" / "a.jsonl"
    before = run_cli("append", "acme/a", "--batch", "-", input=_batch(3), root=root, check=True).stdout
    n = 150_000
    batch = root.parent / "big_batch.jsonl"
    batch.write_bytes(_batch(n, pad=400))
    size0 = log.stat().st_size
    landed = False
    for _attempt in range(8):
        p = subprocess.Popen([WARDRIK, "--root", str(root), "append", "acme/a", "--batch", str(batch), "--no-sync"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while p.poll() is None and log.stat().st_size == size0:
            time.sleep(0.0005)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        size = log.stat().st_size
        if p.returncode == -signal.SIGKILL and size0 < size:
            # Mid-write: the process died before printing, and the batch is not all there.
            if not out and _seqs(log)[-1] < 3 + n:
                landed = True
                break
        # It finished (or died before writing): start again from a clean log.
        nxt = run_cli("append", "acme/a", "run.completed", root=root)
        assert nxt.returncode == 0
        size0 = log.stat().st_size
        before = log.read_bytes()
    assert landed, "never managed to kill the writer mid-batch"
    written = _seqs(log)
    assert written == list(range(1, len(written) + 1))  # whole events that made it stay in sequence
    rec = run_cli("append", "acme/a", "run.completed", root=root)
    assert rec.returncode == 0, rec.stderr
    assert log.read_bytes().startswith(before)  # everything printed before the kill is still there
    assert _seqs(log) == list(range(1, len(written) + 2))
    assert run_cli("check", root=root).returncode == 0


@pytest.mark.subprocess
def test_concurrent_appenders_contiguous(root):
    files = []
    for i in range(10):
        f = root.parent / f"batch{i}.jsonl"
        f.write_bytes(_batch(i + 1, pad=50))
        files.append(f)
    procs = [subprocess.Popen([WARDRIK, "--root", str(root), "append", "acme/a", "--batch", str(f), "--no-sync"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for f in files]
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    log = root / "acme" / "a.jsonl"
    assert _seqs(log) == list(range(1, 56))
    # Each batch went in as one contiguous block.
    for (out, _), size in zip(outs, range(1, 11), strict=False):
        s = [int(e["sequence"]) for e in jsonl(out)]
        assert len(s) == size and s == list(range(s[0], s[0] + size))


def test_three_megabyte_event(root):
    big = "z" * (3 * 1024 * 1024)
    p = run_cli("append", "acme/a", "tool_call.completed", "--data", "-", root=root,
                input=orjson.dumps({"tool": {"call": {"id": "c1"}}, "output": big}))
    assert p.returncode == 0, p.stderr[-300:]
    run_cli("append", "acme/a", "run.completed", root=root, check=True)
    got = jsonl(run_cli("page", "acme/a", "--format", "jsonl", root=root, check=True).stdout)
    assert got[0]["data"]["output"] == big and [e["sequence"] for e in got] == ["000000000001", "000000000002"]
    # Reading back from the end crosses the 3 MB line.
    assert run_cli("head", "acme/a", root=root, check=True).stdout.strip() == b"eyJhY21lL2EiOjJ9"


@pytest.mark.subprocess
@pytest.mark.parametrize("fmt", ["jsonl", "json", "pretty"])
def test_stored_but_unprinted_says_so(root, fmt):
    """Printing after the fsync fails (stdout a full device): the events are on disk, and the
    error says so and which, so that a script does not append them again."""
    with open("/dev/full", "wb") as full:
        p = subprocess.run([WARDRIK, "--root", str(root), "append", "acme/a", "--batch", "-", "-o", fmt],
                           input=_batch(2), stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 1, p.stderr
    assert p.stderr == (b"error: acme/a: events 1..2 were stored (durable) but could not be printed: "
                        b"No space left on device; do not append them again\n")
    assert _seqs(root / "acme" / "a.jsonl") == [1, 2]
