"""wardrik: the event ledgers AI agents leave behind, as a Python library.

Importing this package never imports Typer or Rich; the command line (``wardrik_cli.cli``)
is a thin shell over what is exported here::

    from wardrik_cli import Filters, Reader, Root, append_event, resolve_logs
    root = Root("sample_ledgers")
    append_event(root, "acme/triage", "trigger.fired", {"trigger": {"name": "daily"}})
    with Reader(resolve_logs(root, ["acme/*"]), None, filters=Filters(), deployment="acme-prod") as r:
        for item in r: print(item.log, item.event["type"])

Layers, lowest first (a layer imports only those below it): ``protocol`` (types,
envelope, names, cursors, times), ``store`` (the files: layout, lines, logs, appends,
locks, audit, check, retention), ``read`` (the merge across logs), ``folding`` (views,
checkpoints, activity), ``follow`` (followers, wake-ups, the live channel, listeners),
then ``cli``. ``errors`` sits under them all.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, seen statically by type checkers and editors
    from wardrik_cli.errors import (
        BadCursor, BadEvent, BadInput, BadLogId, BadPattern, CorruptLedger, ExitCode, Failure, LockTimeout, NoSuchLog,
        NoSuchRoot, WardrikError, WriteFailed,
    )
    from wardrik_cli.folding.engine import FoldResult, fold
    from wardrik_cli.folding.stats import load_prices, stats
    from wardrik_cli.folding.usage import UsageView
    from wardrik_cli.follow.listener import Listener
    from wardrik_cli.follow.follower import stream, tail_items
    from wardrik_cli.follow.append_stream import append_stream
    from wardrik_cli.follow.publish import append_event, publish_live
    from wardrik_cli.protocol.cursor import decode_cursor, encode_cursor
    from wardrik_cli.protocol.names import validate_log_id
    from wardrik_cli.read.filters import Filters
    from wardrik_cli.read.reader import Item, Reader, head, resolve_logs
    from wardrik_cli.store.append import AppendItem, append, make_item
    from wardrik_cli.store.audit import record_audit
    from wardrik_cli.store.layout import Root
    from wardrik_cli.store.log import Log
    from wardrik_cli.store.retention import compact

# Where each public name is defined (under that very name). They are imported on first use
# (PEP 562), so that `wardrik append` loads only what it needs: start-up is a measured figure.
_DEFINED_IN = {
    'AppendItem': 'wardrik_cli.store.append',
    'BadCursor': 'wardrik_cli.errors',
    'BadEvent': 'wardrik_cli.errors',
    'BadInput': 'wardrik_cli.errors',
    'BadLogId': 'wardrik_cli.errors',
    'BadPattern': 'wardrik_cli.errors',
    'CorruptLedger': 'wardrik_cli.errors',
    'ExitCode': 'wardrik_cli.errors',
    'Failure': 'wardrik_cli.errors',
    'Filters': 'wardrik_cli.read.filters',
    'FoldResult': 'wardrik_cli.folding.engine',
    'Item': 'wardrik_cli.read.reader',
    'Listener': 'wardrik_cli.follow.listener',
    'LockTimeout': 'wardrik_cli.errors',
    'Log': 'wardrik_cli.store.log',
    'NoSuchLog': 'wardrik_cli.errors',
    'NoSuchRoot': 'wardrik_cli.errors',
    'Reader': 'wardrik_cli.read.reader',
    'Root': 'wardrik_cli.store.layout',
    'UsageView': 'wardrik_cli.folding.usage',
    'WardrikError': 'wardrik_cli.errors',
    'WriteFailed': 'wardrik_cli.errors',
    'append': 'wardrik_cli.store.append',
    'append_event': 'wardrik_cli.follow.publish',
    'append_stream': 'wardrik_cli.follow.append_stream',
    'compact': 'wardrik_cli.store.retention',
    'decode_cursor': 'wardrik_cli.protocol.cursor',
    'encode_cursor': 'wardrik_cli.protocol.cursor',
    'fold': 'wardrik_cli.folding.engine',
    'head': 'wardrik_cli.read.reader',
    'load_prices': 'wardrik_cli.folding.stats',
    'make_item': 'wardrik_cli.store.append',
    'publish_live': 'wardrik_cli.follow.publish',
    'record_audit': 'wardrik_cli.store.audit',
    'resolve_logs': 'wardrik_cli.read.reader',
    'stats': 'wardrik_cli.folding.stats',
    'stream': 'wardrik_cli.follow.follower',
    'tail_items': 'wardrik_cli.follow.follower',
    'validate_log_id': 'wardrik_cli.protocol.names',
}

__all__ = [
    "AppendItem", "BadCursor", "BadEvent", "BadInput", "BadLogId", "BadPattern", "CorruptLedger", "ExitCode",
    "Failure", "Filters", "FoldResult", "Item", "Listener", "LockTimeout", "Log", "NoSuchLog", "NoSuchRoot",
    "Reader", "Root", "UsageView", "WardrikError", "WriteFailed", "append", "append_event", "append_stream",
    "compact", "decode_cursor", "encode_cursor", "fold", "head", "load_prices", "make_item", "publish_live",
    "record_audit", "resolve_logs", "stats", "stream", "tail_items", "validate_log_id",
]


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'wardrik_cli' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
