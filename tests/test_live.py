"""The live channel: registrations under .wardrik/live, non-blocking sends, stale clean-up."""
from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from follow_util import LIVE_WAIT, Tailer, add

from wardrik_cli.follow import live
from wardrik_cli.store.layout import Root


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_no_follower_publish_touches_nothing(root):
    r = Root(root)
    assert live.has_followers(r, "a") is False
    assert live.publish(r, "a", b'{"type":"wardrik.message.delta"}') == 0
    live.notify_kept(r, "a", [b"{}\n"])
    assert _tree(root) == [".wardrik"]  # the root as made, and nothing more


@pytest.mark.subprocess
def test_1000_live_appends_with_no_follower_leave_no_state(root):
    add(root, "acme/a")
    before = {p: p.stat().st_size for p in root.rglob("*") if p.is_file()}
    code = ("import sys\nfrom wardrik_cli.cli.app import run\n"
            "for i in range(1000):\n"
            f"    assert run(['--root', {str(root)!r}, 'append', 'acme/a', 'message.delta', '--data', '{{\"delta\": \"x\"}}']) == 0\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.splitlines()) == 1000
    after = {p: p.stat().st_size for p in root.rglob("*") if p.is_file()}
    assert after == before
    assert not (root / ".wardrik" / "live").exists()


def test_subscription_round_trip_and_matching(root):
    r = Root(root)
    sub = live.Subscription(r, ["acme/*"], ["wardrik.message.delta"])
    try:
        assert live.has_followers(r, "acme/x")
        assert not live.has_followers(r, "other")
        assert live.has_followers(r, "acme/x", "wardrik.message.delta")
        assert not live.has_followers(r, "acme/x", "wardrik.tool_call.progress")
        raw = b'{"type":"wardrik.message.delta","data":{}}\n'
        assert live.publish(r, "acme/x", raw) == 1
        assert live.publish(r, "acme/x", b'{"type":"wardrik.tool_call.progress"}') == 0
        assert live.publish(r, "other", raw) == 0
        select.select([sub], [], [], LIVE_WAIT)  # a local datagram is queued when sent; this is a ceiling
        assert sub.receive() == [("acme/x", raw.rstrip(b"\n"))]
        live.notify_kept(r, "acme/x", [b"{}\n"])
        assert sub.receive() == [("acme/x", None)]  # the doorbell
    finally:
        sub.close()
    assert os.listdir(root / ".wardrik" / "live") == []


@pytest.mark.subprocess
def test_deep_root_beyond_the_socket_path_limit(tmp_path):
    deep = tmp_path
    while len(str(deep)) < 200:
        deep = deep / ("d" * 40)
    deep.mkdir(parents=True)
    r = Root(deep)
    assert len(str(deep / ".wardrik" / "live" / "x.sock")) > 108
    sub = live.Subscription(r, ["*"])
    try:
        assert live.publish(r, "a", b'{"type":"wardrik.message.delta"}') == 1
        select.select([sub], [], [], LIVE_WAIT)
        assert sub.receive() == [("a", b'{"type":"wardrik.message.delta"}')]
    finally:
        sub.close()
    # and end to end through the CLI
    add(deep, "a")
    t = Tailer(deep, "a", "-f", "-n", "0")
    try:
        t.wait_registered()
        p = run_cli("append", "a", "message.delta", "--data", '{"delta": "deep"}', root=deep)
        assert p.returncode == 0
        assert t.events(1)[0]["data"] == {"delta": "deep"}
    finally:
        t.stop()


def test_full_queue_never_blocks_the_sender(root):
    r = Root(root)
    sub = live.Subscription(r, ["a"])  # nobody reads it
    try:
        t0 = time.monotonic()
        reached = [live.publish(r, "a", b'{"type":"wardrik.message.delta","data":{"d":"' + b"x" * 1000 + b'"}}')
                   for _ in range(2000)]
        assert time.monotonic() - t0 < 60  # returned; a blocking send would hang forever
        assert reached[0] == 1 and 0 in reached  # the kernel queue filled and datagrams were dropped
        assert live.has_followers(r, "a")  # a full follower is not a dead one
    finally:
        sub.close()


@pytest.mark.subprocess
def test_cleanup_stale_removes_only_dead_registrations(root):
    r = Root(root)
    alive = live.Subscription(r, ["a"])
    code = ("import os, sys\nfrom wardrik_cli.follow import live\nfrom wardrik_cli.store.layout import Root\n"
            f"s = live.Subscription(Root({str(root)!r}), ['a'])\nprint(s.token, flush=True)\nos.kill(os.getpid(), 9)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True)
    dead = p.stdout.decode().strip()
    d = root / ".wardrik" / "live"
    assert {f"{dead}.sock", f"{dead}.json"} <= set(os.listdir(d))
    (d / ".999-abc.tmp").write_text("{")
    old = time.time() - 3600
    os.utime(d / ".999-abc.tmp", (old, old))
    assert live.cleanup_stale(r) == 1
    assert sorted(os.listdir(d)) == sorted([f"{alive.token}.json", f"{alive.token}.sock"])
    alive.close()
    assert os.listdir(d) == []


def _ro_mount(src: Path, dst: Path) -> bool:
    dst.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(dst)], capture_output=True).returncode != 0:
        return False
    if subprocess.run(["mount", "-o", "remount,bind,ro", str(dst)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(dst)])
        return False
    return True


@pytest.mark.subprocess
def test_read_only_root_follow_creates_nothing(root, tmp_path):
    for i in range(3):
        add(root, "ro/a", str(i))
    import shutil
    shutil.rmtree(root / ".wardrik")
    ro = tmp_path / "ro"
    if not _ro_mount(root, ro):
        pytest.skip("cannot make a read-only bind mount here")
    try:
        before = _tree(root)
        t = Tailer(ro, "ro/*", "-f", "-n", "2")
        try:
            assert [e["sequence"] for e in t.events(2)] == ["000000000002", "000000000003"]
            time.sleep(0.5)
            assert t.proc.poll() is None
        finally:
            assert t.stop() == 0
        assert t.err == b""
        assert _tree(root) == before
    finally:
        subprocess.run(["umount", str(ro)])
