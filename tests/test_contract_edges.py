"""Edges of the contract a user's script meets, each found by a review that reproduced it."""
from __future__ import annotations

import orjson

from conftest import jsonl, run_cli


def test_an_empty_cursor_file_is_the_start(tmp_path):
    """``F=$(mktemp)`` then ``page --cursor-file "$F"``: refused before ("is empty"); the
    contract reads the start from F "when it exists". Then the cursor is written to it."""
    root = tmp_path / "r"
    for i in range(3):
        run_cli("append", "a", "trigger.fired", "--data", orjson.dumps({"trigger": {"name": f"t{i}"}}).decode(),
                root=root, check=True)
    f = tmp_path / "cur"
    f.write_bytes(b"")
    p = run_cli("page", "a", "--cursor-file", str(f), root=root)
    assert p.returncode == 0, p.stderr
    assert len(jsonl(p.stdout)) == 3 and f.read_text().strip()
    assert jsonl(run_cli("page", "a", "--cursor-file", str(f), root=root).stdout) == []
    f.write_bytes(b"\n")  # `echo > F` too; and tail: a cursor file that exists is a start: every event after it
    p = run_cli("tail", "a", "-n", "1", "--cursor-file", str(f), root=root)
    assert p.returncode == 0 and len(jsonl(p.stdout)) == 3, p.stderr


def test_appending_a_live_event_makes_the_root_as_any_append_does(tmp_path):
    root = tmp_path / "new"
    p = run_cli("append", "a", "message.delta", "--data", '{"message": {"id": "m"}, "delta": "x"}', root=root)
    assert p.returncode == 0, p.stderr
    assert run_cli("page", root=root).returncode == 0  # before: "root ... does not exist"


def test_an_empty_root_option_is_refused_not_taken_for_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["--root", "", "append", "a", "run.started"], ["page", "--root", ""]):
        p = run_cli(*args)
        assert p.returncode == 2 and p.stderr.startswith(b"error: --root is empty"), p.stderr
    assert list(tmp_path.iterdir()) == []  # before: a root made in the current folder


def test_a_root_written_as_an_unknown_url_is_quoted_as_typed(tmp_path):
    """``S3://b/p`` read as a folder: the error quoted ``S3:/b/p`` (a path folds ``//``)."""
    p = run_cli("--root", "S3://ledgers/p2", "head")
    assert p.returncode == 2 and b"'S3://ledgers/p2'" in p.stderr and b"lower case" in p.stderr


def test_an_s3_prefix_with_an_empty_part_is_bad_input(tmp_path):
    """``s3://ledgers/a//b``: the S3 client refused the key before sending anything, and the
    error said the endpoint gave no answer (exit 1)."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", root=root, check=True)
    for url in ("s3://ledgers/a//b", "s3://ledgers/a/../b"):
        p = run_cli("ship", url, root=root)
        assert p.returncode == 2 and b"is not a target" in p.stderr, p.stderr


def test_fold_of_a_run_that_is_not_there_says_so(tmp_path):
    """``fold --run ffffffff`` printed an empty state with exit 0 and no word."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", "--data", '{"run": {"id": "' + "ab" * 16 + '"}}', root=root, check=True)
    p = run_cli("fold", "a", "--run", "ffffffff", "-o", "json", root=root)
    assert p.returncode == 0 and b"no event of run ffffffff" in p.stderr
    p = run_cli("fold", "a", "--run", "abab", "-o", "json", root=root)
    assert p.returncode == 0 and p.stderr == b"", p.stderr


def test_the_state_printout_cuts_values_at_60_characters(tmp_path):
    """CONTRACT (fold): the state view "gives that seed's values (its printout cuts them at 60
    characters)"; on a wide terminal the whole 87-character answer was printed."""
    root = tmp_path / "r"
    run_cli("append", "a", "run.started", "--data", '{"task": "t"}', root=root, check=True)
    run_cli("append", "a", "run.completed", "--data", '{"answer": "' + "x" * 87 + '"}', root=root, check=True)
    p = run_cli("fold", "a", "-o", "pretty", root=root, env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    [line] = [ln for ln in p.stdout.decode().splitlines() if "answer" in ln]
    assert "x" * 60 + "..." in line and "x" * 61 not in line


def test_fold_of_a_file_with_a_root_that_does_not_exist_is_refused_as_by_every_reader(tmp_path):
    """CONTRACT: a root that does not exist is an error for every command but append and audit
    record; `fold FILE.jsonl` folded the file and exited 0."""
    assert run_cli("append", "a", "run.started", root=tmp_path / "r").returncode == 0
    missing = tmp_path / "missing"
    for argv in (["fold", str(tmp_path / "r" / "a.jsonl")], ["fold", "a"], ["page", "a"]):
        p = run_cli(*argv, root=missing)
        assert (p.returncode, p.stdout) == (2, b""), argv
        assert p.stderr.startswith(b"error: root ") and b"does not exist" in p.stderr, p.stderr
    assert run_cli("fold", str(tmp_path / "r" / "a.jsonl"), root=tmp_path).returncode == 0  # any root that is one
