"""Deterministic generator of realistic wardrik logs, for the benchmarks.

Writes ``<root>/<log>.jsonl`` directly in the stored format of CONTRACT.md, without going
through wardrik: one CloudEvents 1.0 object per line, compact JSON (orjson), keys in the order
specversion, id, type, source, subject, time, sequence, traceparent, data; UUIDv7 ids (their
timestamp is the event's time), times non-decreasing with microseconds and ``Z``, 12-digit
sequences from 1.

The content is a stream of agent runs: messages received, ``run.started`` (a new trace whose id
is ``data.run.id``), model calls (``message.started``, ``reasoning.completed``,
``message.completed``), tool calls (``tool_call.started`` then ``tool_call.completed``, or,
rarely, ``tool_call.failed``), waits on a person (``input.requested``/``input.received``),
triggers, and ``run.completed`` or, rarely, ``run.failed``.

Everything comes from one seeded PRNG and fixed parameters, so the same arguments always give
the same bytes (the file is byte-identical from one machine to the next with the same Python).

    python benchmarks/gen_ledger.py --root /tmp/r --log acme/big --mb 200
    python benchmarks/gen_ledger.py --root /tmp/r --log acme/small --events 10
    python benchmarks/gen_ledger.py --batch-out /tmp/batch.jsonl --events 100000

``--batch-out`` writes ``{"type", "data"}`` items (the input of ``wardrik append --batch``)
instead of stored events. ``--validate FILE`` checks a stored log (every line parses, keys in
order, sequences contiguous from 1, times non-decreasing) and prints a summary.
"""
from __future__ import annotations

import argparse
import calendar
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

SEED = 20261022
START = "2026-06-01T00:00:00Z"  # fixed, so runs are comparable; --start overrides
DEPLOYMENT = "acme-prod"
RUN_ENDS = ("run.completed", "run.failed")
KEY_ORDER = ("specversion", "id", "type", "source", "subject", "time", "sequence", "traceparent", "data")

# Fixed shape parameters (probabilities per run / per model turn / per tool call).
P_TRIGGER = 0.25          # a run is started by a trigger rather than by messages
P_INPUT = 0.12            # a model turn ends by asking a person
P_TOOL_FAILED = 0.004     # a tool call fails (rare type for the --types figure)
P_RUN_FAILED = 0.03       # a run fails
MAX_TURNS = 7

_WORDS = (
    "checkout latency p99 spiked overnight deploy rollback connection pool payments database "
    "replica lag queue backlog consumer retry timeout error rate cache miss hit ratio region "
    "shard index migration schema lock contention thread heap memory cpu saturation disk iops "
    "request trace span upstream downstream gateway service mesh sidecar certificate expiry "
    "config flag feature rollout canary baseline alert threshold incident on-call runbook "
    "customer ticket invoice refund subscription webhook signature retry idempotency key batch "
    "job cron scheduler worker pod node cluster autoscaler quota limit throttle budget cost "
    "report summary dashboard metric series window percentile median mean anomaly regression "
    "the a of to in on for with from by after before during because while since likely cause "
    "shows suggests confirms appears seems looks increased decreased dropped rose fell stayed "
    "flat steady noisy sharp gradual sudden correlated unrelated recent previous next current"
).split()

_TOOLS = (
    "query_metrics", "list_deploys", "search_logs", "github__search_issues",
    "github__get_pull_request", "read_file", "run_shell", "http_get", "sql_query",
    "slack__post_message", "jira__create_issue", "kubectl_get",
)
_SERVICES = ("checkout", "payments", "payments-db", "search", "auth", "inventory",
             "notifications", "billing", "gateway", "recommendations")
_METRICS = ("p99_latency_ms", "p50_latency_ms", "error_rate", "rps", "cpu_util",
            "db_connections", "queue_depth", "cache_hit_ratio")
_AGENT_TRIGGERS = ("daily", "hourly-digest", "pagerduty", "github-webhook", "weekly-report")
_ERRORS = ("model call timed out after 120s", "tool budget exhausted (25 calls)",
           "context window exceeded", "upstream 503 from model provider",
           "cancelled by operator")
_TOOL_ERRORS = ("timeout after 30s", "HTTP 502 Bad Gateway", "permission denied",
                "rate limited (429), retry after 20s", "connection reset by peer")


class Gen:
    """One stream of runs; ``events()`` yields (type, data, gap_us) in order."""

    def __init__(self, seed: int = SEED):
        self.r = random.Random(seed)
        r = random.Random(seed + 1)
        # Pools of text built once, so the hot loop only picks from them.
        self.sentences = [
            " ".join(r.choice(_WORDS) for _ in range(r.randint(6, 18))).capitalize() + "."
            for _ in range(400)
        ]
        self.paths = [f"services/{r.choice(_SERVICES)}/{'/'.join(r.choice(_WORDS) for _ in range(2))}.py"
                      for _ in range(200)]
        self.msg = 0
        self.call = 0
        self.req = 0

    def text(self, lo: int, hi: int) -> str:
        r = self.r
        return " ".join(r.choices(self.sentences, k=r.randint(lo, hi)))

    def hex(self, bits: int) -> str:
        return "%0*x" % (bits // 4, self.r.getrandbits(bits))

    # --- tool arguments and outputs (a few hundred bytes each) ----------------------------
    def tool_args(self, name: str) -> dict:
        r = self.r
        if name == "query_metrics":
            return {"service": r.choice(_SERVICES), "metric": r.choice(_METRICS),
                    "window": r.choice(("1h", "6h", "24h", "7d")), "step": r.choice(("1m", "5m", "15m")),
                    "group_by": r.sample(("region", "az", "pod", "route", "status"), 2)}
        if name == "list_deploys":
            return {"service": r.choice(_SERVICES), "since": "24h", "limit": r.randint(5, 20)}
        if name == "search_logs":
            return {"query": " ".join(r.choices(_WORDS, k=r.randint(3, 8))), "service": r.choice(_SERVICES),
                    "level": r.choice(("error", "warn", "info")), "window": "6h", "limit": 50}
        if name.startswith("github__"):
            return {"repo": f"acme/{r.choice(_SERVICES)}", "query": " ".join(r.choices(_WORDS, k=r.randint(2, 6))),
                    "state": r.choice(("open", "closed", "all")), "number": r.randint(100, 9999)}
        if name == "read_file":
            return {"path": r.choice(self.paths), "start_line": r.randint(1, 400), "max_lines": 80}
        if name == "run_shell":
            return {"cmd": f"grep -rn {r.choice(_WORDS)!r} {r.choice(self.paths)} | head -n 40", "timeout_s": 30}
        if name == "http_get":
            return {"url": f"https://{r.choice(_SERVICES)}.internal.acme.dev/healthz?verbose=1",
                    "headers": {"accept": "application/json"}}
        if name == "sql_query":
            return {"database": "analytics", "sql": f"SELECT date_trunc('hour', ts) AS h, count(*) FROM "
                    f"{r.choice(_WORDS)}_events WHERE service = '{r.choice(_SERVICES)}' GROUP BY 1 ORDER BY 1 DESC LIMIT 48"}
        return {"channel": "#" + r.choice(_SERVICES), "text": self.text(1, 2)}

    # hooks a generator with other proportions overrides (gen_review.ReviewGen)
    p_tool_failed = P_TOOL_FAILED

    def reasoning(self) -> str:
        return self.text(1, 4)

    def pick_tool(self) -> str:
        return self.r.choice(_TOOLS)

    def tool_error(self) -> str:
        return self.r.choice(_TOOL_ERRORS)

    def tool_output(self, name: str) -> str:
        r = self.r
        if name == "query_metrics":
            base = r.randint(50, 400)
            pts = [[1792659600 + 300 * i, round(base * (1 + r.random() * (3 if i > 14 else 0.2)), 1)]
                   for i in range(r.randint(12, 40))]
            return orjson.dumps({"metric": r.choice(_METRICS), "unit": "ms", "points": pts}).decode()
        if name == "list_deploys":
            return orjson.dumps({"deploys": [
                {"version": f"v{r.randint(700, 999)}", "at": f"2026-10-2{r.randint(0, 9)}T0{r.randint(0, 9)}:{r.randint(10, 59)}:00Z",
                 "author": r.choice(("ana", "bo", "chen", "dmitri", "eve")), "change": self.text(1, 1)}
                for _ in range(r.randint(2, 5))]}).decode()
        if name in ("search_logs", "run_shell", "read_file"):
            return "\n".join(f"{r.randint(1, 999):>4}: {s}" for s in r.choices(self.sentences, k=r.randint(3, 9)))
        return orjson.dumps({"status": r.choice((200, 200, 200, 404)), "items": r.randint(0, 40),
                             "body": self.text(2, 6)}).decode()

    # --- the stream -----------------------------------------------------------------------
    def events(self):
        """Yield (type, data, gap_us, trace_or_None, opens_run) forever; trace is the run's."""
        r = self.r
        while True:
            trace = self.hex(128)
            msg_ids = []
            if r.random() < P_TRIGGER:
                yield ("trigger.fired", {"trigger": {"name": r.choice(_AGENT_TRIGGERS)},
                                         "status": "asked", "schedule": r.choice(("0 9 * * *", "@hourly", "webhook"))},
                       r.randint(30_000_000, 900_000_000), None, False)
            for _ in range(r.choice((1, 1, 1, 2))):
                self.msg += 1
                mid = f"msg_{self.msg}"
                msg_ids.append(mid)
                yield ("message.received", {"message": {"id": mid, "role": "user",
                                                        "from": r.choice(("slack:U024BE7LH", "email:ops@acme.dev", "api"))},
                                            "text": self.text(1, 3)},
                       r.randint(1_000_000, 600_000_000), None, False)
            yield ("run.started", {"run": {"id": trace, "message_ids": msg_ids}, "task": self.text(1, 3),
                                   "model": "anthropic:claude-haiku-4-5"},
                   r.randint(50_000, 2_000_000), trace, True)
            failed = r.random() < P_RUN_FAILED
            turns = r.randint(1, MAX_TURNS)
            for turn in range(1, turns + 1):
                self.msg += 1
                mid = f"msg_{self.msg}"
                last = turn == turns
                yield ("message.started", {"message": {"id": mid, "turn": turn}}, r.randint(10_000, 300_000), trace, False)
                if r.random() < 0.6:
                    yield ("reasoning.completed", {"message": {"id": mid}, "text": self.reasoning()},
                           r.randint(500_000, 6_000_000), trace, False)
                if failed and last:
                    yield ("run.failed", {"error": {"message": r.choice(_ERRORS), "turn": turn}},
                           r.randint(100_000, 30_000_000), trace, False)
                    break
                calls = [] if last else [self.pick_tool() for _ in range(r.choice((1, 1, 2, 3)))]
                yield ("message.completed", {"message": {"id": mid}, "stop_reason": "tool_use" if calls else "end_turn",
                                             "text": self.text(1, 3),
                                             "usage": {"input_tokens": r.randint(800, 40_000), "output_tokens": r.randint(20, 900)}},
                       r.randint(300_000, 8_000_000), trace, False)
                for name in calls:
                    self.call += 1
                    cid = f"call_{self.call}"
                    yield ("tool_call.started", {"tool": {"name": name, "call": {"id": cid}, "args": self.tool_args(name)}},
                           r.randint(5_000, 200_000), trace, False)
                    if r.random() < self.p_tool_failed:
                        yield ("tool_call.failed", {"tool": {"name": name, "call": {"id": cid}},
                                                    "error": {"message": self.tool_error()}},
                               r.randint(100_000, 30_000_000), trace, False)
                    else:
                        yield ("tool_call.completed", {"tool": {"name": name, "call": {"id": cid}},
                                                       "output": self.tool_output(name)},
                               r.randint(50_000, 5_000_000), trace, False)
                if not last and r.random() < P_INPUT:
                    self.req += 1
                    rid = f"req_{self.req}"
                    yield ("input.requested", {"request": {"id": rid}, "prompt": self.text(1, 2)},
                           r.randint(10_000, 500_000), trace, False)
                    yield ("input.received", {"request": {"id": rid}, "answer": self.text(1, 1),
                                              "by": r.choice(("ana@acme.dev", "bo@acme.dev"))},
                           r.randint(5_000_000, 1_800_000_000), trace, False)
                if last:
                    yield ("run.completed", {"answer": self.text(1, 3), "turns": turn},
                           r.randint(10_000, 500_000), trace, False)


def parse_start(s: str) -> int:
    """RFC 3339 'YYYY-MM-DDTHH:MM:SSZ' -> microseconds since the epoch."""
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) * 1_000_000


def write_log(path: Path, log: str, *, mb: float | None, events: int | None, start: str = START,
              seed: int = SEED) -> tuple[int, int]:
    """Write the log; return (events, bytes). Stops after ``events`` events, or at the end of
    the run during which the file reaches ``mb`` megabytes (10**6 bytes)."""
    gen = Gen(seed)
    r = gen.r
    source = f"wardrik://{DEPLOYMENT}/agents/{log}".encode()
    subject = f"agents/{log}".encode()
    head_src = b'{"specversion":"1.0","id":"'
    limit_bytes = int(mb * 1_000_000) if mb is not None else None
    t_us = parse_start(start)
    sec_cache: dict[int, bytes] = {}
    seq = 0
    total = 0
    buf: list[bytes] = []
    buf_len = 0
    tmp = path.with_name(path.name + ".gen-tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as f:
        for etype, data, gap, run_trace, _opens in gen.events():
            if events is not None and seq >= events:
                break
            seq += 1
            t_us += gap
            s, us = divmod(t_us, 1_000_000)
            pre = sec_cache.get(s)
            if pre is None:
                sec_cache.clear()
                pre = sec_cache[s] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)).encode()
            ms = t_us // 1000
            rnd = r.getrandbits(74)
            uid = "%012x7%03x%x%015x" % (ms, rnd >> 62, 8 | ((rnd >> 60) & 3), rnd & ((1 << 60) - 1))
            uid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
            tr = run_trace or gen.hex(128)
            line = b"".join((
                head_src, uid.encode(), b'","type":"wardrik.', etype.encode(), b'","source":"', source,
                b'","subject":"', subject, b'","time":"', pre, b".%06dZ" % us, b'","sequence":"%012d"' % seq,
                b',"traceparent":"00-', tr.encode(), b"-", gen.hex(64).encode(), b'-01","data":',
                orjson.dumps(data), b"}\n",
            ))
            buf.append(line)
            buf_len += len(line)
            if buf_len >= 4 << 20:
                f.write(b"".join(buf))
                total += buf_len
                buf, buf_len = [], 0
            if limit_bytes is not None and total + buf_len >= limit_bytes and etype in RUN_ENDS:
                break
        f.write(b"".join(buf))
        total += buf_len
    os.replace(tmp, path)
    return seq, total


def write_batch(path: Path, n: int, seed: int = SEED + 7) -> tuple[int, int]:
    """Write n ``{"type", "data"}`` items (short type names, as a user would) for append --batch."""
    gen = Gen(seed)
    out = []
    for i, (etype, data, _gap, _trace, _opens) in enumerate(gen.events()):
        if i >= n:
            break
        out.append(orjson.dumps({"type": etype, "data": data}) + b"\n")
    blob = b"".join(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return n, len(blob)


def validate(path: Path) -> dict:
    """Check a stored log: parses, key order, contiguous sequences from 1, non-decreasing times."""
    seq = 0
    last_time = ""
    types: Counter = Counter()
    sizes = []
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith(b"\n"):
                raise SystemExit(f"{path}:{n}: no trailing newline")
            ev = orjson.loads(line)
            if tuple(ev) != KEY_ORDER:
                raise SystemExit(f"{path}:{n}: keys {tuple(ev)}")
            if orjson.dumps(ev) + b"\n" != line:
                raise SystemExit(f"{path}:{n}: not compact orjson")
            seq += 1
            if ev["sequence"] != "%012d" % seq:
                raise SystemExit(f"{path}:{n}: sequence {ev['sequence']} != {seq}")
            t = ev["time"]
            if len(t) != 27 or not t.endswith("Z") or t < last_time:
                raise SystemExit(f"{path}:{n}: time {t} after {last_time}")
            last_time = t
            if ev["id"][14] != "7" or ev["id"][19] not in "89ab" or len(ev["id"]) != 36:
                raise SystemExit(f"{path}:{n}: id {ev['id']}")
            if not isinstance(ev["data"], dict):
                raise SystemExit(f"{path}:{n}: data not an object")
            types[ev["type"]] += 1
            sizes.append(len(line))
    sizes.sort()
    return {"events": seq, "bytes": sum(sizes), "min": sizes[0] if sizes else 0,
            "median": sizes[len(sizes) // 2] if sizes else 0, "max": sizes[-1] if sizes else 0,
            "p01": sizes[len(sizes) // 100] if sizes else 0, "p99": sizes[len(sizes) * 99 // 100] if sizes else 0,
            "last_time": last_time, "types": dict(types.most_common())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, help="root directory; the log is <root>/<log>.jsonl")
    ap.add_argument("--log", default="acme/big", help="log id (default acme/big)")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--mb", type=float, help="stop at the end of the run that reaches this size (10**6 bytes)")
    size.add_argument("--events", type=int, help="write exactly this many events")
    ap.add_argument("--start", default=START, help=f"time of the first event (default {START})")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--batch-out", type=Path, help="write --events N {type,data} items for append --batch instead")
    ap.add_argument("--validate", type=Path, metavar="FILE", help="validate a stored log and print a summary")
    a = ap.parse_args(argv)
    if a.validate:
        sys.stdout.buffer.write(orjson.dumps(validate(a.validate), option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    t0 = time.perf_counter()
    if a.batch_out:
        if a.events is None:
            ap.error("--batch-out needs --events N")
        n, b = write_batch(a.batch_out, a.events)
        where = a.batch_out
    else:
        if a.root is None or (a.mb is None and a.events is None):
            ap.error("give --root and one of --mb / --events (or --batch-out / --validate)")
        where = a.root / (a.log + ".jsonl")
        n, b = write_log(where, a.log, mb=a.mb, events=a.events, start=a.start, seed=a.seed)
    print(f"{where}: {n} events, {b} bytes in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
