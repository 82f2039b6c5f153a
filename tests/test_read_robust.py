"""Hostile roots and data met by readers (a review's findings, each a regression test).

- A chain of folders deeper than a log id can reach (1,100 levels) is walked no deeper than
  that, without recursion: every whole-root command works on the logs there are.
- A ``--grep`` or ``--where ~`` regex that backtracks catastrophically over event data never
  hangs a reader (``page``, ``tail``, ``tail -f``): it is searched by the ``regex`` package
  with a time budget per event, and past it the read ends with one ``error:`` naming the
  option, the pattern, the log and the sequence (exit 2).
- Data nested deeper than JSON is written (300 levels, in a line written by hand: orjson reads
  1,023 and writes 254; ``check`` passes it) is judged by ``--where`` without an internal
  error (a value too deep to compare is not equal and does not match), and ``fold``'s JSON
  cuts it (``deep.TOO_DEEP``, with a warning), as its pretty output does.
- ``fold --at`` anywhere before the first kept event of a compacted log is refused, just below
  it included (the state through a dropped event cannot be known); ``--at 0``, the state
  before any event, is always given (a log compaction emptied folds through 0 too).
- ``append --stream``: the end of the input ends the last line; a complete item without its
  newline is appended (as ``--batch -`` takes it).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli
from follow_util import LIVE_WAIT, _in_poll, add, compact

TRIGGER = '{"trigger":{"name":"x"}}'


def _ok(p) -> None:
    assert p.returncode == 0, p.stderr
    assert b"internal error" not in p.stderr and b"Traceback" not in p.stderr, p.stderr


# -- a chain of folders deeper than any log id ---------------------------------------------------
def _chain(base: Path, depth: int) -> list[Path]:
    """``base/d/d/...`` ``depth`` levels deep (made one level at a time: ``os.makedirs``
    recurses); the folders, top first."""
    made, p = [], base
    for _ in range(depth):
        p = p / "d"
        p.mkdir()
        made.append(p)
    return made


def _unchain(made: list[Path]) -> None:
    """Remove the chain bottom up (``shutil.rmtree``, and pytest's clean-up, recurse)."""
    for p in reversed(made):
        for e in os.scandir(p):
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.path)
        p.rmdir()


def test_a_chain_of_folders_deeper_than_a_log_id_is_walked_only_as_deep_as_one(root):
    run_cli("append", "ok", "trigger.fired", "-d", TRIGGER, root=root, check=True)
    made = _chain(root, 1100)
    try:
        deepest = "d/" * 99 + "x"  # 199 characters: a log id as deep as one can be
        run_cli("append", deepest, "trigger.fired", "-d", TRIGGER, root=root, check=True)
        (root / ("d/" * 100 + "y.jsonl")).write_bytes((root / "ok.jsonl").read_bytes())  # 201: no log id
        p = run_cli("page", "-o", "jsonl", root=root)
        _ok(p)
        assert sorted(e["subject"] for e in jsonl(p.stdout)) == sorted(["agents/ok", f"agents/{deepest}"])
        p = run_cli("head", "-o", "json", root=root)
        _ok(p)
        assert p.stdout.strip()
        for args in (("check",), ("activity", "-o", "json"), ("stats", "-o", "json"), ("compact", "-q"),
                     ("page", "d", "-o", "jsonl")):
            _ok(run_cli(*args, root=root))
        act = orjson.loads(run_cli("activity", "-o", "json", root=root).stdout)
        assert set(act) == {"ok", deepest}
    finally:
        _unchain(made)


# -- a regex that backtracks over event data ---------------------------------------------------
def _trigger(root, name: str) -> None:
    run_cli("append", "a", "trigger.fired", "-d", orjson.dumps({"trigger": {"name": name}}).decode(),
            root=root, check=True)


@pytest.mark.subprocess
@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # re's, on [[:alpha:]] below
def test_the_reviewed_backtracking_grep_returns(root):
    """The review's repro: Python's re never returns from this pattern on this text (grep -E
    takes 7 ms). A process of its own, so that the code before the fix fails by its timeout."""
    _trigger(root, "connection reset by peer connection reset by peer !")
    _trigger(root, "two words")
    _trigger(root, "x{e<=1} [:]")
    p = run_cli("page", "a", "-g", r"^(\w+\s?)*$", "-o", "jsonl", root=root, process=True, timeout=60)
    _ok(p)
    assert [e["data"]["trigger"]["name"] for e in jsonl(p.stdout)] == ["two words"]

    def names(*args: str) -> list[str]:
        p = run_cli("page", "a", *args, "-o", "jsonl", root=root)
        _ok(p)
        return [e["data"]["trigger"]["name"] for e in jsonl(p.stdout)]

    assert names("--where", r"data.trigger.name~^(\w+\s?)*$") == ["two words"]
    # Such a pattern is searched by the regex package, read as re reads it: a "{" that is no
    # repetition is a literal (regex alone reads fuzzy matching: x+ with one error matches
    # "two words"), and "[" in a set is one too (regex alone reads a POSIX class).
    assert names("-g", r"x+{e<=1}") == ["x{e<=1} [:]"]
    assert names("-g", r"[[:alpha:]]+") == ["x{e<=1} [:]"]  # re: one of "[:alph", then "]"s
    # a named character keeps its braces (escaping them made the pattern match nothing)
    assert names("-g", r"\N{LATIN SMALL LETTER E}+r") == ["connection reset by peer connection reset by peer !"]
    assert names("--where", r"data.trigger.name~\N{LATIN SMALL LETTER W}\N{LATIN SMALL LETTER O}+") == ["two words"]


# (a|aa)+$ on 36 a's and a b: about 5 s for re and 11 s for regex here, growing by 1.6x per
# letter. With the budget cut to 10 ms the search is stopped a thousand times short of its end;
# the code before the fix runs it to the end and shows the events after it.
SLOW = r"(a|aa)+$"
HOSTILE = "a" * 36 + "b"


@pytest.fixture
def short_budget(monkeypatch):
    from wardrik_cli.read import filters

    monkeypatch.setattr(filters, "MATCH_BUDGET_S", 0.01, raising=False)


def _one_error(p, option: str, pattern: str, seq: int) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.decode() == (f"error: {option} {pattern!r} took too long on a at sequence {seq} "
                                 f"(over 0.01 s): simplify it\n")


def test_a_grep_past_its_time_budget_is_one_error(root, short_budget):
    _trigger(root, "aa")
    _trigger(root, HOSTILE)
    _trigger(root, "aaa")
    for args in (("page", "a", "-o", "jsonl"), ("page", "a", "-o", "pretty"), ("tail", "a", "-n", "5")):
        p = run_cli(*args, "-g", SLOW, root=root)
        _one_error(p, "--grep", SLOW, 2)
        assert b"aaa" not in p.stdout  # nothing after the error
    p = run_cli("page", "a", "--where", f"data.trigger.name~{SLOW}", "-o", "jsonl", root=root)
    _one_error(p, "--where", f"data.trigger.name~{SLOW}", 2)


def test_tail_f_refuses_a_backtracking_grep_on_an_event_it_follows(root, short_budget):
    from wardrik_cli.errors import BadInput
    from wardrik_cli.follow.follower import agent_logs_fn, tail_items
    from wardrik_cli.read.filters import Filters
    from wardrik_cli.store.layout import Root

    add(root, "a", "aa")
    r = Root(root)
    f = tail_items(r, agent_logs_fn(r, ["a"]), n=0, follow=True, filters=Filters.build(grep=SLOW))

    def write_once_following() -> None:
        deadline = time.monotonic() + LIVE_WAIT
        while not ("a" in f.positions and _in_poll(os.getpid())) and time.monotonic() < deadline:
            time.sleep(0.01)
        add(root, "a", HOSTILE)  # no doorbell: the follower's own watch finds it
        add(root, "a", "aaa")

    writer = threading.Thread(target=write_once_following, daemon=True)
    got: list = []
    with f:
        writer.start()
        try:
            got.append(next(iter(f)))  # before the fix: seq 2 searched to its end, then seq 3 shown
        except BadInput as e:  # exit 2 at the command line
            got.append(e)
    writer.join(LIVE_WAIT)
    assert [str(x) for x in got] == [f"--grep {SLOW!r} took too long on a at sequence 2 (over 0.01 s): simplify it"]


# -- data nested deeper than JSON is written ----------------------------------------------------
DEEP = b'{"k":' * 300 + b"1" + b"}" * 300


def _deep_log(root, items: list[tuple[str, dict]]) -> None:
    """Append ``items``, then put ``DEEP`` in place of every ``"@@DEEP@@"`` in the log."""
    batch = b"".join(orjson.dumps({"type": t, "data": d}) + b"\n" for t, d in items)
    run_cli("append", "a", "--batch", "-", input=batch, root=root, check=True)
    path = root / "a.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"@@DEEP@@"', DEEP))
    assert run_cli("check", root=root).returncode == 0


def _marker_level(v) -> int | None:
    """The level (the top is 1) at which TOO_DEEP stands in ``v``, or None."""
    from test_deep_values import _depth_of_marker

    return _depth_of_marker(v)


def test_where_judges_a_value_too_deep_to_compare(root):
    _deep_log(root, [("trigger.fired", {"trigger": {"name": "x"}, "k": "@@DEEP@@"}),
                     ("trigger.fired", {"trigger": {"name": "y"}, "k": 1})])

    def names(where: str) -> list[str]:
        p = run_cli("page", "a", "--where", where, "-o", "jsonl", root=root)
        _ok(p)
        return [e["data"]["trigger"]["name"] for e in jsonl(p.stdout)]

    assert names("data.k=1") == ["y"]
    assert names("data.k!=1") == ["x"]
    assert names("data.k~k") == []
    assert names("data.k.k.k~k") == []  # a path into it: deep still
    assert names("data.trigger.name=x") == ["x"]  # other paths of that event as ever


def test_fold_json_cuts_a_state_nested_too_deep_and_says_so(root):
    STATE_DEPTH = 253  # folding.engine.STATE_DEPTH: orjson writes 254 levels, less the document's own

    _deep_log(root, [("run.started", {"task": "@@DEEP@@"}), ("run.completed", {"answer": "@@DEEP@@"}),
                     ("run.started", {"task": "@@DEEP@@"}), ("run.failed", {"error": {"message": "@@DEEP@@"}})])
    for view in ("state", "timeline"):
        for fmt in ("json", "jsonl"):
            p = run_cli("fold", "a", "--view", view, "-o", fmt, root=root)
            _ok(p)
            doc = orjson.loads(p.stdout)
            assert doc["through"] == 4 and doc["view"] == view
            level = _marker_level(doc["state"])
            assert level is not None and level <= STATE_DEPTH + 1, level
            err = p.stderr.decode()
            assert err.count("\n") == 1 and err.startswith("warning: the state of a holds values nested deeper"), err
    # cut only where JSON cannot go: the state's task (level 2) keeps 252 levels of its 301
    state = orjson.loads(run_cli("fold", "a", "-o", "json", root=root).stdout)["state"]
    assert state["status"] == "failed" and _marker_level(state) == STATE_DEPTH + 1


# -- fold --at just below the first kept event ----------------------------------------------------
def test_fold_at_before_the_first_kept_event_is_refused_up_to_it(root):
    for i in range(5):
        _trigger(root, f"n{i}")
    ok = run_cli("fold", "a", "--at", "0", "-o", "json", root=root)  # nothing dropped: the empty state
    _ok(ok)
    assert orjson.loads(ok.stdout)["through"] == 0
    compact(root, "a", 4)  # sequences 1..3 dropped
    zero = run_cli("fold", "a", "--at", "0", "-o", "json", root=root)  # before any event: the empty state
    _ok(zero)
    assert orjson.loads(zero.stdout)["state"] == orjson.loads(ok.stdout)["state"]
    for at in (1, 2, 3):
        p = run_cli("fold", "a", "--at", str(at), "-o", "json", root=root)
        assert (p.returncode, p.stdout) == (2, b""), (at, p.returncode, p.stdout)
        assert p.stderr.decode() == (f"error: --at {at} is before the first event a holds (4): the events "
                                     f"through 3 were dropped by compaction\n")
    p = run_cli("fold", "a", "--at", "4", "-o", "json", root=root)
    _ok(p)
    assert orjson.loads(p.stdout)["through"] == 4


# -- append --stream: a last line without its newline ---------------------------------------------
def test_stream_appends_a_complete_last_line_without_its_newline(root):
    items = [orjson.dumps({"type": "trigger.fired", "data": {"trigger": {"name": n}}}) for n in ("a", "b")]
    body = b"\n".join(items)  # no newline at the end
    p = run_cli("append", "s", "--stream", input=body, root=root)
    _ok(p)
    assert p.stderr == b""
    assert [e["data"]["trigger"]["name"] for e in jsonl(p.stdout)] == ["a", "b"]
    batch = run_cli("append", "t", "--batch", "-", input=body, root=root)  # as --batch - reads it
    _ok(batch)
    stored = [e["data"]["trigger"]["name"] for e in jsonl((root / "s.jsonl").read_bytes())]
    assert stored == ["a", "b"] == [e["data"]["trigger"]["name"] for e in jsonl((root / "t.jsonl").read_bytes())]
    # a live item last, with no newline: published, printed as delivered
    live = b'{"type":"message.delta","data":{"message":{"id":"m1"},"delta":"x"}}'
    p = run_cli("append", "s", "--stream", input=items[0] + b"\n" + live, root=root)
    _ok(p)
    assert [e["type"] for e in jsonl(p.stdout)] == ["wardrik.trigger.fired", "wardrik.message.delta"]


def test_a_start_deleted_by_hand_is_a_gap_warning_not_a_retention_notice(root):
    """A log whose first line was deleted, with no compaction record: page, tail -n and tail
    --after warn of the gap and show no events.dropped (before: a retention notice, no
    warning); the same log compacted (with its record) still gets the notice."""
    for i in range(3):
        assert run_cli("append", "a", "trigger.fired", "--data", f'{{"trigger": {{"name": "n{i}"}}}}',
                       root=root).returncode == 0
    log = root / "a.jsonl"
    log.write_bytes(log.read_bytes().split(b"\n", 1)[1])
    for args in (["page", "a"], ["tail", "a"], ["tail", "a", "--after", "eyJhIjowfQ"]):
        p = run_cli(*args, "-o", "jsonl", root=root)
        assert p.returncode == 0, p.stderr
        assert [e["sequence"] for e in jsonl(p.stdout)] == ["000000000002", "000000000003"], args
        assert p.stderr.decode().startswith("warning: a: sequence 1 is missing"), (args, p.stderr)
    assert run_cli("check", root=root).returncode == 1
    # a line deleted in the middle: tail --after warns too (before: its read-back said nothing)
    log.write_bytes(log.read_bytes().split(b"\n", 1)[1])  # now 3 alone
    assert run_cli("append", "a", "trigger.fired", "--data", '{"trigger": {"name": "n4"}}', root=root).returncode == 0
    p = run_cli("tail", "a", "--after", "eyJhIjoyfQ", "-o", "jsonl", root=root)  # {"a": 2}
    assert p.returncode == 0 and len(jsonl(p.stdout)) == 2 and b"warning:" not in p.stderr
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(lines[1] + b"\n")  # 3 deleted: 4 alone after position 2
    p = run_cli("tail", "a", "--after", "eyJhIjoyfQ", "-o", "jsonl", root=root)
    assert p.returncode == 0 and b"sequence 3 is missing" in p.stderr, p.stderr


def test_a_read_over_many_logs_still_tells_each_gap_and_repeat(root):
    """Over KEEP_OPEN logs a log's reporters are made when it first meets a gap or a repeat
    (memory: two closures per log outweighed a read of 50,000 logs): still told, each once."""
    from ledgergen import write_log

    for i in range(70):
        write_log(root / "m" / f"l{i:02d}.jsonl", 5, log_id=f"m/l{i:02d}", pad=10)
    gap = root / "m" / "l07.jsonl"
    lines = gap.read_bytes().split(b"\n")
    gap.write_bytes(b"\n".join(lines[:2] + lines[3:]))  # sequence 3 deleted
    rep = root / "m" / "l50.jsonl"
    lines = rep.read_bytes().split(b"\n")
    rep.write_bytes(b"\n".join(lines[:4] + [lines[3]] + lines[4:]))  # sequence 4 twice
    p = run_cli("page", "m/*", "--all", "-o", "jsonl", root=root)
    assert p.returncode == 0, p.stderr
    err = p.stderr.decode().splitlines()
    assert [e for e in err if "m/l07: sequence 3 is missing" in e] and [e for e in err if "m/l50: sequence 4" in e]
    assert len(err) == 2, err
    assert len(jsonl(p.stdout)) == 70 * 5 - 1


def test_a_pages_own_cursor_past_swapped_last_lines_is_taken_by_the_next_page(tmp_path):
    """Sequences 1,2,4,3: the page moves its cursor past 4, the highest; before, the next page
    refused that cursor ('is at 4 but the log ends at 3'), so a --cursor-file reader was stuck."""
    root = tmp_path / "r"
    for i in range(4):
        add(root, "L", f"t{i}")
    path = root / "L.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + [lines[3], lines[2]]))
    cur = tmp_path / "cur"
    first = run_cli("page", "L", "--cursor-file", str(cur), "-o", "jsonl", root=root)
    assert first.returncode == 0 and len(jsonl(first.stdout)) == 3, first.stderr
    again = run_cli("page", "L", "--cursor-file", str(cur), "-o", "jsonl", root=root)
    assert again.returncode == 0 and again.stdout == b"", again.stderr
    past = run_cli("page", "L", "--after", "eyJMIjo1fQ", root=root)  # {"L":5}: past every line
    assert past.returncode == 2 and b"bad cursor" in past.stderr
