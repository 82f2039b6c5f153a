"""The chunked line reader: whole lines only, exact offsets, whatever the chunk size and line lengths."""
from __future__ import annotations

import os

from hypothesis import given, settings, strategies as st

from wardrik_cli.store import lines


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"c" * 300, b"\x00"]), max_size=60).map(b"".join),
       chunk=st.sampled_from([1, 2, 7, 64, 1000]))
def test_blocks_are_the_complete_lines_in_order(tmp_path_factory, data, chunk):
    path = tmp_path_factory.mktemp("b") / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    saved = lines.CHUNK
    lines.CHUNK = chunk
    try:
        blocks = list(lines.iter_blocks(fd, 0))
        got = list(lines.iter_lines(fd, 0))
    finally:
        lines.CHUNK = saved
        os.close(fd)
    complete = data[: data.rfind(b"\n") + 1]
    assert b"".join(b for _, b in blocks) == complete
    pos = 0
    for off, b in blocks:
        assert off == pos and b.endswith(b"\n")
        pos += len(b)
    expected, off = [], 0
    for line in data.split(b"\n")[:-1]:
        expected.append((off, line))
        off += len(line) + 1
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"bb", b"\n", b"c" * 300, b"d" * 3000]), max_size=60).map(b"".join),
       chunk=st.sampled_from([1, 7, 64, 1000]), probe=st.sampled_from([1, 3, 16]))
def test_backward_lines_are_the_lines_reversed(tmp_path_factory, data, chunk, probe):
    path = tmp_path_factory.mktemp("b") / "f"
    path.write_bytes(data)
    end = data.rfind(b"\n") + 1
    fd = os.open(path, os.O_RDONLY)
    saved = lines.CHUNK, lines.PROBE
    lines.CHUNK, lines.PROBE = chunk, probe
    try:
        got = list(lines.iter_lines_backward(fd, end))
    finally:
        lines.CHUNK, lines.PROBE = saved
        os.close(fd)
    expected, off = [], 0
    for line in data[:end].split(b"\n")[:-1]:
        expected.append((off, line))
        off += len(line) + 1
    assert got == expected[::-1]
