"""Usage in the protocol (issue 15): message.completed's data.usage and data.cost_usd,
run.started's data.session.id; what append refuses, what `types` shows, what check says, and
the `usage` view that sums a log."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli
from wardrik_cli.protocol.catalogue import USAGE_FIELDS, lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id

REPO = Path(__file__).resolve().parent.parent
USAGE_VIEW = "wardrik_cli.folding.usage:UsageView"
FULL = {"input_tokens": 1200, "output_tokens": 80, "cache_read": {"input_tokens": 700},
        "cache_creation": {"input_tokens": 300}, "reasoning": {"output_tokens": 20}}


def completed(**extra) -> str:
    return json.dumps({"message": {"id": "m1"}, **extra})


def test_every_usage_field_and_a_cost_are_stored_as_given(cli, root):
    p = cli("append", "acme/a", "message.completed", "--data", completed(usage=FULL, cost_usd=0.0123))
    assert p.returncode == 0, p.stderr
    stored = jsonl((root / "acme" / "a.jsonl").read_bytes())[0]["data"]
    assert stored["usage"] == FULL and stored["cost_usd"] == 0.0123
    # zero is a count, an integer cost is a number; part of the fields is fine
    for data in (completed(usage={"input_tokens": 0}, cost_usd=0), completed(usage={}), completed(cost_usd=3)):
        assert cli("append", "acme/a", "message.completed", "--data", data).returncode == 0


@pytest.mark.parametrize("data,names", [
    (completed(usage={"input_tokens": -1}), "data.usage.input_tokens"),
    (completed(usage={"output_tokens": 1.5}), "data.usage.output_tokens"),
    (completed(usage={"output_tokens": 2.0}), "data.usage.output_tokens"),  # a float, even a whole one
    (completed(usage={"input_tokens": "120"}), "data.usage.input_tokens"),
    (completed(usage={"input_tokens": True}), "data.usage.input_tokens"),  # a boolean is no count
    (completed(usage={"input_tokens": None}), "data.usage.input_tokens"),
    (completed(usage={"cache_read": {"input_tokens": -5}}), "data.usage.cache_read.input_tokens"),
    (completed(usage={"reasoning": {"output_tokens": "many"}}), "data.usage.reasoning.output_tokens"),
    (completed(usage={"cache_read": 5}), "data.usage.cache_read"),  # a dotted name is a nested object
    (completed(usage={"cache_read.input_tokens": 5}), "data.usage.cache_read.input_tokens"),
    (completed(usage={"total_tokens": 5}), "data.usage.total_tokens"),  # unknown key
    (completed(usage={"cache_read": {"tokens": 5}}), "data.usage.cache_read.tokens"),
    (completed(usage=[1, 2]), "data.usage"),
    (completed(usage=None), "data.usage"),
    (completed(cost_usd=-1), "data.cost_usd"),
    (completed(cost_usd="x"), "data.cost_usd"),
    (completed(cost_usd="0.5"), "data.cost_usd"),
    (completed(cost_usd=False), "data.cost_usd"),
    (completed(cost_usd={"usd": 1}), "data.cost_usd"),
])
def test_bad_usage_or_cost_is_one_error_naming_the_field(cli, root, data, names):
    p = cli("append", "acme/a", "message.completed", "--data", data)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], lines
    assert b"Traceback" not in p.stderr and p.stdout == b""
    assert not (root / "acme" / "a.jsonl").exists()  # nothing written


def test_a_batch_with_one_bad_usage_is_refused_whole(cli, root):
    items = b"".join(orjson.dumps({"type": "message.completed", "data": {"message": {"id": f"m{i}"},
                                                                       "usage": {"input_tokens": 10 - 6 * i}}}) + b"\n"
                     for i in range(3))  # the third has -2
    p = cli("append", "acme/a", "--batch", "-", input=items)
    assert p.returncode == 2 and b"data.usage.input_tokens" in p.stderr
    assert not (root / "acme" / "a.jsonl").exists()


def test_usage_is_checked_on_message_completed_only(cli):
    # other types keep their free-form data: a "usage" there is the writer's business
    assert cli("append", "acme/a", "tool_call.completed", "--data",
               '{"tool": {"call": {"id": "c"}}, "usage": "n/a", "cost_usd": "x"}').returncode == 0


def test_session_id_on_run_started(cli, root):
    assert cli("append", "acme/a", "run.started", "--data", '{"session": {"id": "conv-42"}}').returncode == 0
    assert jsonl((root / "acme" / "a.jsonl").read_bytes())[0]["data"]["session"] == {"id": "conv-42"}
    for bad, name in (('{"session": {"id": 42}}', "data.session.id"), ('{"session": {"id": ""}}', "data.session.id"),
                      ('{"session": "conv-42"}', "data.session")):
        p = cli("append", "acme/b", "run.started", "--data", bad)
        assert p.returncode == 2 and p.stderr.startswith(b"error: ") and name.encode() in p.stderr, p.stderr


def test_types_lists_the_new_fields(cli):
    rows = {r["type"]: r for r in orjson.loads(cli("types", "--format", "json").stdout)}
    optional = rows["wardrik.message.completed"]["optional"]
    assert optional == ["data.usage." + f for f in USAGE_FIELDS] + ["data.cost_usd"]
    assert "data.session.id" in rows["wardrik.run.started"]["optional"]
    assert "data.model" in rows["wardrik.message.started"]["optional"]
    pretty = cli("types", "--format", "pretty", env={"COLUMNS": "200"}).stdout.decode()
    assert "usage.cache_read.input_tokens" in pretty and "cost_usd" in pretty and "session.id" in pretty


def test_check_reports_a_stored_bad_usage(cli, root):
    """A line another tool wrote with a usage append would refuse is a problem for check."""
    e = build_event(etype=lookup("message.completed"), data={"message": {"id": "m"}, "usage": {"input_tokens": -3}},
                    source="wardrik://local/agents/acme/x", subject="agents/acme/x", seq=1,
                    time_str="2026-10-22T09:00:00.000000Z", trace=new_trace_id(), span=new_span_id())
    (root / "acme").mkdir()
    (root / "acme" / "x.jsonl").write_bytes(dumps_line(e))
    p = cli("check", "acme/x")
    assert p.returncode == 1 and b"data.usage.input_tokens" in p.stdout + p.stderr


# ---------------------------------------------------------------------------------------
# the usage view
# ---------------------------------------------------------------------------------------
def _fill(cli):
    cli("append", "acme/u", "run.started", check=True)
    cli("append", "acme/u", "message.completed", "--data", completed(usage=FULL, cost_usd=0.5), check=True)
    cli("append", "acme/u", "tool_call.completed", "--data", '{"tool": {"call": {"id": "c"}}}', check=True)
    cli("append", "acme/u", "message.completed", "--data",
        completed(usage={"input_tokens": 5, "reasoning": {"output_tokens": 2}}), check=True)


def test_usage_view_sums_a_log(cli, root):
    _fill(cli)
    p = cli("fold", "acme/u", "--view", USAGE_VIEW, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = orjson.loads(p.stdout)
    assert doc["through"] == 4
    s = doc["state"]
    assert s["model_calls"] == 2 and s["with_usage"] == 2 and s["with_cost"] == 1
    assert s["usage"] == {"input_tokens": 1205, "output_tokens": 80, "cache_read": {"input_tokens": 700},
                          "cache_creation": {"input_tokens": 300}, "reasoning": {"output_tokens": 22}}
    assert s["cost_usd"] is None  # one call gave no cost: a partial sum is not the log's cost
    cli("append", "acme/u", "message.completed", "--data", completed(cost_usd=0.25), check=True)
    p = cli("fold", "acme/u", "--view", USAGE_VIEW, "--format", "json")  # from the checkpoint
    s = orjson.loads(p.stdout)["state"]
    assert s["model_calls"] == 3 and s["usage"]["input_tokens"] == 1205 and s["cost_usd"] is None


def test_usage_view_cost_when_every_call_gave_one(cli):
    for i, cost in enumerate((0.1, 0.2, 0.003)):
        cli("append", "acme/c", "message.completed", "--data",
            json.dumps({"message": {"id": f"m{i}"}, "cost_usd": cost}), check=True)
    first = orjson.loads(cli("fold", "acme/c", "--view", USAGE_VIEW, "-o", "json").stdout)["state"]
    assert first["cost_usd"] == 0.303
    again = orjson.loads(cli("fold", "acme/c", "--view", USAGE_VIEW, "-o", "json").stdout)["state"]
    assert again == first  # the checkpoint gives the same answer


def test_usage_view_skips_values_the_protocol_refuses():
    from wardrik_cli.folding.usage import UsageView

    v = UsageView()
    s = v.initial()
    for data in ({"message": {"id": "a"}, "usage": {"input_tokens": -4, "output_tokens": 3.5, "cache_read": 9},
                  "cost_usd": "x"},
                 {"message": {"id": "b"}, "usage": {"input_tokens": 7, "cache_read": {"input_tokens": True}}}):
        s = v.apply(s, {"type": "wardrik.message.completed", "data": data})
    assert s["usage"]["input_tokens"] == 7 and s["usage"]["output_tokens"] == 0
    assert s["usage"]["cache_read"] == {"input_tokens": 0} and s["with_cost"] == 0
    assert v.finish(s, 2)["cost_usd"] is None


def test_usage_is_a_builtin_view(cli):
    from wardrik_cli.folding.views import BUILTIN

    if "usage" not in BUILTIN:
        pytest.skip("`fold --view usage` needs its line in folding/views.py's BUILTIN (see the issue 15 report)")
    _fill(cli)
    p = cli("fold", "acme/u", "--view", "usage", "--format", "json")
    assert p.returncode == 0 and orjson.loads(p.stdout)["state"]["usage"]["input_tokens"] == 1205


# ---------------------------------------------------------------------------------------
# the sample root
# ---------------------------------------------------------------------------------------
@pytest.fixture
def sample(tmp_path):
    dst = tmp_path / "sample"
    shutil.copytree(REPO / "sample_ledgers", dst, ignore=shutil.ignore_patterns("build.py", "__pycache__"))
    return dst


def test_sample_model_calls_carry_usage_and_some_cost(sample):
    events = [e for f in sorted((sample / "acme").glob("*.jsonl")) for e in jsonl(f.read_bytes())]
    done = [e["data"] for e in events if e["type"] == "wardrik.message.completed"]
    assert done and all("usage" in d for d in done)
    assert 0 < sum("cost_usd" in d for d in done) < len(done)
    assert run_cli("check", root=sample).returncode == 0


def test_stats_by_model_on_the_sample_shows_tokens_and_cost(sample):
    p = run_cli("stats", "--by", "model", "-o", "json", root=sample)
    assert p.returncode == 0, p.stderr
    (row,) = orjson.loads(p.stdout)["groups"]
    assert row["model"] == "anthropic:claude-haiku-4-5" and row["calls"] == 15
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0
    assert row["cost_usd"] is not None and row["cost_usd"] > 0 and row["unpriced"] == 0
