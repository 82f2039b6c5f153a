"""The follow engine in-process: exactly-once across read-back and follow, cursors, files replaced."""
from __future__ import annotations

import os
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from follow_util import LIVE_WAIT, Tailer, add, compact

from wardrik_cli.follow import follower as follow
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log
from wardrik_cli.read.reader import Filters


def collect(f: follow.Follower, k: int, timeout: float = LIVE_WAIT) -> list:
    """Take k items from a follower running in a thread."""
    out: list = []
    done = threading.Event()

    def run():
        for it in f:
            out.append(it)
            if len(out) >= k:
                break
        done.set()

    th = threading.Thread(target=run, daemon=True)
    th.start()
    done.wait(timeout)
    f.stop()
    th.join(LIVE_WAIT)
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(before=st.lists(st.integers(0, 6), min_size=1, max_size=3), after=st.integers(1, 30),
       n=st.integers(0, 8), use_cursor=st.booleans())
def test_exactly_once_between_read_back_and_follow(tmp_path_factory, before, after, n, use_cursor):
    """Writers race the start; whatever the timing, each log comes in order, once, with no gap, to its end."""
    root = tmp_path_factory.mktemp("r")
    ids = [f"h/l{i}" for i in range(len(before))]
    for log_id, k in zip(ids, before, strict=False):
        for j in range(k):
            add(root, log_id, str(j))
    r = Root(root)
    start = {ids[0]: min(1, before[0])} if use_cursor else None
    f = follow.tail_items(r, follow.agent_logs_fn(r, ["h/*"]), after=start, n=n, follow=True)
    final = {log_id: k for log_id, k in zip(ids, before, strict=False)}
    out: list = []
    th = threading.Thread(target=lambda: out.extend(f), daemon=True)  # list.extend appends as it goes
    th.start()
    for j in range(after):  # races the read-back on purpose
        add(root, ids[j % len(ids)], f"w{j}")
        final[ids[j % len(ids)]] += 1
    # then one marker per log until it shows: from then on everything must have come
    deadline = time.monotonic() + LIVE_WAIT
    for log_id in ids:
        shown = False
        while not shown and time.monotonic() < deadline:
            add(root, log_id, "marker")
            final[log_id] += 1
            until = time.monotonic() + 0.5
            while not shown and time.monotonic() < until:
                shown = any(it.log == log_id and it.seq == final[log_id] for it in list(out))
                time.sleep(0.02)
    f.stop()
    th.join(LIVE_WAIT)
    per: dict[str, list[int]] = {}
    for it in out:
        per.setdefault(it.log, []).append(it.seq)
    assert set(per) == set(ids)
    for log_id, got in per.items():
        assert got == list(range(got[0], got[0] + len(got))), got  # in order, no repeat, no gap
        assert got[-1] == final[log_id]
    if use_cursor:  # every event after the cursor, exactly
        assert len(out) == sum(final.values()) - start[ids[0]]


def test_cursor_after_each_item_resumes_exactly(root):
    for i in range(8):
        add(root, "c/a" if i % 2 else "c/b", str(i))
    r = Root(root)
    f = follow.tail_items(r, follow.agent_logs_fn(r, ["c/*"]), n=5)
    cursors, raws = [], []
    for it in f:
        cursors.append(f.cursor)
        raws.append(it.raw)
    for k, cur in enumerate(cursors):
        rest = [it.raw for it in follow.tail_items(r, follow.agent_logs_fn(r, ["c/*"]), after=cur)]
        assert rest == raws[k + 1:]


def test_stop_from_another_thread_and_hangup_fd(root):
    add(root, "s/a")
    r = Root(root)
    f = follow.tail_items(r, follow.agent_logs_fn(r, ["s/a"]), n=0, follow=True)
    threading.Timer(0.3, f.stop).start()
    assert list(f) == []
    rfd, wfd = os.pipe()
    f = follow.tail_items(r, follow.agent_logs_fn(r, ["s/a"]), n=0, follow=True, hangup_fd=wfd)
    threading.Timer(0.3, os.close, (rfd,)).start()  # the reader goes away
    assert list(f) == []
    os.close(wfd)


@pytest.mark.subprocess
def test_polling_fallback_without_file_notifications(root):
    """A real fault: every file descriptor but the two of the wake-up pipe is taken when the
    follower starts, so watchfiles cannot get its inotify descriptor (EMFILE). The follower
    warns, the filler descriptors are released, and it follows by polling."""
    import subprocess
    import sys

    add(root, "p/a")
    code = (
        "import os, resource, sys\n"
        "import watchfiles\n"
        "from wardrik_cli.follow import follower as follow\n"
        "from wardrik_cli.store.layout import Root\n"
        f"r = Root({str(root)!r})\n"
        "logs_fn = follow.agent_logs_fn(r, ['p/*'])\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "fill = []\n"
        "while True:\n"
        "    try:\n"
        "        fill.append(os.open('/dev/null', os.O_RDONLY))\n"
        "    except OSError:\n"
        "        break\n"
        "os.close(fill.pop()); os.close(fill.pop())  # room for the wake-up pipe only\n"
        "def warn(m):\n"
        "    print('warn', m, flush=True)\n"
        "    while fill:\n"
        "        os.close(fill.pop())\n"
        "f = follow.tail_items(r, logs_fn, n=0, follow=True, poll_s=0.1, warn=warn, live=['p/*'])\n"
        "for it in f:\n"
        "    print('item', it.log, f.watcher_active, flush=True)\n"
        "    break\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = p.stdout.readline().decode()
        assert first.startswith("warn file notifications unavailable"), (first, p.stderr.read1(4096))
        assert "Too many open files" in first  # the fault landed where it was meant to
        import select

        # Registration comes before the read-back's snapshot (live events are queued while it
        # reads back), so an event written just then may be behind the start of a -n 0
        # follow: append again until one is printed.
        deadline = time.monotonic() + LIVE_WAIT
        while time.monotonic() < deadline:
            add(root, "p/b", "new log")
            if select.select([p.stdout], [], [], 1.0)[0]:
                break
        out, err = p.communicate(timeout=LIVE_WAIT)
    finally:
        if p.poll() is None:
            p.kill()
    assert "item p/b False" in out.decode().splitlines(), (out, err)


def test_classify_by_sequence_and_id(root):
    for i in range(6):
        add(root, "k/a", str(i))
    lg = Log.agent(Root(root), "k/a")
    with lg.open() as v:
        ev4 = list(v.events())[3][2]
    compact(root, "k/a", 4)
    with lg.open() as v:
        assert follow._classify(v, 4, ev4["id"]) == "continue"
        assert follow._classify(v, 4, "another-id") == "recreated"
        assert follow._classify(v, 1, None) == "dropped"
        assert follow._classify(v, 3, None) == "continue"
        assert follow._classify(v, 7, None) == "recreated"  # sequences never go back


def test_filters_move_the_cursor_past_filtered_events(root):
    add(root, "f/a", "1")
    append = __import__("wardrik_cli").append_event
    append(Root(root), "f/a", "run.completed", {"answer": "x"}, sync=False)
    add(root, "f/a", "3")
    r = Root(root)
    f = follow.tail_items(r, follow.agent_logs_fn(r, ["f/a"]), n=10, filters=Filters.build(["run.completed"]))
    assert [it.seq for it in f] == [2]
    assert f.cursor == {"f/a": 3}


def test_a_log_first_read_while_following_after_its_start_was_compacted_gets_events_dropped(tmp_path):
    """A log that begins to match while the follower runs, whose first events compaction
    dropped before the follower read it (a follower behind: stopped, a slow pipe), is told of
    them as page tells a reader at its start; before, it began at the first kept event, silently."""
    root = tmp_path / "root"
    add(root, "acme/first")
    t = Tailer(root, "-f", "acme/*", "-n", "5", "-x", "activity.changed", "-o", "jsonl")
    try:
        assert [e["subject"] for e in t.events(1)] == ["agents/acme/first"]
        t.wait_registered()
        t.pause()  # stopped before acme/z exists: the follower meets it only after its compaction
        for i in range(5):
            add(root, "acme/z", f"z{i}")
        compact(root, "acme/z", keep_from=4)
        t.resume()
        got = t.events(3)
        assert [(e["type"], e.get("sequence"), e["data"]) for e in got] == [
            ("wardrik.events.dropped", None, {"log": "acme/z", "count": 3}),
            ("wardrik.trigger.fired", "000000000004", {"trigger": {"name": "z3"}}),
            ("wardrik.trigger.fired", "000000000005", {"trigger": {"name": "z4"}})]
    finally:
        t.kill()
