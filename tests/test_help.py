"""Help that teaches: every command ends with real examples, `wardrik --help` groups commands by use,
shell completion works, and errors suggest the fix."""
from __future__ import annotations

import os
import re
import shlex

import pytest
import typer

from conftest import run_cli
from wardrik_cli.cli.app import app, load_commands

load_commands(["--help"])  # every command module, as `wardrik --help` loads them

GROUPS = ("Watch", "Review", "Maintain", "Write")


def _commands():
    """(path, click command) for every command and subcommand, and the groups themselves."""
    top = typer.main.get_command(app)
    out = [((), top)]

    def walk(prefix, group):
        for name, cmd in group.commands.items():
            out.append((prefix + (name,), cmd))
            if hasattr(cmd, "commands"):
                walk(prefix + (name,), cmd)
    walk((), top)
    return out


COMMANDS = _commands()
IDS = [" ".join(p) or "wardrik" for p, _ in COMMANDS]


def _examples(help_text: str) -> list[str]:
    """The example command lines of a help text: its last indented block, `\\` continuations joined."""
    paras = [p for p in help_text.split("\n\n") if p.strip()]
    assert paras, "no help at all"
    lines = []
    for para in reversed(paras):
        if not all(l[:1].isspace() or not l.strip() for l in para.splitlines()):
            break
        lines[:0] = [l.strip() for l in para.splitlines() if l.strip()]
    joined, cur = [], ""
    for l in lines:
        cur += l[:-1] + " " if l.endswith("\\") else l
        if not l.endswith("\\"):
            joined.append(cur)
            cur = ""
    return joined


def _rest(ctx) -> list:
    return list(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []) + list(ctx.args)


def test_all_commands_are_covered():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"append", "page", "head", "tail", "fold", "activity", "compact", "check", "types", "audit",
            "audit record", "audit page", "audit tail"} <= names


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=IDS)
def test_help_ends_with_examples_that_parse(path, cmd):
    import inspect
    text = inspect.cleandoc(cmd.help or "")
    assert text.splitlines()[0].strip(), "a one-line summary first"
    examples = _examples(text)
    assert 1 <= len(examples) <= 3, text
    assert re.search(r"\n\s*Examples?:\n", text)
    top = typer.main.get_command(app)
    used = set()
    for ex in examples:
        words = shlex.split(ex.replace("$(", "").replace(")", "") if ex.startswith("cur=") else ex)
        # `0 * * * * wardrik ...` (cron) or `cur=$(wardrik ...)`: from the word wardrik on, up to a pipe
        # (cron's line names the executable by its path: /path/to/.venv/bin/wardrik)
        words = ["wardrik" if w.endswith("/bin/wardrik") else w for w in words]
        words = words[words.index("wardrik") + 1:] if "wardrik" in words else words[words.index("cur=wardrik") + 1:]
        if "|" in words:
            words = words[:words.index("|")]
        # the example's words must parse as `run` parses them (global options after the
        # command move before it): its command exists and its options are real ones
        from wardrik_cli.cli.app import hoist_globals

        ctx = top.make_context("wardrik", hoist_globals(list(words), top), resilient_parsing=False)
        group, args = top, _rest(ctx)
        while args:
            name, sub, args = group.resolve_command(ctx, args)
            used.add(name)
            ctx = sub.make_context(name, list(args), parent=ctx)
            group, args = sub, (_rest(ctx)) if hasattr(sub, "commands") else []
    assert not path or path[-1] in used, (path, examples)  # at least one example runs this command


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=IDS)
def test_help_shows_the_examples(path, cmd):
    p = run_cli(*path, "--help", env={"COLUMNS": "120"})
    assert p.returncode == 0 and p.stderr == b""
    out = p.stdout.decode()
    import inspect
    for ex in _examples(inspect.cleandoc(cmd.help or "")):
        first = ex.split(" \\")[0].split("  --")[0]
        assert first.split()[0] in out and " ".join(first.split()[:3]) in re.sub(r"\s+", " ", out)


def test_top_help_groups_commands_by_use():
    out = run_cli("--help", env={"COLUMNS": "100"}).stdout.decode()
    at = {g: out.find(f"─ {g} ─") for g in GROUPS}
    assert all(v >= 0 for v in at.values()), at
    assert sorted(at, key=at.get) == list(GROUPS)  # Watch first, then Review, Maintain, Write

    def panel(name):
        start = at[name]
        ends = [v for v in at.values() if v > start]
        return out[start:min(ends) if ends else len(out)]
    assert "tail" in panel("Watch") and "activity" in panel("Watch")
    assert all(c in panel("Review") for c in ("page", "fold", "head", "types", "audit"))
    assert "compact" in panel("Maintain") and "check" in panel("Maintain")
    assert "append" in panel("Write")
    for opt in ("--local", "--verbose", "--color", "--root"):
        assert opt in out
    assert "[default" not in out.split("Options")[0]


def test_no_sentence_is_cut_by_hard_line_breaks():
    """Help prose reflows: at 60 columns no line of prose is a lone word left over from a source line."""
    out = run_cli("audit", "record", "--help", env={"COLUMNS": "60"}).stdout.decode()
    body = out.split("Examples")[0]
    prose = [l.strip() for l in body.splitlines()[3:] if l.strip()]
    assert all(len(l.split()) > 1 for l in prose), prose


@pytest.mark.subprocess
def test_shell_completion(tmp_path):
    """Completion is the executable's (its HOME, its _WARDRIK_COMPLETE): a real process.

    Typer finds the shell among the process's ancestors (shellingham), so the two options run
    under a bash that stays their parent: pytest itself may have no shell above it."""
    import subprocess

    from conftest import WARDRIK

    env = {"SHELL": "/bin/bash", "HOME": str(tmp_path)}
    for opt in ("--show-completion", "--install-completion"):
        p = subprocess.run(["bash", "-c", '"$0" "$1"; exit $?', WARDRIK, opt], capture_output=True, timeout=60,
                           env={**os.environ, **env})
        assert p.returncode == 0 and b"Traceback" not in p.stderr, (opt, p.stderr)
        assert opt != "--show-completion" or b"_WARDRIK_COMPLETE" in p.stdout
    assert (tmp_path / ".bash_completions" / "wardrik.sh").exists()
    for words, cword, want in (("wardrik ta", "1", b"tail"), ("wardrik audit ", "2", b"record"),
                               ("wardrik tail --fo", "2", b"--follow"), ("wardrik --lo", "1", b"--local")):
        p = run_cli(env={**env, "COMP_WORDS": words, "COMP_CWORD": cword, "_WARDRIK_COMPLETE": "complete_bash"},
                    process=True)
        assert p.returncode == 0 and want in p.stdout.split(), (words, p.stdout)


@pytest.mark.parametrize("args,hint", [
    (("tial", "acme/*"), b"Did you mean 'tail'?"),
    (("page", "acme/*", "-t", "tool_call.fail"), b"did you mean tool_call.failed"),
    (("page", "acme/triag"), b"did you mean acme/triage?"),
    (("fold", "acme/triage", "--view", "timline"), b"use state, timeline, activity, usage or MODULE:NAME"),
    (("compact", "--retention", "30days"), b"e.g. 30s, 90m, 12h, 7d, 4w"),
    (("page", "acme/*", "--since", "tomorow"), b"a duration ago (15m, 1h30m, 2h ago)"),
])
def test_errors_suggest_the_fix(tmp_path, args, hint):
    import shutil
    from pathlib import Path
    root = tmp_path / "r"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_ledgers", root)
    p = run_cli(*args, root=root)
    assert p.returncode == 2 and p.stderr.startswith(b"error: ") and hint in p.stderr, p.stderr
    assert b"Traceback" not in p.stderr and p.stdout == b""


def test_bracketed_text_in_help_is_shown_not_taken_for_markup():
    """Rich took `[prices]` and `[prices."anthropic:..."]` for markup and dropped them."""
    out = run_cli("stats", "--help", env={"COLUMNS": "300"}).stdout.decode()
    assert "file's [prices] tables" in out and '[prices."anthropic:claude-haiku-4-5"]' in out, out
