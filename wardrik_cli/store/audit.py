"""The deployment's audit log: who changed what, tamper-evident.

Contract kept here:
- One log per root, ``<root>/.wardrik/audit.jsonl`` (``Log.audit``), named ``audit`` in
  cursors and dropped notices; agents' patterns never match it.
- Only audit types (``agent.created``, ``agent.configured``, ``agent.forgotten``,
  ``trigger.created``, ``trigger.deleted``) with their required data are recorded.
- Every record names its actor and who acted for them, first to last: a principal is
  ``[A-Za-z0-9._:@/+-]+``, at most 200 characters. They are stored in the event's data as
  ``actor`` and ``assumed_by`` (a list, possibly empty), next to the change's own data.
- Events go through ``appender.append``, under the same lock, with the same durability; the
  appender chains ``prevhash`` (hex SHA-256 of the previous line's bytes, its newline
  included; the compaction watermark's hash after a cut; all zeros for the first event).
- A refused record touches nothing (the root is not even created).
"""
from __future__ import annotations

import os

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wardrik_cli.errors import BadEvent, BadInput
from wardrik_cli.store.layout import Root
from wardrik_cli.protocol.catalogue import AUDIT, TYPES, lookup

if TYPE_CHECKING:
    from wardrik_cli.store.append import AppendItem

MAX_PRINCIPAL = 200
_PRINCIPAL_RE = re.compile(r"[A-Za-z0-9._:@/+-]+")
RESERVED = ("actor", "assumed_by")


def validate_principal(value: Any, what: str = "principal") -> str:
    if not isinstance(value, str) or not value:
        raise BadInput(f"{what} must be a non-empty principal, e.g. user:alice@example.com")
    if len(value) > MAX_PRINCIPAL:
        raise BadInput(f"bad {what}: {len(value)} characters long (at most {MAX_PRINCIPAL})")
    if not _PRINCIPAL_RE.fullmatch(value):
        raise BadInput(f"bad {what} {value!r}: a principal holds only letters, digits and . _ : @ / + -")
    return value


SWEEP_ONLY = frozenset({"ledger.compacted"})  # recorded by compact itself: who pruned what is never typed in


def audit_types() -> list[str]:
    """The types ``audit record`` takes."""
    return [t.name for t in TYPES.values() if t.kind == AUDIT and t.name not in SWEEP_ONLY]


def make_record(type_name: str, subject: str, data: Any, actor: str | None,
                assumed_by: Sequence[str] = (), *, by_sweep: bool = False) -> AppendItem:
    """A validated appender item for one audit record (raises BadInput/BadEvent);
    ``ledger.compacted`` only ``by_sweep`` (compact's own record)."""
    from wardrik_cli.store.append import make_item

    etype = lookup(type_name)
    if etype.kind != AUDIT or (etype.name in SWEEP_ONLY and not by_sweep):
        what = "is recorded by compact only" if etype.kind == AUDIT else "is not an audit type"
        raise BadEvent(f"{etype.full} {what}; audit record takes {', '.join(audit_types())}")
    if not isinstance(subject, str) or not subject.strip():
        raise BadInput("SUBJECT must be a non-empty string, e.g. agents/acme/triage")
    if actor is None:
        raise BadInput("--actor is required: who made the change")
    validate_principal(actor, "--actor")
    chain = [validate_principal(p, "--assumed-by") for p in assumed_by]
    if not isinstance(data, dict):
        raise BadEvent(f"data for {etype.full} must be a JSON object")
    clash = [k for k in RESERVED if k in data]
    if clash:
        raise BadEvent(f"data.{clash[0]} is set from --actor/--assumed-by; leave it out of --data")
    full = {**data, "actor": actor, "assumed_by": chain}
    return make_item(etype.full, full, subject, None, kinds=(AUDIT,))


def record_audit(root: Root, type_name: str, subject: str, data: Any, actor: str | None,
                 assumed_by: Sequence[str] = (), deployment: str | None = None, *, sync: bool = True,
                 warn: Callable[[str], None] | None = None, env: Mapping[str, str] | None = None,
                 lock_timeout: float | None = None, made_root: bool = False, by_sweep: bool = False) -> bytes:
    """Append one audit event; returns the stored line (with its newline), durable unless
    sync=False. ``made_root``: refuse a folder that is not a root (``wardrik init``), once the
    record itself is known to be good; a root that does not exist is made."""
    from wardrik_cli.store.append import append
    from wardrik_cli.store.log import Log

    item = make_record(type_name, subject, data, actor, assumed_by, by_sweep=by_sweep)
    if made_root and os.path.lexists(root.path):  # a root that does not exist is made, as by a first append
        root.require_made("audit record")
    dep = root.deployment(deployment, env=env)
    if warn is None:
        return append(root, Log.audit(root), [item], deployment=dep, sync=sync, lock_timeout=lock_timeout)[0]
    return append(root, Log.audit(root), [item], deployment=dep, sync=sync, warn=warn, lock_timeout=lock_timeout)[0]
