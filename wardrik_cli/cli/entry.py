"""The `wardrik` console script: signals handled from the first instant.

Importing the CLI takes a few hundred milliseconds; a Ctrl-C, SIGTERM or SIGHUP in that window must
still end a follow or a watch cleanly (exit 0, no traceback), and a Ctrl-C must never print
an import traceback. After the imports, ``cli.app.main`` and the follow loop take over.

Such a signal becomes KeyboardInterrupt (``interrupt``), but never in the middle of an
import or of the threading module's own bookkeeping: raised there it can crash a C
extension's initialisation (orjson's: a segfault), be swallowed by importlib's callbacks
("Exception ignored", and the follow goes on for ever) or leave a lock half released (an
internal error). It is raised once that is over instead.
"""
from __future__ import annotations

import signal
import sys
import time
from types import FrameType

FOLLOW_FLAGS = frozenset({"-f", "--follow", "--watch", "-w"})
RETRY_S = 0.02  # how soon a signal that came during an import is acted on again
_deferred: list[int] = []  # such a signal, until it is acted on
_raised: list[float] = []  # when a stop signal last became KeyboardInterrupt
AGAIN_S = 1.0  # a stop signal this soon after the last is not raised again


def _unsafe(frame: FrameType | None) -> bool:
    """Is ``frame`` inside an import or the threading module (where an exception must not land)?"""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib") or name.endswith(("/threading.py", "\\threading.py")):
            return True
        frame = frame.f_back
    return False


def interrupt(signum: int, frame: FrameType | None) -> None:
    """A SIGINT/SIGTERM handler: raise KeyboardInterrupt, or, in the middle of an import (or of
    threading's bookkeeping), once that is over (SIGALRM every ``RETRY_S`` until then)."""
    if _unsafe(frame) and callable(signal.getsignal(signal.SIGALRM)):  # someone calls retry on SIGALRM
        if not _deferred:
            _deferred.append(signum)
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    _deferred.clear()
    now = time.monotonic()
    if _raised and now - _raised[0] < AGAIN_S:
        # Asked again while the first is being acted on (``timeout`` signals the process, then
        # its group): raised in the clean-up, it could land in a finaliser, printed as an
        # "Exception ignored" traceback. Not for long: a first one swallowed somewhere must
        # not leave the process deaf to the next.
        return
    _raised[:] = [now]
    raise KeyboardInterrupt


def unraisable(u: object) -> None:
    """``sys.unraisablehook``: a stop signal's KeyboardInterrupt that landed in a finaliser
    (where Python prints it as "Exception ignored" and goes on) is acted on once that is over,
    as one that came during an import; anything else is printed as Python prints it."""
    if isinstance(getattr(u, "exc_value", None), KeyboardInterrupt) \
            and callable(signal.getsignal(signal.SIGALRM)):
        _raised.clear()
        if not _deferred:
            _deferred.append(signal.SIGINT)
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    sys.__unraisablehook__(u)  # type: ignore[arg-type]


def retry(signum: int, frame: FrameType | None) -> None:
    """The SIGALRM handler: act on a signal that came during an import (see ``interrupt``)."""
    if _deferred:
        interrupt(_deferred[0], frame)


def main() -> None:
    # A read makes a few tuples per event and almost no reference cycles: the cyclic
    # collector's default (a pass every 700 new containers) cost 5-7% of a page over many
    # logs, collecting nothing. Cycles are still collected, a hundred times less often.
    import gc

    gc.set_threshold(100_000, 50, 100)
    following = any(a in FOLLOW_FLAGS for a in sys.argv[1:])
    signal.signal(signal.SIGALRM, retry)
    signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = unraisable
    if following:
        # a terminal closed under a follow (SIGHUP) ends it as Ctrl-C does: exit 0, its live
        # registration removed (by default SIGHUP killed it, leaving the registration behind)
        signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup's choice stands
            signal.signal(signal.SIGHUP, interrupt)
    try:
        from wardrik_cli.cli.app import main as cli_main

        if _deferred:  # it came during the imports: act on it now, before the command starts
            raise KeyboardInterrupt
        cli_main()  # exits; a signal in the instants before or after the command's own handling lands here
    except KeyboardInterrupt:
        sys.exit(0 if following else 130)
    finally:
        # The command is over: a second stop signal (``timeout`` signals the process, then its
        # group) must not change its exit. One that came while a thread was joined on the way
        # out armed the retry timer, which fired once the interpreter had reset its handlers
        # (killed by SIGALRM, exit 142); one that came then killed it outright (exit 130).
        for sig in (signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if sig == signal.SIGALRM or signal.getsignal(sig) is interrupt:
                signal.signal(sig, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
