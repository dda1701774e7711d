"""An s3:// location through obstore (Rust object_store): collect's listings (delimiter listings: one
entry per run directory, not per file), bulk and capped reads, and the lock's conditional create
(``put(mode="create")``: If-None-Match, which AWS, SeaweedFS and moto_server honour). botocore costs
about 2.6 ms of CPU per object, obstore 0.3 ms with many requests in flight on one asyncio loop. gs://
stays on payload.storage: obstore's GCSStore speaks the XML API, which gcp-storage-emulator lacks.

Credentials: boto3's chain (environment, profiles with SSO and assumed roles, container and instance
roles) through obstore's Boto3CredentialProvider. Endpoint: ``AWS_ENDPOINT_URL_S3`` or
``AWS_ENDPOINT_URL``. Region: boto3's, else us-east-1 (obstore does not follow S3's region redirects)."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from analysis.dataset.location import first_line
from payload.results_location import ResultsLocationError, parse_results_location
from payload.storage import ObjectInfo, ObjectNotFound, StorageError, retry_settings

try:  # each completed request wakes the loop from a tokio thread: uvloop does that for ~0.06 ms less CPU
    import uvloop
except ImportError:  # not on Windows
    uvloop = None

# 20 ms per request and about 0.3 ms of CPU each: 128 in flight keeps a
# 2-core client busy; 256 measured the same.
DEFAULT_BULK_WORKERS = 128


def is_s3(url: str) -> bool:
    try:
        return parse_results_location(url).scheme == "s3"
    except ResultsLocationError:
        return False  # the store opener refuses it, with the reason


class S3Bulk:
    """One s3://bucket[/prefix] opened for listing and many concurrent gets.
    Keys are relative to the prefix, as in payload.storage."""

    def __init__(self, url: str):
        try:
            loc = parse_results_location(url, schemes=("s3",))
        except ResultsLocationError as exc:
            raise StorageError(str(exc)) from None
        self.url = url.rstrip("/")
        self.bucket, self.prefix = loc.bucket, loc.prefix.rstrip("/")
        try:
            self._store = self._open()
        except Exception as exc:  # noqa: BLE001 - no credentials, bad config: the caller sets the bucket aside
            raise StorageError(f"cannot open {url}: {type(exc).__name__}: {exc}") from exc

    def _open(self):
        try:  # lazy: the demo extra has no obstore, and a local collect never opens a bucket
            from obstore.store import S3Store
        except ImportError:
            raise StorageError("reading s3:// needs obstore: pip install 'gpubench[analysis]'") from None

        attempts, backoff = retry_settings()
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
        kw: dict = {}
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        env_keys = os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY")
        if not (env_keys and region):
            # Keys and region in the environment are what boto3's chain would pick
            # first too; obstore reads them itself, and boto3 is not imported (0.2 s).
            try:
                import boto3  # lazy: 0.2 s, and optional (obstore reads the environment's keys itself)
                from obstore.auth.boto3 import Boto3CredentialProvider

                session = boto3.Session()
                region = session.region_name or region
                kw["credential_provider"] = Boto3CredentialProvider(session)
            except ImportError:  # obstore reads AWS_ACCESS_KEY_ID & co itself
                pass
        if endpoint:
            kw.update(endpoint=endpoint, virtual_hosted_style_request=False)
        return S3Store(
            self.bucket,
            prefix=self.prefix or None,
            region=region or "us-east-1",
            client_options={
                "allow_http": bool(endpoint and endpoint.startswith("http://")),
                "connect_timeout": timedelta(seconds=5),
                "timeout": timedelta(seconds=60),
            },
            # obstore's default (10 retries within 180 s) leaves collect hanging
            # for minutes on a dead endpoint; use the storage layer's budget.
            retry_config={
                "max_retries": attempts - 1,
                "retry_timeout": timedelta(seconds=min(120.0, 5 + backoff * 2**attempts)),
                "backoff": {
                    "init_backoff": timedelta(seconds=backoff),
                    "max_backoff": timedelta(seconds=30),
                    "base": 2,
                },
            },
            **kw,
        )

    def url_for(self, key: str) -> str:
        return f"{self.url}/{key.lstrip('/')}"

    # no payload.storage retries around a listing (with_retries): obstore retries each request itself
    retries = backoff = None

    def level(self, prefix: str) -> tuple[list[str], list[ObjectInfo]]:
        """(sorted sub-prefixes ending in "/", objects) one level under `prefix` (a delimiter listing)."""
        with _request(f"list {self.url_for(prefix)}"):
            found = self._store.list_with_delimiter(prefix.rstrip("/"))
        return sorted(p.rstrip("/") + "/" for p in found["common_prefixes"]), [_info(m) for m in found["objects"]]

    def objects(self, prefix: str) -> Iterator[ObjectInfo]:
        with _request(f"list {self.url_for(prefix)}"):
            for chunk in self._store.list(prefix, chunk_size=1000):
                yield from (_info(m) for m in chunk)

    def keys_after(self, prefix: str, start_after: str, limit: int | None = None) -> list[str]:
        """The keys under `prefix` after `start_after` (S3's StartAfter); at most `limit` (one request)."""
        found: list[str] = []
        chunk = min(limit, 1000) if limit else 1000
        with _request(f"list {self.url_for(prefix)}"):
            for page in self._store.list(prefix, offset=start_after, chunk_size=chunk):
                found.extend(m["path"] for m in page)
                if limit and len(found) >= limit:
                    return found[:limit]
        return found

    def sample(self, limit: int = 1000) -> list[str]:
        """Up to `limit` keys from anywhere in the location, for the wrong-layout error."""
        with _request(f"list {self.url}"):
            first = next(iter(self._store.list(None, chunk_size=limit)), [])
        return [m["path"] for m in first]

    # the most bytes `get` reads of one object (None: no cap); collect sets its result.json cap
    max_bytes: int | None = None

    async def get(self, key: str, size: int | None = None) -> bytes | memoryview:
        """The object's bytes: with the listing's `size`, one ranged read (collected in Rust: half the CPU of
        a streamed get), else or if that fails a whole get. Over `max_bytes`: ObjectTooLarge, its body unread."""
        limit = self.max_bytes
        if limit is not None and size and size > limit:
            raise ObjectTooLarge(self.url_for(key), size)
        if size:
            try:
                return memoryview(await self._store.get_range_async(key, start=0, end=size))
            except Exception:  # noqa: BLE001,S110 - the whole get below has the final word
                pass
        with _request(f"download {self.url_for(key)}"):
            result = await self._store.get_async(key)
            whole = int(result.meta["size"])
            if limit is not None and whole > limit:
                raise ObjectTooLarge(self.url_for(key), whole)
            return memoryview(await result.bytes_async())

    def create(self, key: str, body: bytes) -> bool:
        from obstore.exceptions import AlreadyExistsError  # lazy: see _open

        with _request(f"create {self.url_for(key)}"):
            try:
                self._store.put(key, body, mode="create")
            except AlreadyExistsError:
                return False
        return True

    def put_bytes(self, key: str, body: bytes) -> None:
        with _request(f"upload {self.url_for(key)}"):
            self._store.put(key, body)

    def read(self, key: str, limit: int) -> bytes:
        """At most `limit` + 1 bytes of `key`: whole when not over (the size comes before the body), else its head."""
        with _request(f"download {self.url_for(key)}"):
            try:
                result = self._store.get(key)
            except FileNotFoundError:  # obstore's NotFoundError
                raise ObjectNotFound(f"{self.url_for(key)} does not exist") from None
            if int(result.meta["size"]) <= limit:
                return bytes(result.bytes())
            return bytes(self._store.get_range(key, start=0, length=limit + 1))

    def delete(self, key: str) -> None:
        with _request(f"delete {self.url_for(key)}"):
            self._store.delete(key)


@functools.lru_cache(maxsize=16)
def _opened(url: str, environment: tuple) -> S3Bulk:
    return S3Bulk(url)


def s3_location(url: str) -> S3Bulk:
    """S3Bulk of `url`, opened once per endpoint, region and keys in the environment."""
    env = os.environ
    names = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID")
    return _opened(url.rstrip("/"), tuple(env.get(n) for n in (*names, "AWS_PROFILE")))


class ObjectTooLarge(StorageError):
    def __init__(self, url: str, size: int):
        super().__init__(f"{url} is {size} bytes")
        self.size = size


def _info(meta: dict) -> ObjectInfo:
    return ObjectInfo(
        meta["path"], int(meta["size"]), (meta.get("e_tag") or "").strip('"') or None, meta.get("last_modified")
    )


@contextmanager
def _request(what: str):
    """obstore's errors as a StorageError naming `what`, with the first line of their message."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"{what} failed: {type(exc).__name__}: {first_line(exc)}") from exc


def read_all(
    source: S3Bulk,
    infos: list[ObjectInfo],
    handle: Callable[[ObjectInfo, bytes | memoryview | StorageError, bool], bool | None],
    workers: int | None,
) -> None:
    """Download `infos` with `workers` in flight (default DEFAULT_BULK_WORKERS) on a private event loop,
    calling `handle` (in this thread) with each object's bytes or StorageError and whether they were read by
    range at the listing's size; when it returns True for a ranged read (an object changed since its listing
    may be read in part), it is read again whole. asyncio.run would leave the thread without the current
    event loop later callers (the Pulumi SDK under mocks) expect."""
    if not infos:
        return
    queue: asyncio.Queue = asyncio.Queue()
    for info in infos:
        queue.put_nowait(info)

    async def read(key: str, size: int | None):
        try:
            return await source.get(key, size)
        except StorageError as exc:
            return exc

    async def worker() -> None:
        while not queue.empty():
            info = queue.get_nowait()
            data = await read(info.key, info.size)
            if handle(info, data, bool(info.size)) and info.size and not isinstance(data, StorageError):
                handle(info, await read(info.key, None), False)

    async def run() -> None:
        tasks = [asyncio.create_task(worker()) for _ in range(max(1, min(workers or DEFAULT_BULK_WORKERS, len(infos))))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    loop = uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
