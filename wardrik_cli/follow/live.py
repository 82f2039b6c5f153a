"""The live channel: events that reach followers and are never stored.

Contract kept here:
- A follower (``tail -f`` on a writable root) registers under ``<root>/.wardrik/live/``
  with two entries named by one token ``<pid>-<random>``:
  ``<token>.sock``, a Unix datagram socket it has bound, then ``<token>.json``,
  ``{"pid", "patterns", "types"}`` (written atomically after the bind, so a registration
  file always points at a socket that was bound). ``types`` is null for every type.
- A datagram is ``<log id>\\n<event JSON>`` for a live event, or ``<log id>\\n`` alone for a
  kept-append doorbell (the follower re-reads that log at once instead of waiting for the
  file watcher). Log ids hold no newline, so the split is unambiguous.
- Senders never block and never fail because of a follower: every send is
  ``MSG_DONTWAIT``; a full queue (slow or stopped follower) drops that datagram (live
  events are best effort; kept events are read from the file, never from the channel).
  A socket nobody is bound to (a follower killed with -9) answers ECONNREFUSED: its
  registration is stale and the sender removes it. ``cleanup_stale(root)`` does the same
  sweep on demand (for compaction).
- Socket paths are limited to 108 bytes; deep roots exceed that. A long path is reached
  through ``/proc/self/fd/<fd of the live directory>/<token>.sock`` (short, and the kernel
  resolves the magic link), so the socket still lives under ``.wardrik/live/``, guarded
  by the directory's permissions.
- With no follower, ``publish``/``notify_kept`` cost one ``listdir`` of a directory that
  usually does not exist, create nothing and return at once. Nothing here is imported at
  start-up beyond the standard library, and ``socket`` only when there is someone to send to.
- A ``.wardrik`` or ``live`` folder that is a link holds no follower: nothing is sent,
  read or removed through it, and a follower refuses to register there (``NotRegular``). A
  registration file is read with ``fsutil.read_small`` (a link, FIFO or a file over
  ``MAX_REG_BYTES`` is no registration: never followed, waited on or read whole).
"""
from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable, Sequence

if TYPE_CHECKING:
    from wardrik_cli.protocol.names import PatternSet

LIVE_DIR = "live"
SOCK_SUFFIX = ".sock"
REG_SUFFIX = ".json"
MISSED_SUFFIX = ".missed"  # a byte per live event a sender could not queue for that follower
MAX_SUN_PATH = 107  # sun_path is 108 bytes, NUL included
ORPHAN_GRACE_S = 60.0  # a socket with no registration file younger than this may be mid-registration
SNDBUF = 1 << 22
# A datagram must fit the kernel's socket buffers (net.core.wmem_default is 212992 bytes):
# a live event larger than this is refused when it is published, never silently lost.
MAX_LIVE_BYTES = 128 * 1024
MAX_REG_BYTES = 1 << 20  # a pid and the follower's patterns


def live_dir(root: Any) -> str:
    return os.path.join(os.fspath(root.tool_dir), LIVE_DIR)


class _Registration:
    __slots__ = ("token", "patterns", "types", "_set")

    def __init__(self, token: str, patterns: list[str], types: list[str] | None):
        self.token, self.patterns, self.types = token, patterns, types
        self._set: PatternSet | None = None  # made at the first match: most registrations are never asked

    def matches(self, log_id: str, type_name: str | None = None) -> bool:
        if type_name is not None and self.types is not None and type_name not in self.types:
            return False
        if self._set is None:
            from wardrik_cli.protocol.names import PatternSet
            self._set = PatternSet(self.patterns)
        return self._set.covers(log_id)  # a folder's logs too


def _names(d: str) -> list[str] | None:
    """The live folder's entries; None when it is missing, or when it or ``.wardrik`` is a
    link (nothing is sent to, read from or removed in a folder outside the root)."""
    import stat

    try:
        if any(stat.S_ISLNK(os.lstat(p).st_mode) for p in (os.path.dirname(d), d)):
            return None
        return os.listdir(d)
    except OSError:
        return None


def _registrations(d: str) -> list[_Registration]:
    names = _names(d)
    if not names:
        return []
    out = []
    for name in names:
        if not name.endswith(REG_SUFFIX) or name.startswith("."):
            continue
        token = name[: -len(REG_SUFFIX)]
        from wardrik_cli.store.fsutil import read_small  # only when someone is registered
        from wardrik_cli.protocol.names import PatternSet

        try:
            obj = _loads(read_small(Path(d, name), MAX_REG_BYTES) or b"null")
            patterns = [p for p in obj["patterns"] if isinstance(p, str)]
            if PatternSet.too_many(patterns):
                continue  # no follower registers that many (``Subscription``): planted, and each costs every append
            types = obj.get("types")
            types = [t for t in types if isinstance(t, str)] if isinstance(types, list) else None
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written or removed; the next send sees it whole or gone
        out.append(_Registration(token, patterns, types))
    return out


def followers(root: Any, log_id: str, type_name: str | None = None) -> list[str]:
    """Tokens of the followers registered for ``log_id`` (and wanting ``type_name``, if given)."""
    return [r.token for r in _registrations(live_dir(root)) if r.matches(log_id, type_name)]


def has_followers(root: Any, log_id: str, type_name: str | None = None) -> bool:
    """Cheap: a listdir of ``.wardrik/live`` (usually absent) and a read of each registration."""
    return bool(followers(root, log_id, type_name))


class _DirHandle:
    """The live directory as a short path: itself when short enough, else /proc/self/fd/N."""

    def __init__(self, d: str):
        self.d = d
        self.fd: int | None = None

    def path(self, name: str) -> str:
        full = os.path.join(self.d, name)
        if len(os.fsencode(full)) <= MAX_SUN_PATH:
            return full
        if self.fd is None:
            self.fd = os.open(self.d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        return f"/proc/self/fd/{self.fd}/{name}"

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _remove(d: str, token: str) -> None:
    # Registration file first: without it no sender looks for the socket.
    for suffix in (REG_SUFFIX, SOCK_SUFFIX, MISSED_SUFFIX):
        try:
            os.unlink(os.path.join(d, token + suffix))
        except OSError:
            pass


def _send(tokens: Iterable[str], d: str, datagram: bytes) -> int:
    tokens = list(tokens)
    if not tokens:
        return 0
    import socket
    import stat

    reached = 0
    h = _DirHandle(d)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    try:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
        except OSError:
            pass
        for token in tokens:
            try:
                at = h.path(token + SOCK_SUFFIX)
                if not stat.S_ISSOCK(os.lstat(at).st_mode):
                    continue  # a link (to a socket outside the root) or a file planted there: never sent to
                s.sendto(datagram, socket.MSG_DONTWAIT, at)
                reached += 1
            except OSError as e:
                if e.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
                    _remove(d, token)  # its follower is gone (killed, crashed)
                elif e.errno in (errno.EAGAIN, errno.EWOULDBLOCK) and not datagram.endswith(b"\n"):
                    # A full queue (the kernel's is short: a burst of deltas fills it before
                    # the follower's thread drains it): this follower misses a live event,
                    # and is told so (a doorbell, whose log is read anyway, is not counted).
                    _note_missed(h, token)
                # EMSGSIZE, EPERM...: best effort, this follower misses this datagram.
    finally:
        s.close()
        h.close()
    return reached


def _note_missed(h: _DirHandle, token: str) -> None:
    """One more byte in the follower's missed-events file (created without following a link
    or waiting on a FIFO); it reads the file's size (``Subscription.missed``)."""
    try:
        fd = os.open(h.path(token + MISSED_SUFFIX),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, b"x")
    except OSError:
        pass
    finally:
        os.close(fd)


def publish(root: Any, log_id: str, raw: bytes) -> int:
    """Send a live event line to every follower of ``log_id`` that wants its type; how many it
    reached. A live event over ``MAX_LIVE_BYTES`` is refused (``BadEvent``), follower or not:
    it could never be delivered whole, and must not be printed as delivered and then lost."""
    size = len(raw.rstrip(b"\n"))
    if size > MAX_LIVE_BYTES:
        from wardrik_cli.errors import BadEvent

        raise BadEvent(f"a live event is at most {MAX_LIVE_BYTES} bytes as delivered (this one is "
                       f"{size}); send the text in smaller deltas")
    d = live_dir(root)
    regs = _registrations(d)
    if not regs:
        return 0
    type_name = _type_of(raw)
    return _send((r.token for r in regs if r.matches(log_id, type_name)), d,
                 log_id.encode() + b"\n" + raw.rstrip(b"\n"))


def _loads(raw: bytes) -> Any:
    try:
        import orjson  # already loaded by `wardrik append`
        return orjson.loads(raw)
    except ImportError:  # pragma: no cover
        import json
        return json.loads(raw)


def _type_of(raw: bytes) -> str | None:
    try:
        t = _loads(raw).get("type")
        return t if isinstance(t, str) else None
    except (ValueError, AttributeError):
        return None


def notify_kept(root: Any, log_id: str, lines: Sequence[bytes]) -> None:
    """After a kept append: ring the followers of ``log_id`` so they read it at once (they
    work out any ``activity.changed`` themselves: an appender never folds a log). Never raises."""
    try:
        d = live_dir(root)
        regs = [r for r in _registrations(d) if r.matches(log_id)]
        if regs:
            _send((r.token for r in regs), d, log_id.encode() + b"\n")
    except Exception:  # noqa: BLE001 - the append is already durable; live news is best effort
        return


def cleanup_stale(root: Any) -> int:
    """Remove registrations whose follower is gone; returns how many. Safe to run any time."""
    d = live_dir(root)
    names = _names(d)
    if not names:
        return 0
    import socket

    removed = 0
    h = _DirHandle(d)
    tokens = {n.rsplit(".", 1)[0] for n in names if n.endswith((SOCK_SUFFIX, REG_SUFFIX)) and not n.startswith(".")}
    try:
        for token in tokens:
            sock_name, reg_name = token + SOCK_SUFFIX, token + REG_SUFFIX
            if sock_name in names:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                try:
                    s.connect(h.path(sock_name))  # connects only when someone is bound
                    alive = True
                except OSError as e:
                    alive = e.errno not in (errno.ECONNREFUSED, errno.ENOENT)
                finally:
                    s.close()
                if alive and reg_name not in names:
                    # bound but never registered: mid-registration, or a follower that died
                    # between bind and registration and whose pid is gone
                    alive = _young(os.path.join(d, sock_name)) or _pid_alive(token)
            else:
                alive = False  # a registration without its socket points at nothing
            if not alive:
                _remove(d, token)
                removed += 1
        for n in names:  # temp files of a registration interrupted mid-write
            if n.startswith(".") and n.endswith(".tmp") and not _young(os.path.join(d, n)):
                try:
                    os.unlink(os.path.join(d, n))
                except OSError:
                    pass
    finally:
        h.close()
    return removed


def _young(path: str) -> bool:
    try:
        return time.time() - os.lstat(path).st_mtime < ORPHAN_GRACE_S
    except OSError:
        return False


def _pid_alive(token: str) -> bool:
    try:
        os.kill(int(token.split("-", 1)[0]), 0)
        return True
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


class Subscription:
    """A follower's end: bind a socket under ``.wardrik/live/`` and register for patterns.

    ``fileno()`` is readable when datagrams wait; ``receive()`` returns (log id, raw or
    None for a doorbell) pairs without blocking. ``close()`` unregisters. Raises OSError
    when the root cannot hold a registration (read-only): then there are no live events.
    """

    def __init__(self, root: Any, patterns: list[str], types: list[str] | None = None):
        import json
        import secrets
        import socket

        from wardrik_cli.protocol.names import MAX_GLOBS, PatternSet

        if PatternSet.too_many(patterns):
            from wardrik_cli.errors import BadInput
            raise BadInput(f"a follower takes at most {MAX_GLOBS} patterns with '*' or '?' (live events are sent by "
                           "them): name a folder, or fewer globs")

        self.dir = live_dir(root)
        from wardrik_cli.store.fsutil import state_dirs

        cleanup_stale(root)
        state_dirs(Path(self.dir, "x"), create=True)  # one level at a time; NotRegular for a link
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._h = _DirHandle(self.dir)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            except OSError:
                pass
            self.sock.bind(self._h.path(self.token + SOCK_SUFFIX))
            from wardrik_cli.store.fsutil import write_atomic

            write_atomic(Path(self.dir) / (self.token + REG_SUFFIX),
                         json.dumps({"pid": os.getpid(), "patterns": list(patterns), "types": types}).encode(),
                         durable=False, tmp=Path(self.dir) / f".{self.token}.tmp")
        except BaseException:
            self.close()
            raise
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self, limit: int = 1024) -> list[tuple[str, bytes | None]]:
        out: list[tuple[str, bytes | None]] = []
        while len(out) < limit:
            try:
                dgram = self.sock.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            log_id, _, body = dgram.partition(b"\n")
            out.append((log_id.decode("utf-8", "replace"), body or None))
        return out

    def missed(self) -> int:
        """Live events senders could not queue for this follower (``_note_missed``)."""
        try:
            st = os.lstat(os.path.join(self.dir, self.token + MISSED_SUFFIX))
        except OSError:
            return 0
        return st.st_size if stat.S_ISREG(st.st_mode) else 0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        _remove(self.dir, self.token)
        self._h.close()
