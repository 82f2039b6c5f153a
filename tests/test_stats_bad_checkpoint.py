"""A stats checkpoint that is damaged (a count that is a string, a group that is not a list,
a key of the wrong type ...) is discarded when it is read and the log counted from its
start: the answer is the fresh count's, never an internal error from ``rows`` or ``merge``."""
from __future__ import annotations

import shutil

import orjson
import pytest

from conftest import run_cli


def _make(root):
    items = [
        ("run.started", {"task": "t"}),
        ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c1"}}}),
        ("tool_call.completed", {"tool": {"call": {"id": "c1"}}}),
        ("tool_call.started", {"tool": {"name": "grep", "call": {"id": "c2"}}}),
        ("tool_call.failed", {"tool": {"call": {"id": "c2"}}, "error": {"message": "no"}}),
        ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c3"}}}),
        ("message.started", {"message": {"id": "m1"}, "model": "gpt"}),
        ("message.completed", {"message": {"id": "m1"}, "usage": {"input_tokens": 5, "output_tokens": 3}}),
    ]
    batch = b"".join(orjson.dumps({"type": t, "data": d}) + b"\n" for t, d in items)
    run_cli("append", "a", "--batch", "-", input=batch, root=root, check=True)


def _checkpoint(root, by):
    return root / ".wardrik" / "checkpoints" / f"a@wardrik.stats.{by}.json"


def _stats(root, by):
    p = run_cli("stats", "--by", by, "-o", "json", root=root)
    assert p.returncode == 0 and b"internal error" not in p.stderr, p.stderr
    return orjson.loads(p.stdout)


def _damage_count(state):
    state["groups"][0][1][0] = "x"  # calls: a string (review B's sed)


def _damage_failures(state):
    state["groups"][0][1][1] = None


def _damage_durations(state):
    state["groups"][0][1][3] = [["x"], [], 0, 1, 1.0]  # a duration that is not a number


def _damage_buckets(state):
    state["groups"][0][1][3][1] = [[1, "two"]]


def _damage_group(state):
    state["groups"][0][1] = {"calls": 1}


def _damage_key(state):
    state["groups"][0][0] = {"a": 1}  # unhashable


def _damage_key_type(state):
    state["groups"][0][0] = 7  # sorts against names: TypeError in rows()


def _damage_open(state):
    state["open"] = [["a", ["c9"], "bash", "2026-01-01T00:00:00.000000Z"]]


def _damage_negative(state):
    state["groups"][0][1][4] = -5


def _damage_cost(state):
    state["groups"][0][1][6] = "1.5"


def _damage_runs(state):
    state["runs"] = [["a", 5, "t"]]


def _damage_shape(state):
    state["groups"] = "none"


DAMAGES = [_damage_count, _damage_failures, _damage_durations, _damage_buckets, _damage_group, _damage_key,
           _damage_key_type, _damage_open, _damage_negative, _damage_cost, _damage_runs, _damage_shape]


# runs are kept under run and agent only: damaging them elsewhere damages nothing
CASES = [(by, d) for by in ("tool", "model", "run", "agent", "type") for d in DAMAGES
         if not (d is _damage_runs and by not in ("run", "agent"))]


@pytest.mark.parametrize(("by", "damage"), CASES, ids=[f"{d.__name__[len('_damage_'):]}-{by}" for by, d in CASES])
def test_a_damaged_checkpoint_is_discarded_and_the_log_recounted(root, tmp_path, by, damage):
    _make(root)
    fresh_root = tmp_path / "fresh"
    shutil.copytree(root, fresh_root)
    first = _stats(root, by)  # writes the checkpoint
    path = _checkpoint(root, by)
    doc = orjson.loads(path.read_bytes())
    state = doc["state"]
    if damage in (_damage_open,) and by not in ("tool", "model"):
        state["models"] = state["open"] = [["a", ["c9"], "gpt", "2026-01-01T00:00:00.000000Z"]]
    elif damage is _damage_key_type and by == "run":
        state["groups"][0][0] = ["a", 7]
    else:
        damage(state)
    path.write_bytes(orjson.dumps(doc))
    got = _stats(root, by)
    shutil.rmtree(fresh_root / ".wardrik" / "checkpoints", ignore_errors=True)
    assert got == first == _stats(fresh_root, by)
    # the damaged checkpoint was replaced by a good one: the next count agrees too
    assert _stats(root, by) == first


def test_a_good_checkpoint_still_resumes(root):
    """The checks accept what ``dump`` writes: a count after an append reads only the suffix."""
    _make(root)
    _stats(root, "tool")
    before = _checkpoint(root, "tool").read_bytes()
    run_cli("append", "a", "tool_call.completed", "--data", '{"tool": {"call": {"id": "c3"}}}', root=root,
            check=True)
    from wardrik_cli.folding import stats as st

    counter = st.Counter("tool")
    counter.load(orjson.loads(before)["state"])  # raises if the checks refused dump's own form
    rows = {r["tool"]: r for r in _stats(root, "tool")["groups"]}
    assert rows["bash"]["calls"] == 2 and rows["grep"]["failures"] == 1
