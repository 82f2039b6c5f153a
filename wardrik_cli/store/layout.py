"""Where things live under a root (names are checked by ``protocol.names`` first).

Contract kept here:
- Log ``acme/triage`` is the file ``<root>/acme/triage.jsonl``.
- ``<root>/.wardrik/`` belongs to the tool (audit log, config, locks, checkpoints, follower
  registrations). Patterns never match anything under it, nor under any dot-directory.
- Patterns are globs (``*`` any run of characters, ``/`` included; ``?`` one character),
  never regular expressions from the user.
- ``.wardrik/config.toml`` is user input: one that is a link (or under a linked
  ``.wardrik``), a FIFO, a device or anything not a regular file, or over ``MAX_CONFIG_BYTES``,
  is refused (``BadConfig`` naming it and why), never followed, waited on or read whole.
- The tool's other files are read and written only through folders that are not links
  (``state_dir``, ``fsutil.state_dirs``): a linked ``.wardrik`` or ``.wardrik/<kind>``
  holds no record for a reader and is refused to a writer.
"""
from __future__ import annotations

import functools
import os
import stat
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from wardrik_cli.errors import BadConfig, BadInput, NoSuchRoot, NotRegular
from wardrik_cli.protocol.names import (
    DEFAULT_DEPLOYMENT, LOG_SUFFIX, MAX_LOG_ID, has_wildcards, is_log_id, pattern_regex, validate_deployment,
    validate_log_id, validate_pattern,
)
from wardrik_cli.store.fsutil import read_capped, read_small, state_dirs

MAX_CONFIG_BYTES = 1 << 20  # a few lines of TOML: anything past this is not a config
# A folder that can hold a log: named as a segment of a log id, and leaving room below it for
# "/" and a one-character name (a log id is at most MAX_LOG_ID characters: 100 levels at most).
_SEGMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_FOLDER_MAX = MAX_LOG_ID - 2

class Config:
    """What ``.wardrik/config.toml`` says (a plain class: dataclasses cost start-up time)."""

    __slots__ = ("deployment", "retention", "max_bytes")

    def __init__(self, deployment: str | None = None, retention: str | None = None,
                 max_bytes: str | int | None = None):
        self.deployment, self.retention, self.max_bytes = deployment, retention, max_bytes


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


UNFINISHED_PULL = "pull-unfinished"  # in an evidence root's .wardrik/ while pull writes it


CONFIG_KEYS = frozenset({"deployment", "retention", "max_bytes", "prices"})  # config.toml's top level


def _near_miss(typed: str, known: str) -> bool:
    """Is ``typed`` a slip of ``known``: at most two letters changed, added, dropped or swapped
    (``retentoin``, ``max_byte``, ``deploymnet``)? A longer key (``retention_days``) is another."""
    if abs(len(typed) - len(known)) > 2:
        return False
    a, b = typed, known
    prev2: list[int] | None = None
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if prev2 is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)] <= 2


class Root:
    """A root directory of agent logs. Cheap to build; touches nothing until asked."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        if path is None:
            from wardrik_cli.settings import Settings

            path = Settings.from_env().root or "."
        self.path = Path(path)
        self._given = os.fspath(path)  # as typed, for messages (a Path folds "S3://b" to "S3:/b")
        self._real_folders: set[str] = set()  # folders under it found not to be links (check_folders)

    # -- paths -------------------------------------------------------------
    @functools.cached_property
    def tool_dir(self) -> Path:
        return self.path / ".wardrik"

    @property
    def audit_path(self) -> Path:
        return self.tool_dir / ("audit" + LOG_SUFFIX)

    def log_path(self, log_id: str) -> Path:
        return self.path / (validate_log_id(log_id) + LOG_SUFFIX)

    def check_folders(self, path: Path) -> None:
        """Refuse a path under the root whose folders include a symbolic link: a log is read
        and written only inside the root (``NotRegular`` names the link). A folder found not
        to be a link is not looked at again by this ``Root`` (a read over 10,000 logs in one
        folder makes one ``lstat``, not 10,000; a link planted since is no more caught by a
        second look than by the first: the open that follows uses ``O_NOFOLLOW`` for the file)."""
        base, text = str(self.path), str(path)
        if base == ".":  # pathlib drops a leading "./": the root's paths are relative ones
            if text.startswith(("/", "../")):
                return
            here, rel = "", text
        elif text.startswith(base.rstrip("/") + "/"):
            here = base.rstrip("/")
            rel = text[len(here) + 1:]
        else:
            return
        checked = self._real_folders
        for part in rel.split("/")[:-1]:
            here = f"{here}/{part}" if here else part
            if here in checked:
                continue
            try:
                if stat.S_ISLNK(os.lstat(here).st_mode):
                    raise NotRegular(f"{here} is a symbolic link; wardrik never follows links out of a root")
            except FileNotFoundError:
                return
            checked.add(here)

    def recheck_folders(self) -> None:
        """Forget which folders were found not to be links: a long-lived reader (a follower)
        that opens a log again looks at its folders again (one replaced by a link since, say)."""
        self._real_folders.clear()

    def state_dir(self, path: Path) -> None:
        """Make the folders of the tool's file ``path`` (``.wardrik/<kind>/...``) before it is
        written, one level at a time; ``NotRegular`` names one that is a link or not a folder
        (``fsutil.state_dirs``; folders found real are not looked at again by this ``Root``)."""
        state_dirs(path, create=True, seen=self._real_folders)

    def read_state(self, path: Path, limit: int) -> bytes | None:
        """The bytes of the tool's file ``path`` (a record, note, checkpoint, cache), or None
        for no record: missing, a link or under a linked folder, a FIFO or device, over
        ``limit`` bytes (``fsutil.read_small``: never followed, waited on or read whole)."""
        return read_small(path, limit, seen=self._real_folders)

    def state_path(self, kind: str, log_id: str, name: str) -> Path:
        """A per-log file of the tool's own, e.g. ``.wardrik/locks/acme/triage@lock``.

        '@' is never in a log id, so log ``a``'s file cannot collide with a folder of log
        ``a.lock/x`` (as ``a.lock`` would)."""
        # one Path made from a string: a sweep asks for three of these per log
        return Path(f"{self.path}/.wardrik/{kind}/{log_id}@{name.lstrip('.@')}")

    def exists(self) -> bool:
        return self.path.is_dir()

    def require(self) -> Root:
        if not self.path.is_dir():
            what = "is not a directory" if self.path.exists() else "does not exist"
            if "://" in self._given:  # as typed: a path folds "S3://b" to "S3:/b"
                raise NoSuchRoot(f"root {self._given!r} {what} (a remote root is s3://BUCKET/PREFIX or "
                                 "file:///PATH, in lower case)")
            raise NoSuchRoot(f"root {str(self.path)!r} {what} (give --root DIR or set WARDRIK_ROOT)")
        return self

    def unfinished_pull(self) -> Path | None:
        """The marker ``pull`` leaves in an evidence root until it has written every log (a
        pull killed part-way leaves it), if it is there."""
        p = self.tool_dir / UNFINISHED_PULL
        return p if p.is_file() and not p.is_symlink() else None

    def require_made(self, command: str) -> Root:
        """A root made by ``wardrik init`` or a first append (it has ``.wardrik/``): what the
        commands that change a root in bulk (``compact``, ``audit record``) insist on, so that
        cron's working directory or a folder of other files never becomes a root by mistake."""
        self.require()
        mode = _lstat_mode(self.tool_dir)
        if mode and not stat.S_ISDIR(mode):  # `init` cannot make the folder over it either
            raise NoSuchRoot(f"{str(self.path)!r} is not a wardrik root: its .wardrik is not a folder; {command} "
                             f"works only on a root (move {self.tool_dir} away, then `wardrik --root {self.path} "
                             "init`), or give --root")
        if not stat.S_ISDIR(mode):
            raise NoSuchRoot(f"{str(self.path)!r} is not a wardrik root (it has no .wardrik/): {command} "
                             f"works only on one; make it with `wardrik --root {self.path} init`, or give --root")
        return self

    def read_only(self) -> str | None:
        """Why nothing may be written here, or None: the root (or its ``.wardrik/``) is on a
        read-only mount, or has every write bit cleared (an evidence copy made read-only on
        purpose, which root, as these tools often run, could otherwise still change)."""
        from wardrik_cli.store.fsutil import writable_dir

        for d in (self.path, self.tool_dir):
            if not d.is_dir():
                continue
            try:
                if os.statvfs(d).f_flag & os.ST_RDONLY:
                    return "it is on a read-only file system"
            except OSError:
                pass
            if not writable_dir(d):
                return f"it is read-only ({d} has no write permission bits)"
        return None

    def require_writable(self, command: str) -> None:
        """``ReadOnlyRoot`` (exit 1) when ``read_only`` says why nothing may be written here."""
        from wardrik_cli.errors import ReadOnlyRoot

        why = self.read_only()
        if why:
            raise ReadOnlyRoot(f"cannot {command} in {self.path}: {why}; nothing was changed")

    # -- config ------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.tool_dir / "config.toml"

    def config_table(self) -> dict[str, Any]:
        """``.wardrik/config.toml`` parsed ({} without one): the one place it is read.
        ``BadConfig`` names the file when it cannot be read, is not a regular file (a link, a
        FIFO that would hang every command, a device), is over ``MAX_CONFIG_BYTES`` or is not
        TOML."""
        f = self.config_path
        try:
            raw = read_capped(f, MAX_CONFIG_BYTES, what="config file", seen=self._real_folders)
        except FileNotFoundError:
            return {}
        except NotRegular as e:
            raise BadConfig(f"{e}; refused (make it a regular file of TOML, or remove it)") from None
        except OSError as e:
            raise BadConfig(f"cannot read {f}: {e.strerror}") from None
        import tomllib  # only when there is a config file: it costs start-up time

        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
            raise BadConfig(f"{f}: not valid TOML: {e}") from None

    def config(self) -> Config:
        f = self.config_path
        data = self.config_table()
        if data:
            self.check_config_keys()
        dep, ret, size = data.get("deployment"), data.get("retention"), data.get("max_bytes")
        for key, val in (("deployment", dep), ("retention", ret)):
            if val is not None and not isinstance(val, str):
                raise BadConfig(f"{f}: {key} must be a string")
        if size is not None and (isinstance(size, bool) or not isinstance(size, str | int)):
            raise BadConfig(f"{f}: max_bytes must be a size such as \"500M\" or a number of bytes")
        return Config(deployment=dep, retention=ret, max_bytes=size)

    def check_config_keys(self) -> None:
        """``BadConfig`` naming a key of config.toml that looks like a typo of one this tool
        knows (``retentoin``, ``max_byte``): read as written it would be ignored, silently.
        Other keys and tables are left alone (another version's, or the operator's notes)."""
        for key in sorted(self.config_table()):
            if key not in CONFIG_KEYS:
                near = [k for k in sorted(CONFIG_KEYS) if _near_miss(key, k)]
                if near:
                    raise BadConfig(f"{self.config_path}: unknown key {key!r}: did you mean {near[0]!r}? "
                                    f"(read as written it would be ignored)")

    def deployment(self, given: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """``given``, else ``$WARDRIK_DEPLOYMENT`` (of ``env``, default the process's), else
        config.toml, else ``local``; validated."""
        from_env = (os.environ if env is None else env).get("WARDRIK_DEPLOYMENT")
        if given is not None:
            name = given
        elif from_env is not None:
            name = from_env
        else:
            name = self.config().deployment or DEFAULT_DEPLOYMENT
            try:
                return validate_deployment(name)
            except BadInput as e:
                raise BadConfig(f"{self.config_path}: deployment: {e}") from None
        return validate_deployment(name)

    # -- listing -----------------------------------------------------------
    def is_folder(self, name: str) -> bool:
        """``name`` (a log id's form) is a folder under the root, reached without a link."""
        here = self.path
        for part in name.split("/"):
            here = here / part
            try:
                if not stat.S_ISDIR(os.lstat(here).st_mode):
                    return False
            except OSError:
                return False
        return True

    def iter_folders(self, under: str = "", *, unreadable_ok: bool = False) -> Iterator[str]:
        """Every folder under the root (or under folder ``under``, itself first) that can hold
        a log, as a log id's prefix (``""`` for the root), in no particular order: see
        ``_walk``. ``unreadable_ok``: a folder that cannot be listed (no permission) is passed
        over instead of raising."""
        for rel, _entries in self._walk(under, unreadable_ok):
            yield rel

    def iter_log_ids(self, under: str = "") -> Iterator[str]:
        """Every log id under the root (or under folder ``under``), in no particular order."""
        for rel, entries in self._walk(under, False):
            prefix = rel + "/" if rel else ""
            for e in entries:
                name = e.name
                if name.endswith(LOG_SUFFIX) and not name.startswith("."):  # .wardrik's are never logs
                    log_id = prefix + name[: -len(LOG_SUFFIX)]
                    if is_log_id(log_id) and e.is_file(follow_symlinks=False):  # no links, FIFOs, devices
                        yield log_id

    def _walk(self, under: str, unreadable_ok: bool) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
        """(folder, its entries) for ``under`` and every folder below it that can hold a log:
        reached without a link, named as a log id's segment (never a dot-folder), and short
        enough for a log id to fit below it (``_FOLDER_MAX``: at most 100 levels). A stack of
        its own, never recursion: a hostile chain of 10,000 folders costs one ``scandir`` per
        level a log id can reach, and stops there."""
        if under and not self.is_folder(under):
            return  # no such folder, or one reached through a link: never followed out of the root
        if len(under) > _FOLDER_MAX:
            return
        stack = [under]
        while stack:
            rel = stack.pop()
            try:
                with os.scandir(self.path / rel if rel else self.path) as it:
                    entries = list(it)
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone meanwhile
            except PermissionError:
                if unreadable_ok:
                    continue
                raise
            yield rel, entries
            for e in entries:
                child = f"{rel}/{e.name}" if rel else e.name
                if len(child) <= _FOLDER_MAX and _SEGMENT_RE.fullmatch(e.name) and _is_real_dir(e):
                    stack.append(child)

    def match(self, patterns: list[str]) -> list[str]:
        """Log ids matched by any pattern, sorted. A literal id is matched when its file exists;
        a literal naming no log but a folder of logs (``acme``) matches every log under it (a
        log keeps the meaning its id had before folders were patterns: ``a`` beside ``a/`` is
        the log ``a``, as a script written then expects)."""
        found: set[str] = set()
        for pattern in patterns:
            validate_pattern(pattern)
            if not has_wildcards(pattern):
                if _names_a_file(self.log_path(pattern)):  # links and FIFOs too: opening them says why not
                    found.add(pattern)  # a log id names its log, even beside a folder of that name
                elif self.is_folder(pattern):
                    found.update(self.iter_log_ids(pattern))
                continue
            # Walk only the folder the literal prefix pins down.
            literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
            under = literal.rsplit("/", 1)[0] if "/" in literal else ""
            rx = pattern_regex(pattern)
            found.update(i for i in self.iter_log_ids(under) if rx.fullmatch(i))
        return sorted(found)



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


def may_hold_logs(rel: str) -> bool:
    """Could folder ``rel`` (a path under the root, ``/``-separated) hold a log: is it one
    that ``Root.iter_folders`` walks, when reached without a link?"""
    return len(rel) <= _FOLDER_MAX and all(_SEGMENT_RE.fullmatch(part) for part in rel.split("/"))


def _is_real_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _names_a_file(path: Path) -> bool:
    """Something that is not a directory is at ``path`` (a symlink is not followed)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
