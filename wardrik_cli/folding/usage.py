"""The ``usage`` view: what a whole log's model calls used, summed (``fold LOG --view usage``).

Contract kept here:
- It reads ``message.completed`` only (every other line is passed over undecoded) and sums,
  over the whole log (or the events a fold selects), each field of ``data.usage`` that the
  protocol allows (``protocol.catalogue.USAGE_FIELDS``, nested as in the event) and
  ``data.cost_usd``. A value the protocol would refuse (a line written by another tool: a
  negative, a float, a string) is not counted; it is left to ``wardrik check`` to report.
- State (JSON, so a checkpoint keeps it): ``model_calls`` (message.completed events read),
  ``with_usage`` (how many carried ``data.usage``), ``usage`` (the sums, shaped like
  ``data.usage``), ``cost_usd`` (the sum of the ``data.cost_usd`` given), ``with_cost``.
- ``finish`` makes ``cost_usd`` null unless every model call gave one: a partial sum would
  read as the log's cost and be too low. The view knows no prices (``wardrik stats`` prices
  usage from ``.wardrik/config.toml``); it never guesses one. A sum past what a number holds
  (costs near 1e308) is no sum either: the state's ``cost_usd`` becomes null for good (JSON
  has no infinity, and a checkpoint must read back what was saved) and ``finish`` gives
  null, as ``wardrik stats`` does.
"""
from __future__ import annotations

import math
from typing import Any

from wardrik_cli.protocol.catalogue import PREFIX, USAGE_FIELDS, is_cost, is_count

COMPLETED = PREFIX + "message.completed"


def empty_usage() -> dict[str, Any]:
    """``data.usage``'s shape with every count 0: {"input_tokens": 0, "cache_read": {"input_tokens": 0}, ...}."""
    out: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        head, _, leaf = name.rpartition(".")
        (out.setdefault(head, {}) if head else out)[leaf] = 0
    return out


def add_usage(total: dict[str, Any], usage: Any) -> bool:
    """Add the valid counts of ``usage`` (an event's ``data.usage``) into ``total``; True when
    ``usage`` is an object (the call reported its usage)."""
    if not isinstance(usage, dict):
        return False
    for key, value in usage.items():
        slot = total.get(key)
        if slot is None:
            continue  # not a usage field
        if isinstance(slot, dict):
            if isinstance(value, dict):
                for leaf, count in value.items():
                    if leaf in slot and is_count(count):
                        slot[leaf] += count
        elif is_count(value):
            total[key] = slot + value
    return True


class UsageView:
    """Token counts and cost summed over every model call of a log."""

    name = "usage"
    version = "usage/1"
    types = frozenset({COMPLETED})

    def initial(self) -> dict[str, Any]:
        return {"model_calls": 0, "with_usage": 0, "usage": empty_usage(), "cost_usd": 0.0, "with_cost": 0}

    def apply(self, s: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
        if e.get("type") != COMPLETED:
            return s
        d = e.get("data")
        if not isinstance(d, dict):
            return s
        s["model_calls"] += 1
        if add_usage(s["usage"], d.get("usage")):
            s["with_usage"] += 1
        cost = d.get("cost_usd")
        if is_cost(cost):
            total = s["cost_usd"]
            if total is not None:  # None: the sum overflowed before, and stays no sum
                total += cost
                s["cost_usd"] = total if math.isfinite(total) else None
            s["with_cost"] += 1
        return s

    def finish(self, s: dict[str, Any], through: int) -> dict[str, Any]:
        out = dict(s)
        total = s["cost_usd"]
        out["cost_usd"] = round(total, 6) if s["with_cost"] == s["model_calls"] and total is not None else None
        return out
