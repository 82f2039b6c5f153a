"""`wardrik stats` (issue 15): every grouping against a brute-force count over the same events
(hypothesis: random runs, tool and model calls, failures, usage, windows), the formats, the
price table, and the bad input it refuses."""
from __future__ import annotations

import csv
import io
import math
import random
from datetime import datetime, timedelta, UTC
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from wardrik_cli.folding.stats import COLUMNS, Counter, Durations
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id
from wardrik_cli.protocol.times import format_dt

START = datetime(2026, 10, 22, 9, 0, tzinfo=UTC)
HAIKU, GPT = "anthropic:claude-haiku-4-5", "openai:gpt-5"
PRICES_TOML = f'[prices."{HAIKU}"]\ninput_per_mtok = 1.0\noutput_per_mtok = 5.0\ncache_read_per_mtok = 0.1\n'
PRICE = {"input": 1.0, "output": 5.0, "cache_read": 0.1}  # no cache_creation price: such calls are unpriced


# ---------------------------------------------------------------------------------------
# writing a real root
# ---------------------------------------------------------------------------------------
def write_root(root: Path, logs: dict[str, list[tuple[str, dict, int, str]]], prices: str | None = PRICES_TOML) -> None:
    """logs: {log id: [(type, data, microseconds after the previous event, trace)]}, in the stored format."""
    (root / ".wardrik").mkdir(parents=True, exist_ok=True)
    if prices is not None:
        (root / ".wardrik" / "config.toml").write_text(prices)
    for log, events in logs.items():
        t = START
        out = []
        for seq, (typ, data, gap, trace) in enumerate(events, 1):
            t += timedelta(microseconds=gap)
            e = build_event(etype=lookup(typ), data=data, source=f"wardrik://local/agents/{log}",
                            subject=f"agents/{log}", seq=seq, time_str=format_dt(t), trace=trace, span=new_span_id())
            out.append(dumps_line(e))
        p = root / (log + ".jsonl")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(out))


def read_root(root: Path, logs) -> dict[str, list[dict]]:
    return {log: [orjson.loads(x) for x in (root / (log + ".jsonl")).read_bytes().splitlines()] for log in logs}


def stats_json(root: Path, *args: str) -> dict:
    p = run_cli("stats", *args, "-o", "json", root=root)
    assert p.returncode == 0, p.stderr.decode()
    return orjson.loads(p.stdout)


# ---------------------------------------------------------------------------------------
# the brute force: every answer from the definitions, by looking ahead in each log
# ---------------------------------------------------------------------------------------
def _secs(a: str, b: str) -> float:
    def us(t: str) -> int:
        d = datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return (d - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    return (us(b) - us(a)) / 1_000_000


def _d(e, *path):
    cur = e["data"]
    for p in path:
        cur = cur.get(p) if isinstance(cur, dict) else None
    return cur


def _name(v):
    return v if isinstance(v, str) else None


def _cost(data, model):
    if "cost_usd" in data:
        return float(data["cost_usd"])
    u = data.get("usage")
    if not isinstance(u, dict) or model != HAIKU:
        return None
    inp, out = u.get("input_tokens", 0), u.get("output_tokens", 0)
    cr, cc = (u.get("cache_read") or {}).get("input_tokens", 0), (u.get("cache_creation") or {}).get("input_tokens", 0)
    if cc or cr + cc > inp:
        return None
    return ((inp - cr) * PRICE["input"] + cr * PRICE["cache_read"] + out * PRICE["output"]) / 1e6


RUN_ENDS = ("wardrik.run.completed", "wardrik.run.failed")


def _first_after(evs, i, hit):
    """The first j > i with hit(evs[j]) true, else None."""
    return next((j for j in range(i + 1, len(evs)) if hit(evs[j])), None)


def brute(by: str, per_log: dict[str, list[dict]]) -> dict:
    groups: dict = {}

    def g(key, first, log=None):
        if key not in groups:
            groups[key] = {"calls": 0, "failures": 0, "unended": 0, "durs": [], "in": 0, "out": 0, "cost": 0.0,
                           "unpriced": 0, "first": first, "log": log, "is_run": False}
        return groups[key]

    def model_call(row, data, model):
        u = data.get("usage")
        if isinstance(u, dict):
            row["in"] += u.get("input_tokens", 0)
            row["out"] += u.get("output_tokens", 0)
        c = _cost(data, model)
        if c is None:
            row["unpriced"] += 1
        else:
            row["cost"] += c

    msg_ends = ("wardrik.message.completed",)
    tool_ends = ("wardrik.tool_call.completed", "wardrik.tool_call.failed")
    for log, evs in per_log.items():
        def ended_by(i, end_types, ident_path, evs=evs):
            """Where the call started at i ends: the first end of its id, or run end, after it."""
            ident = _d(evs[i], *ident_path)
            return _first_after(evs, i, lambda x: x["type"] in RUN_ENDS or (
                x["type"] in end_types and _d(x, *ident_path) == ident))

        def start_of(j, start_type, end_types, ident_path, evs=evs):
            for i in range(j - 1, -1, -1):
                if evs[i]["type"] == start_type and _d(evs[i], *ident_path) == _d(evs[j], *ident_path):
                    return i if ended_by(i, end_types, ident_path) == j else None
            return None

        def model_of_completion(j, evs=evs):
            i = start_of(j, "wardrik.message.started", msg_ends, ("message", "id"))
            started = _name(_d(evs[i], "model")) if i is not None else None
            return (started if started is not None else _name(_d(evs[j], "model"))), i

        for j, e in enumerate(evs):
            t, time = e["type"], e["time"]
            if by == "tool":
                if t == "wardrik.tool_call.started":
                    end = ended_by(j, tool_ends, ("tool", "call", "id"))
                    row = g(_name(_d(e, "tool", "name")), time)
                    if end is None or evs[end]["type"] in RUN_ENDS:
                        row["unended"] += 1
                elif t in tool_ends:
                    i = start_of(j, "wardrik.tool_call.started", tool_ends, ("tool", "call", "id"))
                    name = _name(_d(evs[i], "tool", "name")) if i is not None else _name(_d(e, "tool", "name"))
                    row = g(name, time)
                    row["calls"] += 1
                    row["failures"] += t == "wardrik.tool_call.failed"
                    if i is not None:
                        row["durs"].append(_secs(evs[i]["time"], time))
            elif by == "model":
                if t == "wardrik.message.started":
                    end = ended_by(j, msg_ends, ("message", "id"))
                    row = g(_name(_d(e, "model")), time)
                    if end is None or evs[end]["type"] == "wardrik.run.completed":
                        row["unended"] += 1
                    elif evs[end]["type"] == "wardrik.run.failed":
                        fail = g(_name(_d(e, "model")), time)
                        fail["calls"] += 1
                        fail["failures"] += 1
                        fail["unpriced"] += 1
                        fail["durs"].append(_secs(time, evs[end]["time"]))
                elif t == "wardrik.message.completed":
                    model, i = model_of_completion(j)
                    row = g(model, time)
                    row["calls"] += 1
                    if i is not None:
                        row["durs"].append(_secs(evs[i]["time"], time))
                    model_call(row, e["data"], model)
            elif by in ("run", "agent"):
                trace = e["traceparent"].split("-")[1]
                key = (log, trace) if by == "run" else log
                if t == "wardrik.message.completed":
                    model_call(g(key, time, log), e["data"], model_of_completion(j)[0])
                elif t == "wardrik.message.started":
                    end = ended_by(j, msg_ends, ("message", "id"))
                    if end is not None and evs[end]["type"] == "wardrik.run.failed":
                        fail_trace = evs[end]["traceparent"].split("-")[1]
                        g((log, fail_trace) if by == "run" else log, evs[end]["time"], log)["unpriced"] += 1
                elif t == "wardrik.run.started":
                    row = g(key, time, log)
                    row["is_run"] = True
                    nxt = _first_after(evs, j, lambda x: x["type"] in RUN_ENDS or x["type"] == "wardrik.run.started")
                    if nxt is None or evs[nxt]["type"] == "wardrik.run.started":
                        row["unended"] += 1
                elif t in RUN_ENDS:
                    row = g(key, time, log)
                    row["is_run"] = True
                    row["calls"] += 1
                    row["failures"] += t == "wardrik.run.failed"
                    prev = next((i for i in range(j - 1, -1, -1) if evs[i]["type"] in RUN_ENDS + ("wardrik.run.started",)),
                                None)
                    if prev is not None and evs[prev]["type"] == "wardrik.run.started":
                        row["durs"].append(_secs(evs[prev]["time"], time))
            else:  # type
                row = g(t.removeprefix("wardrik."), time)
                row["calls"] += 1
                if t == "wardrik.message.completed":
                    model_call(row, e["data"], model_of_completion(j)[0])
    out = {}
    for key, r in groups.items():
        if by == "run" and not r["is_run"]:
            continue
        d = sorted(r["durs"])

        def q(p, d=d):
            return d[max(1, math.ceil(p * len(d))) - 1] if d else None
        timed, tokens = by != "type", by != "tool" and (by != "type" or key == "message.completed")
        out[key] = {
            "calls": r["calls"],
            "failures": r["failures"] if timed else None,
            "error_rate": (r["failures"] / r["calls"] if r["calls"] else None) if timed else None,
            "unended": r["unended"] if timed else None,
            "p50_s": q(0.5) if timed else None, "p95_s": q(0.95) if timed else None,
            "max_s": (d[-1] if d else None) if timed else None,
            "input_tokens": r["in"] if tokens else None, "output_tokens": r["out"] if tokens else None,
            "cost_usd": (round(r["cost"], 6) if r["unpriced"] == 0 else None) if tokens else None,
            "unpriced": r["unpriced"] if tokens else None,
        }
        if by == "run":
            out[key]["log"] = r["log"]
    return out


def _row_key(r: dict, by: str):
    return (r["log"], r["run"]) if by == "run" else r[by]


def in_window(per_log, since, until):
    return {log: [e for e in evs if (since is None or e["time"] >= since) and (until is None or e["time"] < until)]
            for log, evs in per_log.items()}


def assert_same(got_rows: list[dict], want: dict, by: str) -> None:
    got = {_row_key(r, by): r for r in got_rows}
    assert set(got) == set(want), (sorted(got, key=str), sorted(want, key=str))
    for key, w in want.items():
        r = got[key]
        for col, v in w.items():
            if isinstance(v, float):
                assert r[col] == pytest.approx(v, rel=1e-9, abs=2e-6), (key, col, r[col], v)
            else:
                assert r[col] == v, (key, col, r[col], v)


# ---------------------------------------------------------------------------------------
# random ledgers
# ---------------------------------------------------------------------------------------
usages = st.one_of(
    st.none(),
    st.fixed_dictionaries({"input_tokens": st.integers(0, 50_000), "output_tokens": st.integers(0, 5_000)},
                          optional={"cache_read": st.fixed_dictionaries({"input_tokens": st.integers(0, 40_000)}),
                                    "cache_creation": st.fixed_dictionaries({"input_tokens": st.integers(0, 3)}),
                                    "reasoning": st.fixed_dictionaries({"output_tokens": st.integers(0, 100)})}))


@st.composite
def ledgers(draw):
    logs = {}
    for li in range(draw(st.integers(1, 3))):
        events = []
        gap = st.integers(0, 3_000_000)
        n = 0
        for _run in range(draw(st.integers(0, 4))):
            trace = f"{draw(st.integers(1, 2 ** 128 - 1)):032x}"
            events.append(("run.started", {"task": "t"}, draw(gap), trace))
            tokens = []
            for _call in range(draw(st.integers(0, 6))):
                n += 1
                if draw(st.booleans()):
                    start = ("tool_call.started", {"tool": {"name": draw(st.sampled_from(["bash", "http", "sql"])),
                                                            "call": {"id": f"c{n}"}}})
                    outcome = draw(st.sampled_from(["tool_call.completed", "tool_call.completed", "tool_call.failed",
                                                    None]))
                    end = (outcome, {"tool": {"call": {"id": f"c{n}"}}}) if outcome else None
                else:
                    model = draw(st.sampled_from([HAIKU, GPT, None]))
                    start = ("message.started", {"message": {"id": f"m{n}"}} | ({"model": model} if model else {}))
                    data: dict = {"message": {"id": f"m{n}"}}
                    u = draw(usages)
                    if u is not None:
                        data["usage"] = u
                    if draw(st.integers(0, 3)) == 0:
                        data["cost_usd"] = draw(st.floats(0, 2, allow_nan=False))
                    if model is None and draw(st.booleans()):
                        data["model"] = HAIKU  # the model told at the completion only
                    end = ("message.completed", data) if draw(st.integers(0, 4)) else None
                tokens.append((n, "s", start))
                if end is not None:
                    tokens.append((n, "e", end))
            order = draw(st.permutations(tokens))
            seen: set = set()
            fixed = []
            for ident, kind, ev in order:  # an end drawn before its start swaps places with it
                if kind == "e" and ident not in seen:
                    ev = next(x for i, k, x in tokens if i == ident and k == "s")
                    kind = "s"
                elif kind == "s" and ident in seen:
                    ev = next(x for i, k, x in tokens if i == ident and k == "e")
                    kind = "e"
                seen.add(ident)
                fixed.append(ev)
            for typ, data in fixed:
                events.append((typ, data, draw(gap), trace))
            ending = draw(st.sampled_from(["run.completed", "run.failed", None]))
            if ending == "run.failed":
                events.append((ending, {"error": {"message": "boom"}}, draw(gap), trace))
            elif ending:
                events.append((ending, {}, draw(gap), trace))
        logs[f"acme/agent-{li}"] = events
    return logs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(logs=ledgers(), by=st.sampled_from(["tool", "model", "run", "agent", "type"]),
       window=st.tuples(st.none() | st.integers(0, 60_000_000), st.none() | st.integers(0, 60_000_000)))
def test_stats_equal_a_brute_force_count(tmp_path_factory, logs, by, window):
    root = tmp_path_factory.mktemp("stats") / "root"
    write_root(root, logs)
    since, until = (None if w is None else format_dt(START + timedelta(microseconds=w)) for w in window)
    if since is not None and until is not None and since >= until:
        until = None  # an empty or inverted window is refused (its own test)
    args = ["--by", by] + (["--since", since] if since else []) + (["--until", until] if until else [])
    got = stats_json(root, *args)
    assert got["by"] == by and got["since"] == since and got["until"] == until
    assert_same(got["groups"], brute(by, in_window(read_root(root, logs), since, until)), by)


# ---------------------------------------------------------------------------------------
# fixed cases
# ---------------------------------------------------------------------------------------
T = "ab" * 16


def small_root(root: Path) -> None:
    write_root(root, {"acme/a": [
        ("run.started", {}, 0, T),
        ("message.started", {"message": {"id": "m1"}, "model": HAIKU}, 1_000_000, T),
        ("message.completed", {"message": {"id": "m1"}, "usage": {"input_tokens": 1000, "output_tokens": 100}},
         2_000_000, T),
        ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c1"}}}, 500_000, T),
        ("tool_call.started", {"tool": {"name": "bash", "call": {"id": "c2"}}}, 0, T),
        ("tool_call.failed", {"tool": {"call": {"id": "c2"}}, "error": {"message": "x"}}, 1_000_000, T),
        ("tool_call.completed", {"tool": {"call": {"id": "c1"}}}, 3_000_000, T),
        ("message.started", {"message": {"id": "m2"}, "model": GPT}, 0, T),
        ("run.failed", {"error": {"message": "boom"}}, 250_000, T),
    ]})


def test_a_small_ledger_by_hand(root):
    small_root(root)
    tools = {r["tool"]: r for r in stats_json(root, "--by", "tool")["groups"]}
    assert tools["bash"] | {} == {"tool": "bash", "calls": 2, "failures": 1, "error_rate": 0.5, "unended": 0,
                                  "p50_s": 1.0, "p95_s": 4.0, "max_s": 4.0, "input_tokens": None,
                                  "output_tokens": None, "cost_usd": None, "unpriced": None}
    models = {r["model"]: r for r in stats_json(root, "--by", "model")["groups"]}
    assert models[HAIKU]["calls"] == 1 and models[HAIKU]["p50_s"] == 2.0
    assert models[HAIKU]["cost_usd"] == 0.0015 and models[HAIKU]["input_tokens"] == 1000  # 1000 x $1 + 100 x $5 / M
    assert models[GPT]["calls"] == 1 and models[GPT]["failures"] == 1 and models[GPT]["max_s"] == 0.25
    (agent,) = stats_json(root)["groups"]  # --by agent is the default
    assert agent["agent"] == "acme/a" and agent["calls"] == 1 and agent["failures"] == 1
    assert agent["max_s"] == 7.75 and agent["cost_usd"] is None and agent["unpriced"] == 1  # the failed call
    (run,) = stats_json(root, "--by", "run")["groups"]
    assert run["run"] == T and run["log"] == "acme/a"


def test_window_since_inclusive_until_exclusive(root):
    small_root(root)
    at = lambda us: format_dt(START + timedelta(microseconds=us))  # noqa: E731
    # c1 and c2 start at 3.5 s: a window from then has both whole, one from a microsecond
    # later has their ends only (counted, with no duration)
    tools = stats_json(root, "--by", "tool", "--since", at(3_500_000))["groups"]
    assert tools[0]["calls"] == 2 and tools[0]["max_s"] == 4.0
    tools = stats_json(root, "--by", "tool", "--since", at(3_500_001))["groups"]
    assert tools[0]["calls"] == 2 and tools[0]["max_s"] is None and tools[0]["failures"] == 1
    # until the failure's own time: it is out, so c1 and c2 are both unended
    tools = stats_json(root, "--by", "tool", "--until", at(4_500_000))["groups"]
    assert tools[0]["calls"] == 0 and tools[0]["unended"] == 2
    p = run_cli("stats", "--since", at(5), "--until", at(5), root=root)
    assert p.returncode == 2 and p.stderr.startswith(b"error: ")


def test_formats(root):
    small_root(root)
    rows = [orjson.loads(x) for x in run_cli("stats", "--by", "tool", "-o", "jsonl", root=root).stdout.splitlines()]
    assert [r["tool"] for r in rows] == ["bash"]
    text = run_cli("stats", "--by", "model", "-o", "csv", root=root).stdout.decode()
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["model", *COLUMNS] and len(table) == 3
    haiku = dict(zip(table[0], table[1], strict=True))
    assert haiku["model"] == HAIKU and haiku["cost_usd"] == "0.0015" and haiku["unended"] == "0"
    gpt = dict(zip(table[0], table[2], strict=True))
    assert gpt["cost_usd"] == "" and gpt["unpriced"] == "1"  # a failed call: its cost is unknown, blank, never 0
    runs = list(csv.reader(io.StringIO(run_cli("stats", "--by", "run", "-o", "csv", root=root).stdout.decode())))
    assert runs[0][:2] == ["run", "log"] and runs[1][:2] == [T, "acme/a"]
    for by in ("agent", "run", "model", "tool", "type"):
        p = run_cli("stats", "--by", by, "-o", "pretty", root=root, env={"COLUMNS": "100"})
        assert p.returncode == 0 and p.stderr == b"" and b"Traceback" not in p.stdout
    pretty = run_cli("stats", "--by", "model", "-o", "pretty", root=root, env={"COLUMNS": "120"}).stdout.decode()
    assert "$0.0015" in pretty and "cost blank: 1 model call" in pretty


def test_group_names_from_data_are_sanitised_in_pretty(root):
    write_root(root, {"acme/a": [
        ("tool_call.started", {"tool": {"name": "evil\x1b]0;pwned\x07", "call": {"id": "c"}}}, 0, T),
        ("tool_call.completed", {"tool": {"call": {"id": "c"}}}, 10, T)]})
    p = run_cli("stats", "--by", "tool", "-o", "pretty", root=root, env={"COLUMNS": "120"})
    assert p.returncode == 0 and b"\x1b" not in p.stdout and b"\\x1b" in p.stdout


def test_an_empty_root_and_patterns(root):
    assert stats_json(root)["groups"] == []
    small_root(root)
    assert stats_json(root, "acme/*", "--by", "tool")["groups"][0]["calls"] == 2
    assert stats_json(root, "nomatch/*", "--by", "tool")["groups"] == []
    p = run_cli("stats", "acme/nope", root=root)
    assert p.returncode == 2 and b"no log" in p.stderr


# ---------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("by", ["tools", "agents", "", "MODEL2"])
def test_an_unknown_by_is_a_usage_error(root, by):
    small_root(root)
    p = run_cli("stats", "--by", by, root=root)
    assert p.returncode == 2 and p.stderr.startswith(b"error: ") and b"--by" in p.stderr and p.stdout == b""
    assert b"Traceback" not in p.stderr


@pytest.mark.parametrize("toml,key", [
    (f'[prices."{HAIKU}"]\ninput_per_mtok = 1.0\n', f'prices."{HAIKU}".output_per_mtok'),
    (f'[prices."{HAIKU}"]\noutput_per_mtok = 5.0\n', f'prices."{HAIKU}".input_per_mtok'),
    (f'[prices."{HAIKU}"]\ninput_per_mtok = "1.0"\noutput_per_mtok = 5.0\n', f'prices."{HAIKU}".input_per_mtok'),
    (f'[prices."{HAIKU}"]\ninput_per_mtok = 1.0\noutput_per_mtok = true\n', f'prices."{HAIKU}".output_per_mtok'),
    (f'[prices."{HAIKU}"]\ninput_per_mtok = -1\noutput_per_mtok = 5\n', f'prices."{HAIKU}".input_per_mtok'),
    (f'[prices."{HAIKU}"]\ninput_per_mtok = 1\noutput_per_mtok = 5\ncache_read_per_mtok = "x"\n',
     f'prices."{HAIKU}".cache_read_per_mtok'),
    (f'[prices."{HAIKU}"]\ninput_per_mtok = 1\noutput_per_mtok = 5\ncache_read_per_mtk = 0.1\n',
     f'prices."{HAIKU}".cache_read_per_mtk'),
    (f'[prices]\n"{HAIKU}" = 3\n', f'prices."{HAIKU}"'),
    ('prices = "cheap"\n', "prices"),
])
def test_a_bad_price_table_names_the_file_and_the_key(tmp_path, toml, key):
    root = tmp_path / "root"
    small_root(root)
    (root / ".wardrik" / "config.toml").write_text(toml)
    p = run_cli("stats", "--by", "model", root=root)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert str(root / ".wardrik" / "config.toml") in err and key in err, err
    assert p.stdout == b""


def test_a_price_table_with_every_field(root):
    small_root(root)
    (root / ".wardrik" / "config.toml").write_text(
        f'deployment = "x"\n[prices."{GPT}"]\ninput_per_mtok = 2\noutput_per_mtok = 8\ncache_read_per_mtok = 0.2\n'
        f'cache_creation_per_mtok = 2.5\n')
    models = {r["model"]: r for r in stats_json(root, "--by", "model")["groups"]}
    assert models[HAIKU]["cost_usd"] is None and models[HAIKU]["unpriced"] == 1  # no longer priced


def test_prices_from_a_file_price_a_root_without_them_as_its_own_config_would(tmp_path):
    """--prices FILE: a remote root has no config.toml; its calls are priced from the file."""
    priced, bare = tmp_path / "priced", tmp_path / "bare"
    small_root(priced)
    small_root(bare)
    (priced / ".wardrik" / "config.toml").write_text(PRICES_TOML)
    (bare / ".wardrik" / "config.toml").unlink(missing_ok=True)
    want = stats_json(priced, "--by", "model")
    assert any(r["cost_usd"] for r in want["groups"])  # the file prices something here
    assert stats_json(bare, "--by", "model") != want
    got = stats_json(bare, "--by", "model", "--prices", str(priced / ".wardrik" / "config.toml"))
    assert got == want
    assert stats_json(bare, "--by", "model") != want  # the priced count's checkpoint is not reused
    (tmp_path / "none.toml").write_text('deployment = "x"\n')
    for bad, says in ((tmp_path / "none.toml", "has no [prices] tables"), (tmp_path / "gone.toml", "cannot read"),
                      (tmp_path, "cannot read")):
        p = run_cli("stats", "--prices", str(bad), root=bare)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("error:") == 1 and says in err and p.stdout == b"", err


# ---------------------------------------------------------------------------------------
# the bounded parts
# ---------------------------------------------------------------------------------------
def test_durations_exact_then_within_alpha():
    rng = random.Random(7)
    d = Durations()
    values = [rng.lognormvariate(0, 2) for _ in range(Durations.EXACT)]
    for v in values:
        d.add(v)
    ranked = sorted(values)
    for p in (0.5, 0.95, 0.99):
        assert d.quantile(p) == ranked[math.ceil(p * len(ranked)) - 1]  # exact so far
    more = [rng.lognormvariate(0, 2) for _ in range(50_000)] + [0.0] * 100
    for v in more:
        d.add(v)
    assert d.values is None and len(d.buckets) < 2000  # the sketch: bounded
    ranked = sorted(values + more)
    for p in (0.01, 0.5, 0.95, 0.99, 1.0):
        exact = ranked[max(1, math.ceil(p * len(ranked))) - 1]
        assert d.quantile(p) == pytest.approx(exact, rel=Durations.ALPHA * 1.01, abs=1e-6), p
    assert d.max == ranked[-1] and d.n == len(ranked)


def test_open_calls_are_bounded():
    c = Counter("tool", max_open=3)
    t = "2026-10-22T09:00:00.000000Z"
    for i in range(10):
        c.add("acme/a", {"type": "wardrik.tool_call.started", "time": t,
                         "data": {"tool": {"name": "bash", "call": {"id": f"c{i}"}}}})
    assert len(c.open) == 3  # the oldest seven were counted unended and forgotten
    c.add("acme/a", {"type": "wardrik.tool_call.completed", "time": t, "data": {"tool": {"call": {"id": "c9"}}}})
    c.add("acme/a", {"type": "wardrik.tool_call.completed", "time": t, "data": {"tool": {"call": {"id": "c0"}}}})
    rows = {r["tool"]: r for r in c.rows()}
    assert rows["bash"]["calls"] == 1 and rows["bash"]["unended"] == 9 and rows["bash"]["max_s"] == 0.0
    assert rows[None]["calls"] == 1 and rows[None]["max_s"] is None  # c0's start was forgotten: no name, no time


def test_ids_that_are_not_strings_do_not_stop_the_count(root):
    write_root(root, {"acme/a": [
        ("tool_call.started", {"tool": {"name": {"odd": 1}, "call": {"id": {"x": [1]}}}}, 0, T),
        ("tool_call.completed", {"tool": {"call": {"id": {"x": [1]}}}}, 1_000_000, T)]})
    (row,) = stats_json(root, "--by", "tool")["groups"]
    assert row["tool"] is None and row["calls"] == 1 and row["max_s"] == 1.0
