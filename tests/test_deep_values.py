"""Data nested deeper than ``append`` allows (128 levels), written by hand (``check`` passes
it: orjson reads 1,023 levels), never crashes a renderer or a JSON output: pretty output
shows it cut or as a marker, ``activity -o json`` and ``export otlp --content`` carry it cut
at ``deep.DEPTH`` levels with the string ``deep.TOO_DEEP`` in place of the rest (valid JSON),
and data ``append`` accepts is written exactly as before."""
from __future__ import annotations

import orjson
import pytest

from conftest import run_cli
from wardrik_cli.folding.deep import DEPTH, TOO_DEEP, clip, too_deep

RUN = "ab" * 16


def deep_dict(n: int) -> bytes:
    return b'{"x":' * n + b"1" + b"}" * n


def deep_list(n: int) -> bytes:
    return b"[" * n + b"]" * n


def _log(root, items, deep: bytes) -> None:
    """Append ``items`` (type, data), then put ``deep`` in place of every ``"@@DEEP@@"`` (and
    beside every usage's input_tokens: append checks usage)."""
    batch = b"".join(orjson.dumps({"type": t, "data": d}) + b"\n" for t, d in items)
    run_cli("append", "a", "--batch", "-", input=batch, root=root, check=True)
    path = root / "a.jsonl"
    raw = path.read_bytes().replace(b'"@@DEEP@@"', deep)
    usage = b'"usage":{"input_tokens":1}'
    if deep and usage in raw:  # check refuses a usage field it does not know: not asked of it then
        path.write_bytes(raw.replace(usage, b'"usage":{"input_tokens":1,"x":' + deep + b"}"))
        return
    path.write_bytes(raw)
    assert run_cli("check", root=root).returncode == 0  # check passes the log


def _ok(p) -> None:
    assert p.returncode == 0, p.stderr
    assert b"internal error" not in p.stderr, p.stderr


def _depth_of_marker(v, depth: int = 1) -> int | None:
    """The level at which TOO_DEEP stands in ``v`` (iteratively), or None."""
    stack = [(v, depth)]
    while stack:
        x, d = stack.pop()
        if x == TOO_DEEP:
            return d
        if isinstance(x, dict):
            stack.extend((c, d + 1) for c in x.values())
        elif isinstance(x, list):
            stack.extend((c, d + 1) for c in x)
    return None


# -- the helper ------------------------------------------------------------------------------
def test_clip_leaves_what_append_accepts_and_cuts_the_rest():
    from wardrik_cli.store.append import MAX_DEPTH

    assert DEPTH == MAX_DEPTH
    ok = orjson.loads(deep_dict(DEPTH - 1))  # DEPTH objects with a number in the last
    assert clip(ok) is ok and not too_deep(ok)
    assert clip({"a": [1, {"b": 2}], "c": "d"}) == {"a": [1, {"b": 2}], "c": "d"}
    cut = clip(orjson.loads(deep_dict(1000)))
    assert _depth_of_marker(cut) == DEPTH + 1 and orjson.dumps(cut)
    cut = clip(orjson.loads(b'{"a": 1, "b": ' + deep_list(500) + b', "c": [2, 3]}'), 3)
    assert cut == {"a": 1, "b": [[TOO_DEEP]], "c": [2, 3]}
    assert list(cut) == ["a", "b", "c"]  # order kept
    assert clip(5, 0) == 5 and clip([], 0) == TOO_DEEP


# -- pretty output ---------------------------------------------------------------------------
def test_page_verbose_shows_data_nested_1000_deep_cut(root):
    _log(root, [("run.started", {"task": "@@DEEP@@"})], deep_dict(1000))
    for cmd in ("page", "tail"):
        p = run_cli(cmd, "a", "-o", "pretty", "-v", root=root, env={"COLUMNS": "100"})
        _ok(p)
        rows = p.stdout.decode().splitlines()
        assert all(len(r) <= 100 for r in rows)
        flat = "".join(r.replace(" ", "") for r in rows)  # wrapped at the width, all of it shown
        assert TOO_DEEP.replace(" ", "") in flat and flat.count('{"x":') == DEPTH - 1


def test_page_verbose_of_normal_data_is_unchanged(root):
    _log(root, [("run.started", {"task": {"a": [1, 2, {"b": "c"}]}})], b"")
    p = run_cli("page", "a", "-o", "pretty", "-v", root=root, env={"COLUMNS": "100"})
    _ok(p)
    assert b'"b": "c"' in p.stdout and TOO_DEEP.encode() not in p.stdout


@pytest.mark.parametrize("deep", [deep_list(1000), deep_dict(1000)], ids=["lists", "objects"])
def test_timeline_of_a_tool_name_and_call_id_nested_1000_deep(root, deep):
    _log(root, [("run.started", {}), ("tool_call.started", {"tool": {"name": "@@DEEP@@", "call": {"id": "c"}}}),
                ("tool_call.started", {"tool": {"name": "t", "call": {"id": "@@DEEP@@"}}})], deep)
    p = run_cli("fold", "a", "--view", "timeline", "-o", "pretty", root=root, env={"COLUMNS": "120"})
    _ok(p)
    assert b"tool" in p.stdout


# -- activity -o json ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [300, 1000])
def test_activity_json_carries_deep_data_cut(root, n):
    """m2/m3 of review C: a running tool call whose data nests 300 or 1,000 deep."""
    _log(root, [("run.started", {}),
                ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c"}}, "args": "@@DEEP@@"})],
         deep_dict(n))
    for fmt in ("json", "jsonl"):
        p = run_cli("activity", "-o", fmt, root=root)
        _ok(p)
        doc = orjson.loads(p.stdout)
        ev = doc["a"]["doing"][0]
        assert ev["data"]["tool"] == {"name": "bash", "call": {"id": "c"}}
        assert ev["sequence"] == "000000000002"
        # data is level 1: the marker stands where level DEPTH + 1 began
        assert _depth_of_marker(ev["data"]) == DEPTH + 1


def test_activity_json_of_data_as_deep_as_append_allows_is_as_stored(root):
    deepest = orjson.loads(deep_dict(DEPTH - 2))  # data.args: DEPTH - 1 more levels under data
    run_cli("append", "a", "run.started", root=root, check=True)
    p = run_cli("append", "a", "tool_call.started", "--data",
                orjson.dumps({"tool": {"name": "bash", "call": {"id": "c"}}, "args": deepest}).decode(), root=root)
    assert p.returncode == 0, p.stderr
    stored = orjson.loads((root / "a.jsonl").read_bytes().splitlines()[1])
    q = run_cli("activity", "-o", "json", root=root)
    _ok(q)
    assert orjson.loads(q.stdout)["a"]["doing"] == [stored]


# -- export otlp -----------------------------------------------------------------------------
def _attrs(out) -> dict[str, dict]:
    got: dict[str, dict] = {}
    for line in out.read_bytes().splitlines():
        for rs in orjson.loads(line)["resourceSpans"]:
            for s in rs["scopeSpans"][0]["spans"]:
                got[s["name"].split(" ")[0]] = {a["key"]: a["value"] for a in s["attributes"]}
    return got


@pytest.mark.parametrize("deep", [deep_list(1000), deep_dict(1000), deep_dict(300)], ids=["l1000", "o1000", "o300"])
def test_export_otlp_content_of_deep_values(root, tmp_path, deep):
    _log(root, [("run.started", {"run": {"id": RUN}, "task": "@@DEEP@@"}),
                ("message.started", {"message": {"id": "m1"}, "model": "gpt"}),
                ("message.completed", {"message": {"id": "m1"}, "usage": {"input_tokens": 1},
                                       "text": "@@DEEP@@", "finish_reason": "stop"}),
                ("tool_call.started", {"tool": {"name": "@@DEEP@@", "call": {"id": "c"}, "args": "@@DEEP@@"}}),
                ("tool_call.failed", {"tool": {"call": {"id": "c"}}, "error": "@@DEEP@@"}),
                ("run.completed", {"answer": "@@DEEP@@"})], deep)
    for extra in ([], ["--content"]):
        out = tmp_path / f"o{len(extra)}.json"
        p = run_cli("export", "otlp", "-o", str(out), *extra, root=root)
        _ok(p)
        spans = _attrs(out)
        assert set(spans) == {"invoke_agent", "chat", "execute_tool"}
        assert spans["chat"]["gen_ai.usage.input_tokens"] == {"intValue": "1"}
        name = spans["execute_tool"]["gen_ai.tool.name"]["stringValue"]
        orjson.loads(name)  # JSON text, never Python's repr
    task = orjson.loads(spans["invoke_agent"]["gen_ai.input.messages"]["stringValue"])[0]["parts"][0]["content"]
    args = spans["execute_tool"]["gen_ai.tool.call.arguments"]["stringValue"]
    for text in (task, args, name):
        value = orjson.loads(text)
        assert too_deep(orjson.loads(deep)) == (_depth_of_marker(value) is not None)


def test_export_otlp_content_of_normal_values_is_unchanged(root, tmp_path):
    _log(root, [("run.started", {"run": {"id": RUN}, "task": {"goal": ["a", {"b": 1}]}}),
                ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c"}, "args": {"cmd": ["ls", "-l"]}}}),
                ("tool_call.completed", {"tool": {"call": {"id": "c"}}, "output": {"lines": [1, 2]}}),
                ("run.completed", {"answer": "ok"})], b"")
    out = tmp_path / "o.json"
    _ok(run_cli("export", "otlp", "-o", str(out), "--content", root=root))
    spans = _attrs(out)
    assert spans["execute_tool"]["gen_ai.tool.call.arguments"] == {"stringValue": '{"cmd":["ls","-l"]}'}
    assert spans["execute_tool"]["gen_ai.tool.call.result"] == {"stringValue": '{"lines":[1,2]}'}
    task = orjson.loads(spans["invoke_agent"]["gen_ai.input.messages"]["stringValue"])[0]["parts"][0]["content"]
    assert task == '{"goal":["a",{"b":1}]}'
