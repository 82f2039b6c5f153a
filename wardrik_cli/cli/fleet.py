"""``ship`` and ``pull``: ledgers to and from object storage, exactly once (issue 14).

Thin shells over the library; commands register themselves on ``app`` when this module is imported.
"""
from __future__ import annotations
