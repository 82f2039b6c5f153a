"""The `wardrik` console script: signals handled from the first instant.

Importing the CLI takes a few hundred milliseconds; a Ctrl-C or SIGTERM in that window must
still end a follow or a watch cleanly (exit 0, no traceback), and a Ctrl-C must never print
an import traceback. After the imports, ``cli.main`` and the follow loop take over.
"""
from __future__ import annotations

import signal
import sys

_FOLLOW_FLAGS = frozenset({"-f", "--follow", "--watch"})


def main() -> None:
    following = any(a in _FOLLOW_FLAGS for a in sys.argv[1:])
    if following:
        sys._wardrik_following = True  # type: ignore[attr-defined]  # cli.main: Ctrl-C is a normal end
        def _stop(signum, frame):  # noqa: ANN001
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _stop)
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        sys.exit(0 if following else 130)
    cli_main()
