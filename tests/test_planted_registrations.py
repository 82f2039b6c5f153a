"""Registrations under .wardrik/ (a follower's, a ship target's) are files anyone who can write
the root can plant: one naming 100,000 globs cost every append 23 s and every log swept 10 s.
Past ``MAX_GLOBS`` globs a registration is none wardrik wrote: a follower's is ignored, a ship
target's is unreadable (it holds back what it might need, and says so), and the commands that
write them refuse as many."""
from __future__ import annotations

import os
import socket

import orjson
from hypothesis import given, strategies as st

from conftest import run_cli
from ledgergen import write_log
from wardrik_cli.protocol.names import MAX_GLOBS, PatternSet, pattern_covers

GLOBS = [f"zz*q{i}*" for i in range(MAX_GLOBS)] + ["a*"]  # one over the bound, and one that names the log


def test_a_planted_follower_registration_of_too_many_globs_is_never_sent_to(root):
    assert run_cli("append", "a", "run.started", root=root).returncode == 0
    live = root / ".wardrik" / "live"
    live.mkdir(exist_ok=True)
    for token, patterns in (("1-over", GLOBS), ("1-fine", GLOBS[-2:])):
        (live / f"{token}.json").write_bytes(orjson.dumps({"pid": os.getpid(), "patterns": patterns, "types": None}))
    socks = {}
    for token in ("1-over", "1-fine"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(str(live / f"{token}.sock"))
        s.setblocking(False)
        socks[token] = s
    try:
        p = run_cli("append", "a", "run.started", root=root)
        assert p.returncode == 0, p.stderr
        assert socks["1-fine"].recv(4096) == b"a\n"  # a registration within the bound is rung
        try:
            got = socks["1-over"].recv(4096)
        except BlockingIOError:
            got = None
        assert got is None
    finally:
        for s in socks.values():
            s.close()


def test_a_planted_ship_registration_of_too_many_globs_is_unreadable(root):
    write_log(root / "acme" / "a.jsonl", 3, log_id="acme/a")  # old events: the sweep would drop them
    ship = root / ".wardrik" / "ship"
    ship.mkdir()
    (ship / "0000000000000000.slot.json").write_bytes(
        orjson.dumps({"target": "file:///nowhere", "deployment": "local", "patterns": GLOBS}))
    p = run_cli("compact", "--retention", "1s", "--dry-run", root=root)
    assert b"unreadable registration" in p.stderr, p.stderr


def test_the_commands_that_register_refuse_too_many_globs_before_anything(root, tmp_path):
    assert run_cli("append", "acme/a", "run.started", root=root).returncode == 0
    too_many = [f"acme/x*{i}" for i in range(MAX_GLOBS + 1)]
    p = run_cli("tail", "-f", *too_many, root=root, timeout=30)
    assert (p.returncode, p.stdout) == (2, b"") and p.stderr.startswith(b"error: a follower takes at most 256"), p.stderr
    p = run_cli("ship", f"file://{tmp_path / 'store'}", "acme/a", *too_many, root=root)
    assert (p.returncode, p.stdout) == (2, b"") and b"at most 256 patterns" in p.stderr
    assert not (tmp_path / "store").exists() and not (root / ".wardrik" / "ship").exists()
    # as many as the bound (and any number of log ids and folders) are fine
    (tmp_path / "store").mkdir()
    p = run_cli("ship", f"file://{tmp_path / 'store'}", "acme/a", *too_many[:MAX_GLOBS], root=root)
    assert p.returncode == 0, p.stderr


_seg = st.sampled_from(["a", "b", "ab", "a.b", "x-1"])
_ids = st.lists(_seg, min_size=1, max_size=3).map("/".join)
_pats = st.lists(st.sampled_from(["a", "b", "ab", "a*", "*b", "?", "*", "a/*", "*/b", "a?b", "x-1"]), min_size=1,
                 max_size=3).map("/".join)


@given(st.lists(_pats, max_size=6), _ids)
def test_a_pattern_set_covers_what_one_of_its_patterns_covers(patterns, log_id):
    assert PatternSet(patterns).covers(log_id) == any(pattern_covers(p, log_id) for p in patterns)
