"""Retention on damaged logs and hand-edited settings (each found by review, reproduced first):
a line whose JSON is broken inside an otherwise well-shaped line, in the part dropped, is kept
beside the log (never deleted unseen); a log whose sequences go back is refused, not swept with
negative counts; a size past any disk is bad input, not a crash after dropping; `init` never
half-rewrites a config.toml it cannot edit, nor waits on one that is a FIFO."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest

from conftest import run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spread_ledger import write_spread  # noqa: E402


def _root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    write_spread(r / "a.jsonl", events=10, days=10, log_id="a")
    return r


def test_a_line_broken_inside_its_data_in_the_part_dropped_is_kept_and_reported(tmp_path):
    r = _root(tmp_path)
    path = r / "a.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    broken = lines[2].replace(b'"data":{', b'"data":{BROKEN', 1)
    assert broken != lines[2] and broken.startswith(b'{"specversion":"1.0","id":"') and broken.endswith(b"}}\n")
    lines[2] = broken
    path.write_bytes(b"".join(lines))
    assert run_cli("check", root=r).returncode == 1
    p = run_cli("compact", "--retention", "5d", "--format", "json", root=r)
    assert p.returncode == 1, p.stderr  # not --skip-corrupt
    row = orjson.loads(p.stdout)["logs"][0]
    assert row["damaged"] == 1, row
    kept = list(r.glob("a.jsonl.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == broken


def test_a_log_whose_sequences_go_back_is_not_swept(tmp_path):
    r = _root(tmp_path)
    path = r / "a.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):  # times go forward, sequences 100, 99, ... 91
        ev = orjson.loads(line)
        ev["sequence"] = f"{100 - i:012d}"
        out.append(orjson.dumps(ev) + b"\n")
    path.write_bytes(b"".join(out))
    p = run_cli("compact", "--retention", "5d", "--format", "json", root=r)
    assert p.returncode == 1
    row = orjson.loads(p.stdout)["logs"][0]
    assert "sequences go back" in row["error"], row
    assert path.read_bytes() == b"".join(out)  # untouched
    assert not list(r.glob(".wardrik/audit.jsonl")) or b"-" not in (r / ".wardrik/audit.jsonl").read_bytes()


@pytest.mark.parametrize("size", ["99999999999999T", "2000P", str(1 << 64)])
def test_a_size_past_any_disk_is_bad_input(tmp_path, size):
    r = _root(tmp_path)
    before = (r / "a.jsonl").read_bytes()
    for args in (("init", "--max-bytes", size), ("compact", "--max-bytes", size, "-r", "5d")):
        p = run_cli(*args, root=r)
        assert p.returncode == 2 and p.stderr.startswith(b"error: bad --max-bytes"), p.stderr
    assert (r / "a.jsonl").read_bytes() == before and not (r / ".wardrik" / "config.toml").exists()
    (r / ".wardrik" / "config.toml").write_text("max_bytes = 99999999999999999999\n")
    p = run_cli("compact", "-r", "5d", root=r)
    assert p.returncode == 2 and b"config.toml" in p.stderr, p.stderr
    assert (r / "a.jsonl").read_bytes() == before


@pytest.mark.parametrize("text", ['deployment = "acme"\nextra = [\n  ["a"],\n]\n',
                                  'notes = """\nretention = "1d"\n"""\n'], ids=["array", "string"])
def test_init_never_half_rewrites_a_config_it_cannot_edit(tmp_path, text):
    r = _root(tmp_path)
    cfg = r / ".wardrik" / "config.toml"
    cfg.write_text(text)
    p = run_cli("init", "--retention", "7d", root=r)
    assert p.returncode == 2 and b"edit it by hand" in p.stderr, p.stderr
    assert cfg.read_text() == text
    assert run_cli("compact", "--dry-run", root=r).returncode == 0  # still a valid config


def test_init_edits_a_config_keeping_its_comments_and_tables(tmp_path):
    r = _root(tmp_path)
    cfg = r / ".wardrik" / "config.toml"
    cfg.write_text('deployment = "acme"\n# keep me\nretention = "1d"\n[x]\ny = 1\n')
    p = run_cli("init", "--retention", "7d", "--max-bytes", "2G", root=r)
    assert p.returncode == 0, p.stderr
    assert cfg.read_text() == 'deployment = "acme"\n# keep me\nretention = "7d"\nmax_bytes = "2G"\n[x]\ny = 1\n'


@pytest.mark.subprocess
def test_init_does_not_wait_on_a_config_that_is_a_fifo(tmp_path):
    r = _root(tmp_path)
    os.mkfifo(r / ".wardrik" / "config.toml")
    p = run_cli("init", "--retention", "7d", root=r, process=True, timeout=30)
    assert p.returncode == 2 and b"FIFO" in p.stderr, p.stderr


def test_a_big_prefix_is_judged_in_two_halves_and_every_broken_line_is_kept(tmp_path):
    """Past PARALLEL_MIN the part dropped is judged half here, half in a forked child: a
    broken line in each half (and one right at the start of the second) is kept beside the
    log, in order, and the sweep reports all three."""
    from wardrik_cli.store.retention import PARALLEL_MIN

    r = tmp_path / "root"
    (r / ".wardrik").mkdir(parents=True)
    path = r / "a.jsonl"
    write_spread(path, mb=PARALLEL_MIN * 1.5 / 1e6, days=100, log_id="a", pad=20_000)  # few, big events
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    n = len(lines)
    half = next(i for i in range(n) if sum(map(len, lines[:i])) >= len(data) * 0.9 // 2)  # about the split
    picks = sorted({n // 5, half, half + 1, n * 3 // 5})
    for i in picks:
        lines[i] = lines[i].replace(b'"data":{', b'"data":{BROKEN', 1)
    path.write_bytes(b"".join(lines))
    p = run_cli("compact", "--retention", "10d", "--format", "json", root=r)
    assert p.returncode == 1, p.stderr
    row = orjson.loads(p.stdout)["logs"][0]
    assert row["damaged"] == len(picks), row
    kept = list(r.glob("a.jsonl.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b"".join(lines[i] for i in picks)
