"""The ``wardrik`` command line: the Typer app, its global options, and ``run``.

``run(argv, env)`` is the whole command line as a function: it parses, invokes and returns
the exit code, reading and writing only the environment and streams it is given (see
``cli.context``), so it can run many times in one process. ``main`` is the console script's
``run`` over the process's own. ``run`` is the one place errors become a single
``error: ...`` line on stderr and an exit code (``errors.ExitCode``): no traceback, ever.

Command groups live in their own modules (``write``, ``review``, ``watch``, ``maintain``,
``audit``) and register themselves on import; only the module a command line needs is
imported, because start-up time is a measured figure.
"""
from __future__ import annotations

import contextvars
import inspect
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import IO, Any

import typer
from typer.core import TyperGroup

from wardrik_cli.cli.context import Invocation, binary, current, enter
from wardrik_cli.errors import BadInput, ExitCode, WardrikError

HELP = """\
Tail, grep, fold and prune the event ledgers AI agents leave behind.

Each agent writes one append-only JSONL log of CloudEvents under a root directory (--root, else $WARDRIK_ROOT, \
else the current directory); log acme/triage is the file ROOT/acme/triage.jsonl. Output is pretty on a terminal \
and JSON Lines in a pipe (--format changes it).

Examples:

  wardrik --root sample_ledgers tail -f 'acme/*'

  wardrik --root sample_ledgers -v page acme/billing -t tool_call.failed
"""

PANELS = ("Watch", "Review", "Maintain", "Fleet", "Write")
# Which module defines each command, in the order ``wardrik --help`` lists them within a panel.
COMMAND_MODULES = {
    "tail": "watch", "activity": "watch",
    "page": "review", "head": "review", "fold": "review", "types": "review", "audit": "audit",
    "check": "maintain", "compact": "maintain", "init": "maintain",
    "append": "write",
    "stats": "costs", "export": "costs",
    "sql": "query",
    "ship": "fleet", "pull": "fleet",
}
_ORDER = list(COMMAND_MODULES)


class _Group(TyperGroup):
    """Lists commands panel by panel (Watch, Review, Maintain, Write) in ``wardrik --help``."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)

        def rank(name: str) -> tuple[int, int]:
            panel = getattr(self.commands.get(name), "rich_help_panel", None)
            return (PANELS.index(panel) if panel in PANELS else len(PANELS),
                    _ORDER.index(name) if name in _ORDER else len(_ORDER))
        return sorted(names, key=rank)


app = typer.Typer(name="wardrik", help=HELP, no_args_is_help=True, cls=_Group, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("wardrik")
        except PackageNotFoundError:  # run from a source tree that is not installed
            v = "unknown"
        current().out_text.write(f"wardrik {v}\n")
        raise typer.Exit(0)


def _color_callback(value: str) -> str:
    if value not in ("auto", "always", "never"):
        raise typer.BadParameter("use auto, always or never")
    return value


@app.callback()
def _top(
    root: str | None = typer.Option(None, "--root", metavar="DIR",
                                    help="Root directory of the logs (default: $WARDRIK_ROOT, else .)"),
    deployment: str | None = typer.Option(None, "--deployment", metavar="NAME",
                                          help="Deployment name for new events (default: $WARDRIK_DEPLOYMENT, "
                                               "else .wardrik/config.toml, else local)"),
    color: str = typer.Option("auto", "--color", metavar="WHEN", callback=_color_callback,
                              help="Colour in pretty output: auto (on a terminal, unless NO_COLOR is set), "
                                   "always or never."),
    local: bool = typer.Option(False, "--local", help="Show times in local time instead of UTC (pretty output)."),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Pretty output: show each event's data as highlighted JSON."),
    _version: bool = typer.Option(False, "--version", is_eager=True, callback=_version_callback,
                                  help="Print wardrik's version and exit."),
) -> None:
    inv = current()
    inv.root_arg, inv.deployment_arg = root, deployment
    inv.color, inv.local, inv.verbose = color, local, verbose
    from wardrik_cli.cli.render.console import Display, use

    use(Display(color=color, local=local, verbose=verbose, out=inv.out_text, err=inv.err_text, env=inv.env))


# ---------------------------------------------------------------------------
# loading the command modules
# ---------------------------------------------------------------------------
GLOBAL_WITH_VALUE = frozenset({"--root", "--deployment", "--color"})


def _subcommand(argv: Sequence[str]) -> str | None:
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in GLOBAL_WITH_VALUE:
            skip = True
        elif arg.startswith("-"):
            continue
        else:
            return arg
    return None


def load_commands(argv: Sequence[str] = (), *, everything: bool = False) -> None:
    """Import the module of the command ``argv`` names (every module for help, completion
    or a name that is no command's)."""
    name = _subcommand(argv)
    wanted = {COMMAND_MODULES[name]} if name in COMMAND_MODULES and not everything else set(COMMAND_MODULES.values())
    for module in sorted(wanted):
        import_module(f"wardrik_cli.cli.{module}")
    _reflow_help(app)


def _unwrap(text: str | None) -> str | None:
    """Help prose reflows to the terminal: a paragraph's line breaks are dropped, examples kept.

    Typer's rich help keeps a docstring's hard line breaks after its first paragraph, which
    cuts sentences in odd places on a narrow terminal. Indented paragraphs (examples) stay.
    """
    if not text:
        return text
    paras = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if any(line[:1].isspace() for line in p.splitlines()) else " ".join(p.split("\n"))
                       for p in paras)


def _reflow_help(typer_app: typer.Typer) -> None:
    typer_app.info.help = _unwrap(typer_app.info.help)
    for info in typer_app.registered_commands:
        info.help = _unwrap(info.help or (info.callback.__doc__ if info.callback else None))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


# ---------------------------------------------------------------------------
# run: the one place errors become messages and exit codes
# ---------------------------------------------------------------------------
def run(argv: Sequence[str], env: Mapping[str, str] | None = None, *, stdin: IO[Any] | None = None,
        stdout: IO[Any] | None = None, stderr: IO[Any] | None = None) -> int:
    """Run one command line; return its exit code. ``env`` defaults to ``os.environ`` and
    the streams (binary, or text with a ``buffer``) to the process's own."""
    from wardrik_cli.cli.entry import FOLLOW_FLAGS

    inv = Invocation(dict(os.environ) if env is None else env, binary(stdin, sys.stdin, reading=True),
                     binary(stdout, sys.stdout), binary(stderr, sys.stderr))
    inv.following = any(a in FOLLOW_FLAGS for a in argv)  # a Ctrl-C even before the follow starts ends it cleanly
    return contextvars.copy_context().run(_run, list(argv), inv)


def _run(argv: list[str], inv: Invocation) -> int:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption
    from typer.exceptions import Abort, Exit

    enter(inv)
    code: int = ExitCode.OK
    try:
        from wardrik_cli.settings import Settings
        from wardrik_cli.store.log import use_warn

        use_warn(inv.warn)  # the store's warnings about its own files: this run's stderr, not the process's

        inv.settings = Settings.from_env(inv.env)
        load_commands(argv)
        code = _invoke(argv, inv)
    except Exit as e:
        code = e.exit_code
    except SystemExit as e:  # Typer's own options (--show-completion) call sys.exit: an exit code, not the caller's end
        code = e.code if isinstance(e.code, int) else ExitCode.OK if e.code is None else ExitCode.FAILURE
        if isinstance(e.code, str):
            inv.message(e.code)
    except NoArgsIsHelpError as e:
        inv.out_text.write(e.format_message() + "\n")
        code = ExitCode.OK
    except WardrikError as e:
        inv.message(f"error: {e}")
        code = e.exit_code
    except NoSuchOption as e:
        inv.message(f"error: {_no_such_option(e)}")
        if e.ctx is not None:
            inv.message(f"Try '{e.ctx.command_path} --help' for help.")
        code = ExitCode.USAGE
    except ClickException as e:
        msg = e.format_message()
        inv.message(f"error: {msg[0].lower() + msg[1:] if msg else msg}")
        cmd_ctx = getattr(e, "ctx", None)
        if cmd_ctx is not None:
            inv.message(f"Try '{cmd_ctx.command_path} --help' for help.")
        code = ExitCode.USAGE if e.exit_code == 2 else e.exit_code
    except (KeyboardInterrupt, Abort):
        code = ExitCode.OK if inv.following else 130
    except BrokenPipeError:
        code = ExitCode.OK  # the reader went away (`| head`): not an error
    except MemoryError:
        inv.message("error: out of memory")
        code = ExitCode.FAILURE
    except OSError as e:
        inv.message(f"error: {e.strerror or e}{': ' + str(e.filename) if e.filename else ''}")
        code = ExitCode.FAILURE
    except Exception as e:  # a bug of ours: still one line, never a traceback
        inv.message(f"error: internal error: {type(e).__name__}: {e} (please report it; "
                    "set WARDRIK_TRACEBACK=1 to see where)")
        if inv.settings.traceback:
            import traceback

            inv.err_text.write(traceback.format_exc())
            inv.err_text.flush()
        code = ExitCode.FAILURE
    finally:
        try:
            inv.flush_out()
        except (OSError, ValueError):
            pass  # a closed pipe: nothing more to say there
        inv.close()
    return int(code)


# ---------------------------------------------------------------------------
# global options anywhere on the line
# ---------------------------------------------------------------------------
GLOBAL_FLAGS = frozenset({"--local", "-v", "--verbose"})


def hoist_globals(argv: list[str], top: Any) -> list[str]:
    """``argv`` with the global options given after the command moved before it, so that
    ``wardrik page X --root DIR -v`` means ``wardrik --root DIR -v page X``.

    The command's own options that take a value keep theirs (``--grep -v`` greps for
    ``-v``), and nothing after ``--`` moves. A global option given twice with different
    values is refused (BadInput) rather than the last one silently winning."""
    front: list[str] = []
    hoisted: list[str] = []
    rest: list[str] = []
    command = top
    given: dict[str, tuple[str, str]] = {}  # a command's one-value option -> (as spelled, value)
    i, in_command = 0, False
    while i < len(argv):
        arg = argv[i]
        if not in_command:
            front.append(arg)
            if arg in GLOBAL_WITH_VALUE and i + 1 < len(argv):
                front.append(argv[i + 1])
                i += 1
            elif not arg.startswith("-"):
                in_command = True
                command = _sub(command, arg)
            i += 1
            continue
        if arg == "--":
            rest.extend(argv[i:])
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_WITH_VALUE:
            if "=" in arg:
                hoisted.append(arg)
            else:
                hoisted.extend(argv[i:i + 2])
                i += 1
        elif arg in GLOBAL_FLAGS:
            hoisted.append(arg)
        elif arg in _value_options(command):
            rest.extend(argv[i:i + 2])
            if i + 1 < len(argv):
                _once(given, _single_value_options(command), arg, argv[i + 1])
            i += 1
        elif "=" in arg and name in _value_options(command):
            rest.append(arg)
            _once(given, _single_value_options(command), name, arg.split("=", 1)[1])
        else:
            rest.append(arg)
            if not arg.startswith("-"):
                sub = _sub(command, arg)
                if sub is not command:  # a group's command (audit page): its own options from here
                    command = sub
        i += 1
    _refuse_conflicts(front + hoisted)
    if not hoisted:
        return argv
    # The globals go just before the first command name (front ends with it).
    return front[:-1] + hoisted + front[-1:] + rest


def _sub(command: Any, name: str) -> Any:
    commands = getattr(command, "commands", None)
    return commands.get(name, command) if isinstance(commands, dict) else command


def _value_options(command: Any) -> frozenset[str]:
    names: set[str] = set()
    for p in getattr(command, "params", ()):
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "is_flag", False) and p.nargs != 0:
            names.update(p.opts)
    return frozenset(names)


def _single_value_options(command: Any) -> dict[str, str]:
    """The command's options that take one value (not repeatable): each spelling -> the option."""
    out: dict[str, str] = {}
    for p in getattr(command, "params", ()):
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "is_flag", False) and p.nargs == 1 \
                and not getattr(p, "multiple", False):
            for o in p.opts:
                out[o] = p.opts[-1] if p.opts[-1].startswith("--") else p.opts[0]
    return out


def _once(given: dict[str, tuple[str, str]], single: dict[str, str], spelled: str, value: str) -> None:
    """Refuse a command's one-value option given twice with different values (``-g a -g b``):
    the last one silently winning would read a different result set than the one asked for."""
    opt = single.get(spelled)
    if opt is None:
        return
    if opt in given and given[opt][1] != value:
        first, before = given[opt]
        raise BadInput(f"{opt} given twice with different values ({before!r} as {first}, {value!r} as {spelled}); "
                       "it takes one" + (" (a regex: join them with |)" if opt == "--grep" else ""))
    given[opt] = (spelled, value)


def _refuse_conflicts(args: list[str]) -> None:
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        name, _, value = args[i].partition("=")
        if name in GLOBAL_WITH_VALUE:
            if not value and i + 1 < len(args) and "=" not in args[i]:
                value = args[i + 1]
                i += 1
            if name in seen and seen[name] != value:
                raise BadInput(f"{name} given twice with different values ({seen[name]!r} and {value!r})")
            seen[name] = value
        i += 1


def _no_such_option(e: Any) -> str:
    """An unknown option, with a suggestion only when one of the command's own options is
    really close (``--json`` is not "did you mean --since")."""
    import difflib

    name = e.option_name
    word = name.lstrip("-")
    if word in ("pretty", "jsonl", "json"):
        return f"no such option: {name} (use --format {word}, or -o {word})"
    close = difflib.get_close_matches(name, sorted(e.possibilities or ()), n=3, cutoff=0.75)
    return f"no such option: {name}" + (f" (did you mean {' or '.join(close)}?)" if close else "")


_HELP_FLAGS = frozenset({"-h", "--help"})
# sys.stdout/sys.stderr are the process's: one run at a time swaps them (two runs in threads
# that swapped them at once would each restore the other's, leaving a stream of theirs behind).
_STD_STREAMS = threading.Lock()


def _invoke(argv: list[str], inv: Invocation) -> int:
    """Parse and invoke, letting every exception through to ``_run`` (Typer's own runner
    would turn a closed pipe into a silent exit 1 and usage errors into Rich panels).

    Typer writes help and shell completion to ``sys.stdout``/``sys.stderr``: those are the
    invocation's streams while the top-level options are parsed and, for a help (printed
    when the group parses its subcommand, before any command runs), while it is invoked.
    Help is also drawn at the invocation's width (``_help_console``)."""
    from contextlib import ExitStack, redirect_stderr, redirect_stdout

    from typer.main import get_command

    helping = any(a in _HELP_FLAGS for a in argv) and not inv.following
    if helping:
        _help_console()
    command = get_command(app)
    _plain_help(command)
    argv = hoist_globals(argv, command)
    with _STD_STREAMS, ExitStack() as stack:
        if inv.out_text is not sys.stdout:
            stack.enter_context(redirect_stdout(inv.out_text))
        if inv.err_text is not sys.stderr:
            stack.enter_context(redirect_stderr(inv.err_text))
        ctx = command.make_context("wardrik", argv)
        if helping:
            with ctx:
                rv = command.invoke(ctx)
    if not helping:
        with ctx:
            rv = command.invoke(ctx)
    return rv if isinstance(rv, int) else ExitCode.OK


def _plain_help(command: Any) -> None:
    """Help and usage lines in plain words: ``LOG``, not ``{LOG}`` (Typer's mark of a required
    argument) or an argument's type column ``<str>``."""
    from typer._click.types import StringParamType

    class _Plain(StringParamType):
        def get_metavar(self, param: Any, ctx: Any = None) -> str:
            return ""

    plain = _Plain()
    for p in getattr(command, "params", ()):
        if getattr(p, "param_type_name", "") == "argument":
            if type(p.type) is StringParamType:
                p.type = plain
            p.get_usage_pieces = _usage_pieces(p)
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


def _usage_pieces(param: Any) -> Any:
    def pieces(ctx: Any) -> list[str]:
        return [piece.replace("{", "").replace("}", "") for piece in type(param).get_usage_pieces(param, ctx)]
    return pieces


def _help_console() -> None:
    """Make Typer's help console (``typer.rich_utils``) print to the running invocation's
    streams and read its environment (COLUMNS, NO_COLOR, ...), not the process's: in-process
    help is what the executable prints, and runs in threads never mix. Installed once, on
    the first help (importing Rich costs start-up time); outside a run it is Typer's own."""
    from typer import rich_utils

    from wardrik_cli.cli.render.console import bounded_console

    base = rich_utils.Console
    if getattr(base, "wardrik_invocation", False):
        return

    # a reader gone (`wardrik --help | head -c1`) and a huge COLUMNS, as for every console
    class _InvocationConsole(bounded_console(base)):  # type: ignore[misc]
        wardrik_invocation = True

        def __init__(self, *args: Any, **kw: Any) -> None:
            try:
                inv = current()
            except LookupError:
                inv = None
            if inv is not None:
                kw.setdefault("_environ", inv.env)
                if kw.get("file") is None:
                    kw["file"] = inv.err_text if kw.get("stderr") else inv.out_text
            super().__init__(*args, **kw)

    rich_utils.Console = _InvocationConsole  # type: ignore[misc]


def main() -> None:
    """The console script (see ``cli.entry``): ``run`` over this process, then exit."""
    argv = sys.argv[1:]
    import warnings

    warnings.simplefilter("ignore")  # a library's warning is no line for a user: errors say what matters
    if os.environ.get("WARDRIK_DEPLOYMENT") == "":
        # Empty is unset (``Invocation.deployment_given``), for the library's own reads of the
        # process's environment too (compact's ledger.compacted record).
        del os.environ["WARDRIK_DEPLOYMENT"]
    if any(k.endswith("_COMPLETE") for k in os.environ):
        from typer.main import get_command

        load_commands(argv, everything=True)
        get_command(app)._main_shell_completion({}, "wardrik", None)  # exits when completing
    code = run(argv)
    # A closed stdout must not turn a clean end into a traceback at interpreter exit.
    try:
        if sys.stdout is not None:  # None: started with it closed (then it was /dev/null for the command)
            sys.stdout.flush()
    except OSError:
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except (OSError, ValueError):
        pass
    sys.exit(code)
