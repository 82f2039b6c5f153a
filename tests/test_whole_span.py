"""read.whole: an unfiltered span checked at once answers only when every line is an event as
decode_event judges one, in sequence and time order; anything else is left to the line-by-line
read (None), which reports it as it always has."""
from __future__ import annotations

import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from ledgergen import START, write_log
from wardrik_cli.read.whole import whole_span
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, decode_event

BIG = 1 << 20


def _view(root, lines: list[bytes]):
    path = root / "acme" / "a.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return Log.agent(Root(root), "acme/a").open()


def _lines(root, n=6) -> list[bytes]:
    path = root / "gen.jsonl"
    write_log(path, n, start=START, pad=30, log_id="acme/a")
    out = path.read_bytes().splitlines()
    path.unlink()
    return out


def test_a_plain_span_comes_whole(root):
    lines = _lines(root)
    with _view(root, lines) as view:
        got = whole_span(view, 0, BIG, 0, True, "", None)
        assert got is not None
        raws, times, first, end = got
        assert raws == lines and first == 1 and end == view.end
        assert times == [orjson.loads(x)["time"] for x in lines]
        # a span of some of the lines: only whole lines, and where the next one starts
        raws, _t, first, end = whole_span(view, 0, len(lines[0]) + 10, 0, True, "", None)
        assert raws == lines[:1] and end == len(lines[0]) + 1
        assert whole_span(view, end, BIG, 1, True, "", None)[2] == 2


def test_position_window_and_order_are_kept(root):
    lines = _lines(root)
    t = [orjson.loads(x)["time"] for x in lines]
    with _view(root, lines) as view:
        assert whole_span(view, 0, BIG, 3, True, "", None) is None  # lines already read
        assert whole_span(view, 0, BIG, 0, True, "", t[3]) is None  # the window ends inside
        assert whole_span(view, 0, BIG, 0, True, t[1], None) is None  # would go below the log's last key
        assert whole_span(view, 0, BIG, 0, True, "", "9999") is not None


def _replace(lines, i, **changes):
    ev = orjson.loads(lines[i])
    ev.update(changes)
    out = list(lines)
    out[i] = orjson.dumps(ev)
    return out


@pytest.mark.parametrize("damage", [
    lambda ls: ls[:2] + [b"not json"] + ls[3:],
    lambda ls: ls[:2] + [b'["a", "list"]'] + ls[3:],
    lambda ls: ls[:2] + [ls[2][:-1]] + ls[3:],  # cut short
    lambda ls: _replace(ls, 2, sequence=3),  # a number, not a string
    lambda ls: _replace(ls, 2, sequence="00000000003"),  # 11 digits
    lambda ls: _replace(ls, 2, sequence="00000000003x"),
    lambda ls: _replace(ls, 2, type=7),
    lambda ls: _replace(ls, 2, time=None),
    lambda ls: _replace(ls, 2, sequence="000000000009"),  # a gap
    lambda ls: _replace(ls, 2, time="2000-01-01T00:00:00.000000Z"),  # time goes back
    lambda ls: ls[:2] + ls[3:],  # a line deleted
    lambda ls: ls[:2] + [ls[2][:-1] + b',"sequence":"000000000009"}'] + ls[3:],  # a repeated key: the last counts
    lambda ls: ls[:2] + [ls[2][:-2] + b',"x":1e999}}'] + ls[3:],  # a number orjson refuses
    lambda ls: ls[:2] + [ls[2][:-2] + b',"x":"\xff"}}'] + ls[3:],  # not UTF-8
    lambda ls: ls[:2] + [ls[2][:-2] + b',"x":"\\ud800"}}'] + ls[3:],  # a lone surrogate
])
def test_anything_else_is_left_to_the_line_by_line_read(root, damage):
    with _view(root, damage(_lines(root))) as view:
        assert whole_span(view, 0, BIG, 0, True, "", None) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(
    [b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"0", b"1", b"e", b"-", b"\x00", b"\xff", b"\\u00",
     b'"sequence":"000000000002",', b'"time":"2000",', b'"type":1,', b"\n", b" ", b"null"]),
    st.booleans()), min_size=1, max_size=4))
def test_an_answer_is_always_what_decode_event_says(root, edits):
    """Random damage to a span: when whole_span answers, every line it hands out decodes with
    decode_event to the sequence and time it gave."""
    data = bytearray(b"\n".join(_lines(root, 4)) + b"\n")
    for at, piece, insert in edits:
        at %= len(data)
        data[at:at if insert else at + len(piece)] = piece
    path = root / "acme" / "a.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    with Log.agent(Root(root), "acme/a").open() as view:
        got = whole_span(view, 0, BIG, 0, True, "", None)
    if got is None:
        return
    raws, times, first, end = got
    assert bytes(data[:end]) == b"".join(r + b"\n" for r in raws)
    for i, raw in enumerate(raws):
        ev = decode_event(raw)
        assert int(ev["sequence"]) == first + i and ev["time"] == times[i]


def test_a_merge_reads_the_same_with_damage_in_the_middle(root):
    """Over many logs (the merge), a corrupt line in one still stops the read with its error,
    and --skip-corrupt reads every other event, as the line-by-line read always did."""
    for i in range(70):
        write_log(root / "acme" / f"l{i:02}.jsonl", 40, start=START, pad=50, log_id=f"acme/l{i:02}")
    path = root / "acme" / "l33.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[20] = b'{"specversion":"1.0","id":"x", oops}\n'
    path.write_bytes(b"".join(lines))
    p = run_cli("page", "acme/*", "--all", "-F", "jsonl", root=root)
    assert p.returncode != 0 and b"l33.jsonl:21: " in p.stderr and b"corrupt line" in p.stderr
    p = run_cli("page", "acme/*", "--all", "-F", "jsonl", "--skip-corrupt", root=root)
    assert p.returncode == 0
    assert p.stdout.count(b"\n") == 70 * 40 - 1
    assert os.path.getsize(path) == sum(map(len, lines))  # a reader writes nothing


@pytest.mark.parametrize("seq", [list(range(12)), {"a": 1}, 12, None, True])
def test_a_sequence_that_is_not_a_string_is_a_corrupt_line_not_a_crash(root, seq):
    lines = _lines(root, 3)
    lines[1] = orjson.dumps({"sequence": seq, "type": "x", "time": "y"})
    with _view(root, lines):
        pass
    p = run_cli("page", "acme/*", "--all", "-F", "jsonl", root=root)
    err = p.stderr.decode()
    assert p.returncode == 1 and "corrupt line" in err and "internal error" not in err, err
