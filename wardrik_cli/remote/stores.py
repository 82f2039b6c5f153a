"""Where segments are shipped to: an S3-compatible bucket, or a folder on a shared mount.

Contract kept here:
- A target is ``s3://BUCKET[/PREFIX]`` or ``file:///PATH``; anything else is ``BadInput``.
  For S3 the endpoint, credentials and region come from the standard variables of the
  environment given (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``); plain ``http://`` endpoints
  (a local server) are allowed.
- The one coordination primitive is ``create(key, data, meta)``: it stores the segment only
  if nothing is at ``key`` and says whether it did. On S3 that is ``If-None-Match: *``
  (obstore ``put(mode="create")``; 412 means the key exists), atomic with the object's user
  metadata. In a folder it is ``os.link`` of a fully written, fsynced temp file (link never
  replaces: atomic on local file systems and NFS alike).
- Metadata of a segment (``Meta``): its last sequence, the sha256 of its bytes, the id of the
  root that shipped it and where that root is (host:path, for error messages). On S3 it is the
  object's user metadata (``x-amz-meta-wardrik-*``). In a folder it is the sidecar
  ``SSSSSSSSSSSS.jsonl.meta`` (JSON), and the sidecar is the claim: it is created first, with
  the conditional create, and the segment's bytes are linked in after it. A claim whose bytes
  are missing is a shipper that died in between; the next shipper of the same root (which has
  the same bytes locally, checked against the claim's sha256) completes it (``complete``),
  and readers stop that log before it. Temp files are dot-files beside the key, never listed.
- A store may be hostile (anyone who can write to the share or bucket): nothing in it can
  make a reader hang or run out of memory. A folder store opens an object one folder at a
  time below its folder with ``O_NOFOLLOW`` (a symbolic link anywhere below it is never
  followed, out of the folder or not) and ``O_NONBLOCK`` after an ``lstat``, reading only a
  regular file (a FIFO, socket or device is never waited on nor read: ``/dev/zero`` has no
  end), and never more bytes than the file's size when it was opened. Small objects read
  whole (metadata sidecars, gap records, watermarks: a few hundred bytes) are refused over
  ``SMALL_MAX`` bytes, before their bytes are read, on either kind of store (S3: the size of
  the GET's answer; the metadata itself comes with a one-byte ranged GET). Each refusal is one
  ``Refused`` (a ``Failure``) naming the object.
- Every failure is one ``Failure`` line; ``Unreachable`` (connection refused, timeouts, 5xx)
  is the kind ``ship --follow`` retries with backoff.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import orjson

from wardrik_cli.errors import BadInput, Failure
from wardrik_cli.store.fsutil import link_new

META_SUFFIX = ".meta"  # a folder store's sidecar: SSSSSSSSSSSS.jsonl.meta
# Metadata, gap records and watermarks are a few hundred bytes; one past this was written by
# something else, and reading it whole could exhaust memory (a link to /dev/zero, a huge file).
SMALL_MAX = 4 << 20
_M_LAST, _M_SHA, _M_ROOT_ID, _M_ROOT = "wardrik-last-sequence", "wardrik-sha256", "wardrik-root-id", "wardrik-root"


class Unreachable(Failure):
    """The store did not answer (or answered 5xx): worth trying again later."""


class Refused(Failure):
    """A store object wardrik never writes (a link, FIFO, socket or device in a folder store; a
    small object that is not small): never followed nor read whole."""


class BadKey(Refused):
    """A listing met an object whose key the S3 client cannot take (a ``..``, ``.``, empty or
    control-character part: S3 allows them, other tools write them): it cannot list around
    it, so the listing fails, naming the key."""


def bad_key(url: str, bucket: str, e: Exception) -> BadKey:
    m = re.search(r'parsing Path "([^"]*)"', str(e))
    key = m.group(1) if m else "?"
    return BadKey(f"{url}: the store holds an object whose key the S3 client cannot list past, {key!r} (an empty, "
                  f"'.', '..' or control-character part): nothing wardrik writes; remove it (e.g. `aws s3 rm "
                  f"'s3://{bucket}/{key}'`)")


class Meta:
    """A segment's metadata."""

    __slots__ = ("last", "sha256", "root_id", "root", "size")

    def __init__(self, last: int, sha256: str, root_id: str, root: str):
        self.last, self.sha256, self.root_id, self.root = last, sha256, root_id, root
        self.size: int | None = None  # the segment's bytes, where ``read_meta`` learnt them

    def to_dict(self) -> dict[str, str]:
        # header values must be ASCII: the root's path is percent-encoded
        return {_M_LAST: f"{self.last:012d}", _M_SHA: self.sha256, _M_ROOT_ID: self.root_id,
                _M_ROOT: quote(self.root, safe="/:@._-~")}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> Meta:
        low = {str(k).lower(): v for k, v in d.items()}
        try:
            last, sha, rid = low[_M_LAST], low[_M_SHA], low[_M_ROOT_ID]
            if not (isinstance(last, str) and last.isdigit() and isinstance(sha, str)
                    and re.fullmatch(r"[0-9a-f]{64}", sha) and isinstance(rid, str) and rid):
                raise ValueError
            return cls(int(last), sha, rid, unquote(str(low.get(_M_ROOT, "?"))))
        except (KeyError, ValueError):
            raise Failure(f"{where}: not a wardrik segment (its metadata lacks the last sequence, sha256 "
                          "or root id); something else wrote there") from None


class Store:
    """A place segments go to (``S3Store`` or ``FolderStore``); keys are full keys."""

    url: str
    prefix: str

    def create(self, key: str, data: bytes, meta: Meta) -> bool:
        """Store ``data`` at ``key`` if nothing is there; False (nothing written) if something is."""
        raise NotImplementedError

    def read_meta(self, key: str, *, size: bool = False) -> Meta | None:
        """The segment's metadata; None when there is no segment at ``key``. ``size``: its
        ``size`` too (free with an S3 GET; a folder's store opens the segment for it)."""
        raise NotImplementedError

    def read(self, key: str, limit: int | None = None) -> tuple[bytes | None, Meta]:
        """The segment's bytes (None while a folder claim waits for them) and metadata.
        ``limit``: an object larger than this many bytes is refused (a ``Failure`` naming it),
        before its bytes are read: for the small objects read whole (``SMALL_MAX``)."""
        raise NotImplementedError

    def complete(self, key: str, data: bytes) -> None:
        """Make sure a claimed segment's bytes are there (a folder claim whose shipper died)."""

    def list(self, prefix: str) -> Iterator[str]:
        """Every segment key under ``prefix`` (a listing: possibly stale, never trusted alone)."""
        raise NotImplementedError

    def list_all(self, prefix: str) -> Iterator[str]:
        """Every object key under ``prefix``: segments and the objects beside them (gap
        records, watermarks, owners); a listing, never trusted alone."""
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove an object; nothing there is not an error."""
        raise NotImplementedError

    def read_range(self, key: str, *, head: int | None = None, tail: int | None = None) -> bytes | None:
        """The first ``head`` or last ``tail`` bytes of an object (all of it when shorter);
        None when it is gone."""
        raise NotImplementedError

    def where(self, key: str) -> str:
        return f"{self.url.rstrip('/')}/{key[len(self.prefix.strip('/')) + 1:]}" if self.prefix.strip("/") \
            else f"{self.url.rstrip('/')}/{key}"


def open_store(url: str, env: Mapping[str, str]) -> Store:
    """The store a target URL names (``BadInput`` for anything but s3:// and file://)."""
    if isinstance(url, str) and any(ord(c) < 0x20 or ord(c) == 0x7f for c in url):
        # refused before urlsplit, which drops a tab or a newline without a word
        raise BadInput(f"{url!r} is not a target: it has a control character; use s3://BUCKET/PREFIX or "
                       "file:///PATH")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is not None and parts.scheme == "s3" and parts.netloc and not parts.query and not parts.fragment:
        prefix = parts.path.strip("/")
        if prefix and any(seg in ("", ".", "..") for seg in prefix.split("/")):
            # the S3 client refuses such a key before any request (it read as "no answer")
            raise BadInput(f"{url!r} is not a target: its prefix has an empty, . or .. part; "
                           "use s3://BUCKET/PREFIX, e.g. s3://ledgers/prod")
        return S3Store(url, parts.netloc, prefix, env)
    if parts is not None and parts.scheme == "file" and parts.netloc in ("", "localhost") \
            and parts.path.startswith("/"):
        return FolderStore(url, Path(unquote(parts.path)))
    raise BadInput(f"{url!r} is not a target: use s3://BUCKET/PREFIX or file:///PATH")


# ---------------------------------------------------------------------------
# S3 (obstore)
# ---------------------------------------------------------------------------
class S3Store(Store):
    def __init__(self, url: str, bucket: str, prefix: str, env: Mapping[str, str]):
        from wardrik_cli.extras import need

        self.obs = need("obstore", "s3")
        store_mod = need("obstore.store", "s3")
        self.url, self.bucket, self.prefix = url, bucket, prefix
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")
        self.endpoint = endpoint or "AWS S3"
        config: dict[str, Any] = {}
        for var, name in (("AWS_ACCESS_KEY_ID", "access_key_id"), ("AWS_SECRET_ACCESS_KEY", "secret_access_key"),
                          ("AWS_SESSION_TOKEN", "session_token")):
            if env.get(var):
                config[name] = env[var]
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            config["region"] = region
        if endpoint:
            config["endpoint"] = endpoint
        # A few quick retries: an endpoint that is down is one error line in a second or so
        # (obstore's default is ten retries over three minutes); --follow retries for longer.
        retry = {"max_retries": 3, "retry_timeout": timedelta(seconds=20),
                 "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=2)}}
        client = {"allow_http": bool(endpoint and endpoint.startswith("http://")), "connect_timeout": "5s",
                  "timeout": "300s"}  # a 64 MB segment over a slow link
        try:
            self.s3 = store_mod.S3Store(bucket, config=config, client_options=client, retry_config=retry)
        except Exception as e:  # noqa: BLE001 - obstore's configuration errors: one line
            raise BadInput(f"{url}: cannot configure the S3 client: {_first_line(e)}") from None

    def _fail(self, e: Exception, doing: str) -> Failure:
        text = str(e)
        code = m.group(1) if (m := re.search(r"<Code>([^<]+)</Code>", text)) else None
        status = int(m.group(1)) if (m := re.search(r"status code: (\d{3})", text)) else None
        if code == "NoSuchBucket":
            return Failure(f"bucket {self.bucket!r} does not exist at {self.endpoint} ({self.url})")
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
                    "InvalidToken") or status in (401, 403):
            return Failure(f"{self.url}: access denied at {self.endpoint} ({code or status}): check "
                           "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy")
        if status is None or status >= 500:
            why = m.group(1) if (m := re.search(r'message: "([^"]+)"', text)) else \
                f"status {status}" if status else "no answer"
            return Unreachable(f"cannot reach {self.endpoint} for {self.url} ({why}) while {doing}")
        return Failure(f"{self.url}: {doing} failed: {code or status}: {_first_line(e)[:200]}")

    def create(self, key: str, data: bytes, meta: Meta) -> bool:
        exc = self.obs.exceptions
        try:
            self.obs.put(self.s3, key, data, mode="create", attributes=meta.to_dict(), use_multipart=False)
        except (exc.AlreadyExistsError, exc.PreconditionError):
            return False
        except Exception as e:  # noqa: BLE001 - obstore raises several kinds: each becomes one line
            raise self._fail(e, f"writing {key}") from None
        return True

    def _get(self, key: str, ranged: bool) -> Any:
        try:
            return self.obs.get(self.s3, key, options={"range": (0, 1)} if ranged else None)
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001
            if "NoSuchKey" in str(e) or "InvalidRange" in str(e):
                return None
            raise self._fail(e, f"reading {key}") from None

    def read_meta(self, key: str, *, size: bool = False) -> Meta | None:
        got = self._get(key, ranged=True)  # the metadata comes with any GET: one byte of the body is enough
        if got is None:
            return None
        meta = Meta.from_dict(got.attributes, self.where(key))
        n = got.meta.get("size") if isinstance(got.meta, Mapping) else None
        meta.size = n if isinstance(n, int) and not isinstance(n, bool) else None
        return meta

    def read(self, key: str, limit: int | None = None) -> tuple[bytes | None, Meta]:
        got = self._get(key, ranged=False)
        if got is None:
            raise Failure(f"{self.where(key)}: listed but gone (deleted while pulling?)")
        # the answer's size is known before its body is read: a small object that is not small
        # is refused without reading it (the body is never more than that size)
        size = got.meta.get("size") if isinstance(got.meta, Mapping) else None
        if limit is not None and (not isinstance(size, int) or size > limit):
            raise _too_big(self.where(key), size, limit)
        try:
            data = bytes(got.bytes())
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, f"reading {key}") from None
        if limit is not None and len(data) > limit:
            raise _too_big(self.where(key), len(data), limit)
        return data, Meta.from_dict(got.attributes, self.where(key))

    def list(self, prefix: str) -> Iterator[str]:
        try:
            for batch in self.obs.list(self.s3, prefix, chunk_size=1000):
                for item in batch:
                    yield item["path"]
        except self.obs.exceptions.InvalidPathError as e:
            raise bad_key(self.url, self.bucket, e) from None
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, f"listing {prefix}") from None

    def list_all(self, prefix: str) -> Iterator[str]:
        yield from self.list(prefix)  # a bucket lists every object, whatever it is

    def delete(self, key: str) -> None:
        try:
            self.obs.delete(self.s3, key)
        except FileNotFoundError:
            pass
        except Exception as e:  # noqa: BLE001 - obstore raises several kinds: each becomes one line
            raise self._fail(e, f"deleting {key}") from None

    def read_range(self, key: str, *, head: int | None = None, tail: int | None = None) -> bytes | None:
        rng: Any = {"suffix": tail} if tail is not None else (0, head)
        try:
            got = self.obs.get(self.s3, key, options={"range": rng})
            return bytes(got.bytes())
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001
            if "NoSuchKey" in str(e):
                return None
            if "InvalidRange" in str(e):
                return b""  # an empty object
            raise self._fail(e, f"reading {key}") from None



# ---------------------------------------------------------------------------
# a folder (a shared mount)
# ---------------------------------------------------------------------------
class FolderStore(Store):
    def __init__(self, url: str, path: Path):
        self.url, self.path, self.prefix = url, path, ""

    def _require(self) -> None:
        if not self.path.is_dir():
            raise Failure(f"{self.url}: {self.path} is not a directory (mount the share, or make the folder)")

    def _file(self, key: str) -> Path:
        return self.path / key

    def create(self, key: str, data: bytes, meta: Meta) -> bool:
        self._require()
        body = orjson.dumps({"last_sequence": meta.last, "sha256": meta.sha256, "root_id": meta.root_id,
                             "root": meta.root}) + b"\n"
        name = key.rsplit("/", 1)[-1]
        try:
            dfd = self._folder_of(key)
            try:
                here = Path(f"/proc/self/fd/{dfd}")  # that folder itself: no name on the way is looked up again
                if not _link_new(here / (name + META_SUFFIX), body):
                    return False  # claimed already: the caller reads whose claim it is
                _link_new(here / name, data)  # our claim: the bytes follow (a same-root shipper may have completed it)
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            raise Failure(f"{self.where(key)}: cannot write: {e.strerror or e}") from None
        return True

    def _folder_of(self, key: str, *, create: bool = True) -> int:
        """An fd of the folder ``key`` goes in, each folder on the way opened relative to the one
        above with ``O_NOFOLLOW`` (``create``: made when missing; else FileNotFoundError passes
        through): a link planted anywhere below the store's folder (``log=... -> /elsewhere``,
        ``day=... -> /``) leads nowhere, read or written; nothing a ship records as stored lies
        outside the store. The store's folder itself may be a link (a mount point: the
        operator's choice)."""
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise Failure(f"{self.where(key)}: not an object key of this store")
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        try:
            dfd = os.open(self.path, flags)
        except FileNotFoundError:
            raise
        except OSError as e:
            self._require()
            raise Failure(f"{self.url}: cannot open {self.path}: {e.strerror or e}") from None
        try:
            at = ""
            for part in parts[:-1]:
                at += part + "/"
                sub = self._sub_folder(dfd, part, create, key)
                if sub < 0:
                    raise Refused(f"{self.where(key)}: {self.where(at.rstrip('/'))} is "
                                  f"{_kind(part, dfd)}, not a folder of this store: never followed")
                os.close(dfd)
                dfd = sub
            return dfd
        except BaseException:
            os.close(dfd)
            raise

    def _sub_folder(self, dfd: int, part: str, create: bool, key: str) -> int:
        """The folder ``part`` of ``dfd`` opened (made first when missing and ``create``); -1
        when it is a link or not a folder."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
        for made in (False, True):
            try:
                return os.open(part, flags, dir_fd=dfd)
            except FileNotFoundError:
                if not create or made:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=dfd)  # the umask decides, as for any folder made
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    return -1
                raise Failure(f"{self.where(key)}: cannot open its folder: {e.strerror or e}") from None
        raise AssertionError("unreachable: the second open returns or raises")

    def _open(self, key: str) -> int:
        """A read-only fd of the object at ``key``, only if it is a regular file in the folder.

        Its folder is reached as ``_folder_of`` reaches it (no link followed). The object is
        looked at (``lstat``) before it is opened, and opened ``O_NONBLOCK``, then checked
        again (``fstat``): a FIFO is never waited on, a device never opened.
        FileNotFoundError passes through (nothing there); anything else is one ``Failure``."""
        dfd = self._folder_of(key, create=False)
        try:
            name = key.rsplit("/", 1)[-1]
            try:
                mode = os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd) \
                    if stat.S_ISREG(mode) else -1
            except FileNotFoundError:
                raise
            except OSError as e:
                if e.errno != errno.ELOOP:  # ELOOP: replaced by a link since the lstat
                    raise Failure(f"{self.where(key)}: cannot open: {e.strerror or e}") from None
                fd = -1
            if fd >= 0 and not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                fd = -1
            if fd < 0:
                raise Refused(f"{self.where(key)}: is {_kind(name, dfd)}, not a stored object: never followed, "
                              "opened or read (something other than wardrik put it there)")
            return fd
        finally:
            os.close(dfd)

    def _read_whole(self, key: str, limit: int | None) -> bytes:
        """The bytes of the object at ``key``: at most its size when opened (a file that grows
        meanwhile is not chased), refused over ``limit``. FileNotFoundError passes through."""
        fd = self._open(key)
        try:
            size = os.fstat(fd).st_size
            if limit is not None and size > limit:
                raise _too_big(self.where(key), size, limit)
            with open(fd, "rb", closefd=False) as f:
                return f.read(size)
        except OSError as e:
            raise Failure(f"{self.where(key)}: cannot read: {e.strerror or e}") from None
        finally:
            os.close(fd)

    def read_meta(self, key: str, *, size: bool = False) -> Meta | None:
        try:
            raw = self._read_whole(key + META_SUFFIX, SMALL_MAX)
        except FileNotFoundError:
            self._require()
            return None
        try:
            d = orjson.loads(raw)
            d = {_M_LAST: f"{int(d['last_sequence']):012d}", _M_SHA: d["sha256"], _M_ROOT_ID: d["root_id"],
                 _M_ROOT: quote(str(d.get("root", "?")), safe="/:@._-~")}
        except (ValueError, KeyError, TypeError):
            d = {}
        meta = Meta.from_dict(d, self.where(key))
        if not size:
            return meta
        try:
            fd = self._open(key)
        except (FileNotFoundError, Refused):
            return meta
        try:
            meta.size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        return meta

    def read(self, key: str, limit: int | None = None) -> tuple[bytes | None, Meta]:
        meta = self.read_meta(key)
        if meta is None:
            raise Failure(f"{self.where(key)}: listed but gone (deleted while pulling?)")
        try:
            return self._read_whole(key, limit), meta
        except FileNotFoundError:
            return None, meta

    def complete(self, key: str, data: bytes) -> None:
        name = key.rsplit("/", 1)[-1]
        try:
            dfd = self._folder_of(key)
            try:
                if _link_new(Path(f"/proc/self/fd/{dfd}") / name, data):
                    os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError as e:
            raise Failure(f"{self.where(key)}: cannot write: {e.strerror or e}") from None

    def list(self, prefix: str) -> Iterator[str]:
        self._require()
        top = self.path / prefix
        end = ".jsonl" + META_SUFFIX
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = Path(dirpath).relative_to(self.path).as_posix()
            for f in files:
                if f.endswith(end) and not f.startswith("."):
                    yield f"{rel}/{f[:-len(META_SUFFIX)]}"


    def list_all(self, prefix: str) -> Iterator[str]:
        # A folder lists by the sidecars (the claims): of segments and of the other objects.
        self._require()
        top = self.path / prefix
        if not prefix.endswith("/"):
            top = top.parent
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = Path(dirpath).relative_to(self.path).as_posix()
            for f in files:
                if f.endswith(META_SUFFIX) and not f.startswith("."):
                    key = f"{rel}/{f[:-len(META_SUFFIX)]}"
                    if key.startswith(prefix):
                        yield key

    def delete(self, key: str) -> None:
        # The bytes go first and the sidecar (the claim, what listings see) last: a sweep
        # killed in between leaves a claim the next sweep deletes again.
        for p in (self._file(key), self._file(key + META_SUFFIX)):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                raise Failure(f"{self.where(key)}: cannot delete: {e.strerror or e}") from None
        # A day folder left empty goes too (retention empties old days). A shipper writing into
        # it at that instant fails its create with ENOENT and retries: nothing is lost.
        try:
            self._file(key).parent.rmdir()
        except OSError:
            pass  # not empty, or gone already

    def read_range(self, key: str, *, head: int | None = None, tail: int | None = None) -> bytes | None:
        try:
            fd = self._open(key)
        except FileNotFoundError:
            return None
        try:
            size = os.fstat(fd).st_size  # never read past it: a file that grows is not chased
            start = max(0, size - tail) if tail is not None else 0
            n = size - start if head is None else min(head, size)
            with open(fd, "rb", closefd=False) as f:
                f.seek(start)
                return f.read(n)
        except OSError as e:
            raise Failure(f"{self.where(key)}: cannot read: {e.strerror or e}") from None
        finally:
            os.close(fd)

    def where(self, key: str) -> str:
        return f"{self.url.rstrip('/')}/{key}"


def _link_new(path: Path, data: bytes) -> bool:
    """``fsutil.link_new`` (create ``path`` only if nothing is there; False when it is), with
    the error a file:// target without hard links needs."""
    try:
        return link_new(path, data, 0o644)
    except OSError as e:
        if e.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(e.errno, "this file system has no hard links, which file:// targets need for "
                                   "their atomic conditional create") from None
        raise


def _kind(name: str, dir_fd: int) -> str:
    """What a name that is not a regular file (or not a folder) is, for an error message."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return "gone or unreadable"
    return "a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
        "a directory" if stat.S_ISDIR(mode) else "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def _too_big(where: str, size: int | None, limit: int) -> Refused:
    got = f"{size} bytes" if size is not None else "of unknown size"
    return Refused(f"{where}: it is {got}, more than the {limit} bytes a wardrik metadata, gap or watermark "
                   "object can be: not read (something else wrote there)")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
