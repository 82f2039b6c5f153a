"""`wardrik append LOG --stream`: items from stdin appended one by one as they arrive.

In-process runs feed the whole input at once (each bad line refused alone, with its line
number); the subprocess tests feed a real pipe a line at a time and prove each item is
stored and printed before the next is written, that live items reach a real `tail -f`,
that a failing write stops the stream with what was printed durable, and that Ctrl-C and
SIGTERM end it cleanly.
"""
from __future__ import annotations

import io
import os
import queue
import resource
import signal
import subprocess
import threading
from pathlib import Path

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli
from follow_util import LIVE_WAIT, Tailer, add

from wardrik_cli.follow.append_stream import MAX_LINE_BYTES, StreamResult, append_stream
from wardrik_cli.store.layout import Root


def item(name: str, **extra) -> bytes:
    return orjson.dumps({"type": "trigger.fired", "data": {"trigger": {"name": name}}, **extra}) + b"\n"


DELTA = orjson.dumps({"type": "message.delta", "data": {"delta": "hel"}}) + b"\n"


def stream(root: Path, data: bytes, *args: str):
    return run_cli("append", "acme/a", "--stream", *args, root=root, input=data)


def stored(root: Path) -> list[dict]:
    p = run_cli("page", "acme/a", "--format", "jsonl", "--all", root=root, check=True)
    return jsonl(p.stdout)


def names(events: list[dict]) -> list[str]:
    return [e["data"]["trigger"]["name"] for e in events]


def test_kept_and_live_items_in_input_order(root):
    p = stream(root, item("a") + b"\n  \n" + DELTA + item("b"))
    assert p.returncode == 0 and p.stderr == b""
    out = jsonl(p.stdout)
    assert [e["type"] for e in out] == ["wardrik.trigger.fired", "wardrik.message.delta", "wardrik.trigger.fired"]
    assert "sequence" not in out[1] and out[1]["data"] == {"delta": "hel"}
    kept = stored(root)
    assert names(kept) == ["a", "b"] and [e["sequence"] for e in kept] == ["000000000001", "000000000002"]
    # printed as stored, byte for byte (the live one is never stored)
    lines = p.stdout.splitlines(keepends=True)
    assert (root / "acme" / "a.jsonl").read_bytes() == lines[0] + lines[2]


def test_many_items_at_once_are_contiguous_and_printed_as_stored(root):
    data = b"".join(item(f"n{i}") for i in range(500))
    p = stream(root, data)
    assert p.returncode == 0 and p.stderr == b""
    assert p.stdout == (root / "acme" / "a.jsonl").read_bytes()
    assert [int(e["sequence"]) for e in jsonl(p.stdout)] == list(range(1, 501))


def test_items_of_a_run_share_its_trace(root):
    data = (orjson.dumps({"type": "run.started", "data": {"task": "t"}}) + b"\n"
            + orjson.dumps({"type": "tool_call.started", "data": {"tool": {"name": "x", "call": {"id": "c1"}}}}) + b"\n"
            + DELTA)
    p = stream(root, data)
    assert p.returncode == 0, p.stderr
    started, tool, delta = jsonl(p.stdout)
    trace = started["traceparent"].split("-")[1]
    assert trace == started["data"]["run"]["id"]
    assert tool["traceparent"].split("-")[1] == trace and delta["traceparent"].split("-")[1] == trace


def test_subject_and_traceparent_come_from_the_item(root):
    tp = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    p = stream(root, item("a", subject="s/1", traceparent=tp))
    assert p.returncode == 0, p.stderr
    (e,) = stored(root)
    assert e["subject"] == "s/1" and e["traceparent"].split("-")[1] == "ab" * 16


BIG = b'{"type":"trigger.fired","data":{"trigger":{"name":"big"},"pad":"' + b"x" * (3 * 1024 * 1024) + b'"}}'


@pytest.mark.parametrize("bad, why", [
    (b"nope", "error: stdin line 2: not valid JSON: "),
    (b"[1, 2]", "error: stdin line 2: not a JSON object"),
    (b'"text"', "error: stdin line 2: not a JSON object"),
    (b'{"type": "bogus.thing", "data": {}}', "error: stdin line 2: unknown event type 'bogus.thing'"),
    (b'{"data": {"trigger": {"name": "x"}}}', 'error: stdin line 2: missing "type"'),
    (b'{"type": 7}', 'error: stdin line 2: "type" must be a string'),
    (b'{"type": "run.failed", "data": {}}', "error: stdin line 2: wardrik.run.failed needs data.error.message"),
    (b'{"type": "trigger.fired", "data": [1]}', "error: stdin line 2: data for wardrik.trigger.fired must be a JSON object"),
    (b'{"type": "trigger.fired", "data": {"trigger": {"name": "x"}}, "extra": 1}', "error: stdin line 2: unknown key(s) extra"),
    (b'{"type": "agent.created", "data": {"agent": {"id": "x"}}}', "error: stdin line 2: cannot append wardrik.agent.created"),
    (b'{"type": "trigger.fired", "data": {"trigger": {"name": "x\x00"}}}', "error: stdin line 2: a NUL byte at offset 57"),
    (b'{"type": "trigger.fired", "data": {"trigger": {"name": "\xff"}}}', "error: stdin line 2: not UTF-8 (bad byte at offset 56)"),
    (b'{"type": "trigger.fired", "data": {"trigger": {"name": "x"}, "n": 123456789012345678901}}',
     "error: stdin line 2: the integer 123456789012345678901 does not fit in 64 bits"),
    (BIG, f"error: stdin line 2: too long: {len(BIG)} bytes (a line holds at most {MAX_LINE_BYTES};"),
])
def test_a_bad_line_is_refused_alone(root, bad, why):
    p = stream(root, item("a") + bad + b"\n" + item("c"))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(why), err
    assert "Traceback" not in err
    assert names(stored(root)) == ["a", "c"]
    assert names(jsonl(p.stdout)) == ["a", "c"]


def test_line_numbers_count_empty_lines_and_every_bad_line_is_reported(root):
    p = stream(root, b"\n" + item("a") + b"\n\nnope\n" + item("b") + b"[]\n")
    assert p.returncode == 1
    first, second = p.stderr.decode().splitlines()
    assert first.startswith("error: stdin line 5: not valid JSON: ")
    assert second == 'error: stdin line 7: not a JSON object (one item a line: {"type", "data", "subject"?, "traceparent"?})'
    assert names(stored(root)) == ["a", "b"]


def test_a_live_event_too_big_to_deliver_is_refused_alone(root):
    delta = orjson.dumps({"type": "message.delta", "data": {"delta": "d" * 200_000}}) + b"\n"
    p = stream(root, item("a") + delta + item("b"))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("error: stdin line 2: a live event is at most"), err
    assert [e["type"] for e in jsonl(p.stdout)] == ["wardrik.trigger.fired"] * 2


def test_a_line_of_the_largest_size_is_taken_and_one_byte_more_is_not(root):
    head = b'{"type":"trigger.fired","data":{"trigger":{"name":"'
    tail = b'"}}}'
    at_max = head + b"m" * (MAX_LINE_BYTES - len(head) - len(tail)) + tail
    over = head + b"o" * (MAX_LINE_BYTES + 1 - len(head) - len(tail)) + tail
    assert len(at_max) == MAX_LINE_BYTES and len(over) == MAX_LINE_BYTES + 1
    p = stream(root, at_max + b"\n" + over + b"\n")
    assert p.returncode == 1
    assert p.stderr.decode() == (f"error: stdin line 2: too long: {MAX_LINE_BYTES + 1} bytes (a line holds at most "
                                 f"{MAX_LINE_BYTES}; append a bigger event with --data @FILE)\n")
    (e,) = stored(root)
    assert e["data"]["trigger"]["name"] == "m" * (MAX_LINE_BYTES - len(head) - len(tail))


def test_end_of_input_in_the_middle_of_a_line_refuses_it(root):
    p = stream(root, item("a") + item("b") + item("c")[:20])
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("error: stdin line 3: not valid JSON: "), err
    assert err.endswith(" (the input ended in the middle of it)\n"), err
    assert names(stored(root)) == ["a", "b"]


def test_end_of_input_in_the_middle_of_an_over_long_line(root):
    p = stream(root, item("a") + BIG)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(f"error: stdin line 2: too long: {len(BIG)} bytes"), err
    assert names(stored(root)) == ["a"]


def test_blank_lines_only_write_nothing(root):
    p = stream(root, b"\n   \n\t\r\n\n  ")
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert not (root / "acme").exists()


def test_nothing_but_bad_lines(root):
    p = stream(root, b"x\ny\n")
    assert p.returncode == 1 and p.stdout == b""
    assert [l.split(":")[1] for l in p.stderr.decode().splitlines()] == [" stdin line 1", " stdin line 2"]
    assert not (root / "acme").exists()


@pytest.mark.parametrize("args", [
    ("trigger.fired",), ("--data", "{}"), ("--subject", "s"), ("--trace", "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"),
    ("--batch", "-"), ("--format", "json"),
])
def test_usage_errors(tmp_path, args):
    root = tmp_path / "new"
    p = run_cli("append", "acme/a", "--stream", *args, root=root, input=item("a"))
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.startswith(b"error: ") and b"Traceback" not in p.stderr
    assert not root.exists()


def test_pretty_format(root):
    p = stream(root, item("a") + DELTA, "-F", "pretty")
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode()
    assert "trigger.fired" in text and "message.delta" in text and not text.lstrip().startswith("{")
    assert names(stored(root)) == ["a"]


def test_a_corrupt_log_stops_the_stream(root):
    log = root / "acme" / "a.jsonl"
    add(root, "acme/a", "first")
    with open(log, "ab") as f:
        f.write(b"this is not an event\n")
    p = stream(root, DELTA + item("b") + item("c"))
    assert p.returncode == 1
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith(f"error: {log}:2: ") and "refusing to append" in err, err
    assert [e["type"] for e in jsonl(p.stdout)] == ["wardrik.message.delta"]  # before the failure
    assert log.read_bytes().count(b"\n") == 2


def test_the_library_entry_reports_each_line(root):
    got: list[bytes] = []
    refused: list[tuple[int, str]] = []
    r = Root(root)
    res = append_stream(r, "acme/a", io.BytesIO(item("a") + b"\nbad\n" + DELTA + item("b")),
                        on_event=got.extend, on_refused=lambda n, why: refused.append((n, why)), sync=False)
    assert res == StreamResult(lines=5, stored=2, published=1, refused=1)
    assert [orjson.loads(l)["type"] for l in got] == ["wardrik.trigger.fired", "wardrik.message.delta",
                                                     "wardrik.trigger.fired"]
    assert all(l.endswith(b"\n") for l in got)
    assert len(refused) == 1 and refused[0][0] == 3 and refused[0][1].startswith("not valid JSON: ")


def test_the_library_entry_reads_a_file_descriptor(root):
    rfd, wfd = os.pipe()
    try:
        data = b"".join(item(f"n{i}") for i in range(50))
        writer = threading.Thread(target=lambda: (os.write(wfd, data), os.close(wfd)))
        writer.start()
        res = append_stream(Root(root), "acme/a", rfd, deployment="acme-prod")
        writer.join()
    finally:
        os.close(rfd)
    assert (res.stored, res.refused) == (50, 0)
    events = stored(root)
    assert names(events) == [f"n{i}" for i in range(50)]
    assert events[0]["source"] == "wardrik://acme-prod/agents/acme/a"


# --- a real pipe, fed slowly -------------------------------------------------------------

class Streamer:
    """`wardrik append acme/a --stream` with its stdin a pipe we write to line by line."""

    def __init__(self, root: Path, *args: str, preexec_fn=None):
        self.proc = subprocess.Popen([WARDRIK, "--root", str(root), "append", "acme/a", "--stream", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=preexec_fn)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.err = b""
        self._out = threading.Thread(target=self._pump, daemon=True)
        self._err = threading.Thread(target=self._pump_err, daemon=True)
        self._out.start()
        self._err.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def _pump_err(self) -> None:
        for line in self.proc.stderr:
            self.err += line

    def send(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def printed(self, timeout: float = LIVE_WAIT) -> dict:
        """The next line printed (a ceiling only a failing test waits out)."""
        try:
            return orjson.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"nothing printed; running: {self.proc.poll() is None}, stderr: {self.err!r}") from None

    def finish(self, timeout: float = LIVE_WAIT) -> int:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        rc = self.proc.wait(timeout=timeout)
        self._out.join(timeout)
        self._err.join(timeout)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.subprocess
def test_items_are_appended_as_they_arrive_before_the_end_of_input(root):
    s = Streamer(root)
    try:
        for i in range(3):
            s.send(item(f"n{i}"))
            e = s.printed()
            assert e["data"]["trigger"]["name"] == f"n{i}" and int(e["sequence"]) == i + 1
            assert s.proc.poll() is None  # stdin is still open: printed before the input ended
            assert names(stored(root)) == [f"n{j}" for j in range(i + 1)]  # and stored, for any reader
        s.send(b"nope\n" + item("half")[:20])  # a bad line, then a line the end of input cuts
        assert s.finish() == 1
        bad, cut = s.err.decode().splitlines()
        assert bad.startswith("error: stdin line 4: not valid JSON: ")
        assert cut.startswith("error: stdin line 5: not valid JSON: ")
        assert cut.endswith(" (the input ended in the middle of it)")
        assert s.lines.empty()
    finally:
        s.kill()


@pytest.mark.subprocess
def test_a_line_written_in_pieces_is_appended_when_its_newline_arrives(root):
    s = Streamer(root)
    try:
        line = item("pieces")
        s.send(line[:10])
        s.send(line[10:-1])
        add(root, "acme/a", "other")  # another writer meanwhile: its event is stored first
        s.send(b"\n")
        e = s.printed()
        assert e["data"]["trigger"]["name"] == "pieces" and e["sequence"] == "000000000002"
        assert s.finish() == 0 and s.err == b""
    finally:
        s.kill()


@pytest.mark.subprocess
def test_live_items_reach_a_real_follower(root):
    add(root, "acme/a", "before")
    t = Tailer(root, "acme/a", "-f", "-n", "0")
    s = Streamer(root)
    try:
        t.wait_registered()
        s.send(DELTA)
        assert s.printed()["type"] == "wardrik.message.delta"
        (got,) = t.events(1)
        assert got["type"] == "wardrik.message.delta" and got["data"] == {"delta": "hel"}
        s.send(item("kept"))
        assert s.printed()["sequence"] == "000000000002"
        (got,) = t.events(1)
        assert got["data"]["trigger"]["name"] == "kept" and got["sequence"] == "000000000002"
        assert s.finish() == 0, s.err
        assert names(stored(root)) == ["before", "kept"]  # the delta was delivered, never stored
    finally:
        s.kill()
        t.stop()


@pytest.mark.subprocess
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_waiting_ends_cleanly(root, sig, code):
    s = Streamer(root)
    try:
        s.send(item("a"))
        printed = s.printed()
        s.proc.send_signal(sig)
        assert s.proc.wait(timeout=LIVE_WAIT) == code
        s.finish()
        assert b"Traceback" not in s.err and s.err == b"", s.err
        assert stored(root) == [printed]  # what was printed is there
    finally:
        s.kill()


@pytest.mark.subprocess
def test_a_failing_write_stops_the_stream_and_what_was_printed_is_durable(root):
    add(root, "acme/a", "first")
    log = root / "acme" / "a.jsonl"
    limit = log.stat().st_size + 2_000  # room for a few whole events and part of one more

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    s = Streamer(root, preexec_fn=cap)
    try:
        s.send(item("a"))
        assert s.printed()["data"]["trigger"]["name"] == "a"
        s.send(b"".join(item(f"n{i}", subject="p" * 200) for i in range(40)))
        assert s.finish() == 1
        err = s.err.decode()
        assert err.count("\n") == 1 and err.startswith("error: acme/a: write failed after ") and "Traceback" not in err
        data = log.read_bytes()
        assert len(data) == limit and not data.endswith(b"\n")  # the fault landed mid-line
        whole = data[: data.rfind(b"\n") + 1].splitlines(keepends=True)
        printed = [orjson.loads(l) for l in whole[1:2]]
        assert printed[0]["data"]["trigger"]["name"] == "a"
        rest = []
        while not s.lines.empty():
            rest.append(s.lines.get())
        # every line printed after "a" is a whole line of the log, in order: printed means durable
        assert whole[2:] == rest and 0 < len(rest) < 40
    finally:
        s.kill()
