"""Names wardrik allows: log ids, deployment names and the globs that match log ids.

Contract kept here:
- A log id is one or more ``/``-separated segments, each ``[A-Za-z0-9][A-Za-z0-9._-]*``,
  at most 200 characters in all, never ending in ``.jsonl``. It is validated before any
  path is built from it, so no bad id ever touches the file system.
- A deployment name is ``[a-z0-9][a-z0-9.-]*``, at most 63 characters.
- Patterns are globs (``*`` any run of characters, ``/`` included; ``?`` one character),
  never regular expressions from the user.
"""
from __future__ import annotations

import re

from wardrik_cli.errors import BadInput, BadLogId, BadPattern

LOG_SUFFIX = ".jsonl"
MAX_LOG_ID = 200
AUDIT_NAME = "audit"  # the audit log's name in cursors and dropped notices
_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_LOG_ID_RE = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")
_DEPLOYMENT_RE = r"[a-z0-9][a-z0-9.-]*"
DEFAULT_DEPLOYMENT = "local"


def is_log_id(text: object) -> bool:
    return (
        isinstance(text, str)
        and 0 < len(text) <= MAX_LOG_ID
        and not text.endswith(LOG_SUFFIX)
        and _LOG_ID_RE.fullmatch(text) is not None
    )


def validate_log_id(text: str) -> str:
    if is_log_id(text):
        return text
    shown = repr(text) if any(ord(c) < 32 or c == "\x7f" for c in text) else f"'{text}'"
    if not text:
        why = "it is empty"
    elif len(text) > MAX_LOG_ID:
        why = f"it is {len(text)} characters long (at most {MAX_LOG_ID})"
    elif text.endswith(LOG_SUFFIX):
        why = f"log ids never end in {LOG_SUFFIX} (give the id without it)"
    else:
        why = "each /-separated segment must start with a letter or digit and hold only letters, digits, '.', '_' and '-'"
    raise BadLogId(f"bad log id {shown}: {why}")


def validate_deployment(name: str) -> str:
    if len(name) <= 63 and re.fullmatch(_DEPLOYMENT_RE, name):
        return name
    raise BadInput(f"bad deployment name {name!r}: use lowercase letters, digits, '.' and '-', at most 63 characters")


def has_wildcards(pattern: str) -> bool:
    return "*" in pattern or "?" in pattern


def validate_pattern(pattern: str) -> str:
    """A pattern is a log id in which ``*`` and ``?`` may stand for characters."""
    probe = pattern.replace("*", "a").replace("?", "a")
    if not has_wildcards(pattern):
        validate_log_id(pattern)
    elif not is_log_id(probe) or len(pattern) > MAX_LOG_ID:
        raise BadPattern(f"bad pattern {pattern!r}: a pattern is a log id in which '*' matches any run of characters and '?' one")
    return pattern


def pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
    return re.compile("".join(parts), re.DOTALL)
