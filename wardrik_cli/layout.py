"""Where things live under a root, and which names are allowed.

Contract kept here:
- A log id is one or more ``/``-separated segments, each ``[A-Za-z0-9][A-Za-z0-9._-]*``,
  at most 200 characters in all, never ending in ``.jsonl``. It is validated before any
  path is built from it, so no bad id ever touches the file system.
- Log ``acme/triage`` is the file ``<root>/acme/triage.jsonl``.
- ``<root>/.wardrik/`` belongs to the tool (audit log, config, locks, checkpoints, follower
  registrations). Patterns never match anything under it, nor under any dot-directory.
- Patterns are globs (``*`` any run of characters, ``/`` included; ``?`` one character),
  never regular expressions from the user.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

from .errors import BadConfig, BadInput, BadLogId, BadPattern, NoSuchRoot

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


class Config:
    """What ``.wardrik/config.toml`` says (a plain class: dataclasses cost start-up time)."""

    __slots__ = ("deployment", "retention")

    def __init__(self, deployment: str | None = None, retention: str | None = None):
        self.deployment, self.retention = deployment, retention


class Root:
    """A root directory of agent logs. Cheap to build; touches nothing until asked."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        if path is None:
            path = os.environ.get("WARDRIK_ROOT") or "."
        self.path = Path(path)

    # -- paths -------------------------------------------------------------
    @property
    def tool_dir(self) -> Path:
        return self.path / ".wardrik"

    @property
    def audit_path(self) -> Path:
        return self.tool_dir / ("audit" + LOG_SUFFIX)

    def log_path(self, log_id: str) -> Path:
        return self.path / (validate_log_id(log_id) + LOG_SUFFIX)

    def state_path(self, kind: str, log_id: str, name: str) -> Path:
        """A per-log file of the tool's own, e.g. ``.wardrik/locks/acme/triage@lock``.

        '@' is never in a log id, so log ``a``'s file cannot collide with a folder of log
        ``a.lock/x`` (as ``a.lock`` would)."""
        return self.tool_dir / kind / f"{log_id}@{name.lstrip('.@')}"

    def exists(self) -> bool:
        return self.path.is_dir()

    def require(self) -> "Root":
        if not self.path.is_dir():
            what = "is not a directory" if self.path.exists() else "does not exist"
            raise NoSuchRoot(f"root {str(self.path)!r} {what} (give --root DIR or set WARDRIK_ROOT)")
        return self

    def writable(self) -> bool:
        return os.access(self.path, os.W_OK)

    # -- config ------------------------------------------------------------
    def config(self) -> Config:
        f = self.tool_dir / "config.toml"
        try:
            raw = f.read_bytes()
        except FileNotFoundError:
            return Config()
        except OSError as e:
            raise BadConfig(f"cannot read {f}: {e.strerror}") from None
        import tomllib  # only when there is a config file: it costs start-up time

        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise BadConfig(f"{f}: not valid TOML: {e}") from None
        dep, ret = data.get("deployment"), data.get("retention")
        for key, val in (("deployment", dep), ("retention", ret)):
            if val is not None and not isinstance(val, str):
                raise BadConfig(f"{f}: {key} must be a string")
        return Config(deployment=dep, retention=ret)

    def deployment(self, given: str | None = None) -> str:
        if given is not None:
            name = given
        elif os.environ.get("WARDRIK_DEPLOYMENT") is not None:
            name = os.environ["WARDRIK_DEPLOYMENT"]
        else:
            name = self.config().deployment or DEFAULT_DEPLOYMENT
        return validate_deployment(name)

    # -- listing -----------------------------------------------------------
    def iter_log_ids(self, under: str = "") -> Iterator[str]:
        """Every log id under the root (or under folder ``under``), in no particular order."""
        base = self.path / under if under else self.path
        prefix = under + "/" if under else ""
        try:
            entries = list(os.scandir(base))
        except (FileNotFoundError, NotADirectoryError):
            return
        for e in entries:
            name = e.name
            if name.startswith("."):
                continue  # .wardrik and every other dot-entry are never logs
            if e.is_dir(follow_symlinks=False):
                yield from self.iter_log_ids(prefix + name)
            elif name.endswith(LOG_SUFFIX):
                log_id = prefix + name[: -len(LOG_SUFFIX)]
                if is_log_id(log_id):
                    yield log_id

    def match(self, patterns: list[str]) -> list[str]:
        """Log ids matched by any pattern, sorted. A literal id is matched when its file exists."""
        found: set[str] = set()
        for pattern in patterns:
            validate_pattern(pattern)
            if not has_wildcards(pattern):
                if self.log_path(pattern).is_file():
                    found.add(pattern)
                continue
            # Walk only the folder the literal prefix pins down.
            literal = re.split(r"[*?]", pattern, 1)[0]
            under = literal.rsplit("/", 1)[0] if "/" in literal else ""
            rx = pattern_regex(pattern)
            found.update(i for i in self.iter_log_ids(under) if rx.fullmatch(i))
        return sorted(found)

    def matcher(self, patterns: list[str]):
        """A predicate telling whether a log id (existing or not) matches any pattern."""
        rxs = [pattern_regex(validate_pattern(p)) for p in patterns]
        return lambda log_id: any(rx.fullmatch(log_id) for rx in rxs)


def log_id_from_path(root: Root, path: Path) -> str | None:
    """The log id of a file under the root, or None for anything that is not a log."""
    try:
        rel = path.relative_to(root.path)
    except ValueError:
        return None
    s = rel.as_posix()
    if not s.endswith(LOG_SUFFIX) or any(p.startswith(".") for p in rel.parts):
        return None
    log_id = s[: -len(LOG_SUFFIX)]
    return log_id if is_log_id(log_id) else None
