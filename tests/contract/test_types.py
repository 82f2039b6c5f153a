"""types: lists the whole protocol with required fields."""
from __future__ import annotations

import json

import pytest

from contract_util import AUDIT, KEPT, LIVE, REQUIRED, assert_refused, ok, run


def entries(doc) -> dict[str, str]:
    """{type without prefix: the JSON text of its entry}, for a list of objects or a mapping."""
    out = {}

    def name_of(obj):
        for k in ("type", "name"):
            if isinstance(obj, dict) and isinstance(obj.get(k), str):
                return obj[k]
        return None

    def walk(node):
        if isinstance(node, dict):
            n = name_of(node)
            if n:
                out[n.removeprefix("wardrik.")] = json.dumps(node)
            for k, v in node.items():
                if isinstance(k, str) and (k.removeprefix("wardrik.") in REQUIRED or
                                           k.removeprefix("wardrik.") in KEPT or
                                           k.removeprefix("wardrik.") in LIVE):
                    out.setdefault(k.removeprefix("wardrik."), json.dumps(v))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(doc)
    return out


@pytest.fixture(scope="module")
def types_json():
    from contract_util import run as _run
    p = ok(_run("types", "--format", "json"))
    return json.loads(p.stdout)


ALL = sorted(set(KEPT) | set(LIVE) | set(AUDIT) | {"events.dropped"})


@pytest.mark.parametrize("type_", ALL)
def test_every_type_listed(types_json, type_):
    assert type_ in entries(types_json), f"{type_} missing from `types`"


@pytest.mark.parametrize("type_", sorted(REQUIRED))
def test_required_fields_listed(types_json, type_):
    entry = entries(types_json)[type_]
    for field in REQUIRED[type_]:
        assert field in entry, f"{type_}: required {field} not in {entry}"


@pytest.mark.subprocess
def test_default_format_off_terminal_is_json(tmp_path):
    p = ok(run("types", cwd=tmp_path))
    json.loads(p.stdout)


@pytest.mark.subprocess
def test_pretty(tmp_path):
    p = ok(run("types", "--format", "pretty", cwd=tmp_path, env={"COLUMNS": "250"}))
    text = p.stdout.decode()
    for t in ("run.started", "tool_call.started", "message.delta"):
        assert t in text


def test_missing_root_is_an_error(tmp_path):
    # "A root that does not exist is an error for every command but `append` and `audit record`."
    missing = tmp_path / "nope"
    assert_refused(run("types", root=missing), None)
    assert not missing.exists()
