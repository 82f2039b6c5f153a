"""The `wardrik` command line: a thin Typer shell over the library.

Every command parses its options, calls the library, and prints. Library errors are
typed; ``main`` is the one place that turns them (and usage errors) into a single
``error: ...`` line on stderr and an exit code (see ``errors.ExitCode``). Heavy imports
(Rich, watchfiles, the readers) happen inside the commands that need them, so
``wardrik append`` starts about as fast as Typer itself.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from .errors import BadInput, ExitCode, WardrikError
from .output import Format

HELP = """\
Tail, grep, fold and prune the event ledgers AI agents leave behind.

Each agent writes one append-only JSONL log of CloudEvents under a root directory (--root, else $WARDRIK_ROOT, else the current directory); log acme/triage is the file ROOT/acme/triage.jsonl. Output is pretty on a terminal and JSON Lines in a pipe (--format changes it).

Examples:

  wardrik --root sample_ledgers tail -f 'acme/*'

  wardrik --root sample_ledgers -v page acme/billing -t tool_call.failed
"""

PANELS = ("Watch", "Review", "Maintain", "Write")


class _Group(TyperGroup):
    """Lists commands panel by panel (Watch, Review, Maintain, Write) in ``wardrik --help``."""

    def list_commands(self, ctx):  # type: ignore[override]
        names = super().list_commands(ctx)

        def rank(name: str) -> int:
            panel = getattr(self.commands.get(name), "rich_help_panel", None)
            return PANELS.index(panel) if panel in PANELS else len(PANELS)
        return sorted(names, key=lambda n: (rank(n), names.index(n)))


app = typer.Typer(name="wardrik", help=HELP, no_args_is_help=True, cls=_Group, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


class Ctx:
    """What the top-level options set, for every command."""

    root_arg: Optional[str] = None
    deployment_arg: Optional[str] = None

    @property
    def root(self):
        from .layout import Root
        return Root(self.root_arg)

    def deployment(self) -> str:
        return self.root.deployment(self.deployment_arg)


CTX = Ctx()

FormatOpt = typer.Option(None, "--format", "-F", help="pretty (Rich, default on a terminal), jsonl or json.",
                         case_sensitive=False)


def _color_callback(value: str) -> str:
    if value not in ("auto", "always", "never"):
        raise typer.BadParameter("use auto, always or never")
    return value


@app.callback()
def _top(
    root: Optional[str] = typer.Option(None, "--root", metavar="DIR",
                                       help="Root directory of the logs (default: $WARDRIK_ROOT, else .)"),
    deployment: Optional[str] = typer.Option(None, "--deployment", metavar="NAME",
                                             help="Deployment name for new events (default: $WARDRIK_DEPLOYMENT, "
                                                  "else .wardrik/config.toml, else local)"),
    color: str = typer.Option("auto", "--color", metavar="WHEN", callback=_color_callback,
                              help="Colour in pretty output: auto (on a terminal, unless NO_COLOR is set), always or never."),
    local: bool = typer.Option(False, "--local", help="Show times in local time instead of UTC (pretty output)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Pretty output: show each event's data as highlighted JSON."),
) -> None:
    CTX.root_arg = root
    CTX.deployment_arg = deployment
    if color != "auto" or local or verbose:
        from . import render
        render.set_color(color)
        render.set_display(local=local, verbose=verbose)


# ---------------------------------------------------------------------------
# helpers shared by commands
# ---------------------------------------------------------------------------
def read_arg_bytes(value: str, what: str) -> bytes:
    """``@FILE`` reads a file, ``-`` reads stdin, anything else is the text itself (as given, bytes)."""
    if value == "-":
        return sys.stdin.buffer.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_bytes()
        except OSError as e:
            raise BadInput(f"cannot read {what} file {value[1:]!r}: {e.strerror}") from None
    return os.fsencode(value)


def parse_json(raw: bytes, what: str) -> Any:
    import orjson
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{what} is not UTF-8 (bad byte at offset {e.start})") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise BadInput(f"{what} is not valid JSON: {e}") from None
    if _LONG_DIGITS.search(raw):
        _refuse_big_ints(raw, what)
    return value


# orjson reads an integer past 64 bits as a float, silently changing it; such digit runs
# are rare, so only their inputs are parsed again (by the stdlib, exactly) to be sure.
_LONG_DIGITS = __import__("re").compile(rb"\d{19,}")


def _refuse_big_ints(raw: bytes, what: str) -> None:
    import json

    def check(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                check(x)
        elif isinstance(v, list):
            for x in v:
                check(x)
        elif isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < (1 << 64):
            raise BadInput(f"{what}: the integer {v} does not fit in 64 bits; store it as a string")

    check(json.loads(raw))


def warn(msg: str) -> None:
    sys.stderr.write(f"warning: {msg}\n")
    sys.stderr.flush()


def skip_corrupt_handler(skip: bool):
    if not skip:
        return None

    def on_corrupt(err) -> None:
        warn(f"skipping {err}")
    return on_corrupt


def load_cursor(after: Optional[str], cursor_file: Optional[Path]):
    from . import cursor as cursor_mod
    if after is not None:
        return cursor_mod.decode(after)
    if cursor_file is not None:
        return cursor_mod.read_file(cursor_file)
    return None


# ---------------------------------------------------------------------------
# append
# ---------------------------------------------------------------------------
@app.command(rich_help_panel="Write")
def append(
    log: str = typer.Argument(..., help="Log id, e.g. acme/triage."),
    type_: Optional[str] = typer.Argument(None, metavar="TYPE", help="Event type, with or without 'wardrik.' (see `wardrik types`)."),
    data: Optional[str] = typer.Option(None, "--data", "-d", metavar="JSON|@FILE|-", help="The event's data, a JSON object (default: {})."),
    batch: Optional[str] = typer.Option(None, "--batch", metavar="FILE|-",
                                        help='JSONL of {"type", "data", "subject"?, "traceparent"?}: all or nothing, one lock, one write, one fsync.'),
    subject: Optional[str] = typer.Option(None, "--subject", help="CloudEvents subject (default: agents/LOG)."),
    trace: Optional[str] = typer.Option(None, "--trace", metavar="TRACEPARENT", help="W3C traceparent to use instead of the run's."),
    no_sync: bool = typer.Option(False, "--no-sync", help="Skip the fsync (faster; a crash may lose what was printed)."),
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Append events to a log and print each one as stored (printed means durable).

    Sequences are assigned under a lock that holds across processes. A torn tail left by a
    crashed writer is cut first (its bytes kept beside the log). Live types
    (message.delta, ...) go to the log's followers and are never stored.

    Examples:

      wardrik append acme/triage run.started --data '{"task": "Why is checkout slow?"}'

      wardrik append acme/triage --batch events.jsonl
    """
    from .appender import append as do_append, make_item
    from .layout import validate_log_id
    from .ledger import Log

    validate_log_id(log)
    if batch is not None:
        if type_ is not None or data is not None or subject is not None or trace is not None:
            raise BadInput("--batch takes its types, data, subjects and traceparents from the file; give no TYPE, --data, --subject or --trace")
        items = _batch_items(read_arg_bytes(batch if batch == "-" or batch.startswith("@") else "@" + batch, "--batch"))
    else:
        if type_ is None:
            raise BadInput("missing TYPE (or --batch FILE); see `wardrik types`")
        payload = parse_json(read_arg_bytes(data, "--data"), "--data") if data is not None else {}
        items = [make_item(type_, payload, subject, trace)]
    root = CTX.root
    lg = Log.agent(root, log)
    deployment = CTX.deployment()
    if batch is None and items[0].etype.kind == "live":
        from .appender import live_event
        from . import live
        raw = live_event(lg, items[0], deployment=deployment).rstrip(b"\n")
        live.publish(root, log, raw)
        _print_appended([raw], fmt)
        return
    from .errors import WriteFailed
    try:
        lines_out = do_append(root, lg, items, deployment=deployment, sync=not no_sync, warn=warn)
    except WriteFailed as e:
        if e.events:
            _print_appended([l.rstrip(b"\n") for l in e.events], fmt)
        raise
    _print_appended([l.rstrip(b"\n") for l in lines_out], fmt)
    from . import live
    live.notify_kept(root, log, lines_out)


def _print_appended(raws: list[bytes], fmt: Optional[Format]) -> None:
    from .output import write_line
    if fmt == Format.pretty:
        import orjson
        from . import render
        render.print_appended([orjson.loads(r) for r in raws])
        return
    if fmt == Format.json:
        b = sys.stdout.buffer
        b.write(b"[" + b",".join(raws) + b"]\n")
        return
    for r in raws:
        write_line(r)


def _batch_items(raw: bytes) -> list:
    from .appender import make_item
    from .protocol import KEPT
    from .errors import BadEvent
    items = []
    # Line by line from the bytes: no decoded copy of the whole batch is kept in memory.
    for n, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        obj = parse_json(line, f"--batch line {n}")
        try:
            if not isinstance(obj, dict):
                raise BadEvent("each line must be a JSON object")
            extra = set(obj) - {"type", "data", "subject", "traceparent"}
            if extra:
                raise BadEvent(f"unknown key(s) {', '.join(sorted(extra))}")
            if not isinstance(obj.get("type"), str):
                raise BadEvent('missing "type"')
            items.append(make_item(obj["type"], obj.get("data", {}), obj.get("subject"), obj.get("traceparent"),
                                   kinds=(KEPT,)))
        except BadEvent as e:
            raise BadEvent(f"--batch line {n}: {e} (nothing was written)") from None
    if not items:
        raise BadInput("--batch holds no events")
    return items


# ---------------------------------------------------------------------------
# page, head
# ---------------------------------------------------------------------------
PatternsArg = typer.Argument(..., metavar="PATTERN...", help="Log ids or globs: * any run of characters, ? one.")
SkipCorrupt = typer.Option(False, "--skip-corrupt", help="Warn about a corrupt line and read past it instead of stopping.")


@app.command(rich_help_panel="Review")
def page(
    patterns: list[str] = PatternsArg,
    limit: int = typer.Option(100, "--limit", "-l", min=0, help="At most this many events (a dropped notice does not count)."),
    after: Optional[str] = typer.Option(None, "--after", metavar="CURSOR", help="Read on after this cursor."),
    cursor_file: Optional[Path] = typer.Option(None, "--cursor-file", metavar="FILE",
                                               help="Start from the cursor in FILE (when it exists and no --after); save the next one there."),
    types: Optional[str] = typer.Option(None, "--types", "-t", metavar="T,..", help="Only these types (with or without 'wardrik.')."),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME", help="Events at or after TIME: RFC 3339 (UTC if no offset) or a duration ago (15m, 2h, 3d)."),
    until: Optional[str] = typer.Option(None, "--until", metavar="TIME", help="Events before TIME."),
    run: Optional[str] = typer.Option(None, "--run", metavar="RUN_ID", help="Only the events of this run (its trace id)."),
    skip_corrupt: bool = SkipCorrupt,
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Print events oldest first across every matched log, and the cursor to read on.

    Logs are interleaved by time. The next cursor moves past every event read, filtered
    or not, so paging with it never shows an event twice or skips one.

    Examples:

      wardrik page 'acme/*' --limit 20

      wardrik page 'acme/*' -t tool_call.failed --since 2h -F json | jq -r .next
    """
    from .reader import resolve_logs

    start = load_cursor(after, cursor_file)
    run_page(lambda root: resolve_logs(root, patterns), start, limit=limit, cursor_file=cursor_file, types=types,
             since=since, until=until, run=run, skip_corrupt=skip_corrupt, fmt=fmt)


def run_page(logs_of, start, *, limit: int, cursor_file: Optional[Path], types: Optional[str], since: Optional[str],
             until: Optional[str], run: Optional[str], skip_corrupt: bool, fmt: Optional[Format]) -> None:
    """A page over ``logs_of(root)`` in the chosen format, then the cursor file (page, audit page)."""
    from . import output
    from .cursor import encode, write_file
    from .reader import Filters, Reader, parse_types
    from .timefmt import parse_time_arg

    filters = Filters.build(parse_types(types), parse_time_arg(since) if since else None,
                            parse_time_arg(until) if until else None, run)
    logs = logs_of(CTX.root)
    fmt = output.choose(fmt, Format.jsonl)
    with Reader(logs, start, filters=filters, deployment=CTX.deployment(), limit=limit,
                on_corrupt=skip_corrupt_handler(skip_corrupt)) as reader:
        if fmt == Format.json:
            output.write_events_json((it.raw for it in reader), lambda: encode(reader.next))
        elif fmt == Format.jsonl:
            for it in reader:
                output.write_line(it.raw)
        else:
            from . import render
            render.print_page(iter(reader), lambda: encode(reader.next))
        output.flush()
        if cursor_file is not None:
            write_file(cursor_file, reader.next)


@app.command(rich_help_panel="Review")
def head(patterns: list[str] = PatternsArg) -> None:
    """Print the cursor at the end of every matched log (read only what comes after it).

    Later, `wardrik page PATTERN --after CURSOR` shows only what was written since.

    Examples:

      cur=$(wardrik head 'acme/*')

      wardrik page 'acme/*' --after "$cur"
    """
    from .cursor import encode
    from .reader import head as do_head, resolve_logs
    logs = resolve_logs(CTX.root, patterns)
    print(encode(do_head(logs)))


# ---------------------------------------------------------------------------
# check, types
# ---------------------------------------------------------------------------
@app.command(rich_help_panel="Maintain")
def check(
    patterns: Optional[list[str]] = typer.Argument(None, metavar="[PATTERN...]", help="Logs to check (default: all, and the audit log)."),
    fmt: Optional[Format] = FormatOpt,
) -> None:
    """Verify logs and the audit log: valid events, contiguous sequences, an unbroken audit chain.

    Prints each problem as FILE:LINE: BYTE-OFFSET: WHAT. Corruption, gaps and a broken chain
    exit 1; a torn tail is only a warning (a writer may be mid-line) and exits 0.

    Examples:

      wardrik check

      wardrik check 'acme/*' --format json
    """
    from . import output
    from .check import ERROR, check_log
    from .ledger import Log
    from .reader import resolve_logs

    root = CTX.root
    logs = resolve_logs(root, patterns or ["*"])
    if not patterns:
        audit = Log.audit(root)
        if audit.exists():
            logs.append(audit)
    fmt = output.choose(fmt, Format.jsonl)
    if fmt == Format.pretty:
        from . import render
        each = render.progress(logs, "checking")  # a bar on a terminal when the logs are big
    else:
        each = iter(logs)
    problems = [p for log in each for p in check_log(log)]
    if fmt == Format.json:
        output.write_json({"ok": not any(p.severity == ERROR for p in problems), "logs": len(logs),
                           "problems": [p.to_json() for p in problems]})
    elif fmt == Format.jsonl:
        for p in problems:
            sys.stdout.write(f"{p}\n" if p.severity == ERROR else f"{p} (warning)\n")
    else:
        from . import render
        render.print_check(problems, logs)
    if any(p.severity == ERROR for p in problems):
        raise typer.Exit(ExitCode.FAILURE)


@app.command(rich_help_panel="Review")
def types(fmt: Optional[Format] = FormatOpt) -> None:
    """List the protocol: every event type, its kind and its required data fields.

    Kinds: kept (stored with a sequence), live (to followers only), audit (`audit record`),
    reader (made by wardrik for a reader).

    Example:

      wardrik types --format json | jq -r '.[] | select(.kind=="kept") | .type'
    """
    from . import output
    from .protocol import catalogue

    CTX.root.require()
    rows = [{"type": t.full, "kind": t.kind, "required": ["data." + r for r in t.required],
             "optional": ["data." + o for o in t.optional], "description": t.summary} for t in catalogue()]
    fmt = output.choose(fmt, Format.json)
    if fmt == Format.json:
        output.write_json(rows)
    elif fmt == Format.jsonl:
        import orjson
        for r in rows:
            output.write_line(orjson.dumps(r))
    else:
        from . import render
        render.print_types(catalogue())


# Command groups that live in their own modules register themselves on import. Only the
# module a command line needs is imported (start-up time is a measured figure); help,
# completion and anything unrecognised load them all.
CORE_COMMANDS = frozenset({"append", "page", "head", "check", "types"})
COMMAND_MODULES = {"tail": "cli_follow", "fold": "cli_fold", "activity": "cli_fold",
                   "compact": "cli_retention", "audit": "cli_retention"}
_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--root", "--deployment", "--color"})


def _subcommand(argv: list[str]) -> Optional[str]:
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif arg.startswith("-"):
            continue
        else:
            return arg
    return None


def load_commands(argv: Optional[list[str]] = None) -> None:
    from importlib import import_module

    argv = sys.argv[1:] if argv is None else argv
    name = _subcommand(argv)
    if name in CORE_COMMANDS and not any(k.endswith("_COMPLETE") for k in os.environ):
        return
    wanted = [COMMAND_MODULES[name]] if name in COMMAND_MODULES else sorted(set(COMMAND_MODULES.values()))
    for module in wanted:
        import_module(f".{module}", __package__)
    _reflow_help(app)


def _unwrap(text: Optional[str]) -> Optional[str]:
    """Help prose reflows to the terminal: a paragraph's line breaks are dropped, examples kept.

    Typer's rich help keeps a docstring's hard line breaks after its first paragraph, which
    cuts sentences in odd places on a narrow terminal. Indented paragraphs (examples) stay.
    """
    if not text:
        return text
    import inspect
    paras = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if any(l[:1].isspace() for l in p.splitlines()) else " ".join(p.split("\n"))
                       for p in paras)


def _reflow_help(typer_app: typer.Typer) -> None:
    typer_app.info.help = _unwrap(typer_app.info.help)
    for info in typer_app.registered_commands:
        info.help = _unwrap(info.help or (info.callback.__doc__ if info.callback else None))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


_reflow_help(app)


# ---------------------------------------------------------------------------
# entry point: the one place errors become messages and exit codes
# ---------------------------------------------------------------------------
def _run(argv: Optional[list[str]]) -> int:
    """Parse and invoke, letting every exception through to ``main`` (Typer's own runner
    would turn a closed pipe into a silent exit 1 and usage errors into Rich panels)."""
    from typer.main import get_command

    command = get_command(app)
    args = sys.argv[1:] if argv is None else list(argv)
    command._main_shell_completion({}, "wardrik", None)  # exits when completing
    with command.make_context("wardrik", args) as ctx:
        rv = command.invoke(ctx)
    return rv if isinstance(rv, int) else ExitCode.OK


def main(argv: Optional[list[str]] = None) -> None:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer.exceptions import Abort, Exit

    code: int = ExitCode.OK
    try:
        load_commands(argv)
        code = _run(argv)
    except Exit as e:
        code = e.exit_code
    except NoArgsIsHelpError as e:
        sys.stdout.write(e.format_message() + "\n")
        code = ExitCode.OK
    except WardrikError as e:
        sys.stderr.write(f"error: {e}\n")
        code = e.exit_code
    except ClickException as e:
        msg = e.format_message()
        sys.stderr.write(f"error: {msg[0].lower() + msg[1:] if msg else msg}\n")
        cmd_ctx = getattr(e, "ctx", None)
        if cmd_ctx is not None:
            sys.stderr.write(f"Try '{cmd_ctx.command_path} --help' for help.\n")
        code = ExitCode.USAGE if e.exit_code == 2 else e.exit_code
    except (KeyboardInterrupt, Abort):
        code = ExitCode.OK if _following() else 130
    except BrokenPipeError:
        code = ExitCode.OK  # the reader went away (`| head`): not an error
    except MemoryError:
        sys.stderr.write("error: out of memory\n")
        code = ExitCode.FAILURE
    except OSError as e:
        sys.stderr.write(f"error: {e.strerror or e}{': ' + str(e.filename) if e.filename else ''}\n")
        code = ExitCode.FAILURE
    except Exception as e:  # a bug of ours: still one line, never a traceback
        sys.stderr.write(f"error: internal error: {type(e).__name__}: {e} (please report it; "
                         "set WARDRIK_TRACEBACK=1 to see where)\n")
        if os.environ.get("WARDRIK_TRACEBACK"):
            import traceback
            traceback.print_exc()
        code = ExitCode.FAILURE
    try:
        sys.stdout.flush()
    except OSError:
        pass
    # A closed stdout must not turn a clean end into a traceback at interpreter exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(int(code))


def _following() -> bool:
    return os.environ.get("_WARDRIK_FOLLOWING") == "1" or getattr(sys, "_wardrik_following", False)
