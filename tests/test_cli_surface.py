"""The command line's surface (issue 13): `--version`, global options before or after the
command, `-o` for `--format`, one meaning per short option, plain metavars in every help,
suggestions only when close, hints said once."""
from __future__ import annotations

import re
import subprocess

import orjson
import pytest

from conftest import WARDRIK, jsonl, run_cli
from ledgergen import write_log
from wardrik_cli.cli.app import GLOBAL_FLAGS, GLOBAL_WITH_VALUE


from test_help import COMMANDS  # noqa: E402 - every command and group, walked once


def test_version_prints_the_installed_version():
    from importlib.metadata import version

    p = run_cli("--version")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"wardrik {version('wardrik')}\n".encode(), b"")


@pytest.mark.subprocess
def test_version_from_the_executable():
    p = subprocess.run([WARDRIK, "--version"], capture_output=True, timeout=60)
    assert p.returncode == 0 and re.fullmatch(rb"wardrik \d+\.\d+\.\d+\S*\n", p.stdout), p.stdout


@pytest.fixture
def two_roots(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_log(a / "acme/x.jsonl", 3, log_id="acme/x")
    write_log(b / "acme/x.jsonl", 5, log_id="acme/x")
    return a, b


@pytest.mark.parametrize("argv", [
    ["--root", "{b}", "page", "acme/x", "-o", "jsonl"],
    ["page", "acme/x", "--root", "{b}", "-o", "jsonl"],
    ["page", "--root", "{b}", "acme/x", "-o", "jsonl"],
    ["page", "acme/x", "-o", "jsonl", "--root={b}"],
])
def test_root_before_or_after_the_command(two_roots, argv):
    a, b = two_roots
    args = [x.replace("{b}", str(b)) for x in argv]
    p = run_cli(*args, env={"WARDRIK_ROOT": str(a)})
    assert p.returncode == 0, p.stderr
    assert len(jsonl(p.stdout)) == 5  # b's log, not a's


def test_audit_subcommand_takes_globals_after_it(two_roots):
    a, b = two_roots
    run_cli("init", root=b, check=True)
    run_cli("audit", "record", "agent.created", "agents/acme/x", "--data", '{"agent": {"id": "acme/x"}}',
            "--actor", "user:a", root=b, check=True)
    p = run_cli("audit", "page", "--root", str(b), "-o", "json", env={"WARDRIK_ROOT": str(a)})
    assert p.returncode == 0, p.stderr
    assert [e["type"] for e in orjson.loads(p.stdout)["events"]] == ["wardrik.agent.created"]


def test_verbose_and_local_after_the_command(two_roots):
    _, b = two_roots
    plain = run_cli("page", "acme/x", "--limit", "1", "-o", "pretty", root=b, env={"TZ": "Asia/Kolkata"})
    after = run_cli("page", "acme/x", "--limit", "1", "-o", "pretty", "-v", "--local", root=b,
                    env={"TZ": "Asia/Kolkata"})
    before = run_cli("-v", "--local", "page", "acme/x", "--limit", "1", "-o", "pretty", root=b,
                     env={"TZ": "Asia/Kolkata"})
    assert after.returncode == 0 and after.stdout == before.stdout
    assert after.stdout != plain.stdout
    assert b"UTC" in plain.stdout and b"UTC" not in after.stdout


def test_a_commands_option_value_is_not_taken_for_a_global(two_roots):
    """`--grep -v` greps for "-v"; `--data` holding "--root" is data; nothing after `--` moves."""
    _, b = two_roots
    p = run_cli("page", "acme/x", "--grep", "-v", "-o", "jsonl", root=b)
    assert p.returncode == 0 and p.stdout == b""  # no event holds "-v": verbose was not switched on
    a = run_cli("append", "acme/y", "trigger.fired", "--data", '{"trigger": {"name": "--root"}}', "-o", "jsonl",
                root=b)
    assert a.returncode == 0, a.stderr
    assert jsonl(a.stdout)[0]["data"] == {"trigger": {"name": "--root"}}


def test_a_global_option_twice_with_different_values_is_refused(two_roots, tmp_path):
    a, b = two_roots
    before = sorted(p.name for p in b.rglob("*"))
    p = run_cli("--root", str(a), "append", "acme/x", "trigger.fired", "--root", str(b))
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.startswith(b"error: --root given twice with different values")
    assert sorted(p.name for p in b.rglob("*")) == before
    same = run_cli("--root", str(b), "page", "acme/x", "--root", str(b), "-o", "jsonl")
    assert same.returncode == 0 and len(jsonl(same.stdout)) == 5
    color = run_cli("--color", "never", "page", "acme/x", "--color", "always", root=b)
    assert color.returncode == 2 and b"--color given twice" in color.stderr


@pytest.mark.parametrize("fmt", ["-o", "-F", "--format"])
def test_o_is_format(two_roots, fmt):
    _, b = two_roots
    p = run_cli("page", "acme/x", fmt, "json", root=b)
    assert p.returncode == 0 and len(orjson.loads(p.stdout)["events"]) == 5


@pytest.mark.parametrize("value", ["yaml", "", "JSONX"])
def test_an_unknown_format_is_a_usage_error(two_roots, value):
    _, b = two_roots
    p = run_cli("page", "acme/x", "-o", value, root=b)
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.startswith(b"error: ") and b"Traceback" not in p.stderr


def test_each_short_option_means_one_thing_everywhere():
    meaning: dict[str, set[str]] = {}
    for _path, cmd in COMMANDS:
        for param in cmd.params:
            if getattr(param, "param_type_name", "") != "option":
                continue
            longs = [o for o in param.opts if o.startswith("--")]
            for short in (o for o in param.opts if not o.startswith("--")):
                meaning.setdefault(short, set()).update(longs)
    clashes = {s: m for s, m in meaning.items() if len(m) > 1 and s != "-h"}
    # The one exception, the contract's own spelling: `export otlp [-o FILE | --endpoint URL]`
    # (it prints no format, so its -o is where the spans go).
    assert clashes == {"-o": {"--format", "--output"}}
    outputs = [" ".join(path) for path, cmd in COMMANDS for p in cmd.params if "--output" in getattr(p, "opts", [])]
    assert outputs == ["export otlp"]
    meaning["-o"] = {"--format"}
    assert meaning["-v"] == {"--verbose"} and meaning["-n"] == {"--lines"} and meaning["-o"] == {"--format"}
    # a global option is never also one command's own
    own = {o for path, cmd in COMMANDS if path for p in cmd.params for o in getattr(p, "opts", [])}
    assert not (own & (GLOBAL_FLAGS | GLOBAL_WITH_VALUE))


BAD_METAVAR = re.compile(r"<bool>|<str>|<list|<int|<path>|<text>|<float>|<[a-z]+\|[a-z|]+>|\[x[<>]=")


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) or "wardrik" for p, _ in COMMANDS])
def test_help_has_plain_metavars(path):
    p = run_cli(*path, "--help", env={"COLUMNS": "200"})
    text = p.stdout.decode()
    assert p.returncode == 0, p.stderr
    assert not BAD_METAVAR.search(text), BAD_METAVAR.search(text)
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage


@pytest.mark.parametrize("flag,said", [
    ("--json", b"error: no such option: --json (use --format json, or -o json)\n"),
    ("--jsonl", b"error: no such option: --jsonl (use --format jsonl, or -o jsonl)\n"),
    ("--limt", b"error: no such option: --limt (did you mean --limit?)\n"),
    ("--frobnicate", b"error: no such option: --frobnicate\n"),
])
def test_suggestions_only_when_close(two_roots, flag, said):
    _, b = two_roots
    p = run_cli("page", "acme/x", flag, root=b)
    assert p.returncode == 2 and p.stderr.startswith(said), p.stderr
    assert b"--since" not in p.stderr


def test_short_options_of_old_meanings_are_refused_not_misread(two_roots):
    """`compact -n` was --dry-run and `fold -v` was --view: -n now is no compact option (usage
    error, nothing swept) and -v is --verbose everywhere."""
    _, b = two_roots
    (b / ".wardrik").mkdir(exist_ok=True)
    before = (b / "acme/x.jsonl").read_bytes()
    p = run_cli("compact", "-n", "--retention", "1s", root=b)
    assert p.returncode == 2 and (b / "acme/x.jsonl").read_bytes() == before
    f = run_cli("fold", "acme/x", "-v", "-o", "json", root=b)
    assert f.returncode == 0 and orjson.loads(f.stdout)["view"] == "state"


def test_a_torn_tail_hint_is_said_once(two_roots):
    _, b = two_roots
    with open(b / "acme/x.jsonl", "ab") as f:
        f.write(b'{"spec')
    p = run_cli("check", "-o", "pretty", root=b, env={"COLUMNS": "400"})
    text = (p.stdout + p.stderr).decode()
    assert p.returncode == 0
    assert text.count("mid-line") == 1, text


def test_head_takes_every_format(tmp_path):
    """The contract's formats are every printing command's, head's too: the cursor alone
    (jsonl, pretty), or {"next": cursor} (json)."""
    write_log(tmp_path / "acme" / "x.jsonl", 3, log_id="acme/x")
    want = b"eyJhY21lL3giOjN9"
    for opt in ("-o", "--format", "-F"):
        for fmt in ("jsonl", "pretty"):
            p = run_cli("head", "acme/x", opt, fmt, root=tmp_path)
            assert (p.returncode, p.stdout, p.stderr) == (0, want + b"\n", b""), (opt, fmt, p.stderr)
        p = run_cli("head", "acme/x", opt, "json", root=tmp_path)
        assert p.returncode == 0 and orjson.loads(p.stdout) == {"next": want.decode()}, p.stderr


@pytest.mark.parametrize("args, opt", [
    (["-g", "pool", "-g", "exhausted"], "--grep"),  # a reader meant both, or either: read neither silently
    (["--grep=pool", "-g", "exhausted"], "--grep"),
    (["-o", "json", "-o", "jsonl"], "--format"),
    (["--limit", "5", "--limit", "6"], "--limit"),
    (["--run", "abcd", "--run", "beef"], "--run"),
])
def test_a_commands_one_value_option_twice_with_different_values_is_refused(two_roots, args, opt):
    """Before, the last one silently won (-g a -g b searched for b alone)."""
    _a, b = two_roots
    p = run_cli("page", "acme/x", *args, root=b)
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.decode().startswith(f"error: {opt} given twice with different values"), p.stderr
    if "=" not in args[0]:
        same = run_cli("page", "acme/x", *args[:2], *args[:2], root=b)  # the same value twice: as once
        assert same.returncode == 0, same.stderr
    assert run_cli("page", "acme/x", "-t", "trigger.fired", "-t", "run.started", root=b).returncode == 0  # repeatable
