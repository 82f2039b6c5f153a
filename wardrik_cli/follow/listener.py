"""A listener: hand each followed event to your code, with the cursor past it, at least once.

Contract kept here:
- ``handle(event, listener)`` is called once per event in each log's sequence order
  (live events and ``events.dropped`` included, filtered by ``types``);
  ``listener.cursor`` is then the cursor past that event, as text: save it with your work.
  ``listener.item`` is the ``read.reader.Item`` (its ``raw`` stored bytes, its log).
- At least once: if ``handle`` raises or returns anything but None/True, the listener
  restarts from what ``saved_cursor()`` returns (your saved cursor; pass ``cursor=FN``
  or override it) after a backoff that doubles from ``backoff[0]`` to ``backoff[1]``
  seconds (``listener.next_delay`` is the wait to come, for ``on_error``), and the events
  after it come again. Drop a repeat by the event's id. When it returns None (nothing
  saved), it restarts from the cursor before the failed event.
- ``retries``: how many failures in a row are retried; one more ends ``run()`` with
  ``ListenerGaveUp`` naming the event (default: retry for ever).
- Where it starts: ``start`` (a decoded cursor) with ``n`` events before it read back as
  ``tail -n`` does; else the saved cursor; else what is written next. With ``follow=False``
  it ends once the read-back is handled, and ``run()`` returns the cursor past it.
- ``stop()`` (from any thread) ends ``run()`` after the current event.
- This is the one at-least-once loop: ``tail --exec`` is a listener whose handler runs the
  command.

    class Runs(Listener):
        def handle(self, event, listener):
            db.save(row(event), cursor=listener.cursor)
        def saved_cursor(self):
            return db.saved_cursor()

    Runs(Root("ledgers"), ["acme/*"], types=["run.completed"]).run()
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from wardrik_cli.errors import Failure
from wardrik_cli.protocol.cursor import Cursor, decode_cursor, encode_cursor
from wardrik_cli.read.reader import Filters, Item, OnCorrupt
from wardrik_cli.store.layout import Root

if TYPE_CHECKING:
    from wardrik_cli.follow.follower import Follower, LogsFn

Handler = Callable[[dict[str, Any], "Listener"], Any]


class ListenerGaveUp(Failure):
    """``handle`` failed on the same event more times than ``retries`` allows."""


class Listener:
    def __init__(self, root: Root, patterns: Sequence[str] = (), handler: Handler | None = None, *,
                 cursor: Callable[[], str | None] | None = None, types: Sequence[str] | None = None,
                 deployment: str | None = None, backoff: tuple[float, float] = (0.5, 30.0),
                 live: bool = True, on_error: Callable[[Any], None] | None = None,
                 logs_fn: LogsFn | None = None, filters: Filters | None = None,
                 start: Cursor | None = None, n: int = 0, follow: bool = True,
                 retries: int | None = None, on_corrupt: OnCorrupt = None,
                 warn: Callable[[str], None] | None = None, poll_s: float | None = None,
                 watch_step_ms: int | None = None, hangup_fd: int | None = None):
        from wardrik_cli.follow.follower import agent_logs_fn

        self.root = root
        self.patterns = list(patterns)
        self._handler = handler
        self._cursor_fn = cursor
        self.filters = filters if filters is not None else Filters.build(types)
        self.deployment = root.deployment(deployment)
        self.backoff = backoff
        self.live = live
        self.on_error = on_error
        self.start, self.n, self.follow, self.retries = start, n, follow, retries
        self.on_corrupt, self.warn = on_corrupt, warn
        self.poll_s, self.watch_step_ms = poll_s, watch_step_ms
        self.hangup_fd = hangup_fd  # a descriptor whose hang-up ends the listener (the CLI's stdout)
        self.cursor: str | None = None  # past the event being handled
        self.item: Item | None = None  # the event being handled
        self.failures = 0  # in all
        self.next_delay = backoff[0]
        self._logs_fn = logs_fn if logs_fn is not None else agent_logs_fn(root, self.patterns)
        self._stop = threading.Event()
        self._follower: Follower | None = None
        self.on_following: Callable[[Cursor], None] | None = None  # see Follower.on_following

    # -- what you override (or pass as arguments) ---------------------------------------
    def handle(self, event: dict[str, Any], listener: Listener) -> Any:
        if self._handler is None:
            raise NotImplementedError("give a handler or override handle()")
        return self._handler(event, listener)

    def saved_cursor(self) -> str | None:
        """The cursor to start or restart from (override ``cursor`` in a subclass, or pass one)."""
        return self._cursor_fn() if self._cursor_fn is not None else None

    # -- running --------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        f = self._follower
        if f is not None:
            f.stop()

    def run(self) -> Cursor | None:
        """Follow and handle until stopped (or, without ``follow``, to the end of the read-back);
        the cursor past the last event read."""
        from wardrik_cli.follow.follower import tail_items

        if self.start is not None:
            start: Cursor | None = self.start
        else:
            saved = self.saved_cursor()
            start = decode_cursor(saved) if saved else None
        n = self.n if start is None or self.start is not None else 0
        self.next_delay = self.backoff[0]
        in_a_row = 0
        while not self._stop.is_set():
            f = tail_items(self.root, self._logs_fn, after=start, n=n, follow=self.follow, filters=self.filters,
                           deployment=self.deployment, on_corrupt=self.on_corrupt,
                           live=self.patterns if self.live and self.patterns else False, warn=self.warn,
                           poll_s=self.poll_s, watch_step_ms=self.watch_step_ms, hangup_fd=self.hangup_fd)
            self._follower = f
            f.on_following = self.on_following
            if self._stop.is_set():
                f.close()
                return f.cursor
            failed: Any = None
            try:
                for item in f:
                    self.cursor, self.item = encode_cursor(f.cursor), item
                    try:
                        ok = self.handle(item.event, self)
                    except Exception as e:  # noqa: BLE001 - any failure restarts from the saved cursor
                        ok = e
                    if ok is None or ok is True:
                        self.next_delay, in_a_row = self.backoff[0], 0
                        if self._stop.is_set():
                            return f.cursor
                        continue
                    failed = ok
                    self.failures += 1
                    in_a_row += 1
                    if self.retries is not None and in_a_row > self.retries:
                        raise ListenerGaveUp(f"gave up on event {item.event.get('id')} of {item.log} after "
                                             f"{in_a_row} failures in a row ({_why(ok)})")
                    if self.on_error is not None:
                        self.on_error(ok)
                    saved = self.saved_cursor()
                    start, n = (decode_cursor(saved) if saved else f.prev_cursor), 0
                    break
                else:
                    return f.cursor
            finally:
                f.close()
                self._follower = None
            if failed is None:
                return f.cursor
            if self._wait(self.next_delay):
                return None
            self.next_delay = min(self.next_delay * 2, self.backoff[1])
        return None


    def _wait(self, seconds: float) -> bool:
        """Wait out a back-off; True when stopped meanwhile. Short sleeps, not the event's
        wait: a stop signal turned into KeyboardInterrupt lands at once in a sleep, while in
        ``threading``'s wait the CLI holds it back until the wait is over (a listener whose
        command fails was stopped only after its back-off, up to 30 s, and ran it again)."""
        import time

        deadline = time.monotonic() + seconds
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.05))
        return True


def _why(result: Any) -> str:
    if isinstance(result, BaseException):
        return f"{type(result).__name__}: {result}"
    return f"the handler returned {result!r}"
