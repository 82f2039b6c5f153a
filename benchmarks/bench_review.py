"""The ``review`` group of ``run.py``: finding the rare thing in a fleet's logs, in CPU time.

    python benchmarks/run.py --only review           # ~2.5 GB of data, under 10 minutes on 2 cores
    python benchmarks/run.py --only review --quick   # ~90 MB, a smoke run

Data (``gen_review.py``: gen_ledger's events with ~1% each of ``tool_call.failed``, events
holding ``pool exhausted`` in a data string, and events of the tool ``pagerduty__get_incident``;
fixed seeds; generated once under ``<workdir>/review/`` and reused while the generators and
parameters are unchanged):

- A: 1 GB over 4 logs (250 MB each);  B: 1 GB over 1,000 logs (1 MB each);
- C: 10,000 logs of ~20 KB;            D: 200 logs of 2,500 events.

Figures (every wardrik command is ``wardrik --root R ...`` with the explicit pattern ``'*'``):

- A and B, for each of ``-t tool_call.failed``, ``--grep 'pool exhausted'``, ``--run PREFIX``
  (8 hex digits of one run's trace id) and ``--where data.tool.name=pagerduty__get_incident``:
  CPU time of ``page '*' --all -F jsonl FILTER`` (stdout /dev/null) against ``grep -F -c -h
  LITERAL FILES`` (the filter's literal: the type's ``"type":"..."``, the text, the
  ``"traceparent":"00-PREFIX`` or the ``"name":"..."``; at most 1.5x) and against ``jq -c
  'select(...)' FILES`` (the same selection; at most 0.15x). grep and jq write to a pipe this
  process reads (GNU grep stops at its first match when its stdout is /dev/null). Correctness,
  once per figure: wardrik prints as many events as jq selects, else the row says FAIL.
- C: ``page '*' --all -F jsonl`` (every event) against ``cat`` of the 10,000 files (at most 5x),
  its peak RSS (at most 120 MB), and, info only, its CPU time with stdout a pipe and
  ``PYTHONUNBUFFERED=1`` relative to the same without it.
- D: ``tail -n 2000 '*' -F jsonl``: peak RSS (at most 120 MB), and CPU time against ``cat`` of a
  file holding exactly the bytes of those 2,000 events, i.e. the cost of reading and writing
  what tail must print (at most 3x; the note gives the start-up floor: the same tail on an
  empty root).

CPU time is user + system time of the child and its waited-for descendants, from ``os.wait4``;
each figure takes the median of several runs after one untimed run that is also the
correctness check and the page-cache warm-up, wardrik and its baseline taking turns. The number
of runs shrinks to fit a time budget when a command is slow (jq on 1 GB takes 10-40 s and runs
once in the full run); the note gives the counts. A command that fails makes its figure an
ERROR row naming the command, its exit status and its first ``error:`` line; the run goes on.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from gen_review import LITERAL, RARE_TOOL, RARE_TYPE, write_fleet

HERE = Path(__file__).resolve().parent
GROUP = "review"
PATTERN = "*"
TAIL_N = 2000
MB = 1_000_000
RSS_LIMIT = 120 * MB


@dataclass(frozen=True)
class Spec:
    name: str
    logs: int
    max_bytes: int | None = None
    events: int | None = None
    prefix: str = "team/agent-"

    @property
    def tag(self) -> str:
        size = f"{self.max_bytes / MB:g}MB" if self.max_bytes else f"{self.events}ev"
        return f"{self.name}-{self.logs}x{size}"


FULL = {"A": Spec("A", 4, max_bytes=250 * MB), "B": Spec("B", 1000, max_bytes=1 * MB),
        "C": Spec("C", 10_000, max_bytes=20_000), "D": Spec("D", 200, events=2500)}
QUICK = {"A": Spec("A", 4, max_bytes=5 * MB), "B": Spec("B", 100, max_bytes=200_000),
         "C": Spec("C", 1000, max_bytes=20_000), "D": Spec("D", 20, events=2500)}


@dataclass
class DataSet:
    spec: Spec
    root: Path
    files: list[str]
    meta: dict

    @property
    def label(self) -> str:
        return f"{self.spec.name} {self.spec.logs:,} logs"


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------
def _gen_hash() -> str:
    h = hashlib.sha256()
    for f in ("gen_ledger.py", "gen_review.py"):
        h.update((HERE / f).read_bytes())
    return h.hexdigest()[:16]


def _expected_tail(root: Path, logs: list[str], n: int) -> bytes:
    """The last n events across the logs by (time, log id, sequence), oldest first, as stored.
    Each log's times are non-decreasing, so they are among the last n lines of each log."""
    cands = []
    for log in logs:
        with open(root / (log + ".jsonl"), "rb") as f:
            lines = f.read().splitlines(keepends=True)[-n:]
        for line in lines:
            i = line.index(b'"time":"') + 8
            j = line.index(b'"sequence":"') + 12
            cands.append((line[i:i + 27], log, line[j:j + 12], line))
    return b"".join(c[3] for c in sorted(heapq.nlargest(n, cands)))


def ensure(ctx, spec: Spec) -> DataSet:
    base = ctx.workdir / "review" / spec.tag
    root = base / "root"
    meta_path = base / "meta.json"
    want = {"gen": _gen_hash(), "spec": [spec.name, spec.logs, spec.max_bytes, spec.events, spec.prefix],
            "tail": TAIL_N if spec.name == "D" else None}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        files = [str(root / (d["log"] + ".jsonl")) for d in meta.get("logs", [])]
        try:
            size = sum(os.stat(f).st_size for f in files)
        except OSError:
            size = -1
        tail_ok = spec.name != "D" or (base / "expected-tail.jsonl").exists()
        if meta.get("want") == want and size == meta.get("bytes") and tail_ok:
            meta["generated"] = "reused"
            return DataSet(spec, root, files, meta)
    need = int(spec.logs * (spec.max_bytes or spec.events * 700) * 1.1)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    free = shutil.disk_usage(base).free
    if free < need:
        raise SystemExit(f"error: data set {spec.tag} needs ~{need / MB:,.0f} MB; {base} has {free / MB:,.0f} MB free "
                         "(give --workdir elsewhere)")
    ctx.say(f"{GROUP}: generating {spec.tag} ({spec.logs:,} logs, ~{need / 1.1 / MB:,.0f} MB) in {root}")
    t0 = time.perf_counter()
    meta = write_fleet(root, spec.prefix, spec.logs, max_bytes=spec.max_bytes, events=spec.events)
    if spec.name == "D":
        (base / "expected-tail.jsonl").write_bytes(_expected_tail(root, [d["log"] for d in meta["logs"]], TAIL_N))
    meta["want"] = want
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    meta_path.write_text(json.dumps(meta))
    meta["generated"] = f"generated in {meta['seconds']:.0f}s"
    return DataSet(spec, root, [str(root / (d["log"] + ".jsonl")) for d in meta["logs"]], meta)


# --------------------------------------------------------------------------------------------
# Measuring: CPU time of the child (user + sys, from os.wait4)
# --------------------------------------------------------------------------------------------
@dataclass
class Run:
    cpu: float
    wall: float
    lines: int
    out: bytes | None


def show(cmd: Sequence[str]) -> str:
    """The command for a report, a long list of files shortened to the first and a count."""
    files = [a for a in cmd if a.endswith(".jsonl")]
    if len(files) <= 3:
        return shlex.join(cmd)
    rest = [a for a in cmd if not a.endswith(".jsonl")]
    return f"{shlex.join(rest)} {shlex.quote(files[0])} ... ({len(files):,} files)"


def first_error(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("error:"):
            return ln
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1]
    return lines[0] if lines else "(no stderr)"


class Measure:
    def __init__(self, h: ModuleType):
        self.h = h

    def run(self, cmd: Sequence[str], *, pipe: bool = False, keep: bool = False, env: dict | None = None,
            ok: tuple[int, ...] = (0,)) -> Run:
        """Run cmd once, stdout to /dev/null (or to a pipe read here, its lines counted, kept if
        ``keep``); return its CPU time. Raise the harness's CommandFailed on a bad exit."""
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if pipe else subprocess.DEVNULL,
                                 stderr=err, env=self.h.ENV if env is None else env)
            lines, chunks = 0, []
            if pipe:
                assert p.stdout is not None
                while chunk := p.stdout.read(1 << 20):
                    lines += chunk.count(b"\n")
                    if keep:
                        chunks.append(chunk)
                p.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            p.returncode = code = os.waitstatus_to_exitcode(status)
            cpu = ru.ru_utime + ru.ru_stime
            if self.h.VERBOSE:
                print(f"    cpu {cpu * 1000:9.1f} ms  wall {wall * 1000:9.1f} ms  {show(cmd)}", file=sys.stderr, flush=True)
            if code not in ok:
                err.seek(0)
                raise self.h.CommandFailed(cmd, code, err.read())
        return Run(cpu, wall, lines, b"".join(chunks) if keep else None)

    def turns(self, cmds: dict[str, tuple[Sequence[str], dict]], reps: int) -> dict[str, list[float]]:
        """CPU times of several commands, taking turns, reps times each (no warm-up: the caller's
        check runs are it). cmds: name -> (argv, keyword arguments of run)."""
        out: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(reps):
            for name, (cmd, kw) in cmds.items():
                out[name].append(self.run(cmd, **kw).cpu)
        return out


def fit(n: int, first: float, budget: float) -> int:
    """Runs to take: n, fewer when one run costs more than budget / n (at least 1)."""
    return max(1, min(n, int(budget // max(first, 1e-3))))


def med(xs: list[float]) -> float:
    return statistics.median(xs)


# --------------------------------------------------------------------------------------------
# The group
# --------------------------------------------------------------------------------------------
def bench(ctx, h: ModuleType) -> list:
    """The group's rows; ``h`` is the harness (run.py): its Row, CommandFailed, peak_rss, ENV."""
    m = Measure(h)
    Row = h.Row
    fmt = h.fmt_s
    specs = QUICK if ctx.quick else FULL
    budget = 5.0 if ctx.quick else 20.0      # seconds of timed runs per comparison
    jq_budget = 4.0 if ctx.quick else 10.0   # seconds of jq runs per figure beyond the check run
    rows: list = []

    def runs_for(n_full: int, n_quick: int, first: float, budget: float) -> int:
        """--repeats if given, else n (full or quick), fewer when the first run was slow."""
        if ctx.repeats is not None:
            return ctx.repeats
        return fit(n_quick if ctx.quick else n_full, first, budget)

    def error_row(figure: str, e, baseline: str = "-", target: str = "-") -> Row:
        return Row(GROUP, figure, wardrik="ERROR", baseline=baseline, target=target, result="ERROR",
                   note=f"$ {show(e.cmd)}  -> exit {e.code}: {first_error(e.stderr)}")

    def ratio(figure: str, a: list[float], b: list[float], limit: float | None, note: str,
              fail: bool = False) -> Row:
        ma, mb = med(a), med(b)
        r = ma / mb if mb > 0 else float("inf")
        if fail:
            result = "FAIL"
        elif limit is None:
            result = "info"
        else:
            result = "PASS" if r <= limit else "MISS"
        return Row(GROUP, figure, fmt(ma), fmt(mb), f"{r:.2f}x", "-" if limit is None else f"<= {limit:g}x",
                   result, note, raw={"wardrik_cpu_s": a, "baseline_cpu_s": b, "ratio": r, "limit": limit})

    def guard(figure: str, fn: Callable[[], list]) -> list:
        ctx.say(f"{GROUP}: {figure}")
        try:
            return fn()
        except h.CommandFailed as e:
            return [error_row(figure, e)]

    # ---- A and B: rare things in 1 GB ----------------------------------------------------
    def filters(ds: DataSet) -> list:
        mid = ds.meta["logs"][len(ds.meta["logs"]) // 2]
        prefix = mid["run"][:8]
        ctx.info.append(f"review {ds.spec.name}: --run {prefix} is run {mid['run']} of {mid['log']} "
                        f"({mid['run_events']} events)")
        cases = [
            (f"-t {RARE_TYPE}", ["-t", RARE_TYPE], f'select(.type=="wardrik.{RARE_TYPE}")',
             f'"type":"wardrik.{RARE_TYPE}"'),
            (f"--grep '{LITERAL}'", ["--grep", LITERAL], f'select([.data|..|strings|test("{LITERAL}")]|any)', LITERAL),
            (f"--run {prefix}", ["--run", prefix], f'select(.traceparent[3:11]=="{prefix}")',
             f'"traceparent":"00-{prefix}'),
            (f"--where data.tool.name={RARE_TOOL}", ["--where", f"data.tool.name={RARE_TOOL}"],
             f'select(.data.tool.name? == "{RARE_TOOL}")', f'"name":"{RARE_TOOL}"'),
        ]
        out: list = []
        for label, wargs, jq_filter, lit in cases:
            out += guard(f"{ds.spec.name}: page {label}", lambda a=(label, wargs, jq_filter, lit): one_filter(ds, *a))
        return out

    def one_filter(ds: DataSet, label: str, wargs: list[str], jq_filter: str, lit: str) -> list:
        fig = f"{ds.label}: page --all {label}"
        w = ctx.w(ds.root, "page", PATTERN, "--all", "-F", "jsonl", *wargs)
        grep = ["grep", "-F", "-c", "-h", "-e", lit, *ds.files]
        jq = ["jq", "-c", jq_filter, *ds.files]
        checks: dict[str, Run] = {}
        failed: dict[str, Exception] = {}
        for name, cmd, kw in (("w", w, {}), ("grep", grep, {"keep": True, "ok": (0, 1)}), ("jq", jq, {})):
            try:
                checks[name] = m.run(cmd, pipe=True, **kw)
            except h.CommandFailed as e:
                failed[name] = e
        times: dict[str, list[float]] = {k: [v.cpu] for k, v in checks.items() if k == "jq"}
        counts = {}
        if "grep" in checks:
            counts["grep"] = sum(int(x) for x in (checks["grep"].out or b"").split())
        if "jq" in checks:
            counts["jq"] = checks["jq"].lines
            for _ in range(runs_for(1, 3, checks["jq"].cpu, jq_budget) - 1):
                times["jq"].append(m.run(jq, pipe=True).cpu)
        timed = {k: v for k, v in (("w", (w, {})), ("grep", (grep, {"pipe": True, "ok": (0, 1)}))) if k in checks}
        n = runs_for(5, 3, sum(checks[k].cpu for k in timed), budget) if timed else 0
        times.update(m.turns(timed, n))
        base = ", ".join(f"{k} {fmt(med(times[k]))}" for k in ("grep", "jq") if times.get(k))
        if "w" in failed:
            return [error_row(fig, failed["w"], base or "-", "<= 1.5x grep, <= 0.15x jq")]
        counts["w"] = checks["w"].lines
        runs = ", ".join(f"{k} {len(v)}" for k, v in times.items())
        note = (f"events wardrik/jq/grep: {counts['w']}/{counts.get('jq', '?')}/{counts.get('grep', '?')}; "
                f"runs {runs}; wardrik wall {fmt(checks['w'].wall)} (piped check)")
        fail = "jq" in counts and counts["w"] != counts["jq"]
        if fail:
            note = (f"FAIL: wardrik printed {counts['w']} events, jq's {jq_filter!r} selected {counts['jq']}; "
                    + note)
        out = []
        if "grep" in times:
            out.append(ratio(f"{fig}, CPU vs grep -c", times["w"], times["grep"], 1.5, note, fail))
        else:
            out.append(error_row(f"{fig}, CPU vs grep -c", failed["grep"]))
        if "jq" in times:
            out.append(ratio(f"{fig}, CPU vs jq select", times["w"], times["jq"], 0.15,
                             "(same check as above)" if "grep" in times else note, fail))
        else:
            out.append(error_row(f"{fig}, CPU vs jq select", failed["jq"]))
        return out

    # ---- C: every event of 10,000 small logs ----------------------------------------------
    def many_small(ds: DataSet) -> list:
        fig = f"{ds.label}: page --all (every event)"
        w = ctx.w(ds.root, "page", PATTERN, "--all", "-F", "jsonl")
        cat = ["cat", *ds.files]
        out: list = []

        def cpu() -> list:
            chk = m.run(w, pipe=True)
            cat0 = m.run(cat)
            n = runs_for(5, 3, chk.cpu + cat0.cpu, budget)
            t = m.turns({"w": (w, {}), "cat": (cat, {})}, n)
            fail = chk.lines != ds.meta["events"]
            note = f"events printed {chk.lines} of {ds.meta['events']}; runs {n} each"
            if fail:
                note = f"FAIL: printed {chk.lines} events, the logs hold {ds.meta['events']}; " + note
            return [ratio(f"{fig}, CPU vs cat", t["w"], t["cat"], 5.0, note, fail)]

        def rss() -> list:
            peak, dt = h.peak_rss(w)
            floor, _ = h.peak_rss(["true"])
            return [Row(GROUP, f"{fig}, peak RSS", f"{peak / MB:.1f} MB", "-", "-", "<= 120 MB",
                        "PASS" if peak <= RSS_LIMIT else "MISS", note=f"wall {fmt(dt)}; floor {floor / MB:.1f} MB",
                        raw={"rss": peak, "floor": floor})]

        def unbuffered() -> list:
            plain = {k: v for k, v in h.ENV.items() if k != "PYTHONUNBUFFERED"}
            unbuf = {**plain, "PYTHONUNBUFFERED": "1"}
            first = m.run(w, pipe=True, env=unbuf).cpu + m.run(w, pipe=True, env=plain).cpu
            n = runs_for(5, 3, first, budget)
            t = m.turns({"unbuf": (w, {"pipe": True, "env": unbuf}), "plain": (w, {"pipe": True, "env": plain})}, n)
            return [ratio(f"{ds.label}: page --all to a pipe, CPU with PYTHONUNBUFFERED=1 vs without", t["unbuf"],
                          t["plain"], None, f"runs {n} each")]

        def floor() -> list:
            # what reading each file and decoding every line in Python costs, nothing else
            dec = [sys.executable, str(Path(__file__).resolve().parent / "decode_floor.py"), *ds.files]
            first = m.run(dec).cpu + m.run(cat).cpu
            n = runs_for(5, 3, first, budget)
            t = m.turns({"dec": (dec, {}), "cat": (cat, {})}, n)
            return [ratio(f"{ds.label}: the floor (Python: read each file, decode every line, write) vs cat",
                          t["dec"], t["cat"], None, f"benchmarks/decode_floor.py; runs {n} each")]

        out += guard(f"{fig}, CPU vs cat", cpu)
        out += guard(f"{ds.label}: decode floor", floor)
        out += guard(f"{fig}, peak RSS", rss)
        out += guard(f"{ds.label}: page --all, PYTHONUNBUFFERED=1", unbuffered)
        return out

    # ---- D: the last 2,000 events of 200 logs ---------------------------------------------
    def tail(ds: DataSet) -> list:
        fig = f"{ds.label}: tail -n {TAIL_N}"
        w = ctx.w(ds.root, "tail", "-n", str(TAIL_N), PATTERN, "-F", "jsonl")
        expected_file = ds.root.parent / "expected-tail.jsonl"
        expected = expected_file.read_bytes()
        # The baseline: cat of a file holding exactly the bytes of the 2,000 events tail must
        # print (the last 2,000 by time across the 200 logs), i.e. reading and writing the
        # output once, plus a process start of cat (~1 ms).
        cat = ["cat", str(expected_file)]
        floor_cmd = ctx.w(empty, "tail", "-n", str(TAIL_N), PATTERN, "-F", "jsonl")
        out: list = []

        def cpu() -> list:
            chk = m.run(w, pipe=True, keep=True)
            got = chk.out or b""
            if got == expected:
                check, fail = f"prints the {TAIL_N} expected events ({len(expected):,} bytes)", False
            elif sorted(got.splitlines()) == sorted(expected.splitlines()):
                check, fail = f"the {TAIL_N} expected events, in another order", False
            else:
                check, fail = (f"FAIL: printed {chk.lines} events ({len(got):,} bytes), not the last {TAIL_N} by "
                               f"(time, log id) ({len(expected):,} bytes)"), True
            m.run(cat)
            fl = m.run(floor_cmd)
            n = runs_for(9, 5, chk.cpu + fl.cpu, budget)
            t = m.turns({"w": (w, {}), "cat": (cat, {}), "floor": (floor_cmd, {})}, n)
            fl_cpu, w_cpu, cat_cpu = med(t["floor"]), med(t["w"]), med(t["cat"])
            note = (f"{check}; runs {n} each; start-up floor (the same tail on an empty root) {fmt(fl_cpu)}, "
                    f"above it {fmt(w_cpu - fl_cpu)} = {(w_cpu - fl_cpu) / cat_cpu:.1f}x cat; "
                    f"wall {fmt(chk.wall)} (piped check)")
            return [ratio(f"{fig}, CPU vs cat of its {len(expected) / MB:.1f} MB", t["w"], t["cat"], 3.0, note, fail)]

        def rss() -> list:
            peak, dt = h.peak_rss(w)
            return [Row(GROUP, f"{fig}, peak RSS", f"{peak / MB:.1f} MB", "-", "-", "<= 120 MB",
                        "PASS" if peak <= RSS_LIMIT else "MISS", note=f"wall {fmt(dt)}", raw={"rss": peak})]

        out += guard(f"{fig}, CPU vs cat", cpu)
        out += guard(f"{fig}, peak RSS", rss)
        return out

    empty = ctx.workdir / "review" / "empty-root"  # the start-up floor: a root with no logs
    empty.mkdir(parents=True, exist_ok=True)
    try:
        fl = [m.run(ctx.w(empty, "page", PATTERN, "--all", "-F", "jsonl")).cpu for _ in range(6)][1:]
        ctx.info.append(f"review: wardrik's start-up floor, page '*' --all on an empty root: {fmt(med(fl))} CPU "
                        f"(median of {len(fl)})")
    except h.CommandFailed as e:
        ctx.info.append(f"review: start-up floor not measured: $ {show(e.cmd)} -> exit {e.code}: {first_error(e.stderr)}")
    data: dict[str, DataSet] = {}
    for k in ("A", "B", "C", "D"):
        ds = data[k] = ensure(ctx, specs[k])
        mt = ds.meta
        ev = mt["events"]
        ctx.info.append(
            f"review {k}: {ds.root}, {ds.spec.logs:,} logs ({mt['logs'][0]['log']} .. {mt['logs'][-1]['log']}), "
            f"{ev:,} events, {mt['bytes'] / MB:,.1f} MB ({mt['generated']}); {RARE_TYPE} {mt['rare'] / ev:.2%}, "
            f"'{LITERAL}' {mt['literal'] / ev:.2%}, {RARE_TOOL} {mt['tool'] / ev:.2%}")
    for k in ("A", "B"):
        rows += filters(data[k])
    rows += many_small(data["C"])
    rows += tail(data["D"])
    return rows
