"""tail -f in a real terminal (tmux) while two agents stream message.delta at once.

The deltas are published with the library's ``publish_live`` from this process, the chunks of
two messages on two logs interleaved; the screen must show one labelled line per message,
growing in place, never a line per chunk. Screens are polled up to a generous ceiling
(``Term.wait_for``), never judged after a fixed sleep.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from conftest import WARDRIK
from test_tmux import TMUX, Term

from wardrik_cli.follow.publish import append_event, publish_live
from wardrik_cli.store.layout import Root

pytestmark = [pytest.mark.skipif(not os.path.exists(TMUX), reason="tmux is not installed"), pytest.mark.subprocess]

A = ["The roll", "back of v841 ", "fixed checkout: ", "p99 is back ", "to 210 ms."]
B = ["Refund ", "approved for ", "order 5120; ", "the customer ", "has been told."]


@pytest.fixture
def wide(tmp_path):
    t = Term(tmp_path, width=150, height=30)
    try:
        yield t
    finally:
        t.kill()


def _msg_lines(screen: str, mid: str) -> list[str]:
    return [l for l in screen.splitlines() if f" {mid} ▸ " in l]


def _wait_registered(root: Path, timeout: float = 30.0) -> None:
    """tail -f registers for live events before its read-back: from then on nothing published is missed."""
    live = root / ".wardrik" / "live"
    deadline = time.monotonic() + timeout  # a generous ceiling, never a latency bound
    while not (live.is_dir() and any(n.endswith(".json") for n in os.listdir(live))):
        assert time.monotonic() < deadline, "tail -f never registered for live events"
        time.sleep(0.05)


def test_two_agents_streaming_at_once_get_one_labelled_line_each(wide, root):
    r = Root(root)
    append_event(r, "acme/checkout-live", "message.started", {"message": {"id": "m1"}}, sync=False)
    append_event(r, "acme/support-bot", "message.started", {"message": {"id": "m2"}}, sync=False)
    wide.send(f"{WARDRIK} --root {root} tail -f 'acme/*' -n 2; echo rc=$?")
    wide.wait_for(r"acme/support-bot +1 message\.started +m2")
    _wait_registered(root)

    # interleaved, chunk by chunk, and each step seen on the screen before the next
    for i, (a, b) in enumerate(zip(A, B, strict=True)):
        publish_live(r, "acme/checkout-live", "message.delta", {"message": {"id": "m1"}, "delta": a})
        publish_live(r, "acme/support-bot", "message.delta", {"message": {"id": "m2"}, "delta": b})
        so_far_a, so_far_b = "".join(A[: i + 1]), "".join(B[: i + 1])
        s = wide.wait_for(r"^\d\d:\d\d:\d\d acme/support-bot +~ message\.delta +m2 ▸ " + re.escape(so_far_b.rstrip()) + r"\s*$")
        s = wide.wait_for(r"^\d\d:\d\d:\d\d acme/checkout-live +~ message\.delta +m1 ▸ " + re.escape(so_far_a.rstrip()) + r"\s*$")
        assert len(_msg_lines(s, "m1")) == 1 and len(_msg_lines(s, "m2")) == 1, s  # in place, not a line per chunk

    s = wide.screen()
    assert not any(chunk.strip() in l for l in s.splitlines() for chunk in A[1:] if "▸" not in l)
    rows = s.splitlines()
    started = next(l for l in rows if "1 message.started" in l and "acme/checkout-live" in l)
    (line_a,) = _msg_lines(s, "m1")
    (line_b,) = _msg_lines(s, "m2")
    assert line_a.index("message.delta") == line_b.index("message.delta") == started.index("message.started")

    # the kept message.completed prints normally, above; its message's line goes, the other stays
    append_event(r, "acme/checkout-live", "message.completed", {"message": {"id": "m1"}, "text": "Rolled back."},
                 sync=False)
    s = wide.wait_for(r"acme/checkout-live +2 message\.completed +m1 · Rolled back\.")
    s = wide.wait_for(r"m2 ▸ ")  # still there
    assert not _msg_lines(s, "m1"), s
    lines = [l for l in s.splitlines() if l.strip()]
    done = next(i for i, l in enumerate(lines) if "2 message.completed" in l)
    assert lines[-1].endswith("m2 ▸ " + "".join(B)) and done < len(lines) - 1  # rows above, the region under
    append_event(r, "acme/support-bot", "message.completed", {"message": {"id": "m2"}}, sync=False)
    s = wide.wait_for(r"acme/support-bot +2 message\.completed +m2")
    assert not _msg_lines(s, "m2") and not _msg_lines(s, "m1"), s

    wide.keys("C-c")
    s = wide.wait_for(r"rc=\d+")
    assert "rc=0" in s and "Traceback" not in s


def test_hostile_delta_text_is_shown_not_obeyed(wide, root):
    r = Root(root)
    append_event(r, "acme/a", "message.started", {"message": {"id": "m1"}}, sync=False)
    wide.send(f"{WARDRIK} --root {root} tail -f acme/a -n 1; echo rc=$?")
    wide.wait_for(r"acme/a +1 message\.started")
    _wait_registered(root)
    publish_live(r, "acme/a", "message.delta", {"message": {"id": "m1"}, "delta": "ok \x1b[2J\x1b]0;pwned\x07\r\n"})
    publish_live(r, "acme/a", "message.delta", {"message": {"id": "m1"}, "delta": "still here"})
    s = wide.wait_for(r"m1 ▸ ok \\x1b\[2J\\x1b\]0;pwned\\x07 still here")
    assert "1 message.started" in s  # the screen was not cleared
    assert "pwned" not in wide.tmux("display-message", "-p", "-t", "t", "#{pane_title}")
    wide.keys("C-c")
    assert "rc=0" in wide.wait_for(r"rc=\d+")
