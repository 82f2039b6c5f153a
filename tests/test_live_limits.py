"""A live event too big for a datagram is refused when it is appended, never printed and then lost."""
from __future__ import annotations

import io

import orjson

from wardrik_cli.cli.app import run
from wardrik_cli.follow.live import MAX_LIVE_BYTES


def _cli(root, *args):
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


def test_an_oversized_live_event_is_refused_with_the_limit(tmp_path):
    big = orjson.dumps({"delta": "x" * (MAX_LIVE_BYTES + 10)}).decode()
    code, out, err = _cli(tmp_path, "append", "a/x", "message.delta", "--data", big)
    assert code == 2 and out == b"" and str(MAX_LIVE_BYTES) in err and err.startswith("error:")


def test_a_live_event_under_the_limit_is_printed_as_delivered(tmp_path):
    data = orjson.dumps({"delta": "x" * (MAX_LIVE_BYTES // 2)}).decode()
    code, out, err = _cli(tmp_path, "append", "a/x", "message.delta", "--data", data)
    assert code == 0 and orjson.loads(out)["type"] == "wardrik.message.delta"


def test_a_follower_gets_a_live_event_at_the_limit_whole(tmp_path):
    import threading

    from wardrik_cli import Root, append_event, publish_live, tail_items
    from wardrik_cli.follow.follower import agent_logs_fn

    root = Root(tmp_path / "root")
    append_event(root, "a/x", "trigger.fired", {"trigger": {"name": "x"}})
    f = tail_items(root, agent_logs_fn(root, ["a/*"]), n=0, follow=True, live=["a/*"])
    got: list = []
    done = threading.Event()

    def follow():
        for item in f:
            got.append(item)
            break
        done.set()

    th = threading.Thread(target=follow, daemon=True)
    th.start()
    deadline = __import__("time").monotonic() + 30
    while not list((tmp_path / "root" / ".wardrik" / "live").glob("*.json")):
        assert __import__("time").monotonic() < deadline, "the follower never registered"
        __import__("time").sleep(0.02)
    text = "y" * (MAX_LIVE_BYTES - 2000)
    sent = publish_live(root, "a/x", "message.delta", {"delta": text})
    assert done.wait(30), "the live event never arrived"
    f.stop()
    th.join(10)
    assert got[0].event["data"]["delta"] == text and got[0].event["id"] == sent["id"]


def test_a_socket_link_planted_in_the_live_folder_is_never_sent_to(tmp_path):
    """``.wardrik/live/<token>.sock`` planted as a link to a socket outside the root (syslog's,
    say): every append sent its live events there (a folder that is a link was refused, a
    socket that is one was not). Now only a socket itself is sent to."""
    import socket

    root = tmp_path / "root"
    assert _cli(root, "init")[0] == 0
    outside = tmp_path / "outside.sock"
    rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rx.bind(str(outside))
    rx.setblocking(False)
    try:
        live = root / ".wardrik" / "live"
        live.mkdir(parents=True, exist_ok=True)
        (live / "1-aaaa.sock").symlink_to(outside)
        (live / "1-aaaa.json").write_bytes(orjson.dumps({"pid": 1, "patterns": ["*"], "types": None}))
        assert _cli(root, "append", "acme/a", "trigger.fired", "--data", '{"trigger": {"name": "x"}}')[0] == 0
        assert _cli(root, "append", "acme/a", "message.delta", "--data",
                    '{"message": {"id": "m"}, "delta": "hello outside"}')[0] == 0
        try:
            got = rx.recv(1 << 16)
        except BlockingIOError:
            got = None
        assert got is None  # before: b"acme/a\n", then the delta itself
    finally:
        rx.close()
