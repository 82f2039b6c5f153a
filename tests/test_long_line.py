"""A line of many megabytes is read about once, not once per look at it (the first event, the
last event, the read itself), and comes out byte for byte: asserted through /proc/<pid>/io
(rchar), never timings. The long-line paths of ``store.lines`` (find, then one read; the
file mapped past ``LONG``) give what reading everything would."""
from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
from hypothesis import given, settings, strategies as st

from tests.conftest import WARDRIK
from tests.ledgergen import write_log
from tests.procio import run_with_io
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id
from wardrik_cli.store import lines
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, decode_event, envelope

PAD = 20_000_000  # one event whose data holds a 20 MB string


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    big = tmp_path_factory.mktemp("long")
    write_log(big / "acme" / "one.jsonl", 1, pad=PAD, log_id="acme/one")
    small = tmp_path_factory.mktemp("short")
    write_log(small / "acme" / "one.jsonl", 1, pad=300, log_id="acme/one")
    return big, small


def _run(root, *args):
    p, io = run_with_io([WARDRIK, "--root", str(root), *args])
    assert p.returncode == 0, p.stderr
    return p, io["rchar"]


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [("page", "acme/one", "-F", "jsonl"), ("tail", "-n", "1", "acme/one")],
                         ids=["page", "tail"])
def test_a_long_line_is_read_about_once(roots, args):
    big, small = roots
    stored = (big / "acme" / "one.jsonl").read_bytes()
    assert len(stored) > PAD
    p_big, r_big = _run(big, *args)
    _, r_small = _run(small, *args)
    assert p_big.stdout == stored
    # Interpreter start-up reads the same modules in both runs; what differs is the log: the
    # line read once, plus the searches for its ends and its envelope, each through one
    # reused 4 MiB buffer (the file is never mapped: see test_a_file_cut_under_a_long_read).
    # A constant number of passes, not one per chunk: linear in the line. A one-line log's
    # first and last events are one search, and tail reads the line back whole once (not in
    # doubling pieces, each joined onto the last).
    assert r_big - r_small < 5 * len(stored), (r_big - r_small, len(stored))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_tail_reads_a_long_line_back_whole_among_short_ones(tmp_path, n):
    """tail -n N across a 3 MB line (longer than the read-back's LONG) with short lines on
    both sides: the same lines, byte for byte, as the stored ones; with a type filter too."""
    from tests.conftest import run_cli

    path = tmp_path / "acme" / "one.jsonl"
    write_log(path, 1, pad=200, log_id="acme/one")
    short = path.read_bytes()
    write_log(tmp_path / "acme" / "big.jsonl", 1, pad=3_000_000, log_id="acme/one")
    big = (tmp_path / "acme" / "big.jsonl").read_bytes()
    (tmp_path / "acme" / "big.jsonl").unlink()
    seqs = [b'"sequence":"000000000001"', b'"sequence":"000000000002"', b'"sequence":"000000000003"']
    stored = [short, big.replace(seqs[0], seqs[1]), short.replace(seqs[0], seqs[2])]
    path.write_bytes(b"".join(stored))
    p = run_cli("tail", "-n", str(n), "acme/one", "-F", "jsonl", root=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"".join(stored[-n:])
    types = {decode_event(line.rstrip(b"\n"))["type"] for line in stored}
    assert len(types) == 1  # one type: the filter keeps every line, judged by its bytes first
    p = run_cli("tail", "-n", str(n), "acme/one", "-t", types.pop(), "-F", "jsonl", root=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"".join(stored[-n:])


@pytest.mark.subprocess
def test_a_file_cut_under_a_long_read_is_not_a_crash(tmp_path):
    """A log truncated by someone else while a reader searches its long line: the reader ends
    as a process does (an exit code, at most an error line), never killed by a signal (a mapped
    file cut short raises SIGBUS). The cut is proved to land mid-read: the reader is alive and
    has read part of the file when it happens."""
    import subprocess
    import time as _time

    path = tmp_path / "root" / "a" / "b.jsonl"
    path.parent.mkdir(parents=True)
    size = 4 << 30  # sparse: a long first line of zeros and no newline till the end
    head = b'{"specversion":"1.0","id":"00000000-0000-4000-8000-000000000000","type":"wardrik.run.started"'
    for _attempt in range(5):
        with open(path, "wb") as f:
            f.write(head)
            f.truncate(size - 1)
        with open(path, "ab") as f:
            f.write(b"\n")
        p = subprocess.Popen([WARDRIK, "--root", str(tmp_path / "root"), "page", "a/b", "-F", "jsonl"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        landed = False
        deadline = _time.monotonic() + 60
        while p.poll() is None and _time.monotonic() < deadline:
            try:
                with open(f"/proc/{p.pid}/io") as f:
                    rchar = int(dict(line.split(": ") for line in f.read().splitlines())["rchar"])
                with open(f"/proc/{p.pid}/maps") as f:
                    mapped = str(path) in f.read()
            except (OSError, KeyError, ValueError):
                break
            if mapped or 64 << 20 < rchar < size // 2:  # mid-search: the file mapped, or part of it read
                os.truncate(path, 4096)
                landed = p.poll() is None
                break
        _out, err = p.communicate(timeout=120)
        if landed:
            assert p.returncode >= 0, f"killed by signal {-p.returncode}"
            assert err.count(b"\n") <= 2 and b"Traceback" not in err, err
            return
    pytest.fail("the cut never landed while the reader was reading")


# The long-line paths at sizes a property test can afford: a line past a chunk, searches
# that read windows a few bytes in, of 64 bytes (needles across their edges).
lines_data = st.lists(st.sampled_from([b"a", b"\n", b"c" * 300, b"d" * 9000, b"ab" * 7000, b"\x00"]),
                      max_size=30).map(b"".join)


@contextmanager
def small_limits(tmp_path_factory, data):
    """The file of ``data``, open, with ``store.lines``' sizes made small."""
    path = tmp_path_factory.mktemp("l") / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    saved = lines.CHUNK, lines.PROBE, lines.LONG, lines.WINDOW
    lines.CHUNK, lines.PROBE, lines.LONG, lines.WINDOW = 64, 16, 100, 64
    try:
        yield fd
    finally:
        lines.CHUNK, lines.PROBE, lines.LONG, lines.WINDOW = saved
        os.close(fd)


@settings(max_examples=150, deadline=None)
@given(data=lines_data, needle=st.sampled_from([b"\n", b"ab", b"dab", b"\x00a"]), cut=st.integers(0, 40000))
def test_find_and_rfind_agree_with_bytes(tmp_path_factory, data, needle, cut):
    with small_limits(tmp_path_factory, data) as fd:
        for start in (0, min(cut, len(data)), len(data) // 3):
            assert lines.find(fd, needle, start, len(data)) == data.find(needle, start), start
            assert lines.find(fd, needle, start) == data.find(needle, start), start
            assert lines.rfind(fd, needle, start, len(data)) == data.rfind(needle, start), start
            assert lines.rfind(fd, needle, start, len(data) + 50) == -1  # a caller's end past the file


@settings(max_examples=150, deadline=None)
@given(data=lines_data, needles=st.lists(st.sampled_from([b"\n", b"ab", b"dab", b"\x00a", b"cd"]), min_size=1,
                                         max_size=3, unique=True), cut=st.integers(0, 40000))
def test_find_any_is_the_first_of_each_find(tmp_path_factory, data, needles, cut):
    with small_limits(tmp_path_factory, data) as fd:
        for start in (0, min(cut, len(data)), len(data) // 3):
            for end in (len(data), max(start, len(data) - 7)):
                hits = [i for i in (data.find(n, start, end) for n in needles) if i >= 0]
                assert lines.find_any(fd, tuple(needles), start, end) == (min(hits) if hits else -1), (start, end)


@settings(max_examples=150, deadline=None)
@given(data=lines_data)
def test_long_lines_come_whole_forward_backward_and_by_offset(tmp_path_factory, data):
    end = data.rfind(b"\n") + 1
    expected, off = [], 0
    for line in data[:end].split(b"\n")[:-1]:
        expected.append((off, line))
        off += len(line) + 1
    with small_limits(tmp_path_factory, data) as fd:
        assert list(lines.iter_lines(fd, 0)) == expected  # the torn tail past ``end`` never comes
        spans = list(lines.iter_spans(fd, 0, end, chunk=64))
        assert b"".join(d[:n] for _, d, n in spans) == data[:end]
        assert list(lines.iter_lines_backward(fd, end)) == expected[::-1]
        for start, line in expected:
            assert lines.read_line_at(fd, start, end) == (start, line)
            got = lines.read_line_at(fd, start, end, longest=200)
            assert got is not None
            if len(line) > 200:  # only its head, and where it ends
                assert isinstance(got[1], lines.Head) and line.startswith(got[1]) and got[1].stop == start + len(line)
            else:
                assert got == (start, line)
        for (start, line), (s2, head) in zip(expected[::-1], lines.iter_lines_backward(fd, end, longest=200),
                                             strict=True):
            assert s2 == start and (head == line or (isinstance(head, lines.Head) and line.startswith(head)))


def _event_line(text: str, extra: dict | None = None, seq: int = 1) -> bytes:
    ev = build_event(etype=lookup("message.completed"), data={"message": {"id": "m1"}, "text": text, **(extra or {})},
                     source="wardrik://local/agents/acme/one", subject="agents/acme/one", seq=seq,
                     time_str="2026-10-22T09:00:00.000000Z", trace=new_trace_id(), span=new_span_id())
    return dumps_line(ev)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=40), extra=st.dictionaries(st.sampled_from(["specversion", "time", "x"]), st.text(max_size=5),
                                                        max_size=2))
def test_an_envelope_from_any_head_is_the_lines_or_none(text, extra):
    # What head_envelope relies on: cut anywhere, a line's head (with the two closing bytes
    # put back) gives the whole line's envelope or none, never another. (A second
    # "specversion" past the head is head_envelope's own search; here it is left out.)
    raw = _event_line(text, extra)[:-1]
    if raw.count(b'"specversion"') != 1:
        return
    whole = envelope(raw)
    # a second "time" key, or a \u00 escape, puts a line out of the shape read from bytes
    # (head_envelope searches the rest of a long line for them: see the test below)
    assert (whole is None) == (b"\\u00" in raw or raw.count(b'"time"') > 1)
    if whole is None:
        return
    for n in range(len(raw)):
        assert envelope(raw[:n] + b"}}") in (None, whole), n


@pytest.mark.parametrize("again", [b'"time":"2030-01-01T00:00:00.000000Z"', b'"sequence":"000000000009"',
                                   b'"t\\u0069me":"2030-01-01T00:00:00.000000Z"'], ids=["time", "sequence", "escaped"])
def test_a_key_given_again_far_past_a_long_lines_head_is_read_as_the_last(tmp_path, again):
    """A repeated envelope key megabytes into a long line (a decoder keeps the last one): the
    reader's first and last events are the decoded line's, never the head's decoy."""
    raw = _event_line("x" * (3 * lines.LONG))[:-2] + b"," + again + b',"z":{}}\n'
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "one.jsonl").write_bytes(raw)
    want = decode_event(raw[:-1])
    assert want["time"] == "2030-01-01T00:00:00.000000Z" or want["sequence"] == "000000000009"
    with Log.agent(Root(tmp_path), "acme/one").open() as view:
        view.ends_from_bytes = True
        got_first, got_last = view.first(), view.last()
    assert got_first is not None and got_last is not None
    for k in ("time", "sequence"):
        assert got_first[1][k] == want[k] and got_last[1][k] == want[k]


@pytest.mark.parametrize("extra", [{}, {"specversion": "2"}], ids=["plain", "second-specversion"])
def test_a_readers_ends_of_a_long_line_are_its_envelope(tmp_path, extra):
    first, middle, last = (_event_line("x" * (3 * lines.LONG), extra), _event_line("short", seq=2),
                           _event_line("y" * (3 * lines.LONG), extra, seq=3))
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "one.jsonl").write_bytes(first + middle + last)
    with Log.agent(Root(tmp_path), "acme/one").open() as view:
        view.ends_from_bytes = True
        got_first, got_last = view.first(), view.last()
    assert got_first is not None and got_last is not None
    assert got_first[0] == 0 and got_last[0] == len(first) + len(middle)
    keys = ("id", "type", "source", "time", "sequence")
    want_first, want_last = decode_event(first[:-1]), decode_event(last[:-1])
    assert {k: got_first[1][k] for k in keys} == {k: want_first[k] for k in keys}
    assert {k: got_last[1][k] for k in keys} == {k: want_last[k] for k in keys}
    if extra:  # not in shape (a second "specversion"): decoded whole, as any such line is
        assert got_first[1] == want_first and got_last[1] == want_last
    else:  # the envelope from the head: the line was not decoded
        assert set(got_first[1]) == set(keys) and set(got_last[1]) == set(keys)
