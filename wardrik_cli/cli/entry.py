"""The `wardrik` console script: signals handled from the first instant.

Importing the CLI takes a few hundred milliseconds; a Ctrl-C or SIGTERM in that window must
still end a follow or a watch cleanly (exit 0, no traceback), and a Ctrl-C must never print
an import traceback. After the imports, ``cli.app.main`` and the follow loop take over.
"""
from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Optional

FOLLOW_FLAGS = frozenset({"-f", "--follow", "--watch", "-w"})


def main() -> None:
    following = any(a in FOLLOW_FLAGS for a in sys.argv[1:])
    if following:
        def _stop(signum: int, frame: Optional[FrameType]) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _stop)
    try:
        from wardrik_cli.cli.app import main as cli_main
    except KeyboardInterrupt:
        sys.exit(0 if following else 130)
    cli_main()
