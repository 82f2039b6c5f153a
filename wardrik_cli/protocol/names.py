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

import functools
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
        why = ("each /-separated segment must start with a letter or digit and hold only letters, digits, "
               "'.', '_' and '-'")
    raise BadLogId(f"bad log id {shown}: {why}")


def is_deployment(name: str) -> bool:
    """Is ``name`` a deployment name (what ``validate_deployment`` takes)?"""
    return len(name) <= 63 and re.fullmatch(_DEPLOYMENT_RE, name) is not None


def validate_deployment(name: str) -> str:
    if is_deployment(name):
        return name
    raise BadInput(f"bad deployment name {name!r}: use lowercase letters, digits, '.' and '-', at most 63 characters")


def has_wildcards(pattern: str) -> bool:
    return "*" in pattern or "?" in pattern


def pattern_covers(pattern: str, log_id: str) -> bool:
    """Does ``pattern`` name ``log_id``: a glob matching it, or a literal naming it or a folder
    it is under (``acme`` means every log under ``acme/``, as ``Root.match`` reads it)?"""
    if pattern_regex(pattern).fullmatch(log_id):
        return True
    return not has_wildcards(pattern) and log_id.startswith(pattern + "/")


MAX_GLOBS = 256  # globs one registration (a follower's, a ship target's) may hold


class PatternSet:
    """Many patterns matched at once: a log id and the folders above it looked up among the
    literal patterns (a set), each glob matched by its own regex, compiled once here. What a
    registration read from the root may hold is bounded by the caller (``too_many``): a
    planted file of 100,000 globs would otherwise cost every append and every log swept."""

    __slots__ = ("literals", "globs")

    def __init__(self, patterns: list[str]) -> None:
        self.literals = frozenset(p for p in patterns if not has_wildcards(p))
        self.globs = [pattern_regex(p) for p in dict.fromkeys(p for p in patterns if has_wildcards(p))]

    @staticmethod
    def too_many(patterns: list[str]) -> bool:
        return sum(1 for p in patterns if has_wildcards(p)) > MAX_GLOBS

    def covers(self, log_id: str) -> bool:
        """``pattern_covers`` of any of the patterns."""
        if self.literals:
            if log_id in self.literals:
                return True
            i = log_id.rfind("/")
            while i > 0:
                if log_id[:i] in self.literals:
                    return True
                i = log_id.rfind("/", 0, i)
        return any(g.fullmatch(log_id) for g in self.globs)


def validate_pattern(pattern: str) -> str:
    """A pattern is a log id in which ``*`` and ``?`` may stand for characters."""
    probe = pattern.replace("*", "a").replace("?", "a")
    if not has_wildcards(pattern):
        validate_log_id(pattern)
    elif not is_log_id(probe) or len(pattern) > MAX_LOG_ID:
        raise BadPattern(f"bad pattern {pattern!r}: a pattern is a log id in which '*' matches any run of characters "
                         "and '?' one")
    return pattern


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The glob as an anchored regex (use ``fullmatch``) that cannot backtrack.

    A glob is literal chunks between stars: ``c0*c1*...*cn``. Taking the leftmost place of
    each middle chunk is always right (a star can absorb whatever comes before the next
    chunk), so each middle chunk is searched for once inside an atomic group, ``(?>.*?c)``,
    and never tried again: matching costs about the id's length times the pattern's, even
    for ``'****************x'``, instead of growing exponentially with the stars."""
    chunks = [_chunk(c) for c in pattern.split("*")]
    if len(chunks) == 1:
        return _compile(chunks[0])
    middle = "".join(f"(?>.*?{c})" for c in chunks[1:-1] if c)
    return _compile(f"{chunks[0]}{middle}.*{chunks[-1]}")


def _chunk(text: str) -> str:
    return "".join("." if ch == "?" else re.escape(ch) for ch in text)


@functools.lru_cache(maxsize=256)
def _compile(rx: str) -> re.Pattern[str]:
    return re.compile(rx, re.DOTALL)
