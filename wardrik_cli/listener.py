"""A listener: hand each followed event to your code, with the cursor past it.

Contract kept here:
- ``handle(event, listener)`` is called once per event in each log's sequence order
  (live events and ``events.dropped`` included, filtered by ``types``);
  ``listener.cursor`` is then the cursor past that event, as text: save it with your work.
- At least once: if ``handle`` raises or returns anything but None/True, the listener
  restarts from what ``saved_cursor()`` returns (your saved cursor; pass ``cursor=FN``
  or override it) after a backoff that doubles
  from ``backoff[0]`` to ``backoff[1]`` seconds, and the events after it come again. Drop a
  repeat by the event's id. When it returns None (nothing saved), it restarts
  from the cursor before the failed event.
- With no saved cursor at the start, the listener starts at what is written next.
- ``stop()`` (from any thread) ends ``run()`` after the current event.

    class Runs(Listener):
        def handle(self, event, listener):
            db.save(row(event), cursor=listener.cursor)
        def saved_cursor(self):
            return db.saved_cursor()

    Runs(Root("ledgers"), ["acme/*"], types=["run.completed"]).run()
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

from .cursor import decode, encode
from .reader import Filters

Handler = Callable[[dict, "Listener"], Any]


class Listener:
    def __init__(self, root: Any, patterns: Sequence[str], handler: Optional[Handler] = None, *,
                 cursor: Optional[Callable[[], Optional[str]]] = None, types: Optional[Sequence[str]] = None,
                 deployment: Optional[str] = None, backoff: tuple[float, float] = (0.5, 30.0),
                 live: bool = True, on_error: Optional[Callable[[BaseException | Any], None]] = None):
        from .follow import agent_logs_fn

        self.root = root
        self.patterns = list(patterns)
        self._handler = handler
        self._cursor_fn = cursor
        self.filters = Filters.build(types)
        self.deployment = root.deployment(deployment)
        self.backoff = backoff
        self.live = live
        self.on_error = on_error
        self.cursor: Optional[str] = None  # past the event being handled
        self.failures = 0
        self._logs_fn = agent_logs_fn(root, self.patterns)
        self._stop = threading.Event()
        self._follower: Any = None

    # -- what you override (or pass as arguments) ---------------------------------------
    def handle(self, event: dict, listener: "Listener") -> Any:
        if self._handler is None:
            raise NotImplementedError("give a handler or override handle()")
        return self._handler(event, listener)

    def saved_cursor(self) -> Optional[str]:
        """The cursor to start or restart from (override ``cursor`` in a subclass, or pass one)."""
        return self._cursor_fn() if self._cursor_fn is not None else None

    # -- running --------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        f = self._follower
        if f is not None:
            f.stop()

    def run(self) -> None:
        from .follow import tail_items

        saved = self.saved_cursor()
        start = decode(saved) if saved else None
        delay = self.backoff[0]
        while not self._stop.is_set():
            f = tail_items(self.root, self._logs_fn, after=start, n=0, follow=True, filters=self.filters,
                           deployment=self.deployment, live=self.patterns if self.live else False)
            self._follower = f
            if self._stop.is_set():
                f.close()
                return
            failed = False
            try:
                for item in f:
                    self.cursor = encode(f.cursor)
                    try:
                        ok = self.handle(item.event, self)
                    except Exception as e:  # noqa: BLE001 - any failure restarts from the saved cursor
                        ok = e
                    if ok is None or ok is True:
                        delay = self.backoff[0]
                        if self._stop.is_set():
                            return
                        continue
                    self.failures += 1
                    if self.on_error is not None:
                        self.on_error(ok)
                    saved = self.saved_cursor()
                    start = decode(saved) if saved else f.prev_cursor
                    failed = True
                    break
            finally:
                f.close()
                self._follower = None
            if not failed:
                return
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, self.backoff[1])
