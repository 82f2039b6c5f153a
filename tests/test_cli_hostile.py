"""Hostile input at the command line's edges, each found by review and reproduced first.

- A file a reader writes (a cursor file, ``export otlp -o``) that is, or leads to, one of the
  root's own files (a log, ``.wardrik/``) is refused before anything is read or written.
- ``-o csv`` on a terminal shows controls in cells as visible escapes; in a pipe it is exact.
- A huge ``COLUMNS`` lays pretty output and help out at most ``MAX_WIDTH`` wide.
- ``-v`` shows a huge event's data clipped (keys, items, characters), saying so.
- ``append --batch`` holds each validated item as where its line is, not as Python objects.
- Help into a closed pipe is a normal end (exit 0, nothing on stderr).
- Pretty output to a stream whose encoding cannot hold the text writes escapes (exit 0).
- An empty ``WARDRIK_DEPLOYMENT`` is unset (as an empty ``WARDRIK_ROOT``); a bad one is named.
- Controls in pretty summaries and cells are shown as escapes, never dropped (one rule).
- A cost sum that overflows is one answer in every format: blank (null), with a warning.
"""
from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from conftest import WARDRIK, in_process, run_cli

TRIGGER = '{"trigger": {"name": "x"}}'


def _err_line(p) -> str:
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert b"Traceback" not in p.stderr
    return lines[0]


# ---------------------------------------------------------------------------------------------
# 1. a reader never writes a file of the root
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def two_logs(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    for _ in range(3):
        run_cli("append", "acme/a", "trigger.fired", "-d", TRIGGER, root=root, check=True)
    run_cli("append", "acme/b", "run.started", "-d", '{"task": "t"}', root=root, check=True)
    run_cli("append", "acme/b", "run.completed", root=root, check=True)
    run_cli("audit", "record", "agent.created", "agents/acme/a", "-d", '{"agent": {"id": "acme/a"}}',
            "--actor", "alice", root=root, check=True)
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def _targets(root: Path, tmp_path: Path) -> dict[str, Path]:
    link = tmp_path / "link.cursor"
    link.symlink_to(root / "acme" / "a.jsonl")
    hard = tmp_path / "hard.cursor"
    os.link(root / "acme" / "a.jsonl", hard)
    folder_link = tmp_path / "acme-link"
    folder_link.symlink_to(root / "acme")
    return {"log": root / "acme" / "a.jsonl", "audit": root / ".wardrik" / "audit.jsonl",
            "new-log": root / "acme" / "new.jsonl", "tool-dir": root / ".wardrik" / "c.cursor",
            "link": link, "hard-link": hard, "through-folder-link": folder_link / "b.jsonl"}


COMMANDS = {
    "page": ["page", "acme/a"],
    "page-after": ["page", "acme/a", "--after", "eyJhY21lL2EiOjF9"],
    "tail": ["tail", "acme/a"],
    "audit-page": ["audit", "page"],
    "audit-tail": ["audit", "tail"],
    "export": ["export", "otlp", "acme/b", "-o", "-"],
}


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_a_cursor_file_that_is_a_file_of_the_root_is_refused(two_logs, tmp_path, cmd):
    root = two_logs
    for what, target in _targets(root, tmp_path).items():
        before = _snapshot(root)
        p = run_cli(*COMMANDS[cmd], "--cursor-file", str(target), root=root)
        assert p.returncode == 2, (what, p.stderr)
        assert "--cursor-file" in _err_line(p) and p.stdout == b"", (what, p.stdout)
        assert _snapshot(root) == before, what
        assert not (root / "acme" / "new.jsonl").exists()


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_a_cursor_file_that_is_a_link_or_the_output_is_refused_and_left_as_it_is(two_logs, tmp_path, cmd):
    """The cursor file is replaced by a rename: a link there became a file (as root,
    /dev/stdout did), and the file the command prints to lost what it printed."""
    outside = tmp_path / "real.cursor"
    outside.write_text("")
    link = tmp_path / "link.cursor"
    link.symlink_to(outside)
    stdout_link = tmp_path / "stdout.cursor"
    stdout_link.symlink_to("/proc/self/fd/1")
    for target in (link, stdout_link):
        p = subprocess.run([WARDRIK, "--root", str(two_logs), *COMMANDS[cmd], "--cursor-file", str(target)],
                           capture_output=True, timeout=60)
        assert p.returncode == 2 and "symbolic link" in _err_line(p) and p.stdout == b"", p.stderr
        assert target.is_symlink()
    printed = tmp_path / "printed"
    with open(printed, "wb") as out:
        p = subprocess.run([WARDRIK, "--root", str(two_logs), *COMMANDS[cmd], "--cursor-file", str(printed)],
                           stdout=out, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 2 and b"where this command prints" in p.stderr, p.stderr


def test_tail_follow_refuses_a_cursor_file_that_is_a_log(two_logs):
    """tail -f checks it in the same place, before following anything (in this process: a
    refusal returns at once)."""
    before = _snapshot(two_logs)
    p = in_process(["--root", str(two_logs), "tail", "-f", "acme/a", "--cursor-file",
                    str(two_logs / "acme" / "a.jsonl")], dict(os.environ))
    assert p.returncode == 2 and "--cursor-file" in _err_line(p)
    assert _snapshot(two_logs) == before


def test_export_output_that_is_a_file_of_the_root_is_refused(two_logs, tmp_path):
    root = two_logs
    for what, target in _targets(root, tmp_path).items():
        before = _snapshot(root)
        p = run_cli("export", "otlp", "acme/b", "-o", str(target), root=root)
        assert p.returncode == 2, (what, p.stderr)
        assert "-o" in _err_line(p), what
        assert _snapshot(root) == before, what
    assert not (root / "acme" / "new.jsonl").exists()


def test_files_outside_the_root_still_work(two_logs, tmp_path):
    cur = tmp_path / "a.cursor"
    p = run_cli("page", "acme/a", "--cursor-file", str(cur), root=two_logs)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 3
    assert cur.read_text().strip() == "eyJhY21lL2EiOjN9"
    for name in ("acme/a.jsonl.cursor", "state.jsonl.pos"):  # inside the root, but no log's nor kept beside one
        p = run_cli("page", "acme/a", "--cursor-file", str(two_logs / name), root=two_logs)
        assert p.returncode == 0 and (two_logs / name).read_text().strip() == "eyJhY21lL2EiOjN9", (name, p.stderr)
    torn = two_logs / "acme" / "a.jsonl.torn-5-1"
    torn.write_bytes(b'{"half')
    p = run_cli("page", "acme/a", "--cursor-file", str(torn), root=two_logs)
    assert p.returncode == 2 and torn.read_bytes() == b'{"half'
    spans = tmp_path / "spans.jsonl"  # named like a log, but outside the root
    p = run_cli("export", "otlp", "acme/b", "-o", str(spans), "--cursor-file", str(tmp_path / "o.cursor"),
                root=two_logs)
    assert p.returncode == 0 and spans.read_bytes().count(b"\n") == 1, p.stderr


# ---------------------------------------------------------------------------------------------
# 2. csv on a terminal is made safe; in a pipe it is exact
# ---------------------------------------------------------------------------------------------
class _Terminal(io.BytesIO):
    """A stdout that says it is a terminal (what ``Invocation.isatty`` asks), in this process."""

    def isatty(self) -> bool:
        return True


def _on_terminal(argv: list[str]) -> tuple[int, bytes, bytes]:
    from wardrik_cli.cli.app import run

    out, err = _Terminal(), io.BytesIO()
    code = run(argv, dict(os.environ), stdin=io.BytesIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


HOSTILE = "\x1b]0;PWNED\x07\u202e\x9b2J\x7f"
ESCAPED = b"\\x1b]0;PWNED\\x07\\u202e\\x9b2J\\x7f"


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    import orjson

    root = tmp_path / "r"
    tool = {"tool": {"name": HOSTILE, "call": {"id": "c1"}}}
    run_cli("append", "a", "tool_call.started", "-d", orjson.dumps(tool).decode(), root=root, check=True)
    run_cli("append", "a", "tool_call.completed", "-d", orjson.dumps(tool).decode(), root=root, check=True)
    return root


@pytest.mark.parametrize("args", [["stats", "--by", "tool"], ["sql", "select name from tool_calls"]],
                         ids=["stats", "sql"])
def test_csv_on_a_terminal_shows_controls_as_escapes(hostile_root, args):
    if args[0] == "sql":
        pytest.importorskip("duckdb")
    code, out, err = _on_terminal(["--root", str(hostile_root), *args, "-o", "csv"])
    assert code == 0, err
    assert ESCAPED in out, out
    assert not any(b in out for b in (b"\x1b", b"\x07", b"\x7f", "\u202e".encode(), "\x9b".encode())), out
    piped = run_cli(*args, "-o", "csv", root=hostile_root)  # not a terminal: the cell as stored
    assert piped.returncode == 0 and HOSTILE.encode() in piped.stdout


# ---------------------------------------------------------------------------------------------
# 3a. COLUMNS is bounded
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["page", "acme/a", "-o", "pretty"], ["-v", "tail", "acme/a", "-o", "pretty"],
                                  ["stats", "-o", "pretty"], ["fold", "acme/b", "--view", "timeline", "-o", "pretty"],
                                  ["page", "--help"], ["--help"]], ids=lambda a: "-".join(a[:2]))
def test_a_huge_columns_is_bounded(two_logs, args):
    # 3,000,000 columns made each row 3 MB (10^9: "out of memory"); kept small enough that the
    # code before the bound still finishes here
    p = run_cli(*args, root=two_logs, env={"COLUMNS": "3000000", "LINES": "3000000"})
    assert p.returncode == 0, p.stderr
    assert p.stdout and max(len(line) for line in p.stdout.decode().splitlines()) <= 1000  # render.console.MAX_WIDTH


# ---------------------------------------------------------------------------------------------
# 3b. -v shows data clipped for the screen
# ---------------------------------------------------------------------------------------------
def test_verbose_view_of_a_huge_event_is_clipped(tmp_path):
    import orjson

    root = tmp_path / "r"
    data = {"trigger": {"name": "x"}, "m": {f"k{i}": i for i in range(20_000)}, "a": list(range(20_000)),
            "s": "y" * 100_000, "z" + "k" * 50_000: 1}
    (tmp_path / "d.json").write_bytes(orjson.dumps(data))
    run_cli("append", "a", "trigger.fired", "-d", f"@{tmp_path / 'd.json'}", root=root, check=True)
    for args in (["-v", "page", "a"], ["-v", "tail", "a"]):
        p = run_cli(*args, "-o", "pretty", root=root, env={"COLUMNS": "120"})
        assert p.returncode == 0, p.stderr
        out = p.stdout.decode()
        # 40,000 values and 150,000 characters of strings were each a row or more of highlighted JSON
        assert len(out.splitlines()) < 600 and len(out) < 100_000, (len(out.splitlines()), len(out))
        flat = " ".join(out.split())
        assert '"k199": 199' in flat and '"k200"' not in flat and "19,800 more keys" in flat
        assert "19,800 more items" in flat and "data clipped" in flat
        assert '"s": "yyyy' in flat and "yyy…" in flat  # a row wider than the screen ends in an ellipsis
    run_cli("append", "a", "run.started", "-d", '{"task": {"a": [1, 2, {"b": "c"}]}}', root=root, check=True)
    p = run_cli("-v", "page", "a", "--after", "eyJhIjoxfQ", "-o", "pretty", root=root, env={"COLUMNS": "100"})
    assert p.returncode == 0 and b'"b": "c"' in p.stdout and b"clipped" not in p.stdout  # small data: whole


def test_clip_for_screen_cuts_strings_keys_and_counts():
    from wardrik_cli.cli.render.events import clip_for_screen

    value = {"s": "y" * 5000, "k" * 3000: [list(range(10))] * 10, "m": {str(i): i for i in range(9)}}
    cut, clipped = clip_for_screen(value, items=5, chars=100)
    assert clipped
    assert cut["s"] == "y" * 100 + "… (4,900 more characters)"
    key = "k" * 100 + "… (2,900 more characters)"
    assert cut[key] == [list(range(5)) + ["… 5 more items"]] * 5 + ["… 5 more items"]
    assert cut["m"] == {"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "… 4 more keys": "…"}
    # a budget of values in all: spent level by level, first to last
    cut, _ = clip_for_screen([[1, 2], [3, 4], [5, 6]], values=6)
    assert cut == [[1, 2], [3, "… 1 more items"], ["… 2 more items"]]
    cut, _ = clip_for_screen([[[1]], [[2]]], values=2)
    assert cut == ["… (clipped)", "… (clipped)"]
    small = {"a": [1, {"b": "c"}]}
    assert clip_for_screen(small) == (small, False)


# ---------------------------------------------------------------------------------------------
# 3c. a batch is held as its bytes
# ---------------------------------------------------------------------------------------------
def test_a_validated_batch_holds_little_more_than_its_bytes():
    import tracemalloc

    import orjson

    from wardrik_cli.cli.write import batch_items

    lines = [orjson.dumps({"type": "tool_call.started", "data": {"tool": {
        "name": "bash", "call": {"id": f"c{i}"}, "args": {f"k{j}": j for j in range(15)}}}}) for i in range(8000)]
    raw = b"\n".join(lines) + b"\n\n"
    batch_items(lines[0])  # the modules it imports are not what is measured
    tracemalloc.start()
    try:
        items = batch_items(raw)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 1.6 MB of lines: parsed and kept as dicts they were 12 MB (31 MB of input took 656 MB RSS)
    assert held < len(raw) // 4 and peak < len(raw) // 2, (held, peak, len(raw))
    assert len(items) == 8000
    assert [it.data for it in items[:2]] == [orjson.loads(x)["data"] for x in lines[:2]]
    assert items[-1].etype.full == "wardrik.tool_call.started" and items[-1].data["tool"]["call"]["id"] == "c7999"


def test_a_batch_appends_and_prints_as_before(tmp_path):
    import orjson

    root = tmp_path / "r"
    batch = tmp_path / "b.jsonl"
    batch.write_bytes(b'{"type": "run.started", "data": {"task": "t"}}\r\n\n'
                      b'{"type": "trigger.fired", "data": {"trigger": {"name": "x"}}, "subject": "s"}')
    p = run_cli("append", "a", "--batch", str(batch), root=root)
    assert p.returncode == 0, p.stderr
    assert p.stdout == (root / "a.jsonl").read_bytes()
    events = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert [e["sequence"] for e in events] == ["000000000001", "000000000002"] and events[1]["subject"] == "s"
    p = run_cli("append", "a", "--batch", str(batch), "-o", "json", root=root)
    assert [e["sequence"] for e in orjson.loads(p.stdout)] == ["000000000003", "000000000004"]


# ---------------------------------------------------------------------------------------------
# 4. help into a closed pipe
# ---------------------------------------------------------------------------------------------
@pytest.mark.subprocess
@pytest.mark.parametrize("args", [["--help"], ["page", "--help"]], ids=["top", "page"])
def test_help_into_a_closed_pipe_is_a_normal_end(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte (`wardrik --help | head -c0`)
    try:
        p = subprocess.run([WARDRIK, *args], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    assert (p.returncode, p.stderr) == (0, b"")


@pytest.mark.subprocess
def test_pretty_output_fits_an_ascii_stream(tmp_path):
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", "-d", '{"task": "café \u2192 naïve"}', root=root, check=True)
    env = dict(os.environ, PYTHONIOENCODING="ascii", COLUMNS="100")
    for args in (["page", "a"], ["-v", "tail", "a"], ["fold", "a", "--view", "timeline"]):
        p = subprocess.run([WARDRIK, "--root", str(root), *args, "-o", "pretty"], capture_output=True, env=env,
                           timeout=60)
        assert (p.returncode, p.stderr) == (0, b""), (args, p.stderr)
        text = p.stdout.decode("ascii")  # every byte fits the stream's encoding
        assert "caf\\xe9" in text, (args, text)


# ---------------------------------------------------------------------------------------------
# 4. WARDRIK_DEPLOYMENT
# ---------------------------------------------------------------------------------------------
def test_an_empty_deployment_variable_is_unset_and_a_bad_one_is_named(tmp_path):
    import orjson

    root = tmp_path / "r"
    run_cli("init", "--deployment", "acme-prod", root=root, check=True)
    empty = {"WARDRIK_DEPLOYMENT": ""}
    p = run_cli("append", "a", "run.started", root=root, env=empty)
    assert p.returncode == 0, p.stderr
    assert orjson.loads(p.stdout)["source"] == "wardrik://acme-prod/agents/a"  # config.toml, as when unset
    for args in (["page", "a"], ["tail", "a"], ["stats"], ["audit", "page"]):
        p = run_cli(*args, root=root, env=empty)
        assert p.returncode == 0 and p.stderr == b"", (args, p.stderr)
    p = run_cli("audit", "record", "agent.created", "agents/a", "-d", '{"agent": {"id": "a"}}', "--actor", "me",
                root=root, env=empty)
    assert p.returncode == 0 and orjson.loads(p.stdout)["source"] == "wardrik://acme-prod/audit", p.stderr
    before = (root / "a.jsonl").read_bytes()
    for args in (["page", "a"], ["append", "a", "run.completed"], ["compact", "--retention", "1s"]):
        p = run_cli(*args, root=root, env={"WARDRIK_DEPLOYMENT": "Not_Valid"})
        assert p.returncode == 2 and "$WARDRIK_DEPLOYMENT" in _err_line(p) and "'Not_Valid'" in _err_line(p), args
    assert (root / "a.jsonl").read_bytes() == before
    p = run_cli("--deployment", "", "page", "a", root=root)
    assert p.returncode == 2 and "--deployment" in _err_line(p)


# ---------------------------------------------------------------------------------------------
# 4. controls are shown, never dropped
# ---------------------------------------------------------------------------------------------
def test_controls_in_pretty_output_are_shown_as_escapes_never_dropped(tmp_path):
    import orjson

    root = tmp_path / "r"
    task = "\x1b]0;PWNED\x07 \x1b[31m\u202e\x08\x7f\x1cend"
    run_cli("append", "a", "run.started", "-d", orjson.dumps({"task": task}).decode(), root=root, check=True)
    tool = {"tool": {"name": "t\x07\x08\x0cx", "call": {"id": "c\rd"}}}
    run_cli("append", "a", "tool_call.started", "-d", orjson.dumps(tool).decode(), root=root, check=True)
    run_cli("append", "a", "tool_call.completed", "-d", orjson.dumps(tool).decode(), root=root, check=True)
    env = {"COLUMNS": "200"}
    page = run_cli("page", "a", "-o", "pretty", root=root, env=env).stdout.decode()
    # whitespace runs are one space in a one-line summary; every other control is an escape
    assert "task: \\x1b]0;PWNED\\x07 \\x1b[31m\\u202e\\x08\\x7f\\x1cend" in page, page
    assert "t\\x07\\x08 x (c d)" in page, page
    stats = run_cli("stats", "--by", "tool", "-o", "pretty", root=root, env=env).stdout.decode()
    # a table cell is one line, as a summary (Rich would drop BEL and BS; FF breaks a line there)
    assert "t\\x07\\x08 x" in stats, stats
    timeline = run_cli("fold", "a", "--view", "timeline", "-o", "pretty", root=root, env=env).stdout.decode()
    assert "\\x1b]0;PWNED\\x07" in timeline and "\\x7f" in timeline, timeline


# ---------------------------------------------------------------------------------------------
# 4. a cost sum that overflows
# ---------------------------------------------------------------------------------------------
def test_a_cost_sum_that_overflows_is_blank_with_a_warning_in_every_format(tmp_path):
    import orjson

    root = tmp_path / "r"
    for i in (1, 2):
        done = {"message": {"id": f"m{i}"}, "cost_usd": 1.5e308, "usage": {"input_tokens": 1, "output_tokens": 1}}
        run_cli("append", "a", "message.completed", "-d", orjson.dumps(done).decode(), root=root, check=True)
    for _ in range(2):  # counted, then from its checkpoint
        p = run_cli("stats", "-o", "json", root=root)
        assert p.returncode == 0 and orjson.loads(p.stdout)["groups"][0]["cost_usd"] is None
        assert b"add up past the largest number" in p.stderr, p.stderr
    p = run_cli("stats", "-o", "csv", root=root)
    assert p.stdout.splitlines()[1] == b"a,0,0,,0,,,,2,2,,0" and b"largest number" in p.stderr
    p = run_cli("stats", "--by", "model", "-o", "pretty", root=root, env={"COLUMNS": "150"})
    assert b"inf" not in p.stdout and b"largest number" in p.stderr, p.stdout
    p = run_cli("fold", "a", "--view", "usage", "-o", "json", root=root)
    assert orjson.loads(p.stdout)["state"]["cost_usd"] is None
    p = run_cli("fold", "a", "--view", "usage", "-o", "pretty", root=root)
    assert b"inf" not in p.stdout


@pytest.mark.parametrize("damage", ["corrupt line", "13-digit sequence"])
def test_a_refused_append_leaves_the_torn_tail(tmp_path, damage):
    """A log with a damaged line and then a torn tail: the append is refused and writes
    nothing (before, the torn tail was cut and kept aside, then the append refused)."""
    root = tmp_path / "root"
    assert run_cli("append", "a", "run.started", root=root).returncode == 0
    log = root / "a.jsonl"
    if damage == "corrupt line":
        with open(log, "ab") as f:
            f.write(b"not json\n")
    else:  # the next sequence would pass the 12-digit maximum
        log.write_bytes(log.read_bytes().replace(b'"sequence":"000000000001"', b'"sequence":"999999999999"'))
    with open(log, "ab") as f:
        f.write(b'{"partial')
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    p = run_cli("append", "a", "run.completed", root=root)
    assert p.returncode in (1, 2) and p.stderr.startswith(b"error:") and b"torn" not in p.stderr, p.stderr
    assert {q.name: q.read_bytes() for q in root.iterdir() if q.is_file()} == before


@pytest.mark.parametrize("damage", ["repeated", "swapped"])
@pytest.mark.parametrize("noted", [False, True])
def test_an_append_after_a_line_repeated_or_moved_at_the_end_is_refused_never_reusing_a_sequence(
        tmp_path, damage, noted):
    """Sequences 1,2,3 then 2 again (or 1,2,4,3): the next was the last line's plus one, a
    sequence the log already held. ``noted``: an append before the damage left its note of
    the file verified, which the damage voids (the whole file is read again)."""
    from follow_util import add

    root = tmp_path / "root"
    for i in range(4):
        add(root, "a", f"t{i}")
    log = root / "a.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    if noted:
        log.write_bytes(b"".join(lines[:3]))  # 1,2,3 ...
        run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "n"}}', root=root, check=True)
        lines = log.read_bytes().splitlines(keepends=True)
    if damage == "repeated":
        log.write_bytes(b"".join(lines + [lines[1]]))
    else:
        log.write_bytes(b"".join(lines[:2] + [lines[3], lines[2]]))
    before = log.read_bytes()
    p = run_cli("append", "a", "run.started", root=root)
    err = p.stderr.decode()
    assert p.returncode == 1 and err.count("error:") == 1 and "would reuse a sequence" in err, err
    assert log.read_bytes() == before


@pytest.mark.parametrize("cmd", [["page", "a"], ["tail", "a"], ["export", "otlp", "-o", "OUT"],
                                 ["page", "a", "--after", "eyJhIjowfQ"], ["tail", "a", "--after", "eyJhIjowfQ"]])
def test_a_cursor_file_in_a_folder_that_does_not_exist_is_refused_before_anything_is_read(tmp_path, cmd):
    """Before, page printed every event, then failed to keep the cursor (exit 1)."""
    root = tmp_path / "root"
    assert run_cli("append", "a", "run.started", root=root).returncode == 0
    cmd = [str(tmp_path / "out.json") if c == "OUT" else c for c in cmd]
    p = run_cli(*cmd, "--cursor-file", str(tmp_path / "nodir" / "x.cur"), root=root)
    assert p.returncode == 2 and p.stdout == b"" and p.stderr.startswith(b"error:"), p.stderr
    assert not (tmp_path / "out.json").exists()


@pytest.mark.subprocess
def test_a_custom_view_never_imports_code_planted_in_the_root(tmp_path):
    """Run from inside an evidence root (the root by default), ``fold --view MOD:NAME`` put the
    current directory first on the import path: a planted ``rich/`` ran as the reviewer (as
    root) once pretty output imported it. Now the root is never looked in, and the current
    directory elsewhere only while the view is imported, and last."""
    root = tmp_path / "ev"
    run_cli("append", "acme/a", "run.started", root=root, check=True)
    marker = tmp_path / "PWNED"
    for planted in ("rich", "okviews"):
        (root / planted).mkdir()
        (root / planted / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write({planted!r})\n")
    views = tmp_path / "views"
    views.mkdir()
    (views / "okviews.py").write_text("class Count:\n    def initial(self): return {'n': 0}\n"
                                      "    def apply(self, s, e): s['n'] += 1; return s\n")
    env = {k: v for k, v in os.environ.items() if k != "WARDRIK_ROOT"}
    p = subprocess.run([WARDRIK, "fold", "acme/a", "--view", "okviews:Count", "-o", "pretty"], cwd=root,
                       env={**env, "PYTHONPATH": str(views)}, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not marker.exists()
    (views / "okviews.py").unlink()  # only the planted one is left: the root is not looked in
    p = subprocess.run([WARDRIK, "fold", "acme/a", "--view", "okviews:Count"], cwd=root, env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 2 and b"no module named 'okviews'" in p.stderr and not marker.exists()
    p = subprocess.run([WARDRIK, "--root", str(root), "fold", "acme/a", "--view", "okviews:Count"],
                       cwd=tmp_path / "views", env=env, capture_output=True, timeout=60)
    assert p.returncode == 2 and not marker.exists()
    # a view in the current folder (not the root) that imports a module beside it as it runs
    (views / "helper.py").write_text("ONE = 1\n")
    (views / "okviews.py").write_text("class Count:\n    def initial(self): return {'n': 0}\n"
                                      "    def apply(self, s, e):\n        import helper\n"
                                      "        s['n'] += helper.ONE; return s\n")
    p = subprocess.run([WARDRIK, "--root", str(root), "fold", "acme/a", "--view", "okviews:Count", "-o", "json"],
                       cwd=views, env=env, capture_output=True, timeout=60)
    assert p.returncode == 0 and b'"n": 1' in p.stdout.replace(b'"n":1', b'"n": 1'), p.stderr


@pytest.mark.parametrize("args", [
    ["page", "-g", "a{99999999999}"],  # past re's repeat limit: an OverflowError, not re.error
    ["page", "--where", "data.x~a{99999999999}"],
    ["page", "-g", "a{99999999}"],  # under re's limit: the time-bounded matcher unrolled it (out of memory)
    ["page", "-g", "(a{999}){999}"],  # nested counts multiply
    ["export", "otlp", "--endpoint", "http://[::1"],  # urlsplit raised ValueError
    ["export", "otlp", "--endpoint", "http://a b"],  # http.client refused it only when sending
    ["export", "otlp", "--endpoint", "http://h:99999"],
])
def test_bad_patterns_and_urls_are_one_error_line(tmp_path, args):
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", root=root, check=True)
    p = run_cli(*args, root=root)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(b"error: bad ") and p.stderr.count(b"\n") == 1 and p.stdout == b""


@pytest.mark.subprocess
def test_a_pattern_re_warns_about_prints_no_python_warning(tmp_path):
    """``[[a]`` makes re print a FutureWarning with a source path and line, four times."""
    root = tmp_path / "r"
    run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "[a"}}', root=root, check=True)
    for args in (["page", "-g", "[[a]"], ["page", "--where", "data.trigger.name~[[a]"], ["tail", "-g", "[[a]"]):
        p = subprocess.run([WARDRIK, "--root", str(root), *args, "-o", "jsonl"], capture_output=True, timeout=60)
        assert p.returncode == 0 and p.stderr == b"", p.stderr


def test_export_refuses_one_file_for_the_spans_and_the_cursor(tmp_path):
    """The spans were appended, then the cursor's rename replaced them, and the cursor said
    they had gone: the next export sent nothing."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", root=root, check=True)
    same = tmp_path / "same"
    link = tmp_path / "link"
    link.symlink_to(same)
    for cursor in (same, link):
        p = run_cli("export", "otlp", "-o", str(same), "--cursor-file", str(cursor), root=root)
        assert p.returncode == 2 and b"one file" in p.stderr, p.stderr
        assert not same.exists()


def test_token_sums_past_64_bits_are_printed_whole(tmp_path):
    """Two counts that each fit in 64 bits, whose sum does not: stats was an internal error
    in every format (orjson writes no bigger integer), fold --view usage -o json an error."""
    root = tmp_path / "r"
    for m in ("m1", "m2"):
        run_cli("append", "a", "message.completed", "--data",
                f'{{"message": {{"id": "{m}"}}, "model": "x", "usage": {{"input_tokens": {10 ** 19}, '
                '"output_tokens": 1}}', root=root, check=True)
    for fmt in ("json", "jsonl", "pretty"):
        p = run_cli("stats", "--by", "model", "-o", fmt, root=root)
        assert p.returncode == 0, p.stderr
        assert b"20000000000000000000" in p.stdout.replace(b",", b"")
    p = run_cli("fold", "a", "--view", "usage", "-o", "json", root=root)
    assert p.returncode == 0, p.stderr
    assert b"20000000000000000000" in p.stdout
