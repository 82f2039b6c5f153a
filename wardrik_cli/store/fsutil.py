"""File-system steps every writer shares: whole writes, atomic replacement, directory fsync.

Contract: ``write_atomic`` (every file wardrik replaces goes through it) leaves ``path``
holding either its old bytes or all of the new ones, never a mix: it writes a temp file in
the same directory, optionally fsyncs it, renames it over ``path`` and (when durable) fsyncs
the directory so the rename itself survives a crash. A non-durable write is for caches,
where a lost update is only slower. The sweep replaces logs and their records in batches
(``store.replace``) with the same steps, syncing a batch at once (``sync_files``).

The tool's own files (``ROOT/.wardrik/...``: records, notes, checkpoints, locks, config) are
as hostile as the logs. ``read_small`` is how every one of them is read: never through a
link (neither the file nor a folder from ``.wardrik`` down), never waiting on a FIFO or
device, never more than its cap (anything else reads as no record; ``read_capped`` says
why, for the config, which is refused instead). ``state_dirs`` checks, and before a write
makes, those folders one level at a time, refusing a link among them (``NotRegular``): the
file itself is then opened with ``O_NOFOLLOW``. A link planted in the instant between the
check and the open is not caught (the same limit as ``Root.check_folders``).
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from wardrik_cli.errors import NotRegular

MAX_DEPTH = 128  # folders below the one swept: a log id (at most 200 characters) has fewer
TOOL_DIR = ".wardrik"  # a root's own folder; never a segment of a log id (no leading dot)
READ_BLOCK = 1 << 20
MAX_RECORD_BYTES = 1 << 16  # a record or note of the tool's (a watermark, a verified note): a few hundred bytes


class TooBig(NotRegular):
    """A tool's file past its size cap: never read whole (a sparse 3 GB file, a link to /dev/zero)."""


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def open_folder(root: Path, folder: Path, *, create: bool = False, sync: bool = False) -> int:
    """An fd of ``folder`` (``root`` or a folder under it), each level below ``root`` opened
    relative to the one above it with ``O_NOFOLLOW``: a folder swapped for a symbolic link at
    any instant (by whoever may write the root) is never gone through, as a path would be on
    every use. ``root`` itself may be a link (the operator's choice). Files are then created,
    opened, renamed and removed by name in it (``dir_fd``), so what was checked is what is
    written. ``NotRegular`` names a level that is a link or not a folder. ``create``: a
    missing level is made in the one above it (by name, as it is then opened), and with
    ``sync`` that one is fsynced, so the new entry is durable."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open(root, flags)
    here = Path(root)
    try:
        for part in Path(folder).relative_to(root).parts:
            here = here / part
            try:
                try:
                    sub = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, dir_fd=fd)
                    except FileExistsError:
                        pass  # made meanwhile by another writer (or planted: opened below, never followed)
                    if sync:
                        os.fsync(fd)
                    sub = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise NotRegular(f"{here} is a symbolic link or not a folder; wardrik never follows links "
                                     "out of a root") from None
                raise
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


class HeldFolder:
    """The last folder ``open_folder`` opened, held for the next logs in the same folder (a
    sweep takes a folder's logs one after another: one open for them all, not one each).
    ``get`` hands out the fd, which stays this object's to close."""

    def __init__(self) -> None:
        self.key: tuple[Path, Path] | None = None
        self.fd = -1

    def get(self, root: Path, folder: Path) -> int:
        if self.key != (root, folder):
            self.close()
            self.fd = open_folder(root, folder)
            self.key = (root, folder)
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd, self.key = -1, None


def open_regular(path: Path | str, flags: int, mode: int = 0o644, *, what: str = "log file",
                 dir_fd: int | None = None, shown: Path | None = None) -> int:
    """Open a log (or any file wardrik keeps under a root) only if it is a regular file.

    A symbolic link is never followed (``O_NOFOLLOW``: nothing is read or written outside
    the root through one), and a FIFO, socket or device is never waited on (``O_NONBLOCK``,
    then an ``S_ISREG`` check before any read, lock or write): ``NotRegular`` instead.
    FileNotFoundError and other OSErrors pass through. ``what`` names the file's kind in
    the message (``lock file``: "not a lock file"). ``dir_fd``: ``path`` is a name in that
    folder (``open_folder``); ``shown``: its path, as messages name it."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(f"{shown or path} is a symbolic link; wardrik never follows links to {what}s") from None
        if shown is not None:
            e.filename = str(shown)
        raise
    if shown is not None:
        path = shown
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(st_mode) else "a FIFO" if stat.S_ISFIFO(st_mode) else \
            "a socket" if stat.S_ISSOCK(st_mode) else "a device" if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode) \
            else "not a regular file"
        raise NotRegular(f"{path} is {kind}, not a {what}")
    return fd


def refuse_linked(fd: int, path: Path, what: str = "log file") -> None:
    """``NotRegular`` when the open file ``fd`` has another name (a hard link): writing or
    cutting it in place would change that file too, which may be anywhere on the file system,
    outside the root. A file replaced by rename (compaction's) is never written in place."""
    n = os.fstat(fd).st_nlink
    if n > 1:
        raise NotRegular(f"{path} has {n} names (hard links): writing it would change a file elsewhere too, "
                         f"maybe outside the root; wardrik writes no {what} that has another name "
                         "(copy it to a file of its own first)")


def _kind(st_mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(st_mode) else "a FIFO" if stat.S_ISFIFO(st_mode) else \
        "a socket" if stat.S_ISSOCK(st_mode) else "a device" if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode) \
        else "a file"


def state_dirs(path: Path, *, create: bool = False, seen: set[str] | None = None) -> None:
    """Check the folders from ``ROOT/.wardrik`` down to ``path``'s own (a file of the tool's
    under a root): ``NotRegular`` names the first that is a symbolic link or not a folder, so
    nothing is read or written outside the root through one. ``create``: missing folders are
    made one level at a time (each checked after it is made); else a missing folder ends the
    walk (nothing can be read under it, and the open that follows says so). The root itself
    may be a link (the operator's choice), as may anything above it. ``seen``: folders already
    found real, skipped and added to (a ``Root``'s cache). A path with no ``.wardrik`` folder
    is left to its final open's ``O_NOFOLLOW``."""
    if seen is not None and os.path.dirname(path) in seen:
        return  # its own folder was found real, so were those above it (added top down)
    parts = Path(path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == TOOL_DIR:
            break
    else:
        return
    here = os.path.join(*parts[:i]) if i else "."
    for part in parts[i:-1]:
        here = os.path.join(here, part)
        if seen is not None and here in seen:
            continue
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            if not create:
                return
            try:
                os.mkdir(here)
                # the new folder's name made durable in its parent: a record written in it and
                # synced by a sweep (which syncs the record's own folder) must not vanish with
                # its folder on power loss (first made only once per folder: cheap)
                fsync_dir(Path(os.path.dirname(here) or "."))
            except FileExistsError:
                pass  # made meanwhile by another writer (or planted: looked at below)
            mode = os.lstat(here).st_mode
        if stat.S_ISLNK(mode):
            raise NotRegular(f"{here} is a symbolic link; wardrik never follows links out of a root")
        if not stat.S_ISDIR(mode):
            raise NotRegular(f"{here} is {_kind(mode)}, not a folder")
        if seen is not None:
            seen.add(here)


def read_capped(path: Path, limit: int, *, what: str = "state file", seen: set[str] | None = None) -> bytes:
    """The bytes of a tool's file of at most ``limit`` bytes (``state_dirs`` then
    ``open_regular``: no link followed, no FIFO waited on). Raises FileNotFoundError,
    ``NotRegular`` (``TooBig`` past the cap, found by ``fstat`` or by reading at most
    ``limit + 1`` bytes: a device or a file growing meanwhile never costs more), OSError."""
    state_dirs(path, seen=seen)
    fd = open_regular(path, os.O_RDONLY, what=what)
    try:
        if os.fstat(fd).st_size > limit:
            raise TooBig(f"{path} is over {limit} bytes, too big for a {what}")
        buf = bytearray()
        while len(buf) <= limit:
            chunk = os.read(fd, min(READ_BLOCK, limit + 1 - len(buf)))
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(fd)
    if len(buf) > limit:
        raise TooBig(f"{path} is over {limit} bytes, too big for a {what}")
    return bytes(buf)


def read_small(path: Path, limit: int, *, seen: set[str] | None = None) -> bytes | None:
    """``read_capped``, or None when the file is missing, unreadable, a link (or under a linked
    folder), not a regular file or over ``limit``: how a record, note, checkpoint or cache of
    the tool's is read, where anything but a file the tool wrote means "no record"."""
    try:
        return read_capped(path, limit, seen=seen)
    except (OSError, NotRegular):
        return None


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def link_new(path: Path, data: bytes, mode: int) -> bool:
    """Create ``path`` holding ``data`` only if nothing is there: a temp file beside it is
    written and fsynced, then hard-linked to ``path`` (``link`` never replaces, so two writers
    cannot both win and nobody ever sees half a file). False when ``path`` exists; another
    failure of the link (a file system without hard links: EPERM, ENOTSUP) is raised."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def same_access(fd: int, like: os.stat_result, *, owner: bool) -> None:
    """Give the file open at ``fd`` the permission bits of ``like`` (the log it replaces, or
    whose bytes it keeps): a log made private stays private, and its bytes kept beside it
    too. ``owner``: its owner and group as well (a sweep run as root makes the file a log's
    appenders go on writing), ``PermissionError`` when they cannot be given; without it, they
    are given when they can be (kept bytes: who may read them is what matters)."""
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != (like.st_uid, like.st_gid):
        try:
            os.fchown(fd, like.st_uid, like.st_gid)
        except PermissionError:
            if owner:
                raise
    mode = stat.S_IMODE(like.st_mode) & 0o777
    if stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)


def write_new(path: Path, data: bytes, *, durable: bool = False, like: os.stat_result | None = None,
              dir_fd: int | None = None) -> None:
    """Create ``path`` holding ``data``, with ``O_EXCL|O_NOFOLLOW``: a file or symlink planted
    at its name is never written through (a stale one is unlinked, the link itself, and the
    create tried once more). ``durable``: the file and its directory entry are fsynced before
    it returns (bytes kept beside a log, records); else not synced (a batch syncs at once).
    ``like``: the file gets that file's access (``same_access``; bytes kept beside a log get
    the log's), else 0644 less the umask. OSError propagates after the file is removed.
    ``dir_fd``: the file is made in that folder (``open_folder``), by its name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    mode = 0o644 if like is None else 0o600  # never readable by more than the log, even for an instant
    name: Path | str = path if dir_fd is None else path.name
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except FileExistsError:
        os.unlink(name, dir_fd=dir_fd)  # left by a writer that died, or planted: never followed
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    try:
        if like is not None:
            same_access(fd, like, owner=False)
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    except OSError:
        os.close(fd)
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    os.close(fd)
    if durable:
        if dir_fd is None:
            fsync_dir(path.parent)
        else:
            os.fsync(dir_fd)


def write_atomic(path: Path, data: bytes, *, durable: bool = True, tmp: Path | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: the one way wardrik replaces a single file
    (the sweep does the same steps for a batch of files: ``store.replace``).

    The temp file (``tmp``, default a dot-file beside ``path`` named by the pid and a random
    token) is made by ``write_new``. OSError propagates after the temp file is removed."""
    path = Path(path)
    tmp = tmp or path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        write_new(tmp, data)
        if durable:
            fsync_path(tmp)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_files(paths: list[Path], *, few: int = 4) -> None:
    """Make the data of every file in ``paths`` durable: an fsync each when there are at most
    ``few`` (one log should not pay for a whole file system's dirty pages), else one
    ``syncfs(2)`` per file system they are on, which costs one journal commit instead of one
    per file. ``syncfs`` reports write-back errors (Linux 5.8+) as OSError; where it is
    missing, ``sync(2)`` is used."""
    if len(paths) <= few:
        for p in paths:
            fsync_path(p)
        return
    by_dev: dict[int, Path] = {}
    for p in paths:
        by_dev.setdefault(os.stat(p, follow_symlinks=False).st_dev, p)
    for p in by_dev.values():
        _syncfs(p)


def _syncfs(path: Path) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, "syncfs", None)
    if fn is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def writable_dir(path: Path) -> bool:
    """May wardrik write under this directory? No on a read-only mount, and no on a
    directory with every write bit cleared: an evidence copy someone made read-only on
    purpose, which root (as these tools often run) could otherwise still write to."""
    try:
        st = os.stat(path)
        vfs = os.statvfs(path)
    except OSError:
        return False
    if vfs.f_flag & os.ST_RDONLY or not os.access(path, os.W_OK):
        return False
    return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def remove_below(base: Path, parts: tuple[str, ...], pick: Callable[[os.DirEntry[str]], bool], *,
                 recurse: Callable[[str], bool] | None = None) -> list[Path]:
    """Remove the files ``pick`` chooses in the folder ``base/parts...`` (and, where ``recurse``
    says so, in its sub-folders), never following a symbolic link below ``base``: each folder
    is opened relative to the one above it with ``O_NOFOLLOW``, and files are removed by name
    in it, so a link planted on the way (``.wardrik -> /etc``) leads nowhere. ``base`` itself
    (the root) may be a link: that is the operator's choice. One folder is open per level, never
    one per sibling (thousands of agent folders stay within the open-files limit), and folders
    deeper than a log id can reach (``MAX_DEPTH``) are not walked. Returns what was removed; a
    folder that is missing or is a link is passed over."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    removed: list[Path] = []
    try:
        fd = os.open(base, flags)
    except OSError:
        return removed
    try:
        for part in parts:
            sub = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = sub
    except OSError:
        os.close(fd)
        return removed
    # frames: (folder fd, its path as shown, sub-folders still to walk; None: not listed yet)
    stack: list[tuple[int, Path, list[str] | None]] = [(fd, base.joinpath(*parts), None)]
    while stack:  # a stack, not recursion: a hostile tree of deep folders cannot exhaust it
        dfd, shown, todo = stack[-1]
        if todo is None:
            todo = []
            try:
                with os.scandir(dfd) as it:
                    entries = list(it)
            except OSError:
                entries = []
            for e in entries:
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if recurse is not None and len(stack) <= MAX_DEPTH and recurse(e.name):
                        todo.append(e.name)
                elif pick(e):
                    try:
                        os.unlink(e.name, dir_fd=dfd)
                        removed.append(shown / e.name)
                    except OSError:
                        pass
            stack[-1] = (dfd, shown, todo)
        if todo:
            name = todo.pop()
            try:
                stack.append((os.open(name, flags | os.O_NOFOLLOW, dir_fd=dfd), shown / name, None))
            except OSError:
                pass
            continue
        os.close(dfd)
        stack.pop()
    return removed
