"""One invocation of the command line: its environment, streams and global options.

Contract kept here: every command reads what it needs from ``current()`` (the root, the
deployment, stdin, stdout, stderr, the settings) and never from the process (``os.environ``,
``sys.stdout``, module globals). ``cli.app.run`` makes a new ``Invocation`` in a context of
its own, so several invocations can run in one process, one after another or in threads,
without seeing each other: that is what lets the tests run the real CLI in-process.
"""
from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import IO, Any, BinaryIO, TextIO, cast

from wardrik_cli.settings import Settings
from wardrik_cli.store.layout import Root


class Invocation:
    """What one ``wardrik ...`` runs with. Streams are binary; ``out_text``/``err_text`` are
    text views of them for Rich and messages (created on first use, detached at the end)."""

    def __init__(self, env: Mapping[str, str], stdin: BinaryIO, stdout: BinaryIO, stderr: BinaryIO):
        self.env = env
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.settings = Settings()  # replaced by the validated environment when the run starts
        self.root_arg: str | None = None
        self.deployment_arg: str | None = None
        self.color = "auto"
        self.local = False
        self.verbose = False
        self.following = False  # a follow or a watch: Ctrl-C and SIGTERM are a normal end
        self.cleanups: list[Callable[[], None]] = []
        self._out_text: TextIO | None = None
        self._err_text: TextIO | None = None
        self._remote_root: Root | None = None  # the synced mirror of a remote root, once per invocation
        self.remote_mirror: Any = None  # its ``remote.mirror.Mirror`` (what the sync fetched: tests, benchmarks)

    # -- where things are -------------------------------------------------------------
    @property
    def root(self) -> Root:
        if self.root_arg == "":
            from wardrik_cli.errors import BadInput

            # `--root "$UNSET"`: not the current folder (a root would be made in it)
            raise BadInput("--root is empty: give a folder (or leave the option out to use $WARDRIK_ROOT, "
                           "else the current folder)")
        value = self.root_arg or self.settings.root or "."
        if value.startswith(REMOTE_SCHEMES):
            if self._remote_root is None:
                self._remote_root = _remote_root(self, value)
            return self._remote_root
        return Root(value)

    @property
    def remote_root_url(self) -> str | None:
        """The root's URL when it is a remote root (``s3://...``, ``file://...``), else None: the
        hook for a command that works on the store itself (remote ``compact``) rather than on
        the mirror ``root`` gives (which is for reading only)."""
        value = self.root_arg or self.settings.root
        return value if value and value.startswith(REMOTE_SCHEMES) else None

    def deployment_given(self) -> str | None:
        """The deployment named by ``--deployment``, else by ``$WARDRIK_DEPLOYMENT``, validated,
        or None when neither names one. An empty variable is unset, as an empty
        ``WARDRIK_ROOT`` or ``WARDRIK_LOCK_TIMEOUT`` is; a bad name is refused saying where it
        came from (a variable set long ago is easy to forget)."""
        from wardrik_cli.errors import BadInput
        from wardrik_cli.protocol.names import validate_deployment

        if self.deployment_arg is not None:
            name, where = self.deployment_arg, "--deployment"
        else:
            name, where = self.env.get("WARDRIK_DEPLOYMENT", ""), "$WARDRIK_DEPLOYMENT"
            if name == "":
                return None
        try:
            return validate_deployment(name)
        except BadInput as e:
            raise BadInput(f"{where}: {e}") from None

    def deployment(self) -> str:
        """``deployment_given``, else the root's config.toml, else ``local``."""
        return self.root.deployment(self.deployment_given(), env={})  # {}: the variable was read just above

    def time_zone(self) -> Any:
        """The zone of times typed without an offset: UTC (None), or local under ``--local``."""
        if not self.local:
            return None
        from wardrik_cli.protocol.times import local_zone

        return local_zone(self.env)

    # -- streams ----------------------------------------------------------------------
    @property
    def out_text(self) -> TextIO:
        if self._out_text is None:
            self._out_text = _text_view(self.stdout, sys.stdout)
        return self._out_text

    @property
    def err_text(self) -> TextIO:
        if self._err_text is None:
            self._err_text = _text_view(self.stderr, sys.stderr)
        return self._err_text

    def isatty(self) -> bool:
        try:
            return bool(self.stdout.isatty())
        except (ValueError, OSError):
            return False

    def stdout_fd(self) -> int | None:
        """stdout's file descriptor, when it has one (a real process's stdout)."""
        try:
            return self.stdout.fileno()
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return None

    def warn(self, msg: str) -> None:
        self.message(f"warning: {msg}")

    def note(self, msg: str) -> None:
        self.message(f"note: {msg}")

    def shown_path(self, text: str) -> str:
        """``text`` with the private mirror of a remote root named as the remote root itself
        (``/cache/.../root/acme/a.jsonl`` -> ``s3://bucket/prefix/acme/a.jsonl``): a user gave
        the URL and never sees the cache. Unchanged on a local root."""
        if self._remote_root is None:
            return text
        url = self.remote_root_url or ""
        return text.replace(str(self._remote_root.path), url.rstrip("/"))

    def message(self, line: str) -> None:
        self.flush_out()
        line = self.shown_path(line)
        from wardrik_cli.cli.safe_text import safe

        self.stderr.write(safe(line, keep_newlines=False).encode("utf-8", "backslashreplace") + b"\n")
        self.stderr.flush()

    def discard_out(self) -> None:
        """From now on what is written to stdout goes nowhere: its reader went away (a closed
        pipe), and a command that goes on (a writer, a follower's hook) must neither fail on it
        again nor leave a buffer whose flush at exit would. The descriptor becomes /dev/null;
        an in-memory stdout (in-process runs) is left as it is."""
        fd = self.stdout_fd()
        if fd is None:
            return
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def flush_out(self) -> None:
        if self._out_text is not None:
            self._out_text.flush()
        self.stdout.flush()

    def close(self) -> None:
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:  # noqa: BLE001 - a cleanup must never hide the command's own end
                pass
        for view in (self._out_text, self._err_text):
            # a text view made here (the process's own streams are shared, never detached)
            if isinstance(view, io.TextIOWrapper) and view is not sys.stdout and view is not sys.stderr:
                try:
                    view.flush()
                    view.detach()  # never close the caller's binary stream
                except (ValueError, OSError):
                    pass


def _text_view(stream: BinaryIO, process_stream: TextIO) -> TextIO:
    if getattr(process_stream, "buffer", None) is stream:
        # The process's own stream: share its text layer. Its encoding is the user's
        # (PYTHONIOENCODING=ascii, a C locale): what it cannot hold is written as an escape
        # (é as \xe9), never the end of the command in a UnicodeEncodeError.
        if getattr(process_stream, "errors", "strict") != "backslashreplace" and hasattr(process_stream, "reconfigure"):
            try:
                process_stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError, io.UnsupportedOperation):
                pass
        return process_stream
    return io.TextIOWrapper(stream, encoding="utf-8", errors="backslashreplace", write_through=True)


# ---------------------------------------------------------------------------
# a remote root: --root s3://BUCKET/PREFIX or file:///PATH
# ---------------------------------------------------------------------------
REMOTE_SCHEMES = ("s3://", "file://")
# Commands that read a root run on the synced local mirror of a remote one (``remote.mirror``);
# a command that writes a root is refused there. Any other command (compact, until it handles
# ``remote_root_url`` itself) is refused too, rather than taking the URL for a folder name.
REMOTE_READERS = frozenset({"page", "head", "tail", "fold", "activity", "check", "sql", "stats", "export", "types",
                            "audit page", "audit tail"})
REMOTE_WRITERS = frozenset({"append", "init", "audit record", "ship"})


def _remote_root(inv: Invocation, url: str) -> Root:
    """The local mirror of the store at ``url``, synced for what the running command reads.

    The command and its options come from the running Click context (every command's
    parameters, already parsed): which logs it reads, from which cursor, whether it follows."""
    from wardrik_cli.errors import BadInput

    name, params = _running_command()
    if name in REMOTE_WRITERS:
        raise BadInput(f"{name} writes a root, and {url} is a remote root, which is read only: {name} works on a "
                       "local root (remote roots are filled by `wardrik ship`)")
    if name not in REMOTE_READERS:
        raise BadInput(f"{name or 'this command'} does not work on a remote root ({url}); give a local --root")
    from wardrik_cli.remote.mirror import keep_synced, open_mirror

    mirror = open_mirror(url, inv.env, inv.deployment_given(), warn=inv.warn)
    need = _need(name, params)
    root = mirror.sync(need)
    inv.remote_mirror = mirror
    if (name in ("tail", "audit tail") and params.get("follow")) or (name == "activity" and params.get("watch")):
        import threading

        stop = threading.Event()
        every = _interval(inv, params.get("interval"))
        t = threading.Thread(target=keep_synced, args=(mirror, need), daemon=True, name="wardrik-remote-sync",
                             kwargs={"interval": every, "stop": stop, "warn": inv.warn})
        t.start()

        def _stop() -> None:
            stop.set()
            t.join(timeout=2)
        inv.cleanups.append(_stop)
    return root


def _running_command() -> tuple[str, dict[str, Any]]:
    """(the running command's name, ``audit page`` for a group's, and its parsed parameters)."""
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    names: list[str] = []
    params: dict[str, Any] = dict(ctx.params) if ctx is not None else {}
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names)), params


def _need(name: str, params: dict[str, Any]) -> Any:
    """What the command reads (``remote.mirror.Need``): which logs, from which cursor."""
    from wardrik_cli.errors import WardrikError
    from wardrik_cli.protocol.names import is_log_id
    from wardrik_cli.remote.mirror import Need

    pats = list(params.get("patterns") or []) or ["*"]
    cursor: dict[str, int] | None = None
    if "after" in params or "cursor_file" in params:
        from wardrik_cli.cli.inputs import load_cursor

        try:
            cursor = load_cursor(params.get("after"), params.get("cursor_file"))
        except WardrikError:
            cursor = None  # the command refuses it itself, in its own words
    if name == "page" or name == "tail":
        return Need(pats, after=cursor)
    if name == "head":
        return Need(pats, ends=True)
    if name in ("audit page", "audit tail"):
        return Need(None, audit=True, after=cursor)
    if name == "check":
        return Need(list(params.get("patterns") or []) or ["*"], audit=not params.get("patterns"), verify=True)
    if name == "fold":
        log = params.get("log")
        return Need([log] if isinstance(log, str) and is_log_id(log) else None)
    if name == "sql":
        return Need(["*"])
    if name == "types":
        return Need(None)
    return Need(pats)  # activity, stats, export: every matched log, whole


def _interval(inv: Invocation, given: Any) -> float:
    """Seconds between polls of the store: the command's --interval when it has one, else
    ``$WARDRIK_REMOTE_INTERVAL``, else 5."""
    from wardrik_cli.errors import BadInput

    if given is None or given == "":
        return inv.settings.remote_interval  # $WARDRIK_REMOTE_INTERVAL, checked in one place
    text = given
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        try:
            seconds = float(text)
        except ValueError:
            from wardrik_cli.protocol.times import parse_duration

            seconds = parse_duration(str(text)).total_seconds()
    if not 0 < seconds <= 86400:
        raise BadInput(f"the remote poll interval {text!r} must be more than no time and at most a day")
    return seconds


_CURRENT: ContextVar[Invocation] = ContextVar("wardrik_invocation")


def current() -> Invocation:
    """The invocation running now (``cli.app.run`` sets it)."""
    return _CURRENT.get()


def enter(inv: Invocation) -> None:
    _CURRENT.set(inv)


def binary(stream: IO[Any] | None, fallback: TextIO | None, *, reading: bool = False) -> BinaryIO:
    """A binary stream for ``stream`` (a text stream's buffer), else ``fallback``'s. A process
    started with that descriptor closed (``wardrik head >&-``: Python's stream is None) gets
    one that discards (or, for input, is empty): a command runs as with ``>/dev/null``, so an
    ``append`` whose record cannot be shown is still an append that succeeded, not a crash
    a retrying script would take for a failure."""
    s = stream if stream is not None else fallback
    if s is None:
        return _discard(reading)
    return cast(BinaryIO, getattr(s, "buffer", s))  # duck-typed: a text stream's buffer, or s itself


def _discard(reading: bool) -> BinaryIO:
    """/dev/null opened for the stream the process started without (input: empty)."""
    import os

    return open(os.devnull, "rb" if reading else "wb")  # noqa: SIM115 - kept for the run
