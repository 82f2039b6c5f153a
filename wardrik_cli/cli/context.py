"""One invocation of the command line: its environment, streams and global options.

Contract kept here: every command reads what it needs from ``current()`` (the root, the
deployment, stdin, stdout, stderr, the settings) and never from the process (``os.environ``,
``sys.stdout``, module globals). ``cli.app.run`` makes a new ``Invocation`` in a context of
its own, so several invocations can run in one process, one after another or in threads,
without seeing each other: that is what lets the tests run the real CLI in-process.
"""
from __future__ import annotations

import io
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

    # -- where things are -------------------------------------------------------------
    @property
    def root(self) -> Root:
        return Root(self.root_arg or self.settings.root or ".")

    def deployment(self) -> str:
        return self.root.deployment(self.deployment_arg, env=self.env)

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

    def message(self, line: str) -> None:
        self.flush_out()
        from wardrik_cli.cli.safe_text import safe

        self.stderr.write(safe(line, keep_newlines=False).encode("utf-8", "backslashreplace") + b"\n")
        self.stderr.flush()

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
        return process_stream  # the process's own stream: share its text layer
    return io.TextIOWrapper(stream, encoding="utf-8", errors="backslashreplace", write_through=True)


_CURRENT: ContextVar[Invocation] = ContextVar("wardrik_invocation")


def current() -> Invocation:
    """The invocation running now (``cli.app.run`` sets it)."""
    return _CURRENT.get()


def enter(inv: Invocation) -> None:
    _CURRENT.set(inv)


def binary(stream: IO[Any] | None, fallback: TextIO) -> BinaryIO:
    """A binary stream for ``stream`` (a text stream's buffer), else ``fallback``'s."""
    s = stream if stream is not None else fallback
    return cast(BinaryIO, getattr(s, "buffer", s))  # duck-typed: a text stream's buffer, or s itself
