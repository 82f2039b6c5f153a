"""The Python Listener: handler per event with the cursor past it, at least once, restarts."""
from __future__ import annotations

import threading
import time

from follow_util import LIVE_WAIT, add

from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor
from wardrik_cli.store.layout import Root
from wardrik_cli.follow.listener import Listener


def run_until(listener: Listener, cond, timeout: float = LIVE_WAIT) -> None:
    th = threading.Thread(target=listener.run, daemon=True)
    th.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not cond():
        time.sleep(0.02)
    listener.stop()
    th.join(LIVE_WAIT)
    assert not th.is_alive()
    assert cond()


def test_handler_gets_each_event_with_cursor_past_it(root):
    for i in range(3):
        add(root, "l/a", str(i))
    saved = {"c": encode_cursor({"l/a": 1})}
    got = []

    def handle(event, listener):
        got.append((int(event["sequence"]), decode_cursor(listener.cursor)))
        saved["c"] = listener.cursor

    lis = Listener(Root(root), ["l/*"], handle, cursor=lambda: saved["c"])
    threading.Timer(0.5, add, (root, "l/b", "later")).start()
    run_until(lis, lambda: len(got) >= 3)
    assert got == [(2, {"l/a": 2}), (3, {"l/a": 3}), (1, {"l/a": 3, "l/b": 1})]


def test_failure_restarts_from_saved_cursor_at_least_once(root):
    for i in range(4):
        add(root, "l/a", str(i))
    saved = {"c": encode_cursor({})}
    seen = []
    failed = []

    def handle(event, listener):
        seq = int(event["sequence"])
        seen.append(seq)
        if seq == 3 and not failed:
            failed.append(seq)
            raise RuntimeError("database down")
        if seq == 2 and len(failed) == 0:
            return  # handled but cursor not saved: it comes again after the restart
        saved["c"] = listener.cursor

    errors = []
    lis = Listener(Root(root), ["l/a"], handle, cursor=lambda: saved["c"], backoff=(0.05, 0.2),
                   on_error=errors.append)
    run_until(lis, lambda: decode_cursor(saved["c"]) == {"l/a": 4})
    assert seen == [1, 2, 3, 2, 3, 4]
    assert lis.failures == 1 and isinstance(errors[0], RuntimeError)


def test_no_saved_cursor_starts_at_what_is_written_next_and_returning_false_retries(root):
    add(root, "l/a", "old")
    seen = []

    def handle(event, listener):
        seen.append(int(event["sequence"]))
        return len(seen) > 1  # the first delivery "fails" by returning False

    lis = Listener(Root(root), ["l/a"], handle, backoff=(0.05, 0.1))

    def writer():
        # once its start is fixed (its read-back took the log's end as its position), write the next event
        deadline = time.monotonic() + LIVE_WAIT
        while not (lis._follower is not None and "l/a" in lis._follower.positions):
            if time.monotonic() > deadline:
                return  # never started: run_until fails
            time.sleep(0.02)
        add(root, "l/a", "new")
    threading.Thread(target=writer).start()
    run_until(lis, lambda: len(seen) >= 2)
    assert seen == [2, 2]


def test_live_events_reach_a_listener(root):
    add(root, "l/a")
    got = []
    r = Root(root)
    lis = Listener(r, ["l/a"], lambda e, l: got.append(e["type"]), types=["message.delta"])

    def sender():
        from wardrik_cli.follow import live
        deadline = time.monotonic() + LIVE_WAIT
        while not got and time.monotonic() < deadline:
            live.publish(r, "l/a", b'{"type":"wardrik.message.delta","time":"2026-01-01T00:00:00.000000Z","data":{}}')
            time.sleep(0.1)
    threading.Thread(target=sender, daemon=True).start()
    run_until(lis, lambda: bool(got))
    assert got[0] == "wardrik.message.delta"
