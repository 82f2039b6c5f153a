"""Usage in the folds: the state view's ``usage`` (the latest run's tokens and cost) and the
timeline's tokens per model call, in json and in pretty; the views' versions moved on so
that checkpoints made before are discarded."""
from __future__ import annotations

import json

import orjson

from conftest import jsonl
from foldhelp import SEED_FIXTURE
from wardrik_cli.folding.views import StateView, TimelineView

LOG = "acme/t"
SIX = ["status", "task", "turns", "tool_calls", "answer", "applied_through"]


def append(cli, items):
    body = "\n".join(json.dumps({"type": t, "data": d}) for t, d in items) + "\n"
    p = cli("append", LOG, "--batch", "-", input=body)
    assert p.returncode == 0, p.stderr
    return jsonl(p.stdout)


def call(mid, usage=None, cost=None, model="anthropic:claude-haiku-4-5"):
    done = {"message": {"id": mid}}
    if usage is not None:
        done["usage"] = usage
    if cost is not None:
        done["cost_usd"] = cost
    return [("message.started", {"message": {"id": mid}, "model": model}), ("message.completed", done)]


def state(cli):
    p = cli("fold", LOG, "-F", "json")
    assert p.returncode == 0, p.stderr
    return orjson.loads(p.stdout)["state"]


def test_state_sums_the_latest_runs_usage_and_cost(cli):
    append(cli, [("run.started", {"task": "one"}),
                 *call("a", {"input_tokens": 1000, "output_tokens": 100}, 0.5),
                 ("run.completed", {"answer": "x"}),
                 ("run.started", {"task": "two"}),
                 *call("b", {"input_tokens": 1204, "output_tokens": 310, "cache_read": {"input_tokens": 9}}, 0.01),
                 *call("c", {"input_tokens": 6, "output_tokens": 4}, 0.02)])
    s = state(cli)
    assert list(s) == SIX + ["usage"]
    assert s["usage"] == {"input_tokens": 1210, "output_tokens": 314, "cost_usd": 0.03}  # run two only
    assert s["turns"] == 2 and s["status"] == "running"


def test_cost_is_null_unless_every_call_of_the_run_gave_one(cli):
    append(cli, [("run.started", {}), *call("a", {"input_tokens": 10, "output_tokens": 1}),
                 *call("b", {"input_tokens": 5, "output_tokens": 2}, 0.25)])
    assert state(cli)["usage"] == {"input_tokens": 15, "output_tokens": 3, "cost_usd": None}
    # a call with no usage at all, before the first that reports: its cost is unknown too
    append(cli, [("run.started", {}), *call("c"), *call("d", {"input_tokens": 1, "output_tokens": 1}, 0.1)])
    assert state(cli)["usage"] == {"input_tokens": 1, "output_tokens": 1, "cost_usd": None}


def test_no_usage_keeps_exactly_the_contracts_keys(cli):
    append(cli, [("run.started", {"task": "old"}), *call("a", {"input_tokens": 3, "output_tokens": 4}, 0.1),
                 ("run.completed", {"answer": "a"})])
    assert "usage" in state(cli)
    append(cli, [("run.started", {"task": "new"}), *call("b"), ("run.completed", {"answer": "b"})])
    s = state(cli)
    assert list(s) == SIX  # the new run reported none: no usage carried over from the last one
    assert s["task"] == "new"
    seed = orjson.loads(cli("fold", str(SEED_FIXTURE), "-F", "json").stdout)["state"]
    assert list(seed) == SIX


def test_state_usage_survives_a_checkpoint(cli):
    append(cli, [("run.started", {}), *call("a", {"input_tokens": 7, "output_tokens": 8}, 0.5)])
    assert state(cli)["usage"] == {"input_tokens": 7, "output_tokens": 8, "cost_usd": 0.5}
    append(cli, call("b", {"input_tokens": 1, "output_tokens": 2}, 0.25))  # folded from the checkpoint on
    p = cli("fold", LOG, "-F", "json", "-v")
    assert orjson.loads(p.stdout)["state"]["usage"] == {"input_tokens": 8, "output_tokens": 10, "cost_usd": 0.75}


def test_timeline_has_tokens_per_model_call(cli):
    append(cli, [("run.started", {"task": "t"}),
                 *call("a", {"input_tokens": 1204, "output_tokens": 310}),
                 *call("b", model="openai:gpt-5"),
                 *call("c", {"output_tokens": 9})])
    p = cli("fold", LOG, "--view", "timeline", "-F", "json")
    items = orjson.loads(p.stdout)["state"]["runs"][0]["items"]
    assert [(i["id"], i["name"], i.get("usage")) for i in items] == [
        ("a", "anthropic:claude-haiku-4-5", {"input_tokens": 1204, "output_tokens": 310}),
        ("b", "openai:gpt-5", None),
        ("c", "anthropic:claude-haiku-4-5", {"input_tokens": None, "output_tokens": 9}),
    ]
    pretty = cli("fold", LOG, "--view", "timeline", "-F", "pretty", env={"COLUMNS": "200"}).stdout.decode()
    rows = [l for l in pretty.splitlines() if "model call" in l]
    assert "1,204 in · 310 out" in rows[0] and "claude-haiku-4-5" in rows[0]
    assert " in ·" not in rows[1] and " out" not in rows[1]
    assert "9 out" in rows[2] and " in ·" not in rows[2]


def test_versions_moved_on_so_old_checkpoints_are_discarded():
    assert StateView.version not in ("state/1",)
    assert TimelineView.version not in ("timeline/1", "timeline/2")
