"""wardrik: the event ledgers AI agents leave behind, as a Python library.

Importing this package never imports Typer or Rich; the CLI (``wardrik_cli.cli``) is a
thin shell over what is exported here.

    from wardrik_cli import Root, Log, Reader, Filters, append_event
    root = Root("sample_ledgers")
    append_event(root, "acme/triage", "trigger.fired", {"trigger": {"name": "daily"}})
    with Reader(root.logs(["acme/*"]), None) as r:
        for item in r: print(item.event["type"])
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .layout import Root

# Names are imported on first use (PEP 562), so `wardrik append` loads only what it needs.
_EXPORTS = {
    "AppendItem": ("appender", "Item"), "append": ("appender", "append"), "make_item": ("appender", "make_item"),
    "decode_cursor": ("cursor", "decode"), "encode_cursor": ("cursor", "encode"),
    "Root": ("layout", "Root"), "validate_log_id": ("layout", "validate_log_id"), "Log": ("ledger", "Log"),
    "Filters": ("reader", "Filters"), "Reader": ("reader", "Reader"), "head": ("reader", "head"),
    "resolve_logs": ("reader", "resolve_logs"),
    "Listener": ("listener", "Listener"), "stream": ("follow", "stream"), "tail_items": ("follow", "tail_items"),
    "fold": ("folding", "fold_spec"), "compact": ("retention", "sweep"), "record_audit": ("audit", "record"),
}
for _name in ("BadCursor", "BadEvent", "BadInput", "BadLogId", "BadPattern", "CorruptLedger", "ExitCode", "Failure",
              "LockTimeout", "NoSuchLog", "NoSuchRoot", "WardrikError", "WriteFailed"):
    _EXPORTS[_name] = ("errors", _name)

__all__ = sorted([*_EXPORTS, "append_event"])


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'wardrik_cli' has no attribute {name!r}") from None
    value = getattr(import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


def append_event(root: "Root", log_id: str, type_name: str, data: dict | None = None, *,
                 subject: str | None = None, traceparent: str | None = None,
                 deployment: str | None = None, sync: bool = True) -> dict:
    """Append one kept event to ``log_id`` and return it as stored."""
    import orjson

    from .appender import append, make_item
    from .ledger import Log

    item = make_item(type_name, data if data is not None else {}, subject, traceparent, kinds=("kept",))
    line = append(root, Log.agent(root, log_id), [item], deployment=root.deployment(deployment), sync=sync)[0]
    from . import live
    live.notify_kept(root, log_id, [line])  # wake followers now rather than at their next poll
    return orjson.loads(line)
