"""``stats`` and ``export otlp``: what agents cost and where the time went (issue 15).

Thin shells over the library; commands register themselves on ``app`` when this module is imported.
"""
from __future__ import annotations
