"""``sql``: DuckDB over a root's ledgers, read only (issue 14).

A thin shell over the library; the command registers itself on ``app`` when this module is imported.
"""
from __future__ import annotations
