"""Deterministic fleets of agent logs for the ``review`` benchmark group (``bench_review.py``).

The events are ``gen_ledger.py``'s (same shapes, same text pools, same stored format: compact
orjson CloudEvents with keys in contract order, UUIDv7 ids, non-decreasing microsecond times,
12-digit sequences from 1), with the probabilities an incident review needs to find something
rare in a big fleet:

- ``wardrik.tool_call.failed`` is ~1% of events (a tool call fails with probability 0.045;
  gen_ledger's 0.004 gives ~0.1%);
- ``pool exhausted`` occurs in ~1% of events, always inside a string value of ``data``: a line of
  a log-search/shell/file tool output (with the ``\\n`` of such outputs around it), a sentence
  of a reasoning text, or a failed tool's error message;
- the tool ``pagerduty__get_incident`` is ~1% of events (picked for ~2.4% of tool calls; its
  started and completed/failed events both carry ``data.tool.name``);
- a few sentences of the text pool hold double quotes and non-ASCII characters, so, with the
  ``\\n``-joined and JSON-in-a-string tool outputs of gen_ledger, about a fifth of the lines hold
  a JSON escape (``\\n``, ``\\"``); the rest have none.

Every log of a fleet has its own seed (its index) and starts at its own offset within the first
hour after START, so logs interleave by time as a fleet's do. Logs stop at the first event that
takes them to ``max_bytes`` (mid-run, like a live agent's) or after ``events`` events.

    python benchmarks/gen_review.py --root /tmp/r --prefix team/agent- --logs 4 --mb 250
    python benchmarks/gen_review.py --root /tmp/r --prefix team/agent- --logs 200 --events 2500
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_ledger import (  # noqa: E402
    _SERVICES,
    _TOOL_ERRORS,
    _TOOLS,
    DEPLOYMENT,
    SEED,
    START,
    Gen,
    parse_start,
)

RARE_TYPE = "tool_call.failed"
LITERAL = "pool exhausted"
RARE_TOOL = "pagerduty__get_incident"

P_TOOL_FAILED = 0.045       # per tool call -> ~1% of events
P_RARE_TOOL = 0.024         # per tool call -> ~1% of events (2 events per call)
P_LITERAL_OUTPUT = 0.12     # per log-like tool output (search_logs, run_shell, read_file)
P_LITERAL_REASONING = 0.03  # per reasoning text
P_LITERAL_TOOL_ERROR = 0.10  # per failed tool call

_LOG_TOOLS = ("search_logs", "run_shell", "read_file")
_LITERAL_LINES = (
    "ERROR hikari: HikariPool-1 - connection pool exhausted (50/50 in use, 212 waiting)",
    "WARN  pgbouncer: pool exhausted for db=payments user=app, client queued 30s",
    "ERROR redis: connection pool exhausted, max_connections=64",
)
_LITERAL_SENTENCES = (
    "The payments-db connection pool exhausted right after the deploy, which explains the timeouts.",
    "Errors say \"pool exhausted\"; the worker pool was resized from 64 to 16 yesterday.",
)
_QUOTED_SENTENCES = (
    'Customer wrote: "checkout is down \u2014 again" at 09:14.',
    'The alert says "p99 > 2000ms" for route "/v1/pay".',
    "Caf\u00e9 region eu-west-3 shows the same \u2192 likely shared cause.",
    'Runbook step 4: "drain the node, then cordon".',
    "Latency rose \u00b1 40% (\u2248 1.4\u00d7 baseline) after the rollout.",
    'Ticket title: "Refund stuck in \'pending\' for 3 days".',
    "Na\u00efve retry loop in the webhook consumer doubles the load.",
    'Deploy note: "feature flag checkout.v2 at 50%".',
    'Slack: "anyone else seeing 502s from the gateway?"',
    "Gr\u00fc\u00dfe from the on-call: the queue backlog is draining now.",
)


class ReviewGen(Gen):
    """gen_ledger's Gen with the review probabilities; the text pools are built once per process
    and only the PRNG is reseeded for each log (``reset``)."""

    def __init__(self) -> None:
        super().__init__(SEED)
        self.sentences = self.sentences + list(_QUOTED_SENTENCES)

    def reset(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.msg = self.call = self.req = 0

    def reasoning(self) -> str:
        t = self.text(1, 4)
        if self.r.random() < P_LITERAL_REASONING:
            t += " " + self.r.choice(_LITERAL_SENTENCES)
        return t

    def tool_args(self, name: str) -> dict:
        if name == RARE_TOOL:
            r = self.r
            return {"incident": f"P{r.randint(100000, 999999)}", "include": ["timeline", "alerts", "notes"],
                    "service": r.choice(_SERVICES)}
        return super().tool_args(name)

    def tool_output(self, name: str) -> str:
        r = self.r
        if name == RARE_TOOL:
            return orjson.dumps({"status": r.choice(("triggered", "acknowledged", "resolved")),
                                 "urgency": r.choice(("high", "low")), "title": self.text(1, 1),
                                 "timeline": [{"at": f"2026-10-22T0{r.randint(0, 9)}:{r.randint(10, 59)}:00Z",
                                               "note": self.text(1, 1)} for _ in range(r.randint(1, 3))]}).decode()
        out = super().tool_output(name)
        if name in _LOG_TOOLS and r.random() < P_LITERAL_OUTPUT:
            lines = out.split("\n")
            lines.insert(r.randint(0, len(lines)), f"{r.randint(1, 999):>4}: {r.choice(_LITERAL_LINES)}")
            out = "\n".join(lines)
        return out

    def tool_error(self) -> str:
        r = self.r
        if r.random() < P_LITERAL_TOOL_ERROR:
            return f"connection pool exhausted ({r.randint(20, 64)} in use)"
        return r.choice(_TOOL_ERRORS)

    p_tool_failed = P_TOOL_FAILED

    def pick_tool(self) -> str:
        r = self.r
        return RARE_TOOL if r.random() < P_RARE_TOOL else r.choice(_TOOLS)


_GEN: ReviewGen | None = None


def write_log(path: Path, log: str, seed: int, *, max_bytes: int | None = None, events: int | None = None,
              start_us: int | None = None) -> dict:
    """Write one log; return its counts: events, bytes, rare (tool_call.failed), literal (lines
    holding LITERAL), tool (events naming RARE_TOOL), run (the trace id of a run of at least 10
    events from the middle of the log) and run_events (its events)."""
    global _GEN
    if _GEN is None:
        _GEN = ReviewGen()
    gen = _GEN
    gen.reset(seed)
    r = gen.r
    source = f"wardrik://{DEPLOYMENT}/agents/{log}".encode()
    subject = f"agents/{log}".encode()
    head = b'{"specversion":"1.0","id":"'
    lit = LITERAL.encode()
    tool_key = b'"name":"%s"' % RARE_TOOL.encode()
    t_us = parse_start(START) + (seed * 7919 % 3600) * 1_000_000 if start_us is None else start_us
    sec_cache: dict[int, bytes] = {}
    seq = total = rare = literal = tool = 0
    runs: list[str] = []
    run_events: dict[str, int] = {}
    buf: list[bytes] = []
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".gen-tmp")
    with open(tmp, "wb") as f:
        for etype, data, gap, run_trace, opens in gen.events():
            if events is not None and seq >= events:
                break
            if max_bytes is not None and total >= max_bytes:
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
            if opens:
                runs.append(tr)
            if run_trace:
                run_events[run_trace] = run_events.get(run_trace, 0) + 1
            payload = orjson.dumps(data)
            line = b"".join((
                head, uid.encode(), b'","type":"wardrik.', etype.encode(), b'","source":"', source,
                b'","subject":"', subject, b'","time":"', pre, b".%06dZ" % us, b'","sequence":"%012d"' % seq,
                b',"traceparent":"00-', tr.encode(), b"-", gen.hex(64).encode(), b'-01","data":', payload, b"}\n",
            ))
            rare += etype == RARE_TYPE
            literal += lit in payload
            tool += tool_key in payload
            buf.append(line)
            total += len(line)
            if len(buf) >= 8192:
                f.write(b"".join(buf))
                buf.clear()
        f.write(b"".join(buf))
    os.replace(tmp, path)
    # The run for --run: the first from the middle of the log on with at least 10 events.
    mid = len(runs) // 2
    run = next((t for t in runs[mid:] if run_events[t] >= 10), runs[mid] if runs else "")
    return {"events": seq, "bytes": total, "rare": rare, "literal": literal, "tool": tool, "run": run,
            "run_events": run_events.get(run, 0)}


def log_id(prefix: str, i: int, width: int) -> str:
    return f"{prefix}{i:0{width}d}"


def _write_chunk(args: tuple) -> list[dict]:
    root, prefix, width, idxs, max_bytes, events = args
    out = []
    for i in idxs:
        log = log_id(prefix, i, width)
        out.append(write_log(Path(root) / (log + ".jsonl"), log, i, max_bytes=max_bytes, events=events))
    return out


def write_fleet(root: Path, prefix: str, logs: int, *, max_bytes: int | None = None, events: int | None = None,
                jobs: int | None = None) -> dict:
    """Write logs ``prefix0001`` .. (zero-padded to at least 4 digits) in parallel; return the
    totals and each log's counts (in log order)."""
    width = max(4, len(str(logs)))
    jobs = max(1, min(jobs or os.cpu_count() or 1, logs))
    idxs = list(range(1, logs + 1))
    chunks = [idxs[k::jobs] for k in range(jobs)]
    per: dict[int, dict] = {}
    if jobs == 1:
        results = [_write_chunk((str(root), prefix, width, idxs, max_bytes, events))]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(_write_chunk, [(str(root), prefix, width, c, max_bytes, events) for c in chunks]))
    for c, res in zip(chunks if jobs > 1 else [idxs], results, strict=True):
        for i, d in zip(c, res, strict=True):
            d["log"] = log_id(prefix, i, width)
            per[i] = d
    logs_out = [per[i] for i in idxs]
    tot = {k: sum(d[k] for d in logs_out) for k in ("events", "bytes", "rare", "literal", "tool")}
    return {**tot, "logs": logs_out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--prefix", default="team/agent-", help="log ids are PREFIX0001, PREFIX0002, ...")
    ap.add_argument("--logs", type=int, required=True)
    size = ap.add_mutually_exclusive_group(required=True)
    size.add_argument("--mb", type=float, help="bytes per log (10**6), stopping at the first event past it")
    size.add_argument("--events", type=int, help="events per log")
    ap.add_argument("--jobs", type=int, help="processes (default: one per CPU)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = write_fleet(a.root, a.prefix, a.logs, max_bytes=int(a.mb * 1e6) if a.mb else None, events=a.events,
                      jobs=a.jobs)
    n = res["events"]
    print(f"{a.root}: {a.logs} logs, {n} events, {res['bytes']} bytes in {time.perf_counter() - t0:.1f}s; "
          f"{RARE_TYPE} {res['rare'] / n:.2%}, {LITERAL!r} {res['literal'] / n:.2%}, "
          f"{RARE_TOOL} {res['tool'] / n:.2%}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
