"""Writing from Python: append kept events and publish live ones, ringing followers.

Contract kept here: ``append_event`` returns only once the event is durable (unless
``sync=False``) and then rings the log's followers, so a ``tail -f`` shows it at once;
``publish_live`` sends a live event (``message.delta``, ...) to the log's followers and
stores nothing. Both validate exactly as ``wardrik append`` does.
"""
from __future__ import annotations

from typing import Any

import orjson

from wardrik_cli.follow import live
from wardrik_cli.protocol.catalogue import KEPT, LIVE
from wardrik_cli.store.append import append, live_event, make_item
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log


def append_event(root: Root, log_id: str, type_name: str, data: dict[str, Any] | None = None, *,
                 subject: str | None = None, traceparent: str | None = None,
                 deployment: str | None = None, sync: bool = True) -> dict[str, Any]:
    """Append one kept event to ``log_id`` and return it as stored."""
    item = make_item(type_name, data if data is not None else {}, subject, traceparent, kinds=(KEPT,))
    line = append(root, Log.agent(root, log_id), [item], deployment=root.deployment(deployment), sync=sync)[0]
    live.notify_kept(root, log_id, [line])  # wake followers now rather than at their next poll
    event: dict[str, Any] = orjson.loads(line)
    return event


def publish_live(root: Root, log_id: str, type_name: str, data: dict[str, Any] | None = None, *,
                 subject: str | None = None, traceparent: str | None = None,
                 deployment: str | None = None) -> dict[str, Any]:
    """Send one live event to the followers of ``log_id``; return it as delivered (never stored)."""
    item = make_item(type_name, data if data is not None else {}, subject, traceparent, kinds=(LIVE,))
    raw = live_event(Log.agent(root, log_id), item, deployment=root.deployment(deployment))
    live.publish(root, log_id, raw)
    event: dict[str, Any] = orjson.loads(raw)
    return event
