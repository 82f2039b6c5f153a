"""`wardrik tail [-f]` as a user runs it: real subprocesses, real signals, real files."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest

from conftest import WARDRIK, jsonl
from follow_util import LIVE_WAIT, Tailer, add, compact, seqs

from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor


def _no_traceback(p_err: bytes) -> None:
    assert b"Traceback" not in p_err


# ---------------------------------------------------------------------------------------------
# read-back
# ---------------------------------------------------------------------------------------------
def test_last_n_across_logs_oldest_first(root, cli):
    for i in range(6):
        add(root, "acme/a", f"a{i}")
        add(root, "acme/b", f"b{i}")
    p = cli("tail", "acme/*", "-n", "3")
    assert p.returncode == 0, p.stderr
    evs = jsonl(p.stdout)
    assert [e["data"]["trigger"]["name"] for e in evs] == ["b4", "a5", "b5"]
    page = jsonl(cli("page", "acme/*", "--limit", "1000").stdout)
    assert evs == page[-3:]


@pytest.mark.subprocess
def test_last_n_reads_backwards_not_whole_files(root):
    big = root / "big.jsonl"
    line = orjson.loads(orjson.dumps(add(root, "big", "x")))
    # a big log written directly: 60,000 events (~20 MB)
    with open(big, "ab") as f:
        for s in range(2, 60_001):
            line["sequence"] = f"{s:012d}"
            f.write(orjson.dumps(line) + b"\n")
    size = big.stat().st_size
    add(root, "small", "x")

    def run(log_id):
        code = ("import atexit, sys\n"
                "atexit.register(lambda: sys.stderr.write(open('/proc/self/io').read()))\n"
                "from wardrik_cli.cli.app import run\n"
                f"sys.exit(run(['--root', {str(root)!r}, 'tail', {log_id!r}, '-n', '5']))\n")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True)
        assert p.returncode == 0, p.stderr
        rchar = int(next(l for l in p.stderr.decode().splitlines() if l.startswith("rchar:")).split()[1])
        return jsonl(p.stdout), rchar

    evs, rchar = run("big")
    assert seqs(evs) == [59_996, 59_997, 59_998, 59_999, 60_000]
    _, baseline = run("small")  # start-up reads (Python, modules) of the same command
    assert rchar - baseline < size // 100, (rchar, baseline, size)


def test_after_cursor_reads_every_event_after_it(root, cli):
    for i in range(5):
        add(root, "acme/a", f"a{i}")
    p = cli("tail", "acme/a", "-n", "1", "--after", encode_cursor({"acme/a": 2}))
    assert seqs(jsonl(p.stdout)) == [3, 4, 5]


def test_cursor_for_other_patterns_logs_is_carried_and_matched_logs_start_over(root, cli, tmp_path):
    for i in range(3):
        add(root, "acme/a", f"a{i}")
        add(root, "beta/x", f"x{i}")
    cf = tmp_path / "c"
    cf.write_text(encode_cursor({"beta/x": 2}))
    p = cli("tail", "acme/*", "--cursor-file", str(cf))
    assert p.returncode == 0, p.stderr
    assert seqs(jsonl(p.stdout)) == [1, 2, 3]
    assert decode_cursor(cf.read_text()) == {"acme/a": 3, "beta/x": 2}


@pytest.mark.parametrize("content,what", [(b"garbage!!", b"not base64"), (b"\xff\xfe", b"not UTF-8")])
@pytest.mark.subprocess
def test_bad_cursor_file_is_refused(root, cli, tmp_path, content, what):
    add(root, "acme/a")
    cf = tmp_path / "c"
    cf.write_bytes(content)
    for args in (["acme/a"], ["acme/a", "-f"]):
        p = cli("tail", *args, "--cursor-file", str(cf), timeout=LIVE_WAIT)
        assert p.returncode == 2
        assert p.stdout == b""
        assert p.stderr.startswith(b"error: ") and what in p.stderr and p.stderr.count(b"\n") == 1
    assert cf.read_bytes() == content


@pytest.mark.subprocess
def test_unreadable_cursor_file_is_refused(root, cli, tmp_path):
    add(root, "acme/a")
    cf = tmp_path / "c"
    cf.mkdir()  # reading it fails even as root
    p = cli("tail", "acme/a", "-f", "--cursor-file", str(cf), timeout=LIVE_WAIT)
    assert p.returncode == 2 and p.stderr.startswith(b"error: cannot read cursor file")
    _no_traceback(p.stderr)


def test_literal_missing_log_is_an_error_without_follow(root, cli):
    p = cli("tail", "acme/none")
    assert p.returncode == 2 and p.stderr.startswith(b"error: no log")


@pytest.mark.subprocess
def test_json_with_follow_is_refused(root, cli):
    add(root, "a")
    p = cli("tail", "a", "-f", "--format", "json")
    assert p.returncode == 2 and p.stderr.startswith(b"error:")


# ---------------------------------------------------------------------------------------------
# following
# ---------------------------------------------------------------------------------------------
@pytest.mark.subprocess
def test_follow_shows_new_events_new_logs_and_literal_logs_from_creation(root, cli):
    add(root, "acme/a", "old1")
    add(root, "acme/a", "old2")
    t = Tailer(root, "acme/*", "later/one", "-n", "1", "-f")
    try:
        assert t.events(1)[0]["data"]["trigger"]["name"] == "old2"
        t.wait_registered()
        add(root, "acme/a", "new")
        assert t.events(1)[0]["data"]["trigger"]["name"] == "new"
        add(root, "acme/deep/er", "created later")
        e = t.events(1)[0]
        assert e["source"].endswith("/agents/acme/deep/er") and e["sequence"] == "000000000001"
        add(root, "later/one", "literal")
        assert t.events(1)[0]["data"]["trigger"]["name"] == "literal"
        add(root, "other", "unmatched")
        add(root, "acme/a", "last")
        assert t.events(1)[0]["data"]["trigger"]["name"] == "last"
    finally:
        assert t.stop(signal.SIGINT) == 0
    _no_traceback(t.err)


@pytest.mark.subprocess
def test_n0_starts_at_what_is_written_next(root):
    add(root, "a", "before")
    t = Tailer(root, "a", "-n", "0", "-f")
    try:
        t.wait_registered()
        t.sync("a")
        add(root, "a", "after")
        assert t.events(1)[0]["data"]["trigger"]["name"] == "after"
        assert all(b"before" not in l for l in t.got)
    finally:
        t.stop()


@pytest.mark.subprocess
def test_no_event_missed_or_repeated_between_read_back_and_follow(root, tmp_path):
    """A writer appends all along while followers start with every kind of start."""
    add(root, "w/a")
    total = 400
    done = threading.Event()

    def writer():
        for i in range(total):
            add(root, "w/a" if i % 3 else "w/b", str(i))
        done.set()

    th = threading.Thread(target=writer)
    th.start()
    tailers = []
    try:
        for k in range(3):
            tailers.append(Tailer(root, "w/*", "-n", "1000000", "-f"))
            tailers.append(Tailer(root, "w/*", "-f", "--after", encode_cursor({})))
            time.sleep(0.1 * k)
        th.join()
        expected = 1 + total
        for t in tailers:
            evs = t.events(expected, timeout=60)
            per = {}
            for e in evs:
                per.setdefault(e["source"].rsplit("/", 1)[1], []).append(int(e["sequence"]))
            for log_seqs in per.values():
                assert log_seqs == list(range(1, len(log_seqs) + 1))
            assert sum(len(v) for v in per.values()) == expected
            assert t.nothing_more(0.3) == []
    finally:
        for t in tailers:
            assert t.stop() == 0


@pytest.mark.subprocess
def test_cursor_file_resume_after_sigterm_and_sigint_no_gap_no_repeat(root, tmp_path):
    cf = tmp_path / "cursor"
    for i in range(3):
        add(root, "r/a", f"{i}")
    seen: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        t = Tailer(root, "r/*", "-f", "-n", "1000", "--cursor-file", str(cf))
        t.wait_registered()
        for _ in range(4):
            add(root, "r/a")
        # stop it while events may still be flowing
        time.sleep(0.2)
        assert t.stop(sig) == 0
        _no_traceback(t.err)
        seen += seqs([orjson.loads(l) for l in t.nothing_more(0.2)])
        assert decode_cursor(cf.read_text())["r/a"] == seen[-1]
    t = Tailer(root, "r/*", "-f", "--cursor-file", str(cf))
    seen += seqs(t.events(15 - len(seen)))
    t.stop()
    assert seen == list(range(1, 16))


@pytest.mark.subprocess
def test_types_filter_kept_and_live_and_dropped_always_passes(root, cli):
    for i in range(3):
        add(root, "f/a", f"{i}")
    t = Tailer(root, "f/*", "-f", "-n", "0", "--types", "run.completed,message.delta")
    try:
        t.wait_registered()
        cli("append", "f/a", "tool_call.progress", "--data", '{"message": "no"}')
        cli("append", "f/a", "trigger.fired", "--data", '{"trigger": {"name": "no"}}')
        cli("append", "f/a", "message.delta", "--data", '{"delta": "yes"}')
        cli("append", "f/a", "run.completed", "--data", '{"answer": "yes"}')
        evs = t.events(2)
        assert [e["type"] for e in evs] == ["wardrik.message.delta", "wardrik.run.completed"]
        compact(root, "f/a", 100)  # everything dropped; the follower was at 5 already: nothing missed
        add(root, "f/a", "after compaction")  # filtered out
        cli("append", "f/a", "run.completed", "--data", '{"answer": "2"}')
        assert t.events(1)[0]["data"] == {"answer": "2"}
    finally:
        t.stop()
    t = Tailer(root, "f/*", "-f", "--after", encode_cursor({"f/a": 1}), "--types", "run.completed")
    try:
        e = t.events(2)
        assert e[0]["type"] == "wardrik.events.dropped" and e[0]["data"] == {"log": "f/a", "count": 4}  # 2..5
        assert e[1]["data"] == {"answer": "2"}
    finally:
        t.stop()


@pytest.mark.subprocess
def test_live_events_reach_every_follower_and_are_never_stored(root, cli):
    add(root, "l/a")
    before = (root / "l" / "a.jsonl").read_bytes()
    ts = [Tailer(root, "l/*", "-f", "-n", "0"), Tailer(root, "l/a", "-f", "-n", "0")]
    try:
        for t in ts:
            t.wait_registered()
        p = cli("append", "l/a", "message.delta", "--data", '{"delta": "hel"}')
        assert p.returncode == 0
        sent = jsonl(p.stdout)[0]
        assert "sequence" not in sent
        for t in ts:
            assert t.events(1)[0] == sent
    finally:
        for t in ts:
            t.stop()
    assert (root / "l" / "a.jsonl").read_bytes() == before
    assert os.listdir(root / ".wardrik" / "live") == []


@pytest.mark.subprocess
def test_torn_tail_waited_for_then_shown_once(root, cli):
    add(root, "t/a")
    t = Tailer(root, "t/a", "-f", "-n", "1")
    try:
        t.events(1)
        t.wait_registered()
        line = orjson.dumps(orjson.loads(orjson.dumps(add(root, "t/x", "model"))) | {
            "source": "wardrik://local/agents/t/a", "sequence": "000000000002"}) + b"\n"
        path = root / "t" / "a.jsonl"
        with open(path, "ab") as f:
            f.write(line[:40])
            f.flush()
            assert t.nothing_more(1.0) == []
            f.write(line[40:])
        e = t.events(1)[0]
        assert e["sequence"] == "000000000002"
        assert b"corrupt" not in t.err
        add(root, "t/a", "three")
        assert seqs(t.events(1)) == [3]
    finally:
        assert t.stop() == 0


@pytest.mark.subprocess
def test_torn_tail_cut_by_next_append(root, cli):
    add(root, "t/a")
    t = Tailer(root, "t/a", "-f", "-n", "0")
    try:
        t.wait_registered()
        with open(root / "t" / "a.jsonl", "ab") as f:
            f.write(b'{"specversion":"1.0","id":"half')
        p = cli("append", "t/a", "trigger.fired", "--data", '{"trigger": {"name": "after torn"}}')
        assert p.returncode == 0 and b"torn tail" in p.stderr
        e = t.events(1)[0]
        assert e["sequence"] == "000000000002" and e["data"]["trigger"]["name"] == "after torn"
    finally:
        t.stop()


@pytest.mark.subprocess
def test_compaction_while_following_continues_by_sequence(root):
    for i in range(10):
        add(root, "c/a", f"{i}")
    t = Tailer(root, "c/a", "-f", "-n", "2")
    try:
        assert seqs(t.events(2)) == [9, 10]
        t.wait_registered()
        compact(root, "c/a", 6)  # the follower is past the cut: nothing missed, nothing repeated
        add(root, "c/a", "11")
        evs = t.events(1)
        assert seqs(evs) == [11]
        compact(root, "c/a", 11)
        add(root, "c/a", "12")
        assert seqs(t.events(1)) == [12]
    finally:
        t.stop()
    assert t.nothing_more(0.1) == []


@pytest.mark.subprocess
def test_compaction_past_a_follower_gives_one_dropped_notice(root, tmp_path):
    for i in range(5):
        add(root, "c/a", f"{i}")
    cf = tmp_path / "cur"
    cf.write_text(encode_cursor({"c/a": 2}))
    # The follower is stopped (SIGSTOP) while the log is compacted past it, then appended to.
    t = Tailer(root, "c/a", "-f", "--cursor-file", str(cf))
    try:
        assert seqs(t.events(3)) == [3, 4, 5]
        t.wait_registered()
        t.pause()  # stopped for sure before anything is written: it cannot see 6 and 7 come and go
        for i in range(5):
            add(root, "c/a", f"{i}")  # 6..10
        compact(root, "c/a", 8)  # drops 6 and 7, which the follower had not seen
        t.resume()
        evs = t.events(4)
        assert evs[0]["type"] == "wardrik.events.dropped" and evs[0]["data"] == {"log": "c/a", "count": 2}
        assert seqs(evs[1:]) == [8, 9, 10]
    finally:
        t.proc.send_signal(signal.SIGCONT)
        t.stop()
    assert decode_cursor(cf.read_text()) == {"c/a": 10}


@pytest.mark.subprocess
def test_deleted_and_recreated_log_is_read_again_from_its_start(root):
    for i in range(3):
        add(root, "d/a", f"old{i}")
    t = Tailer(root, "d/*", "-f", "-n", "1")
    try:
        t.events(1)
        t.wait_registered()
        (root / "d" / "a.jsonl").unlink()
        assert t.wait_err(b"deleted"), t.err  # it saw the log missing before it was written again
        add(root, "d/a", "new1")
        add(root, "d/a", "new2")
        evs = t.events(2)
        assert [e["data"]["trigger"]["name"] for e in evs] == ["new1", "new2"] and seqs(evs) == [1, 2]
        # the warning comes before the events, but stderr is read by a thread of its own
        assert t.wait_err(b"recreated"), t.err
        assert b"warning:" in t.err
    finally:
        assert t.stop() == 0


@pytest.mark.subprocess
def test_recreated_quickly_is_noticed_by_content(root):
    for i in range(3):
        add(root, "d/a", f"old{i}")
    t = Tailer(root, "d/a", "-f", "-n", "1")
    try:
        t.events(1)
        t.wait_registered()
        t.pause()  # it cannot see the file missing
        (root / "d" / "a.jsonl").unlink()
        for i in range(4):
            add(root, "d/a", f"new{i}")
        t.resume()
        evs = t.events(4)
        assert [e["data"]["trigger"]["name"] for e in evs] == [f"new{i}" for i in range(4)]
        assert t.wait_err(b"recreated"), t.err
    finally:
        t.proc.send_signal(signal.SIGCONT)
        t.stop()


# ---------------------------------------------------------------------------------------------
# clean ends and faults
# ---------------------------------------------------------------------------------------------
@pytest.mark.subprocess
def test_closed_pipe_noticed_while_idle(root):
    for i in range(5):
        add(root, "p/a", f"{i}")
    # wardrik tail -f p/a | head -n 2, and then nothing is ever written again
    tail = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "p/a"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-n", "2"], stdin=tail.stdout, capture_output=True, timeout=LIVE_WAIT)
    tail.stdout.close()
    assert len(head.stdout.splitlines()) == 2
    assert tail.wait(timeout=LIVE_WAIT) == 0
    assert b"Traceback" not in tail.stderr.read()


@pytest.mark.subprocess
def test_sigint_and_sigterm_while_idle_exit_0(root):
    add(root, "s/a")
    for sig in (signal.SIGINT, signal.SIGTERM):
        t = Tailer(root, "s/a", "-f")
        t.events(1)
        t.wait_registered()
        assert t.stop(sig) == 0
        _no_traceback(t.err)
        assert t.err == b""
    assert os.listdir(root / ".wardrik" / "live") == []


@pytest.mark.subprocess
def test_blocked_follower_does_not_block_appenders(root, cli):
    add(root, "b/a")
    # a follower whose stdout is a pipe nobody reads
    t = Tailer(root, "b/a", "-f", "-n", "0", stdout=subprocess.PIPE)
    t2 = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "-n", "0", "b/a"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # never read
    try:
        t.wait_registered()
        big = orjson.dumps({"delta": "x" * 30_000}).decode()
        code = ("from wardrik_cli.cli.app import run\n"
                "for i in range(300):\n"
                f"    assert run(['--root', {str(root)!r}, 'append', 'b/a', 'message.delta', '--data', {big!r}]) == 0\n"
                "for i in range(20):\n"
                f"    assert run(['--root', {str(root)!r}, 'append', 'b/a', 'trigger.fired', '--data', '{{\"trigger\": {{\"name\": \"k\"}}}}']) == 0\n")
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
        assert p.returncode == 0, p.stderr
        assert len((root / "b" / "a.jsonl").read_bytes().splitlines()) == 21
        assert t2.poll() is None  # still alive, still blocked
    finally:
        t2.kill()
        t2.wait()
        t.kill()


@pytest.mark.subprocess
def test_kill_9_follower_leaves_nothing_that_breaks_appenders(root, cli):
    add(root, "k/a")
    t = Tailer(root, "k/a", "-f")
    t.events(1)
    t.wait_registered()
    t.kill()
    live_dir = root / ".wardrik" / "live"
    assert len(os.listdir(live_dir)) == 2  # its socket and registration stay behind
    p = cli("append", "k/a", "message.delta", "--data", '{"delta": "x"}')
    assert p.returncode == 0 and p.stderr == b""
    assert os.listdir(live_dir) == []  # the sender removed the stale registration
    t = Tailer(root, "k/a", "-f")
    t.events(1)
    t.wait_registered()
    t.kill()
    p = cli("append", "k/a", "trigger.fired", "--data", '{"trigger": {"name": "x"}}')
    assert p.returncode == 0 and p.stderr == b""
    assert os.listdir(live_dir) == []


@pytest.mark.subprocess
def test_exec_listener_at_least_once_with_retry(root, tmp_path):
    for i in range(3):
        add(root, "e/a", f"{i}")
    cf = tmp_path / "cursor"
    out = tmp_path / "handled"
    marker = tmp_path / "failed-once"
    script = tmp_path / "h.sh"
    # fail once on the second event, after recording that it was seen
    script.write_text(f"""#!/bin/sh
ev=$(cat)
echo "$WARDRIK_CURSOR $ev" >> {out}
case "$ev" in *'"sequence":"000000000002"'*) [ -e {marker} ] || {{ touch {marker}; exit 3; }} ;; esac
exit 0
""")
    script.chmod(0o755)
    t = Tailer(root, "e/*", "-f", "--after", encode_cursor({}), "--cursor-file", str(cf), "--exec", str(script))
    try:
        deadline = time.monotonic() + LIVE_WAIT
        while time.monotonic() < deadline and (not cf.exists() or decode_cursor(cf.read_text()) != {"e/a": 3}):
            time.sleep(0.05)
        assert decode_cursor(cf.read_text()) == {"e/a": 3}
        add(root, "e/a", "4")
        deadline = time.monotonic() + LIVE_WAIT
        while time.monotonic() < deadline and decode_cursor(cf.read_text()) != {"e/a": 4}:
            time.sleep(0.05)
        assert decode_cursor(cf.read_text()) == {"e/a": 4}
    finally:
        assert t.stop() == 0
    rows = out.read_text().splitlines()
    got = [int(orjson.loads(r.split(" ", 1)[1])["sequence"]) for r in rows]
    assert got == [1, 2, 2, 3, 4]  # the failed one again, nothing skipped
    assert [decode_cursor(r.split(" ", 1)[0]) for r in rows][-1] == {"e/a": 4}
    assert b"retrying" in t.err


@pytest.mark.subprocess
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_during_exec_back_off_ends_the_tail_at_once(root, tmp_path, sig):
    """The back-off after a failed command was a wait in ``threading``, where the CLI holds a
    stop signal back: the tail ended only after it (up to 30 s), and ran the command again."""
    add(root, "e/a", "x")
    runs = tmp_path / "runs"
    t = Tailer(root, "e/a", "-f", "-n", "1", "--exec", f"echo run >> {runs}; exit 1",
               stdout=subprocess.DEVNULL, env={"WARDRIK_EXEC_BACKOFF_S": "600"})
    deadline = time.monotonic() + LIVE_WAIT
    while b"retrying from the saved cursor in 600s" not in t.err:
        assert time.monotonic() < deadline and t.proc.poll() is None, t.err
        time.sleep(0.05)
    t.proc.send_signal(sig)
    try:
        rc = t.proc.wait(timeout=60)  # a ceiling: the back-off it is in lasts 600 s
    except subprocess.TimeoutExpired:
        t.proc.kill()
        pytest.fail("the tail waited out its back-off")
    assert rc == 0 and runs.read_text().count("run") == 1, (rc, t.err)
    _no_traceback(t.err)


@pytest.mark.subprocess
def test_exec_ends_when_its_output_pipe_closes_while_idle(root, tmp_path):
    """As tail -f without --exec does (the contract: a closed pipe is noticed even while no
    events arrive); before, it went on until an event came and its command failed."""
    add(root, "e/a", "x")
    ready = tmp_path / "ready"
    read, write = os.pipe()
    p = subprocess.Popen([WARDRIK, "--root", str(root), "tail", "-f", "e/a", "-n", "1", "--exec",
                          f"cat > /dev/null; touch {ready}"], stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    try:
        deadline = time.monotonic() + LIVE_WAIT
        while not ready.exists():  # the read-back's event handled: it follows, idle
            assert time.monotonic() < deadline and p.poll() is None
            time.sleep(0.05)
        os.close(read)
        rc = p.wait(timeout=60)  # a ceiling: idle, it would follow for ever
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("tail -f --exec did not notice its reader went away")
    assert rc == 0
    _no_traceback(p.stderr.read() if p.stderr else b"")


def test_pretty_is_one_line_per_event(root, cli):
    add(root, "acme/a", "hello")
    p = cli("tail", "acme/a", "--format", "pretty")
    out = p.stdout.decode()
    # one row per event (render prints a day line, "2026-11-30 UTC ───", before each new day's rows)
    rows = [l for l in out.splitlines() if not l.endswith("─")]
    assert p.returncode == 0 and len(rows) == 1 and len(out.splitlines()) == 2
    assert "acme/a" in out and "trigger.fired" in out and "hello" in out
