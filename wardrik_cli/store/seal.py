"""Seals on the tool's caches under a root: a cache is believed only when this user's wardrik
wrote it.

Contract kept here:
- What is sealed: the caches under ``ROOT/.wardrik/`` that change an answer when believed: a
  fold's checkpoints (``folding.checkpoint``: views, activity, stats) and the appender's note
  of the log it last verified (``store.append``). Every byte under a root is hostile (a root
  someone else wrote, an evidence copy, a hand edit), and a cache only saves work, so one
  whose seal does not verify (none, another user's or another key's, edited, cut short) is
  ignored, never an error: the fold starts from the events, the append verifies the log.
  Records that are not caches (compaction watermarks, gap records) are not sealed: a copy of
  a root must keep them.
- How: a cache is a JSON object ``{...}`` written as ``{...,"seal":"<64 hex>"}``: its last
  member is the HMAC-SHA256, under the key, of the cache's kind (``checkpoint``,
  ``verified``), a NUL, and the object's bytes as they were before the seal was added. The
  sealed file is still one JSON object (the seal a member of it); ``verify`` checks the
  trailing member against the bytes before it, and the caller then parses the file as is.
- The key: ``$XDG_STATE_HOME/wardrik/key`` (an absolute ``XDG_STATE_HOME``), else
  ``$HOME/.local/state/wardrik/key`` (without ``HOME``, the user's home from the password
  database, as ``~`` is found), of the environment in force (``settings.environment()``:
  the command line's own), so never under a root. 32 random bytes, made once, by the first
  writer of a cache, and only in a folder of this user's own (the nearest one that exists:
  root run with another user's ``HOME`` makes nothing there): written 0600 to a temporary
  file made with ``O_CREAT|O_EXCL``, then linked to its name (``link`` fails on a name taken:
  two first writers agree on one key, and no reader sees half of one). Read with
  ``O_NOFOLLOW|O_NONBLOCK``, at most 33 bytes, and used only when it is a regular file of
  exactly 32 bytes, owned by this user, that no one else may read or write. No usable key
  (no ``HOME``, a home that cannot be written, a key of another shape or owner): caches are
  neither believed nor written, and everything still works, only without the shortcut.
- Cost: a key read once per process (32 bytes), and one pass of SHA-256 over the cache (a 64
  MiB checkpoint is one pass). A small cache is hashed with the interpreter's built-in SHA-256
  (an append does not pay for loading OpenSSL at start-up); a big one with ``hashlib``'s.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from wardrik_cli.store.fsutil import link_new

KEY_BYTES = 32
SEAL_KEY = b',"seal":"'
SEAL_BYTES = len(SEAL_KEY) + 64 + 2  # ``,"seal":"<64 hex>"}``: what stands for the object's ``}`` once sealed
_BLOCK = 64  # SHA-256's block size, for HMAC
_BIG = 1 << 16  # past this, a cache is hashed with hashlib's SHA-256 (OpenSSL: several times faster)
_KEYS: dict[str, bytes] = {}  # key path -> key, once read in this process


def key_path(env: Mapping[str, str] | None = None) -> Path | None:
    """Where this user's key is, or None when the environment names no home for it."""
    if env is None:
        from wardrik_cli.settings import environment

        env = environment()
    state = env.get("XDG_STATE_HOME") or ""
    if state.startswith("/"):  # the XDG rule: a relative path is ignored
        return Path(state) / "wardrik" / "key"
    home = env.get("HOME") or ""
    if not home:  # as ~ is found without HOME: a service started with no HOME still has a home
        try:
            import pwd

            home = pwd.getpwuid(os.geteuid()).pw_dir
        except (KeyError, ImportError):
            home = ""
    if home.startswith("/"):
        return Path(home) / ".local" / "state" / "wardrik" / "key"
    return None


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        # Another user's key, or one others may read or write, would let them make seals.
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 \
                or st.st_size != KEY_BYTES:
            return None
        key = os.read(fd, KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return key if len(key) == KEY_BYTES else None


def _made_by_me(path: Path) -> bool:
    """Is the nearest folder of ``path`` that exists this user's own? A key is made only there:
    root run with another user's HOME (``sudo -E``) leaves nothing in that user's home."""
    here = path.parent
    while True:
        try:
            return os.stat(here).st_uid == os.geteuid()  # a home may be a link: followed
        except FileNotFoundError:
            if here.parent == here:
                return False
            here = here.parent
        except OSError:
            return False


def _make_key(path: Path) -> None:
    """Make the key at ``path`` unless one is there (see the module's docstring). Below a
    home, folders are made only when the home exists: a HOME naming no folder
    (``/nonexistent``, as root) makes nothing, and no cache is kept. (``$XDG_STATE_HOME`` is
    made when missing, as the XDG rules say.)"""
    if path.parts[-4:-1] == (".local", "state", "wardrik") and not path.parents[3].is_dir():
        raise FileNotFoundError(f"{path.parents[3]} does not exist")
    if not _made_by_me(path):
        raise PermissionError(f"{path.parent} is not this user's")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    link_new(path, os.urandom(KEY_BYTES), 0o600)  # False: another writer's came first, and is the key


def key(create: bool = False) -> bytes | None:
    """This user's key; ``create``: made when there is none yet (a cache is about to be
    written). None when there is no usable key."""
    path = key_path()
    if path is None:
        return None
    found = _KEYS.get(str(path))
    if found is not None:
        return found
    found = _read_key(path)
    if found is None and create:
        try:
            _make_key(path)
        except OSError:
            return None
        found = _read_key(path)
    if found is not None:
        _KEYS[str(path)] = found
    return found


_SMALL: list[Callable[[bytes], Any]] = []  # the built-in SHA-256, once found


def _new_hash(size: int) -> Callable[[bytes], Any]:
    if size > _BIG:
        import hashlib

        return hashlib.sha256
    if not _SMALL:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # Python 3.12+
        except ImportError:
            from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]  # 3.11
        _SMALL.append(sha256)
    return _SMALL[0]


def _mac(secret: bytes, kind: str, *parts: bytes | memoryview) -> bytes:
    """HMAC-SHA256 (RFC 2104; ``secret`` is shorter than a block) of ``kind``, NUL and
    ``parts`` one after the other, as 64 hex digits: the parts are streamed, never joined."""
    new = _new_hash(sum(map(len, parts)))
    pad = secret.ljust(_BLOCK, b"\0")
    inner = new(bytes(b ^ 0x36 for b in pad) + kind.encode() + b"\0")
    for part in parts:
        inner.update(part)
    outer = new(bytes(b ^ 0x5C for b in pad) + inner.digest())
    return outer.hexdigest().encode()  # type: ignore[no-any-return]


def seal(kind: str, body: bytes) -> bytes | None:
    """``body`` (a JSON object of at least one member, as ``orjson.dumps`` writes one) with its
    seal as its last member; None when there is no usable key: the cache is then not written."""
    if len(body) < 3 or body[:1] != b"{" or body[-1:] != b"}":
        return None
    secret = key(create=True)
    if secret is None:
        return None
    return body[:-1] + SEAL_KEY + _mac(secret, kind, body) + b'"}'


def verify(kind: str, raw: bytes) -> bool:
    """Is ``raw`` a cache of ``kind`` sealed under this user's key (``seal``)? Then it is one
    JSON object (the seal one of its members) whose other members are what was sealed; the
    caller parses ``raw`` itself (no copy of a 64 MiB cache is made here)."""
    if len(raw) < SEAL_BYTES + 2 or raw[-SEAL_BYTES:-SEAL_BYTES + len(SEAL_KEY)] != SEAL_KEY \
            or raw[-2:] != b'"}':
        return False  # not sealed at all
    secret = key()
    if secret is None:
        return False
    # what was sealed: the bytes before the seal, with the object's closing brace back
    got = _mac(secret, kind, memoryview(raw)[:-SEAL_BYTES], b"}")
    from _operator import _compare_digest  # hmac.compare_digest itself, without importing hmac

    return bool(_compare_digest(got, raw[-SEAL_BYTES + len(SEAL_KEY):-2]))
