"""--since gives the right answer on a log whose times are not sorted, and says it scanned."""
from __future__ import annotations

import io
from datetime import datetime, timedelta, UTC

import orjson
import pytest

from wardrik_cli.cli.app import run
from wardrik_cli.protocol.catalogue import lookup
from wardrik_cli.protocol.envelope import build_event, dumps_line, new_span_id, new_trace_id
from wardrik_cli.protocol.times import format_dt

T0 = datetime(2026, 10, 1, tzinfo=UTC)


def _write(path, times):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for i, t in enumerate(times, 1):
            f.write(dumps_line(build_event(etype=lookup("trigger.fired"), data={"trigger": {"name": f"e{i}"}, "pad": "x" * 300},
                                           source="wardrik://local/agents/a/x", subject="agents/a/x", seq=i,
                                           time_str=format_dt(t), trace=new_trace_id(), span=new_span_id())))


def _cli(root, *args):
    """(exit code, stdout, stderr text) of ``wardrik --root ROOT ARGS`` run in this process."""
    out, err = io.BytesIO(), io.BytesIO()
    code = run(["--root", str(root), *args], {"NO_COLOR": "1"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue().decode()


def _page(root, *args):
    code, out, err = _cli(root, "page", "a/x", "--limit", "100000", *args)
    return code, [orjson.loads(line) for line in out.splitlines()], err


def test_since_on_an_unsorted_log_finds_every_event_and_warns(tmp_path):
    root = tmp_path / "root"
    n = 4000  # big enough that the seek bisects (over 64 KiB)
    times = [T0 + timedelta(seconds=i) for i in range(n)]
    late = T0 + timedelta(days=2)
    for i in range(700, 1000):
        times[i] = late + timedelta(seconds=i)  # another writer's stretch, far ahead of its neighbours
    _write(root / "a" / "x.jsonl", times)
    since = format_dt(T0 + timedelta(days=1))
    code, events, err = _page(root, "--since", since)
    assert code == 0, err
    # before: all 300 were left out (the bisection checked one neighbour). A lone line out of
    # order between two samples is the documented limit (store/log.py, offset_at_time).
    assert [int(e["sequence"]) for e in events] == list(range(701, 1001))
    assert "not in order" in err and err.startswith("warning:")


@pytest.mark.parametrize("option,at", [("--since", 3990), ("--until", 10)])
def test_a_window_on_a_sorted_log_reads_it_without_a_warning(tmp_path, option, at):
    root = tmp_path / "root"
    times = [T0 + timedelta(seconds=i) for i in range(4000)]
    _write(root / "a" / "x.jsonl", times)
    code, events, err = _page(root, option, format_dt(times[at]))
    assert code == 0 and err == "" and len(events) == 10


def _tail(root, *args):
    code, out, err = _cli(root, "tail", "a/x", "-o", "jsonl", *args)
    return code, [orjson.loads(line) for line in out.splitlines()], err


def test_tail_since_on_an_unsorted_log_reads_back_past_an_older_line(tmp_path):
    """tail -n with --since stopped reading back at the first line older than --since: on a
    log whose times go back, the events before that line (at or after --since) were left out."""
    root = tmp_path / "root"
    _write(root / "a" / "x.jsonl", [T0 + timedelta(days=50), T0, T0 + timedelta(days=1)])
    code, events, err = _tail(root, "-n", "5", "--since", format_dt(T0 + timedelta(days=30)))
    assert code == 0 and [int(e["sequence"]) for e in events] == [1], err
    # a sorted log: read back no further than the window's start, no warning
    _write(root / "a" / "x.jsonl", [T0 + timedelta(seconds=i) for i in range(50)])
    code, events, err = _tail(root, "-n", "5", "--since", format_dt(T0 + timedelta(seconds=47)))
    assert code == 0 and err == "" and [int(e["sequence"]) for e in events] == [48, 49, 50]


def test_a_lone_line_out_of_order_near_the_seek_is_found(tmp_path):
    """Every line in the window before the seek's answer is checked, not only samples: one
    later line among 200 (a hand edit, 66 KB log) was left out by page --since."""
    root = tmp_path / "root"
    since = format_dt(T0 + timedelta(days=30))
    # page's seek checks the 256 KB before its answer; tail's read-back the 16 KB before the
    # first line it meets older than --since (one small read a log)
    for read, late in ((_page, 10), (_tail, 180)):
        times = [T0] * 200
        times[late] = T0 + timedelta(days=50)
        _write(root / "a" / "x.jsonl", times)
        code, events, err = read(root, "--since", since)
        assert code == 0 and [int(e["sequence"]) for e in events] == [late + 1], read
        assert "not in order" in err


def test_a_page_since_moves_the_cursor_past_a_log_wholly_before_the_window(tmp_path):
    """The seek by --since passes over a log's events before the window: the cursor moves past
    them whether or not the log has events in the window (before: a log wholly before it kept
    position 0, and the next page without --since read it all again)."""
    from wardrik_cli.protocol.cursor import decode_cursor

    root = tmp_path / "root"
    _write(root / "a" / "x.jsonl", [T0 + timedelta(seconds=i) for i in range(5)])  # all before the window
    _write(root / "a" / "y.jsonl", [T0 + timedelta(days=2, seconds=i) for i in range(3)])  # in it
    out, err = io.BytesIO(), io.BytesIO()
    cur = tmp_path / "c.cur"
    code = run(["--root", str(root), "page", "a/*", "--since", format_dt(T0 + timedelta(days=1)), "--cursor-file",
                str(cur), "-o", "jsonl"], {"NO_COLOR": "1"}, stdout=out, stderr=err)
    assert code == 0 and len(out.getvalue().splitlines()) == 3, err.getvalue()
    assert decode_cursor(cur.read_text().strip()) == {"a/x": 5, "a/y": 3}


def test_until_on_an_unsorted_log_finds_every_event_and_warns(tmp_path):
    """Before: the read stopped at the first line past --until, leaving out the later lines
    inside the window (page, a merge of several logs, and stats alike), with no word."""
    root = tmp_path / "root"
    times = [T0 + timedelta(seconds=i) for i in range(4000)]
    times[1] = T0 + timedelta(days=3)  # one line far ahead (a hand edit, another writer's clock)
    _write(root / "a" / "x.jsonl", times)
    until = format_dt(T0 + timedelta(days=1))
    code, events, err = _page(root, "--until", until)
    assert code == 0, err
    assert [int(e["sequence"]) for e in events] == [1, *range(3, 4001)]
    assert "not in order" in err and err.startswith("warning:")
    _write(root / "b.jsonl", [T0 + timedelta(hours=1)])
    code, out, _ = _cli(root, "page", "--all", "--until", until)  # over two logs: the merge
    assert code == 0 and len(out.splitlines()) == 4000
    code, out, _ = _cli(root, "stats", "a/x", "--by", "type", "--until", until, "-o", "json")
    assert code == 0 and orjson.loads(out)["groups"][0]["calls"] == 3999
