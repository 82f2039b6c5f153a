"""The caches under ``.wardrik/`` are believed only when this user's wardrik wrote them
(``store.seal``): a checkpoint or an appender's note planted or edited under a root (every
byte there is hostile) is ignored, never an error: the fold reads the events, the append
verifies the log.

- A checkpoint edited to say something else (``fold``'s state, ``stats``' counts) changes
  nothing the fold reports.
- A verified note forged for a log with a corrupt line does not let append write after it;
  nor does a note this user wrote when the log was edited in place with its mtime put back.
- The key lives where the environment given says (``XDG_STATE_HOME``, else ``HOME``), made
  0600; without a usable one no cache is believed or written, and everything still works.

In process (``run_cli``), a few events per log.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from conftest import jsonl, run_cli


def cli(root: Path, *args: str, env: dict | None = None):
    p = run_cli(*args, root=root, env=env)
    assert p.returncode == 0, p.stderr
    return p


def a_run(root: Path) -> None:
    cli(root, "append", "acme/a", "run.started", "-d", '{"task":"deploy"}')
    cli(root, "append", "acme/a", "message.completed", "-d",
        '{"message":{"id":"m1"},"usage":{"input_tokens":5,"output_tokens":7}}')
    cli(root, "append", "acme/a", "run.completed", "-d", '{"answer":"all good"}')


def ck(root: Path, view: str) -> Path:
    return root / ".wardrik" / "checkpoints" / "acme" / f"a@{view}.json"


def edit(path: Path, *subs: tuple[bytes, bytes]) -> None:
    raw = path.read_bytes()
    for old, new in subs:
        assert old in raw, (old, raw)
        raw = raw.replace(old, new)
    path.write_bytes(raw)


def state(root: Path, env: dict | None = None) -> dict:
    return orjson.loads(cli(root, "fold", "acme/a", "-o", "json", env=env).stdout)["state"]


def test_an_edited_fold_checkpoint_changes_nothing(root):
    a_run(root)
    assert state(root)["answer"] == "all good"
    edit(ck(root, "state"), (b'"all good"', b'"FORGED"'), (b'"completed"', b'"failed"'))
    got = state(root)
    assert (got["status"], got["answer"]) == ("completed", "all good")


def test_an_edited_stats_checkpoint_changes_nothing(root):
    a_run(root)

    def tokens() -> list:
        out = orjson.loads(cli(root, "stats", "--by", "type", "-o", "json").stdout)
        return [(g["type"], g["input_tokens"], g["output_tokens"]) for g in out["groups"] if g["input_tokens"]]

    assert tokens() == [("message.completed", 5, 7)]
    edit(ck(root, "wardrik.stats.type"), (b",5,7,", b",5000,7000,"))
    assert tokens() == [("message.completed", 5, 7)]


def corrupt_line_2(path: Path) -> None:
    """In place (same inode, same size): the second line no longer parses."""
    with open(path, "r+b") as f:
        at = f.read().index(b"\n") + 1
        f.seek(at)
        f.write(b"X")


def note_path(root: Path, log: str = "a") -> Path:
    return root / ".wardrik" / "verified" / f"{log}@json"


def three(root: Path) -> Path:
    for _ in range(3):
        cli(root, "append", "a", "trigger.fired", "-d", '{"trigger":{"name":"nn"}}')
    return root / "a.jsonl"


def refused(root: Path) -> str:
    p = run_cli("append", "a", "trigger.fired", "-d", '{"trigger":{"name":"z"}}', root=root)
    assert p.returncode == 1 and p.stdout == b"", p.stderr
    return p.stderr.decode()


def test_a_forged_verified_note_does_not_let_append_write_after_a_corrupt_line(root):
    log = three(root)
    corrupt_line_2(log)
    st = os.stat(log)
    note_path(root).write_bytes(orjson.dumps({"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                              "ctime_ns": st.st_ctime_ns, "trace": None}))
    assert "corrupt line" in refused(root)
    assert len(log.read_bytes().splitlines()) == 3


def test_a_log_edited_in_place_with_its_mtime_put_back_is_verified_again(root):
    log = three(root)
    st = os.stat(log)
    corrupt_line_2(log)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))  # size, inode and mtime as the note has them
    assert "corrupt line" in refused(root)


def test_the_key_is_where_the_environment_given_says(root, tmp_path):
    a_run(root)
    one, two = tmp_path / "one", tmp_path / "two"
    assert state(root, {"XDG_STATE_HOME": str(one)})["status"] == "completed"
    key = one / "wardrik" / "key"
    st = os.stat(key)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 32
    assert stat.S_IMODE(os.stat(key.parent).st_mode) == 0o700
    # another key (another user, another machine): its checkpoint is not believed, then replaced
    edit(ck(root, "state"), (b'"all good"', b'"FORGED"'))
    assert state(root, {"XDG_STATE_HOME": str(two)})["answer"] == "all good"
    assert (two / "wardrik" / "key").read_bytes() != key.read_bytes()
    # no XDG_STATE_HOME: HOME's
    home = tmp_path / "home"
    home.mkdir()
    assert state(root, {"XDG_STATE_HOME": "", "HOME": str(home)})["answer"] == "all good"
    assert (home / ".local/state/wardrik/key").stat().st_size == 32


@pytest.mark.parametrize("where", ["no home", "a key others may read"])
def test_without_a_usable_key_no_cache_is_believed_or_written(root, tmp_path, where):
    if where == "no home":  # a relative HOME names none (without HOME, the password database's is used)
        env = {"XDG_STATE_HOME": "", "HOME": "relative/home"}
    else:
        key = tmp_path / "xdg" / "wardrik" / "key"
        key.parent.mkdir(parents=True)
        key.write_bytes(os.urandom(32))
        os.chmod(key, 0o644)
        env = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    for _ in range(2):
        cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"x"}}', env=env)
        assert state(root, env)["status"] == "empty"
    p = cli(root, "append", "acme/a", "run.completed", "-d", '{"answer":"done"}', env=env)
    assert jsonl(p.stdout)[0]["sequence"] == "000000000003"
    assert not (root / ".wardrik" / "checkpoints").exists() and not (root / ".wardrik" / "verified").exists()
    assert state(root, env)["status"] == "completed"


def test_no_home_is_made_to_hold_the_key(root, tmp_path):
    """A HOME naming no folder makes nothing (as root, HOME=/nonexistent made /nonexistent):
    the key's folders are made only below a home that exists; without a key no cache is kept."""
    ghost = {"XDG_STATE_HOME": "", "HOME": str(tmp_path / "ghost" / "home")}
    cli(root, "append", "acme/a", "trigger.fired", "-d", '{"trigger":{"name":"x"}}', env=ghost)
    assert state(root, ghost)["status"] == "empty"
    assert not (tmp_path / "ghost").exists()
