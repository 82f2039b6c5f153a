"""A type filter finds a line of its type that another tool wrote in another shape: an id that
is not 36 characters, keys in another order, the type key repeated (the last one counts), spaces
before a colon, a key or a type written with \\u escapes. The block search looks for the
type's value wherever it stands and for escapes; a line found so is decoded and judged, never
passed over unseen. (`page -t`, `-x`, `tail -n`, and `stats`, whose dense path searches too.)"""
from __future__ import annotations

import orjson
import pytest

from conftest import jsonl, run_cli
from ledgergen import START, write_log

FAILED = "wardrik.tool_call.failed"


def _plant(root, make):
    path = root / "acme" / "a.jsonl"
    write_log(path, 40, start=START, pad=40, log_id="acme/a")  # tool_call.completed events
    lines = path.read_bytes().splitlines(keepends=True)
    ev = orjson.loads(lines[20])
    lines[20] = make(ev) + b"\n"
    path.write_bytes(b"".join(lines))
    return ev


def _short_id(ev):
    ev["id"] = ev["id"][:35]
    ev["type"] = FAILED
    ev["data"]["error"] = {"type": "x", "message": "m"}
    return orjson.dumps(ev)


def _keys_reordered(ev):
    ev["type"] = FAILED
    ev["data"]["error"] = {"type": "x", "message": "m"}
    out = {"specversion": ev.pop("specversion"), "id": ev.pop("id"), "source": ev.pop("source")}
    out.update(ev)  # type after source
    return orjson.dumps(out)


def _repeated_type(ev):
    ev["data"]["error"] = {"type": "x", "message": "m"}
    raw = orjson.dumps(ev)  # type completed at the usual place...
    return raw[:-1] + b',"type":"' + FAILED.encode() + b'"}'  # ...and failed last: the last one counts


@pytest.mark.parametrize("make", [_short_id, _keys_reordered, _repeated_type])
def test_a_type_filter_finds_a_line_written_in_another_shape(root, make):
    _plant(root, make)
    p = run_cli("page", "acme/a", "-t", "tool_call.failed", "--all", "-F", "jsonl", root=root)
    assert p.returncode == 0, p.stderr
    got = jsonl(p.stdout)
    assert [e["sequence"] for e in got] == ["000000000021"] and got[0]["type"] == FAILED
    s = run_cli("stats", "acme/a", "--by", "tool", "-o", "json", root=root)  # the dense path: tool_call.*
    assert s.returncode == 0, s.stderr
    groups = orjson.loads(s.stdout)["groups"]
    assert sum(g["calls"] for g in groups) == 40 and sum(g["failures"] for g in groups) == 1, groups


def test_a_repeated_type_key_is_read_as_the_last_one_on_every_path(root):
    """A line whose type key is repeated (the last one counts, as for any JSON reader here),
    among lines in another shape, so the block is read line by line: `-t` of the last type
    finds it, `-t` of the first does not."""
    path = root / "acme" / "a.jsonl"
    write_log(path, 12, start=START, pad=40, log_id="acme/a")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[4] = lines[4].replace(b',"data":', b',"type":"' + FAILED.encode() + b'","data":', 1)  # failed last
    ev = orjson.loads(lines[1])  # line 2 in another key order: the block is not in this tool's shape
    lines[1] = orjson.dumps(dict(reversed(list(ev.items())))) + b"\n"
    path.write_bytes(b"".join(lines))
    assert orjson.loads(lines[4])["type"] == FAILED
    p = run_cli("page", "acme/a", "-t", "tool_call.failed", "--all", "-F", "jsonl", root=root)
    assert [e["sequence"] for e in jsonl(p.stdout)] == ["000000000005"], p.stderr
    p = run_cli("page", "acme/a", "-t", "tool_call.completed", "--all", "-F", "jsonl", root=root)
    assert "000000000005" not in [e["sequence"] for e in jsonl(p.stdout)]


# A type spelled in ways the block search cannot see at its usual place: spaces before a
# repeated key's colon, a key or a value written with \u escapes (valid JSON: any reader
# decodes them to the same type). Each line must be found by -t on every path: the block
# search of one log, the merge of several, tail's backward read, and stats' dense path.
def _before_data(ev, extra: bytes) -> bytes:
    """A key added just before data: the line keeps this tool's shape (it ends ``}}``), so
    the block around it is searched, not read line by line."""
    ev["data"]["error"] = {"type": "x", "message": "m"}
    raw = orjson.dumps(ev)
    assert raw.count(b',"data":') == 1
    return raw.replace(b',"data":', extra + b',"data":')


def _spaced_repeat(ev):
    return _before_data(ev, b',"type" : "' + FAILED.encode() + b'"')


def _escaped_key_and_value(ev):
    return _before_data(ev, rb',"typ\u0065":"wardrik.tool\u005fcall.failed"')


def _escaped_own_value(ev):
    ev["type"] = FAILED
    ev["data"]["error"] = {"type": "x", "message": "m"}
    return orjson.dumps(ev).replace(b'"type":"wardrik.tool_call.failed"', b'"type":"wardrik.tool_call\\u002efailed"', 1)


ESCAPED = [_spaced_repeat, _escaped_key_and_value, _escaped_own_value]


@pytest.mark.parametrize("make", ESCAPED)
def test_a_type_filter_finds_a_type_spelled_with_spaces_or_escapes(root, make):
    _plant(root, make)
    raw = (root / "acme" / "a.jsonl").read_bytes().splitlines()[20]
    assert orjson.loads(raw)["type"] == FAILED and b'"type":"' + FAILED.encode() + b'"' not in raw
    write_log(root / "acme" / "b.jsonl", 40, start=START, pad=40, log_id="acme/b")  # a merge too
    for pattern in ("acme/a", "acme/*"):
        p = run_cli("page", pattern, "-t", "tool_call.failed", "--all", "-F", "jsonl", root=root)
        assert p.returncode == 0, p.stderr
        assert [(e["subject"], e["sequence"]) for e in jsonl(p.stdout)] == [("agents/acme/a", "000000000021")]
        p = run_cli("tail", "-n", "1", pattern, "-t", "tool_call.failed", "-F", "jsonl", root=root)
        assert p.returncode == 0, p.stderr
        assert [e["sequence"] for e in jsonl(p.stdout)] == ["000000000021"]
    s = run_cli("stats", "acme/a", "--by", "tool", "-o", "json", root=root)
    assert s.returncode == 0, s.stderr
    groups = orjson.loads(s.stdout)["groups"]
    assert sum(g["failures"] for g in groups) == 1, groups


def _escaped_key_only(ev):
    """A repeated type key spelled with an escape, and no other "type" in the line."""
    raw = orjson.dumps(ev)
    return raw.replace(b',"data":', rb',"typ\u0065":"wardrik.tool_call.failed","data":', 1)


def test_an_excluded_type_does_not_hide_a_line_whose_last_type_is_another(root):
    """-x of the line's first type (at its usual place) keeps it: its last type is another."""
    _plant(root, _escaped_key_only)
    raw = (root / "acme" / "a.jsonl").read_bytes().splitlines()[20]
    assert b'"type"' not in raw[73:] and orjson.loads(raw)["type"] == FAILED
    for pattern in ("acme/a", "acme/*"):
        p = run_cli("page", pattern, "-x", "tool_call.completed", "--all", "-F", "jsonl", root=root)
        assert p.returncode == 0, p.stderr
        assert [e["sequence"] for e in jsonl(p.stdout)] == ["000000000021"]
        p = run_cli("tail", "-n", "5", pattern, "-x", "tool_call.completed", "-F", "jsonl", root=root)
        assert [e["sequence"] for e in jsonl(p.stdout)] == ["000000000021"], p.stderr
