"""Results storage: one small interface over file://, s3:// and gs:// (contract: docs/CONTRACTS.md), shared by
the payload and analysis. Endpoints as the SDKs read them: AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, and
STORAGE_EMULATOR_HOST for GCS (then anonymous: an emulator has no IAM).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import random
import stat
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from payload import exitcodes
from payload.results_location import ResultsLocation, ResultsLocationError, parse_results_location

T = TypeVar("T")


class StorageError(exitcodes.GpubenchError, RuntimeError):
    """A storage operation failed (after retries, where it retries)."""

    exit_code = exitcodes.REMOTE


class PermanentStorageError(StorageError):
    """No such bucket, access denied, an invalid name: retrying cannot help, so it is not retried."""


# S3 error codes and HTTP statuses (google.api_core's `code`), as _error_code gives them.
PERMANENT_CODES = frozenset(  # no retry can fix these
    "NoSuchBucket AccessDenied AllAccessDisabled InvalidBucketName InvalidAccessKeyId SignatureDoesNotMatch "
    "AccountProblem 400 401 403".split()
)
MISSING_CODES = frozenset({"NoSuchKey", "NotFound", "404"})
TAKEN_CODES = frozenset({"PreconditionFailed", "412"})  # a conditional create found the key


def _error_code(exc: BaseException) -> str | None:
    """botocore's S3 error code, or the HTTP status of google.api_core's (and urllib's) errors."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return response.get("Error", {}).get("Code")
    code = getattr(exc, "code", None)  # an http.HTTPStatus, which str() names before Python 3.11 (the legacy image)
    return str(int(code)) if isinstance(code, int) else None


def is_permanent(exc: BaseException) -> bool:
    """True for errors that will fail the same way on every attempt."""
    return type(exc).__name__ in ("InvalidBucketName", "ParamValidationError") or _error_code(exc) in PERMANENT_CODES


class AlreadyExists(PermanentStorageError):
    """A write-once upload found the key taken (S3 or GCS 412, a file that exists): not ours to replace."""


class ObjectNotFound(StorageError, KeyError):
    """The key does not exist. Never retried: absence is an answer."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "object not found"


@dataclass(frozen=True)
class ObjectInfo:
    """One listed object; ``updated`` is aware UTC when known."""

    key: str
    size: int
    etag: str | None
    updated: _dt.datetime | None


RETRIES_ENV = ("GPUBENCH_STORAGE_RETRIES", 5, int, "an integer")
BACKOFF_ENV = ("GPUBENCH_STORAGE_BACKOFF", 1.0, float, "a number")


def _env_number(name: str, default: T, cast: Callable[[str], T], what: str) -> T:
    try:
        return cast(os.environ[name]) if os.environ.get(name) else default
    except ValueError:
        raise StorageError(f"{name}={os.environ[name]!r} is not {what}") from None


def retry_settings() -> tuple[int, float]:
    """Attempts and first backoff (seconds) of every storage call: $GPUBENCH_STORAGE_RETRIES (5), $GPUBENCH_STORAGE_BACKOFF (1)."""
    return max(1, _env_number(*RETRIES_ENV)), _env_number(*BACKOFF_ENV)


def with_retries(
    what: str,
    fn: Callable[[], T],
    attempts: int | None = None,
    backoff: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn`` up to ``attempts`` times with jittered exponential backoff: ObjectNotFound and AlreadyExists
    pass through, a permanent error fails at once, the last of the others becomes a StorageError naming `what`."""
    attempts = max(1, attempts if attempts is not None else _env_number(*RETRIES_ENV))  # read only when it decides
    backoff = backoff if backoff is not None else _env_number(*BACKOFF_ENV)
    last: BaseException | None = None
    for i in range(attempts):
        try:
            return fn()
        except (ObjectNotFound, AlreadyExists):
            raise
        except Exception as exc:  # noqa: BLE001 - SDKs raise many types
            if is_permanent(exc):
                raise PermanentStorageError(f"{what} failed (not retried: a permanent error): {exc}") from exc
            last = exc
            if i + 1 < attempts:
                sleep(min(30.0, backoff * (2**i)) * (0.5 + random.random() / 2))
    raise StorageError(f"{what} failed after {attempts} attempt(s): {last}") from last


def _join(prefix: str, key: str) -> str:
    key = key.lstrip("/")
    if not prefix:
        return key
    return f"{prefix.rstrip('/')}/{key}" if key else prefix.rstrip("/")


class Store:
    """The public methods add retries and errors to a subclass's primitives `_put`, `_get`, `_list` (ObjectInfo
    under a prefix) and `_delete`, one attempt each."""

    def __init__(self, url: str, retries: int | None = None, backoff: float | None = None, write_once: bool = False):
        self.url, self.retries, self.backoff = url, retries, backoff
        # Every upload creates its key or fails with AlreadyExists: all the payload's cloud roles allow.
        self.write_once = write_once

    def put_bytes(
        self, key: str, data: bytes, content_type: str | None = None, tags: Mapping[str, str] | None = None
    ) -> None:
        """Upload with retries. `tags` become S3 object tags (the lifecycle expires gpubench:kind=checkpoint);
        a key a write-once retry finds taken is the earlier attempt's upload whose answer was lost: done."""
        tries = 0

        def attempt() -> None:
            nonlocal tries
            tries += 1
            try:
                self._put(key, bytes(data), content_type, tags)
            except AlreadyExists:
                if tries == 1:
                    raise

        self._retry("upload", key, attempt)

    def get_bytes(self, key: str) -> bytes:
        return self._retry("download", key, lambda: self._get(key))

    def _retry(self, what: str, key: str, call: Callable[[], T]) -> T:
        if not isinstance(key, str) or ".." in key.split("/"):
            raise StorageError(f"invalid object key {key!r}: must be a relative path without '..'")
        return with_retries(f"{what} {self.url_for(key)}", call, self.retries, self.backoff)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return iter(
            with_retries(f"list {self.url_for(prefix)}", lambda: list(self._list(prefix)), self.retries, self.backoff)
        )

    def exists(self, key: str) -> bool:
        try:
            self.get_bytes(key)
        except ObjectNotFound:
            return False
        return True

    def url_for(self, key: str) -> str:
        return _join(self.url, key)

    def delete(self, key: str) -> None:
        """Remove one object (missing is fine); never the payload's (its roles may only create)."""
        self._retry("delete", key, lambda: self._delete(key))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class FileStore(Store):
    """A directory on a local or mounted file system (demo, on-prem, tests)."""

    def __init__(self, url: str, root: Path, **kw):
        super().__init__(url, **kw)
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key.lstrip("/")

    def _put(self, key, data, content_type, tags=None):
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        if not self.write_once:
            os.replace(tmp, path)  # readers never see half a result.json
            return
        try:
            os.link(tmp, path)  # atomic, and refused when the name exists
        except FileExistsError:
            raise AlreadyExists(f"{self.url_for(key)} exists; a write-once upload never replaces it") from None
        finally:
            tmp.unlink(missing_ok=True)

    def _get(self, key):
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(f"{self.url_for(key)} does not exist") from None

    def _list(self, prefix):
        """Regular files under the root, by key. A symlink is not an object: one to a directory would walk
        the disk or loop, one to a file may be a device or outside the directory."""
        found = []
        for folder, _dirs, files in os.walk(self.root):  # os.walk never follows a linked directory
            found += [Path(folder, name) for name in files if not name.startswith(".")]
        for path in sorted(found):
            key = path.relative_to(self.root).as_posix()
            if not key.startswith(prefix):
                continue
            try:
                st = path.lstat()
            except OSError:  # removed since the walk
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            etag = hashlib.md5(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
            updated = _dt.datetime.fromtimestamp(st.st_mtime, tz=_dt.timezone.utc)
            yield ObjectInfo(key, st.st_size, etag, updated)

    def _delete(self, key):
        self._path(key).unlink(missing_ok=True)

    def url_for(self, key: str) -> str:
        return _join(self.root.as_uri(), key)


class _BucketStore(Store):
    """A bucket and a key prefix in it. A subclass makes one SDK call in each of `_write`, `_read`, `_listing`
    ((name, size, etag, updated) under a full prefix) and `_remove`; `_error_code` tells the SDKs' errors apart."""

    def __init__(self, url: str, bucket: str, prefix: str, **kw):
        super().__init__(url, **kw)
        self.bucket, self.prefix = bucket, prefix.strip("/")

    def _key(self, key):
        return _join(self.prefix, key)

    def _put(self, key, data, content_type, tags=None):
        try:
            self._write(self._key(key), data, content_type, tags)
        except Exception as exc:
            if self.write_once and _error_code(exc) in TAKEN_CODES:
                raise AlreadyExists(f"{self.url_for(key)} exists; a write-once upload never replaces it") from None
            raise

    def _get(self, key):
        try:
            return self._read(self._key(key))
        except Exception as exc:
            if _error_code(exc) in MISSING_CODES:
                raise ObjectNotFound(f"{self.url_for(key)} does not exist") from None
            raise

    def _list(self, prefix):
        full = self._key(prefix) if prefix else (self.prefix + "/" if self.prefix else "")
        strip = len(self.prefix) + 1 if self.prefix else 0
        for name, size, etag, updated in self._listing(full):
            yield ObjectInfo(name[strip:], int(size or 0), etag or None, updated)

    def _delete(self, key):
        try:
            self._remove(self._key(key))
        except Exception as exc:
            if _error_code(exc) not in MISSING_CODES:
                raise


class S3Store(_BucketStore):
    """Amazon S3 (or any S3 API, e.g. a moto server) through boto3."""

    def __init__(self, url: str, bucket: str, prefix: str, **kw):
        super().__init__(url, bucket, prefix, **kw)
        import boto3  # heavy optional: the payload extra, for s3:// only
        from botocore.config import Config  # (botocore comes with boto3)

        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
        self._client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            # our own loop retries (and spools): botocore's stay short, a dead endpoint fails in seconds
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5, read_timeout=60),
        )

    def _write(self, name, data, content_type, tags):
        extra = {"ContentType": content_type} if content_type else {}
        if tags:
            extra["Tagging"] = urllib.parse.urlencode(tags)
        if self.write_once:
            extra["IfNoneMatch"] = "*"  # S3 conditional write: 412 when the key exists
        self._client.put_object(Bucket=self.bucket, Key=name, Body=data, **extra)

    def _read(self, name):
        return self._client.get_object(Bucket=self.bucket, Key=name)["Body"].read()

    def _listing(self, full_prefix):
        for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full_prefix):
            for obj in page.get("Contents", []):
                yield obj["Key"], obj["Size"], obj.get("ETag", "").strip('"'), obj.get("LastModified")

    def _remove(self, name):
        self._client.delete_object(Bucket=self.bucket, Key=name)


class GCSStore(_BucketStore):
    """Google Cloud Storage (or gcp-storage-emulator) through google-cloud-storage."""

    def __init__(self, url: str, bucket: str, prefix: str, **kw):
        super().__init__(url, bucket, prefix, **kw)
        from google.cloud import storage  # heavy optional: the payload extra, for gs:// only

        emulated = os.environ.get("STORAGE_EMULATOR_HOST")
        client = storage.Client.create_anonymous_client() if emulated else storage.Client()
        self._bucket = client.bucket(bucket)
        self._timeout = 60

    def _write(self, name, data, content_type, tags):
        # ifGenerationMatch=0: create only (412 when the object exists), the write objectCreator allows
        condition = {"if_generation_match": 0} if self.write_once else {}
        self._bucket.blob(name).upload_from_string(
            data,
            content_type=content_type or "application/octet-stream",
            timeout=self._timeout,
            retry=None,
            **condition,
        )

    def _read(self, name):
        return self._bucket.blob(name).download_as_bytes(timeout=self._timeout, retry=None)

    def _listing(self, full_prefix):
        for blob in self._bucket.list_blobs(prefix=full_prefix or None, timeout=self._timeout, retry=None):
            yield blob.name, blob.size, blob.etag, blob.updated

    def _remove(self, name):
        self._bucket.blob(name).delete(timeout=self._timeout, retry=None)


def _open_file(loc: ResultsLocation, **kw) -> Store:
    if loc.given_as_path:
        path = Path(loc.path).expanduser().resolve()
        return FileStore(path.as_uri(), path, **kw)
    return FileStore(loc.text, Path(loc.path), **kw)


_OPENERS: dict[str, Callable[..., Store]] = {
    "file": _open_file,
    "s3": lambda loc, **kw: S3Store(loc.text.rstrip("/"), loc.bucket, loc.prefix, **kw),
    "gs": lambda loc, **kw: GCSStore(loc.text.rstrip("/"), loc.bucket, loc.prefix, **kw),
}


def open_store(url: str, retries: int | None = None, backoff: float | None = None, write_once: bool = False) -> Store:
    """Open the store for a results URL (a bare path: a local directory); `write_once`: the payload's stores."""
    try:
        loc = parse_results_location(url)
    except ResultsLocationError as exc:
        raise PermanentStorageError(str(exc)) from None
    try:
        return _OPENERS[loc.scheme](loc, retries=retries, backoff=backoff, write_once=write_once)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - no credentials, SDK missing, ...: callers handle StorageError
        raise StorageError(f"cannot open {url}: {type(exc).__name__}: {exc}") from exc
