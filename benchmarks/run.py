"""Run wardrik's performance figures side by side with their baselines and print one table.

    python benchmarks/run.py                      # every group written so far (core)
    python benchmarks/run.py --only core --quick  # smoke run on a 20 MB log
    python benchmarks/run.py --wardrik .venv/bin/wardrik --workdir /tmp/wb --json results.json

Run it with the Python of the environment wardrik is installed in (it needs orjson and Typer for
the baselines, and takes ``wardrik`` from beside ``sys.executable`` unless ``--wardrik`` says
otherwise). Every time is the median wall-clock time of several whole-process runs
(``time.perf_counter`` around ``subprocess.run``, stdout to /dev/null), after one untimed
warm-up run of each command, the two sides of a figure taking turns. Peak memory is the
``ru_maxrss`` that ``os.wait4`` reports for a fresh child running the command alone.

Data lives in ``--workdir`` (default ``$TMPDIR/wardrik-bench``): the logs and batch files are
generated once by ``gen_ledger.py`` (fixed seed and parameters) and reused while the generator
and its parameters are unchanged. Readers never write, so the big roots are only read; every
write goes to a scratch root that is emptied between runs.

Groups: ``core`` (page, append, start-up, memory), ``follow``, ``fold`` and ``compact`` (their
own scripts), and ``review`` (``bench_review.py``: filtered reads of 1 GB fleets against grep and
jq, 10,000 small logs, tail of 200 logs; CPU times, ~2.5 GB of data).
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence

HERE = Path(__file__).resolve().parent
GEN = HERE / "gen_ledger.py"
BIG_LOG = "acme/big"
RARE_TYPE = "wardrik.tool_call.failed"
BATCH_EVENTS = 100_000
APPEND_DATA = '{"trigger":{"name":"x"}}'
MB = 1_000_000


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------
@dataclass
class Row:
    group: str
    figure: str
    wardrik: str = "-"
    baseline: str = "-"
    ratio: str = "-"
    target: str = "-"
    result: str = "info"  # PASS, MISS, info, ERROR, FAIL (a correctness check failed)
    note: str = ""
    raw: dict = field(default_factory=dict)


class CommandFailed(Exception):
    def __init__(self, cmd: Sequence[str], code: int, stderr: bytes):
        self.cmd, self.code, self.stderr = list(cmd), code, stderr
        super().__init__(f"{shlex.join(self.cmd)} exited {code}")

    def report(self) -> str:
        err = self.stderr.decode("utf-8", "replace").rstrip()
        if len(err) > 3000:
            err = err[:1500] + "\n[...]\n" + err[-1500:]
        return f"$ {shlex.join(self.cmd)}\nexit {self.code}\n{err or '(no stderr)'}"


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------
Cmd = Sequence[str] | Callable[[int], Sequence[str]]


def _env() -> dict:
    env = dict(os.environ)
    env.pop("WARDRIK_ROOT", None)
    env.pop("WARDRIK_DEPLOYMENT", None)
    env["NO_COLOR"] = "1"
    return env


ENV = _env()
VERBOSE = False


def run_cmd(cmd: Sequence[str], *, ok: tuple[int, ...] = (0,), capture: bool = False) -> tuple[float, bytes]:
    """Run once; return (seconds, stdout if captured). Raise CommandFailed on a bad exit."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, env=ENV)
    dt = time.perf_counter() - t0
    if VERBOSE:
        print(f"    {dt * 1000:9.1f} ms  {shlex.join(cmd)}", file=sys.stderr, flush=True)
    if p.returncode not in ok:
        raise CommandFailed(cmd, p.returncode, p.stderr)
    return dt, (p.stdout or b"")


def timed(cmds: dict[str, Cmd], repeats: int, *, ok: dict[str, tuple[int, ...]] | None = None,
          warmup: int = 1, after: Callable[[str, int], None] | None = None,
          pipe: bool = False) -> dict[str, list[float]]:
    """Time several commands, taking turns, ``repeats`` times each after ``warmup`` untimed runs.
    A command may be a callable of the run index (-1.. for warm-ups), for fresh targets;
    ``after(name, i)`` runs untimed after each run (clean-up). With ``pipe``, stdout goes to a
    pipe read by this process instead of /dev/null (GNU grep stops at the first match when its
    output is /dev/null, so a grep baseline must be piped)."""
    ok = ok or {}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for i in range(-warmup, repeats):
        for name, cmd in cmds.items():
            argv = cmd(i) if callable(cmd) else cmd
            dt, _ = run_cmd(argv, ok=ok.get(name, (0,)), capture=pipe)
            if i >= 0:
                times[name].append(dt)
            if after:
                after(name, i)
    return times


# A fresh, small child that spawns the command and reports the command's own rusage. A child
# inherits its parent's RSS high-water mark across fork/exec (Linux records the old mm's peak at
# exec), so measuring from this harness would floor every figure at the harness's own peak; this
# wrapper (python -I -S, no imports but os/sys) keeps that floor at a few MB, reported as "floor".
_RSS_WRAPPER = r"""
import os, sys
fa = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0), (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=fa)
_, status, ru = os.wait4(pid, 0)
sys.stdout.write("%d %d\n" % (os.waitstatus_to_exitcode(status), ru.ru_maxrss))
"""


def peak_rss(cmd: Sequence[str]) -> tuple[int, float]:
    """Run cmd in a fresh child of a small wrapper; return (its max RSS in bytes, seconds)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-I", "-S", "-c", _RSS_WRAPPER, *cmd], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=err, env=ENV)
        dt = time.perf_counter() - t0
        err.seek(0)
        if p.returncode != 0:
            raise CommandFailed(cmd, p.returncode, err.read())
        code, rss = map(int, p.stdout.split())
        if code != 0:
            raise CommandFailed(cmd, code, err.read())
    scale = 1 if sys.platform == "darwin" else 1024  # Linux reports KiB, macOS bytes
    return rss * scale, dt


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def fmt_s(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms"
    return f"{s:.2f} s"


def cursor(positions: dict[str, int]) -> str:
    """CONTRACT.md cursor: URL-safe base64, no padding, of compact sorted-key JSON."""
    raw = json.dumps(positions, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def ratio_row(group: str, figure: str, a: list[float], b: list[float], limit: float | None,
              *, strict: bool = False, note: str = "") -> Row:
    """wardrik median / baseline median against "at most limit" (or "below limit" if strict)."""
    ma, mb = med(a), med(b)
    r = ma / mb
    if limit is None:
        result, target = "info", "-"
    elif strict:
        result, target = ("PASS" if r < limit else "MISS"), f"< {limit:g}x"
    else:
        result, target = ("PASS" if r <= limit else "MISS"), f"<= {limit:g}x"
    return Row(group, figure, fmt_s(ma), fmt_s(mb), f"{r:.2f}x", target, result, note,
               raw={"wardrik_s": a, "baseline_s": b, "ratio": r, "limit": limit})


# --------------------------------------------------------------------------------------------
# Data: generated once, reused while the generator and its parameters are the same
# --------------------------------------------------------------------------------------------
def _gen_hash() -> str:
    return hashlib.sha256(GEN.read_bytes()).hexdigest()[:16]


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += chunk.count(b"\n")
    return n


def ensure_log(workdir: Path, name: str, gen_args: list[str]) -> tuple[Path, int, int]:
    """A root holding acme/big.jsonl made by gen_ledger.py with gen_args; (root, events, bytes)."""
    base = workdir / name
    root = base / "root"
    meta_path = base / "meta.json"
    want = {"gen": _gen_hash(), "args": gen_args}
    path = root / (BIG_LOG + ".jsonl")
    if meta_path.exists() and path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("want") == want and meta.get("bytes") == path.stat().st_size:
            return root, meta["events"], meta["bytes"]
    shutil.rmtree(base, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"  generating {name}: gen_ledger.py {' '.join(gen_args)}", file=sys.stderr, flush=True)
    run_cmd([sys.executable, str(GEN), "--root", str(root), "--log", BIG_LOG, *gen_args])
    n, size = _count_lines(path), path.stat().st_size
    meta_path.write_text(json.dumps({"want": want, "events": n, "bytes": size}))
    return root, n, size


def ensure_batch(workdir: Path, n: int) -> Path:
    path = workdir / f"batch-{n}.jsonl"
    meta_path = workdir / f"batch-{n}.meta.json"
    want = {"gen": _gen_hash(), "events": n}
    if path.exists() and meta_path.exists() and json.loads(meta_path.read_text()) == want:
        return path
    print(f"  generating batch of {n} items", file=sys.stderr, flush=True)
    run_cmd([sys.executable, str(GEN), "--batch-out", str(path), "--events", str(n)])
    meta_path.write_text(json.dumps(want))
    return path


# --------------------------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------------------------
@dataclass
class Ctx:
    wardrik: str
    workdir: Path
    quick: bool
    repeats: int | None  # override of every figure's repeat count
    verbose: bool
    failures: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    def n(self, full: int, quick: int) -> int:
        if self.repeats is not None:
            return self.repeats
        return quick if self.quick else full

    def w(self, root: Path, *args: str) -> list[str]:
        return [self.wardrik, "--root", str(root), *args]

    def scratch(self, name: str) -> Path:
        p = self.workdir / "scratch" / name
        shutil.rmtree(p, ignore_errors=True)
        p.mkdir(parents=True)
        return p

    def say(self, msg: str) -> None:
        print(f"  {msg}", file=sys.stderr, flush=True)


def guarded(ctx: Ctx, group: str, figure: str, fn: Callable[[], list[Row]]) -> list[Row]:
    """Run one figure; a failing command becomes an ERROR row and a report, never a workaround."""
    ctx.say(f"{group}: {figure}")
    try:
        return fn()
    except CommandFailed as e:
        ctx.failures.append(f"[{group}: {figure}]\n{e.report()}")
        return [Row(group, figure, result="ERROR", note=f"command failed (exit {e.code}), see below")]


def bench_core(ctx: Ctx) -> list[Row]:
    g = "core"
    mb = 20 if ctx.quick else 200
    big_root, n_big, size_big = ensure_log(ctx.workdir, f"big-{mb}mb", ["--mb", str(mb)])
    small_root, n_small, _ = ensure_log(ctx.workdir, "small-10", ["--events", "10"])
    ctx.info.append(f"big log: {big_root}/{BIG_LOG}.jsonl, {n_big} events, {size_big / MB:.1f} MB")
    ctx.info.append(f"small log: {small_root}/{BIG_LOG}.jsonl, {n_small} events")
    big_file = big_root / (BIG_LOG + ".jsonl")
    rows: list[Row] = []

    def head_check() -> list[Row]:
        want = cursor({BIG_LOG: n_big})
        _, out = run_cmd(ctx.w(big_root, "head", BIG_LOG), capture=True)
        got = out.decode().strip()
        ok = got == want
        return [Row(g, "head prints the cursor at the end", wardrik=got[:24], baseline=want[:24],
                    result="PASS" if ok else "MISS",
                    note="" if ok else f"expected {want} ({{{BIG_LOG!r}: {n_big}}}), got {got!r}")]

    def page_after() -> list[Row]:
        reps = ctx.n(9, 5)
        args = ["page", BIG_LOG, "--format", "jsonl", "--after"]
        big = ctx.w(big_root, *args, cursor({BIG_LOG: n_big - 10}))
        small = ctx.w(small_root, *args, cursor({BIG_LOG: n_small - 10}))
        _, out_big = run_cmd(big, capture=True)
        _, out_small = run_cmd(small, capture=True)
        note = f"{len(out_big.splitlines())}/{len(out_small.splitlines())} events printed"
        if len(out_big.splitlines()) != 10 or len(out_small.splitlines()) != 10:
            note += " (expected 10/10!)"
        t = timed({"big": big, "small": small}, reps)
        return [ratio_row(g, f"page --after (10 from end): {mb} MB vs 10-event log", t["big"], t["small"], 3.0,
                          note=note)]

    def page_types() -> list[Row]:
        reps = ctx.n(5, 3)
        w = ctx.w(big_root, "page", BIG_LOG, "--types", RARE_TYPE, "--limit", "1000000000", "--format", "jsonl")
        jq = ["jq", "-c", f'select(.type=="{RARE_TYPE}")', str(big_file)]
        grep = ["grep", "-c", f'"type":"{RARE_TYPE}"', str(big_file)]
        _, out_w = run_cmd(w, capture=True)
        _, out_jq = run_cmd(jq, capture=True)
        _, out_grep = run_cmd(grep, capture=True, ok=(0, 1))
        counts = (len(out_w.splitlines()), len(out_jq.splitlines()), int(out_grep.strip() or 0))
        note = f"matches wardrik/jq/grep: {counts[0]}/{counts[1]}/{counts[2]}"
        if len(set(counts)) != 1:
            note += " MISMATCH"
        elif out_w != out_jq:
            note += " (jq output differs from wardrik's bytes)"
        t = timed({"w": w, "jq": jq, "grep": grep}, reps, ok={"grep": (0, 1)}, pipe=True)
        return [ratio_row(g, f"page --types {RARE_TYPE.split('.', 1)[1]} ({mb} MB) vs jq select", t["w"], t["jq"], 0.35,
                          note=note),
                ratio_row(g, f"page --types {RARE_TYPE.split('.', 1)[1]} ({mb} MB) vs grep -c", t["w"], t["grep"], None)]

    def append_batch() -> list[Row]:
        reps = ctx.n(3, 2)
        batch = ensure_batch(ctx.workdir, BATCH_EVENTS)
        sc = ctx.scratch("batch")

        def w(i: int) -> list[str]:
            return ctx.w(sc / f"w{i}", "append", "bench/batch", "--batch", str(batch))

        def naive(i: int) -> list[str]:
            return [sys.executable, str(HERE / "naive_store.py"), "--file", str(sc / f"n{i}" / "bench" / "batch.jsonl"),
                    "--batch", str(batch), "--log", "bench/batch"]

        checked = {}

        def after(name: str, i: int) -> None:
            d = sc / (("w" if name == "w" else "n") + str(i))
            f = d / "bench" / "batch.jsonl"
            if name not in checked:
                checked[name] = _count_lines(f) if f.exists() else 0
            shutil.rmtree(d, ignore_errors=True)

        t = timed({"w": w, "naive": naive}, reps, after=after)
        note = f"{BATCH_EVENTS} events; lines written wardrik/naive: {checked.get('w')}/{checked.get('naive')}"
        if checked.get("w") != BATCH_EVENTS or checked.get("naive") != BATCH_EVENTS:
            note += " (expected both = batch size!)"
        return [ratio_row(g, f"append --batch {BATCH_EVENTS // 1000}k vs naive per-event open/write", t["w"],
                          t["naive"], 1.0, strict=True, note=note)]

    def startup() -> list[Row]:
        reps = ctx.n(15, 9)
        sc = ctx.scratch("startup")
        w = ctx.w(sc / "root", "append", "bench/startup", "trigger.fired", "--data", APPEND_DATA, "--no-sync")
        base = [sys.executable, str(HERE / "typer_baseline.py"), str(sc / "typer.jsonl"), "trigger.fired",
                "--data", APPEND_DATA, "--no-sync"]
        page = ctx.w(sc / "root", "page", "bench/startup")
        orjson_only = [sys.executable, "-c", "import orjson"]
        for _ in range(9):  # page reads a 10-event log
            subprocess.run(w, check=True, capture_output=True)
        t = timed({"w": w, "typer": base, "page": page, "py": orjson_only}, reps, warmup=2)
        note = f"{reps} runs each, median"
        return [ratio_row(g, "append one event --no-sync (start-up) vs 1-command Typer app", t["w"], t["typer"], 1.3,
                          note=note),
                ratio_row(g, "append one event --no-sync vs python -c 'import orjson'", t["w"], t["py"], 3.0,
                          note=note + "; aim 2x"),
                ratio_row(g, "page of a 10-event log vs python -c 'import orjson'", t["page"], t["py"], 3.0,
                          note=note + "; aim 2x")]

    def memory() -> list[Row]:
        limit = 120 * MB
        full = ctx.w(big_root, "page", BIG_LOG, "--limit", "1000000000", "--format", "jsonl")
        typ = ctx.w(big_root, "page", BIG_LOG, "--types", RARE_TYPE, "--limit", "1000000000", "--format", "jsonl")
        rss_full, dt_full = max(peak_rss(full) for _ in range(ctx.n(2, 1) if ctx.repeats is None else 1))
        rss_typ, dt_typ = peak_rss(typ)
        rss_cat, dt_cat = peak_rss(["cat", str(big_file)])
        floor, _ = peak_rss(["true"])
        return [Row(g, f"peak RSS: page whole {mb} MB log (all events)", f"{rss_full / MB:.1f} MB", "-", "-",
                    "< 120 MB", "PASS" if rss_full < limit else "MISS",
                    note=f"took {fmt_s(dt_full)} (cat: {fmt_s(dt_cat)}, {rss_cat / MB:.1f} MB); floor {floor / MB:.1f} MB",
                    raw={"rss": rss_full, "s": dt_full, "floor": floor, "cat_rss": rss_cat}),
                Row(g, f"peak RSS: page --types {RARE_TYPE.split('.', 1)[1]} ({mb} MB)", f"{rss_typ / MB:.1f} MB",
                    "-", "-", "< 120 MB", "PASS" if rss_typ < limit else "MISS", raw={"rss": rss_typ})]

    for figure, fn in [("head", head_check), ("page --after", page_after), ("page --types", page_types),
                       ("append --batch", append_batch), ("start-up", startup), ("peak memory", memory)]:
        rows += guarded(ctx, g, figure, fn)
    return rows


def script_group(script: str, full_args: list[str], quick_args: list[str]) -> Callable[[Ctx], list[Row]]:
    """A group measured by its own script, which prints its own table (and exits 1 on a MISS)."""
    def run(ctx: Ctx) -> list[Row]:
        args = quick_args if ctx.quick else full_args
        cmd = [sys.executable, str(Path(__file__).with_name(script)), "--wardrik", ctx.wardrik, *args]
        print(f"\n== {script} {' '.join(args)}", flush=True)
        rc = subprocess.run(cmd).returncode
        if rc != 0:
            ctx.failures.append(f"{script} exited {rc}")
        return []
    return run


def review_group(ctx: Ctx) -> list[Row]:
    """bench_review.py's figures, with this harness's Row, CommandFailed, peak_rss and ENV."""
    import bench_review
    return bench_review.bench(ctx, sys.modules[__name__])


GROUPS: dict[str, Callable[[Ctx], list[Row]] | None] = {
    "core": bench_core,
    "follow": script_group("bench_follow.py", [], ["--appends", "50", "--idle", "3"]),
    "fold": script_group("bench_fold.py", ["--mb", "200"], ["--mb", "20"]),
    "compact": script_group("bench_compact.py", ["--mb", "200"], ["--mb", "20"]),
    "review": review_group,
}


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------
def print_table(rows: list[Row]) -> None:
    cols = [("figure", "figure"), ("wardrik", "wardrik"), ("baseline", "baseline"), ("ratio", "ratio"),
            ("target", "target"), ("result", "result")]
    widths = {k: max(len(h), *(len(getattr(r, k)) for r in rows)) for k, h in cols}
    line = "  ".join(h.ljust(widths[k]) for k, h in cols)
    print(line)
    print("  ".join("-" * widths[k] for k, _ in cols))
    for r in rows:
        print("  ".join(getattr(r, k).ljust(widths[k]) for k, _ in cols).rstrip())
        if r.note:
            print(" " * 4 + r.note)


def compile_package() -> None:
    """Byte-compile wardrik_cli as ``pip install`` does: in an editable install under
    PYTHONDONTWRITEBYTECODE, every start-up would otherwise compile the modules changed since
    the last byte-compile, a cost no installed copy pays."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("wardrik_cli")
    if spec is not None and spec.submodule_search_locations:
        for where in spec.submodule_search_locations:
            compileall.compile_dir(where, quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wardrik", default=str(Path(sys.executable).parent / "wardrik"),
                    help="the wardrik executable (default: wardrik beside this Python)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated groups to run: {', '.join(GROUPS)} (default: all written so far)")
    ap.add_argument("--quick", action="store_true", help="small data (20 MB log) and fewer repeats: a smoke run")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "wardrik-bench",
                    help="where the generated data lives and is reused (default: $TMPDIR/wardrik-bench)")
    ap.add_argument("--repeats", type=int, help="override every figure's number of timed runs")
    ap.add_argument("--json", type=Path, help="also write the rows, with every raw time, to this file")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    global VERBOSE
    VERBOSE = a.verbose

    groups = [g for g in (a.only.split(",") if a.only else [k for k, v in GROUPS.items() if v])]
    for g in groups:
        if g not in GROUPS:
            ap.error(f"unknown group {g!r}; choose from {', '.join(GROUPS)}")
    wardrik = shutil.which(a.wardrik) or a.wardrik
    if not os.access(wardrik, os.X_OK):
        print(f"error: no wardrik executable at {a.wardrik} (give --wardrik PATH)", file=sys.stderr)
        return 2
    for mod in ("orjson", "typer"):
        try:
            __import__(mod)
        except ImportError:
            print(f"error: {sys.executable} lacks {mod}; run this with the Python wardrik is installed in",
                  file=sys.stderr)
            return 2
    if any(g in ("core", "review") for g in groups) and not shutil.which("jq"):
        print("error: jq not found on PATH", file=sys.stderr)
        return 2
    a.workdir.mkdir(parents=True, exist_ok=True)
    compile_package()
    ctx = Ctx(wardrik=wardrik, workdir=a.workdir, quick=a.quick, repeats=a.repeats, verbose=a.verbose)

    rows: list[Row] = []
    skipped = []
    t0 = time.perf_counter()
    for g in groups:
        fn = GROUPS[g]
        if fn is None:
            skipped.append(g)
            continue
        rows += fn(ctx)

    print(f"wardrik benchmarks{' (quick)' if a.quick else ''}: {wardrik}")
    print(f"python {platform.python_version()} ({sys.executable}), {platform.platform()}, "
          f"{os.cpu_count()} CPUs; workdir {a.workdir}; {time.perf_counter() - t0:.0f}s")
    for line in ctx.info:
        print(f"  {line}")
    print()
    if rows:
        print_table(rows)
    for g in skipped:
        print(f"group {g}: not written yet")
    if ctx.failures:
        print("\nFailed commands:")
        for f in ctx.failures:
            print()
            print(f)
    if a.json:
        a.json.write_text(json.dumps({"quick": a.quick, "wardrik": wardrik, "info": ctx.info,
                                      "rows": [asdict(r) for r in rows], "failures": ctx.failures}, indent=2))
    bad = [r for r in rows if r.result in ("MISS", "ERROR", "FAIL")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
