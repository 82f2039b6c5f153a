"""What users type, turned into values: ``--data`` arguments, JSON, cursors, ``--skip-corrupt``.

Every refusal is ``BadInput`` (exit 2) naming the option and what it takes.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


from wardrik_cli.cli.context import current
from wardrik_cli.errors import BadCursor, BadInput, CorruptLedger
from wardrik_cli.protocol.cursor import Cursor, decode_cursor

# orjson reads an integer past 64 bits as a float, silently changing it; such digit runs
# are rare, so only their inputs are parsed again (by the stdlib, exactly) to be sure.


MAX_ARG_BYTES = {"--data": 64 << 20, "--batch": 1 << 30}  # past these, `append --stream` is the way


def read_arg_bytes(value: str, what: str) -> bytes:
    """``@FILE`` reads a file, ``-`` reads stdin, anything else is the text itself (as given,
    bytes). What is read whole is bounded (``MAX_ARG_BYTES``): a device or an endless pipe is
    refused past the bound, never read until memory runs out."""
    limit = MAX_ARG_BYTES.get(what, 64 << 20)
    if value == "-":
        return _bounded(current().stdin.read(limit + 1), what, "standard input", limit)
    if value.startswith("@"):
        try:
            with open(value[1:], "rb") as f:
                return _bounded(f.read(limit + 1), what, repr(value[1:]), limit)
        except OSError as e:
            raise BadInput(f"cannot read {what} file {value[1:]!r}: {e.strerror}") from None
    return os.fsencode(value)


def _bounded(data: bytes, what: str, source: str, limit: int) -> bytes:
    if len(data) > limit:
        raise BadInput(f"{what} from {source} is over {limit:,} bytes; for more, pipe the events to "
                       "`wardrik append LOG --stream`")
    return data


def on_corrupt(skip: bool) -> Callable[[CorruptLedger], None] | None:
    """``--skip-corrupt``: warn about each corrupt line and read on; else None (stop there)."""
    if not skip:
        return None
    inv = current()

    def report(err: CorruptLedger) -> None:
        inv.warn(f"skipping {err}")
    return report


def load_cursor(after: str | None, cursor_file: Path | None) -> Cursor | None:
    """The start: ``--after`` when given, else the cursor file's cursor when it exists. A
    cursor file that is one of the root's own files is refused first (``refuse_root_file``),
    whether or not ``--after`` is given: the file is written after the read."""
    from wardrik_cli.read.cursor_file import read_file

    if cursor_file is not None:
        refuse_root_file(cursor_file, "--cursor-file")
        _refuse_link_or_output(cursor_file)
        if not os.path.isdir(os.path.dirname(os.path.abspath(cursor_file))):
            # refused now, not after the events are printed and the cursor cannot be kept
            raise BadCursor(f"cursor file {cursor_file}: its folder does not exist (make it first)")
    if after is not None:
        return decode_cursor(after)
    if cursor_file is not None:
        return read_file(cursor_file)
    return None


def _refuse_link_or_output(path: Path) -> None:
    """A cursor file is replaced by a rename: a symbolic link there would be replaced by a file
    (``/dev/stdout``, as root, became a file holding the cursor), and the file this command
    prints to would lose what it printed. Both refused (``BadCursor``) before anything is read."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return  # nothing there yet: it is made
    if stat.S_ISLNK(st.st_mode):
        raise BadCursor(f"cursor file {os.fsdecode(path)}: is a symbolic link (the file is replaced by a rename, "
                        "which would replace the link): give the path of the file itself")
    for fd in (1, 2):
        try:
            out = os.fstat(fd)
        except OSError:
            continue
        if (out.st_dev, out.st_ino) == (st.st_dev, st.st_ino):
            raise BadCursor(f"cursor file {os.fsdecode(path)}: is where this command prints; give another file")


def refuse_root_file(path: str | os.PathLike[str], option: str) -> None:
    """Refuse (``BadInput``, exit 2) a file that a reader would write (a cursor file, an
    export's output) when it is, or resolves to through links, one of the root's own files:
    a log (``*.jsonl`` under the root) or the bytes kept beside one (``*.jsonl.torn-*``,
    ``*.jsonl.damaged-*``), or anything under ``ROOT/.wardrik/`` (the audit log, locks,
    checkpoints). Writing there would replace or corrupt a log, and readers never write
    one. Checked before anything is read or written. A remote root is not checked: the
    only local copy of it is the mirror in the cache, which every sync rewrites."""
    inv = current()
    if inv.remote_root_url is not None:
        return
    why = root_file(Path(path), inv.root.path)
    if why is not None:
        raise BadInput(f"{option} {os.fsdecode(path)!r} {why}: readers never write the root's logs or "
                       f".wardrik/; give a file outside them")


def _protected(rel: tuple[str, ...]) -> str | None:
    """What the root's file at ``rel`` (its parts below the root) is, when wardrik keeps it."""
    if rel and rel[0] == ".wardrik":
        return "is under the root's .wardrik/ (the audit log, locks, checkpoints)"
    name = rel[-1] if rel else ""
    if name.endswith(".jsonl"):
        return "is a log of the root (a *.jsonl file under it)"
    # what the tool keeps beside a log: a torn tail's or damaged lines' bytes, a sweep's new file
    if ".jsonl.torn-" in name or ".jsonl.damaged-" in name or name.endswith(".jsonl.compact.tmp"):
        return "is a file kept beside a log of the root"
    return None


def root_file(path: Path, root: Path) -> str | None:
    """Why ``path`` is a file of ``root`` that no reader may write (``refuse_root_file``), or
    None. Both the path as written and where its links lead are looked at (a link named
    ``cursor`` to a log, or a cursor named ``log.jsonl`` inside the root that a write would
    make a log), and a hard link to such a file found anywhere under the root."""
    import stat

    roots = {os.path.abspath(root), os.path.realpath(root)}
    given, real = os.path.abspath(path), os.path.realpath(path)
    for p in (given, real):
        for r in roots:
            rel = os.path.relpath(p, r)
            if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
                continue
            why = _protected(tuple(Path(rel).parts))
            if why is not None:
                return why if p == given else f"leads through a link to {real}, which {why}"
    try:
        st = os.stat(path)
    except OSError:
        return None  # nothing there yet (it will be made outside the root's files) or no way to look
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        # Another name for the same file: only a walk of the root can say whether one is a log.
        # Rare (a hard-linked cursor or output), so the walk's cost is paid only then.
        found = _hard_link_in(root, (st.st_dev, st.st_ino))
        if found is not None:
            return f"is a hard link to {root / found}, which {_protected(found.parts)}"
    return None


def _hard_link_in(root: Path, key: tuple[int, int]) -> Path | None:
    """A protected file under ``root`` (relative to it) that is the inode ``key``, else None.
    Walks folders without following links, one at a time."""
    try:
        if os.stat(root).st_dev != key[0]:
            return None  # a hard link never crosses file systems
    except OSError:
        return None
    folders: list[tuple[str, tuple[str, ...]]] = [(os.fspath(root), ())]
    while folders:
        here, rel = folders.pop()
        try:
            with os.scandir(here) as entries:
                for e in entries:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            folders.append((e.path, (*rel, e.name)))
                        elif e.is_file(follow_symlinks=False) and _protected((*rel, e.name)) is not None:
                            st = e.stat(follow_symlinks=False)
                            if (st.st_dev, st.st_ino) == key:
                                return Path(*rel, e.name)
                    except OSError:
                        continue
        except OSError:
            continue
    return None


def patterns_or_all(patterns: list[str] | None) -> list[str]:
    """No pattern means every agent log (as ``check`` does)."""
    return list(patterns) if patterns else ["*"]


def build_filters(*, types: list[str] | None = None, exclude: list[str] | None = None, grep: str | None = None,
                  ignore_case: bool = False, where: list[str] | None = None, run: str | None = None,
                  since: str | None = None, until: str | None = None) -> Any:
    """``read.filters.Filters`` from the reading options as typed (times in the invocation's
    zone under ``--local``); every refusal names its option."""
    from wardrik_cli.errors import BadTime
    from wardrik_cli.protocol.times import parse_time_arg, parse_window
    from wardrik_cli.read.filters import Filters, parse_types

    inv = current()
    tz = inv.time_zone()
    for option, value in (("--since", since), ("--until", until)):
        if value is not None:
            try:
                parse_time_arg(value, tz=tz)
            except BadTime as e:
                raise BadTime(f"{option}: {e}") from None
    lo, hi = parse_window(since, until, tz=tz)
    if ignore_case and grep is None:
        raise BadInput("--ignore-case goes with --grep REGEX")
    for option, values in (("--grep", [grep] if grep is not None else []), ("--where", where or [])):
        for v in values:
            if not _is_text(v):
                raise BadInput(f"bad {option}: {_shown(v)} is not valid UTF-8 text (a pattern matches decoded text)")
    return Filters.build(parse_types(types), lo, hi, run, exclude=parse_types(exclude, "--exclude-types"),
                         grep=grep, ignore_case=ignore_case, where=where or ())


def _is_text(value: str) -> bool:
    """Was this argument valid UTF-8? (Bytes that were not arrive as lone surrogates.)"""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(value: str) -> str:
    """An argument that may hold undecodable bytes, as one printable line."""
    return repr(value.encode("utf-8", "surrogateescape"))[1:]  # as a bytes literal: b'\xff' less its b
