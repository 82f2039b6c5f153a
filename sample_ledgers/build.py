"""Rebuild the sample root: `python sample_ledgers/build.py` (run from the repo; overwrites the logs).

A deployment `acme-prod` with four agents whose runs use every kept type of the protocol,
and an audit log. acme/triage is seed 000's checkout-latency investigation, in this format.
Times are fixed so the files only change when this script does (ids are random UUIDv7s).
Every model call reports its token usage (``usage_of``: fixed numbers per message id); acme/digest's
writer also gives ``cost_usd``, the others are priced by config.toml's ``[prices]``.

`python sample_ledgers/build.py --usage` rewrites only the ``message.completed`` lines of the logs
there are, giving them ``usage_of``'s usage and cost (ids, times and traces kept: the README
names runs by id).
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from datetime import datetime, timedelta, UTC
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wardrik_cli.protocol.envelope import GENESIS_HASH, build_event, dumps_line, new_span_id, new_trace_id  # noqa: E402
from wardrik_cli.protocol.catalogue import lookup  # noqa: E402
from wardrik_cli.protocol.times import format_dt  # noqa: E402

DEPLOYMENT = "acme-prod"
MODEL = "anthropic:claude-haiku-4-5"
# US dollars per million tokens (config.toml's [prices] table, and what digest's writer pays).
PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 5.0, "cache_read_per_mtok": 0.1, "cache_creation_per_mtok": 1.25}
CONFIG = f"""deployment = "acme-prod"
retention = "30d"

[prices."{MODEL}"]
{chr(10).join(f"{k} = {v}" for k, v in PRICES.items())}
"""
WRITER_PAYS = ("acme/digest",)  # logs whose writer gives data.cost_usd itself


def usage_of(log_id: str, mid: str) -> tuple[dict, float | None]:
    """A model call's usage (fixed by its message id) and, for WRITER_PAYS logs, its cost."""
    h = int(hashlib.sha256(f"{log_id}/{mid}".encode()).hexdigest()[:8], 16)
    inp = 1800 + h % 6000
    cached = 0 if mid[-1] in "1a" else inp * 3 // 5  # a run's first call writes the cache, the others read it
    written = inp // 2 if not cached else 0
    out = 40 + (h >> 13) % 600
    usage = {"input_tokens": inp, "output_tokens": out}
    if cached:
        usage["cache_read"] = {"input_tokens": cached}
    if written:
        usage["cache_creation"] = {"input_tokens": written}
    if log_id not in WRITER_PAYS:
        return usage, None
    cost = ((inp - cached - written) * PRICES["input_per_mtok"] + cached * PRICES["cache_read_per_mtok"]
            + written * PRICES["cache_creation_per_mtok"] + out * PRICES["output_per_mtok"]) / 1_000_000
    return usage, round(cost, 6)


def with_usage(log_id: str, data: dict) -> dict:
    usage, cost = usage_of(log_id, data["message"]["id"])
    data["usage"] = usage
    if cost is not None:
        data["cost_usd"] = cost
    return data


class Writer:
    def __init__(self, log_id: str, start: datetime):
        self.log_id, self.t, self.seq, self.trace = log_id, start, 0, None
        self.lines: list[bytes] = []

    def ev(self, type_name: str, data: dict, after: float = 1.5, subject: str | None = None) -> None:
        self.t += timedelta(seconds=after)
        et = lookup(type_name)
        if et.name == "run.started":
            self.trace = data.setdefault("run", {}).setdefault("id", new_trace_id())
        trace = self.trace or new_trace_id()
        self.seq += 1
        e = build_event(etype=et, data=data, source=f"wardrik://{DEPLOYMENT}/agents/{self.log_id}",
                        subject=subject or f"agents/{self.log_id}", seq=self.seq, time_str=format_dt(self.t),
                        trace=trace, span=new_span_id())
        self.lines.append(dumps_line(e))
        if et.name in ("run.completed", "run.failed"):
            self.trace = None

    def save(self) -> None:
        p = HERE / (self.log_id + ".jsonl")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(self.lines))


def tool(w: Writer, call_id: str, name: str, args: dict, output: str, fail: bool = False, took: float = 2.0):
    w.ev("tool_call.started", {"tool": {"name": name, "call": {"id": call_id}, "args": args}}, after=0.4)
    if fail:
        w.ev("tool_call.failed", {"tool": {"name": name, "call": {"id": call_id}}, "error": {"message": output}}, after=took)
    else:
        w.ev("tool_call.completed", {"tool": {"name": name, "call": {"id": call_id}}, "output": output}, after=took)


def model(w: Writer, mid: str, text: str, stop: str, took: float = 3.0, reasoning: str | None = None):
    w.ev("message.started", {"message": {"id": mid}, "model": MODEL}, after=0.3)
    if reasoning:
        w.ev("reasoning.completed", {"message": {"id": mid}, "text": reasoning}, after=took / 2)
    w.ev("message.completed", with_usage(w.log_id, {"message": {"id": mid}, "stop_reason": stop, "text": text}),
         after=took)


def triage() -> Writer:
    w = Writer("acme/triage", datetime(2026, 10, 22, 8, 59, 58, tzinfo=UTC))
    task = "Checkout p99 latency spiked overnight. Find the likely cause."
    w.ev("message.received", {"message": {"id": "msg_1"}, "from": "pagerduty", "text": task}, after=0.5)
    w.ev("run.started", {"run": {"message_ids": ["msg_1"]}, "task": task})
    model(w, "m1", "Starting with the latency metrics for checkout.", "tool_use",
          reasoning="p99 alerts usually follow a deploy or a saturated dependency; look at metrics first.")
    tool(w, "t1", "query_metrics", {"service": "checkout", "metric": "latency_p99", "window": "12h"},
         '{"service": "checkout", "p99_ms": {"00:00": 212, "01:00": 208, "02:00": 1840, "03:00": 1910}}')
    model(w, "m2", "p99 jumps from ~210 ms to ~1.8 s between 01:00 and 02:00. Checking deploys.", "tool_use")
    tool(w, "t2", "list_deploys", {"service": "checkout", "since": "2026-10-21T22:00:00Z"},
         '{"service": "checkout", "deploys": [{"version": "v841", "at": "01:55", "change": "db pool 50 -> 10"}]}')
    tool(w, "t3", "search_logs", {"query": "pool exhausted", "service": "payments-db"},
         '{"query": "pool exhausted", "hits": 1412, "first": "01:56:12"}', took=4.0)
    answer = ("Likely cause: deploy v841 at 01:55 shrank the payments-db connection pool from 50 to 10; "
              "'pool exhausted' errors start at 01:56 and p99 rises with them. Roll back v841 or restore the pool size.")
    model(w, "m3", answer, "end_turn", took=5.0)
    w.ev("run.completed", {"answer": answer, "turns": 3}, after=0.2)
    # A second, shorter run the next morning: a follow-up question, a wait on a person.
    w.t = datetime(2026, 11, 27, 7, 30, tzinfo=UTC)
    w.ev("message.received", {"message": {"id": "msg_2"}, "from": "sre-oncall", "text": "Did the rollback fix it?"})
    w.ev("run.started", {"run": {"message_ids": ["msg_2"]}, "task": "Confirm the v841 rollback fixed checkout p99."})
    model(w, "m4", "Checking p99 after the rollback.", "tool_use")
    tool(w, "t4", "query_metrics", {"service": "checkout", "metric": "latency_p99", "window": "2h"},
         '{"service": "checkout", "p99_ms": {"06:00": 205, "07:00": 199}}')
    w.ev("input.requested", {"request": {"id": "req_1", "prompt": "p99 is back to ~200 ms. Close the incident?"}})
    w.ev("input.received", {"request": {"id": "req_1"}, "answer": "yes, close it"}, after=95)
    model(w, "m5", "Closing: p99 back to ~200 ms after rolling back v841.", "end_turn")
    w.ev("run.completed", {"answer": "Rollback of v841 fixed it: checkout p99 is back to ~200 ms. Incident closed."})
    return w


def digest() -> Writer:
    w = Writer("acme/digest", datetime(2026, 11, 20, 6, 0, tzinfo=UTC))
    for day in range(3):
        w.t = datetime(2026, 11, 20 + 3 * day, 6, 0, tzinfo=UTC)
        w.ev("trigger.fired", {"trigger": {"name": "daily"}, "status": "asked"}, subject="triggers/daily")
        w.ev("run.started", {"task": "Write the daily digest of open incidents for #sre."})
        model(w, f"d{day}a", "Collecting open incidents.", "tool_use")
        if day == 1:
            tool(w, f"c{day}", "list_incidents", {"status": "open"}, "upstream timeout after 30s", fail=True, took=30)
            model(w, f"d{day}b", "The incident tracker timed out; retrying once.", "tool_use")
        tool(w, f"c{day}r", "list_incidents", {"status": "open"}, '{"open": [{"id": "INC-2231", "title": "checkout p99"}]}')
        tool(w, f"p{day}", "post_message", {"channel": "#sre", "text": "Open incidents: INC-2231 (checkout p99)"}, '{"ok": true}')
        model(w, f"d{day}c", "Posted the digest to #sre.", "end_turn")
        w.ev("run.completed", {"answer": "Posted the digest: 1 open incident (INC-2231)."})
    return w


def billing() -> Writer:
    w = Writer("acme/billing", datetime(2026, 11, 26, 14, 0, tzinfo=UTC))
    w.ev("message.received", {"message": {"id": "msg_b1"}, "from": "finance", "text": "Reconcile October invoices."})
    w.ev("run.started", {"run": {"message_ids": ["msg_b1"]}, "task": "Reconcile October invoices against payouts."})
    model(w, "b1", "Fetching invoices and payouts.", "tool_use")
    tool(w, "b1t1", "fetch_invoices", {"month": "2026-10"}, '{"count": 1288}')
    tool(w, "b1t2", "fetch_payouts", {"month": "2026-10"}, "permission denied: role billing-ro lacks payouts:read", fail=True)
    model(w, "b2", "I cannot read payouts; stopping.", "end_turn")
    w.ev("run.failed", {"error": {"message": "permission denied: role billing-ro lacks payouts:read"}})
    return w


def support() -> Writer:
    # Still at work: two tool calls running, one message waiting for the next run.
    w = Writer("acme/support", datetime(2026, 11, 29, 22, 10, tzinfo=UTC))
    w.ev("message.received", {"message": {"id": "msg_s1"}, "from": "customer:4411", "text": "My refund never arrived."})
    w.ev("run.started", {"run": {"message_ids": ["msg_s1"]}, "task": "Answer customer 4411 about a missing refund."})
    model(w, "s1", "Looking up the order and the refund.", "tool_use")
    w.ev("tool_call.started", {"tool": {"name": "lookup_order", "call": {"id": "s1t1"}, "args": {"customer": "4411"}}})
    w.ev("tool_call.started", {"tool": {"name": "lookup_refund", "call": {"id": "s1t2"}, "args": {"customer": "4411"}}}, after=0.1)
    w.ev("message.received", {"message": {"id": "msg_s2"}, "from": "customer:5120", "text": "Where is my invoice?"}, after=20)
    return w


def audit() -> None:
    lines, prev = [], GENESIS_HASH
    t = datetime(2026, 10, 20, 16, 0, tzinfo=UTC)
    changes = [
        ("agent.created", "agents/acme/triage", {"agent": {"id": "acme/triage"}, "model": "anthropic:claude-haiku-4-5"}, "alice@acme.io", []),
        ("agent.created", "agents/acme/digest", {"agent": {"id": "acme/digest"}}, "alice@acme.io", []),
        ("trigger.created", "triggers/daily", {"trigger": {"name": "daily", "cron": "0 6 * * *"}, "agent": {"id": "acme/digest"}}, "alice@acme.io", []),
        ("agent.created", "agents/acme/billing", {"agent": {"id": "acme/billing"}}, "bob@acme.io", ["svc:provisioner"]),
        ("agent.configured", "agents/acme/billing", {"agent": {"id": "acme/billing"}, "role": "billing-ro"}, "bob@acme.io", ["svc:provisioner"]),
        ("agent.created", "agents/acme/support", {"agent": {"id": "acme/support"}}, "carol@acme.io", []),
        ("agent.forgotten", "agents/acme/legacy-bot", {"agent": {"id": "acme/legacy-bot"}}, "carol@acme.io", ["sre-oncall", "svc:janitor"]),
    ]
    for seq, (type_name, subject, data, actor, assumed) in enumerate(changes, 1):
        t += timedelta(days=1, minutes=7)
        e = build_event(etype=lookup(type_name), data={**data, "actor": actor, "assumed_by": assumed},
                        source=f"wardrik://{DEPLOYMENT}/audit", subject=subject, seq=seq, time_str=format_dt(t),
                        trace=new_trace_id(), span=new_span_id(), prevhash=prev)
        line = dumps_line(e)
        prev = hashlib.sha256(line).hexdigest()
        lines.append(line)
    p = HERE / ".wardrik" / "audit.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(lines))


def add_usage() -> None:
    """Give the message.completed lines of the logs there are their usage (``--usage``)."""
    import orjson

    for p in sorted((HERE / "acme").glob("*.jsonl")):
        log_id = "acme/" + p.stem
        out = []
        for line in p.read_bytes().splitlines(keepends=True):
            e = orjson.loads(line)
            if e["type"] == "wardrik.message.completed":
                for k in ("usage", "cost_usd"):
                    e["data"].pop(k, None)
                with_usage(log_id, e["data"])
                line = dumps_line(e)
            out.append(line)
        p.write_bytes(b"".join(out))
    (HERE / ".wardrik" / "config.toml").write_text(CONFIG)


def main() -> None:
    if sys.argv[1:] == ["--usage"]:
        add_usage()
        return
    for d in ("acme",):
        shutil.rmtree(HERE / d, ignore_errors=True)
    shutil.rmtree(HERE / ".wardrik", ignore_errors=True)
    for w in (triage(), digest(), billing(), support()):
        w.save()
    audit()
    (HERE / ".wardrik" / "config.toml").write_text(CONFIG)


if __name__ == "__main__":
    main()
