"""Downloading a stack's result objects: s3:// through analysis.collect.s3 (many requests in flight on
one event loop), the others through payload.storage in a thread pool (local files in this thread). Every
path hands collect the same thing: (mkey, entry), the entry holding the row or why it was set aside."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import as_completed
from dataclasses import replace

from analysis.collect import s3
from analysis.collect.s3 import ObjectTooLarge, S3Bulk, s3_location
from analysis.collect.spot import SpotPricer, price_spot
from analysis.collect.validation import MAX_RESULT_BYTES, parse, too_large
from analysis.interruptible import InterruptiblePool
from payload.storage import ObjectNotFound, StorageError, with_retries

# google-cloud-storage keeps 10 pooled connections (requests' pool_maxsize): more threads only churn them.
DEFAULT_WORKERS = 10

Download = tuple[object, str, str, object]  # (store, source url, key, ObjectInfo)


def entry_key(url: str, key: str) -> str:
    return f"{url}|{key}"


def unchanged(entry: dict | None, info) -> bool:
    """Whether a manifest entry still describes the listed object (same ETag and size): not read again."""
    return entry is not None and bool(info.etag) and entry.get("etag") == info.etag and entry.get("size") == info.size


def new_entry(store, url: str, info) -> dict:
    return {"source": url, "key": info.key, "url": store.url_for(info.key), "etag": info.etag, "size": info.size}


def bulk_read(
    source, url: str, todo: list, workers: int | None, to_price: list, ready=None, fetched=None
) -> Iterator[tuple[str, dict]]:
    """(mkey, entry) of `todo` ([(key, ObjectInfo)] of one s3:// source); spot runs go to `to_price` as
    (mkey, result). `ready`: what the prefetch downloaded, taken out of it; `fetched`: called once the
    downloads are done. Parsed after the downloads: a parse holds the GIL each finished request needs."""
    got: dict[str, dict] = {}
    arrived: list = []  # (info, bytes or StorageError, ranged)
    wanted = []
    ready = ready or {}
    for key, info in todo:
        if (why := too_large(info.size)) is not None:  # set aside unread
            got[entry_key(url, key)] = {**new_entry(source, url, info), "reason": why}
        elif (early := ready.pop(key, None)) is not None and early[0] == info.size:  # fetched from this listing
            arrived.append((info, *early[1:]))
        else:
            wanted.append(info)

    def keep(info, data, ranged: bool) -> bool:
        arrived.append((info, data, ranged))
        return False  # a ranged read that does not parse is read again whole below

    read_on_private_loop(source, wanted, keep, workers)
    if fetched is not None:
        fetched()
    whole = []
    for i, (info, data, ranged) in enumerate(arrived):
        arrived[i] = None  # each object's bytes let go once parsed, not when the stack's all are
        entry = _bulk_entry(source, url, info, data, ranged, to_price)
        if entry is None:  # perhaps part of a newer, longer object: read it whole before judging it
            whole.append(info)
        else:
            got[entry_key(url, info.key)] = entry
    if whole:
        by_key = {info.key: info for info in whole}

        def judge_whole(read_info, data, ranged: bool) -> bool:
            info = by_key[read_info.key]  # the listing's size and ETag stay the entry's
            got[entry_key(url, info.key)] = _bulk_entry(source, url, info, data, False, to_price)
            return False

        read_on_private_loop(source, [replace(info, size=None) for info in whole], judge_whole, workers)
    yield from got.items()


def read_on_private_loop(source, infos: list, handle, workers: int | None) -> None:
    """s3.read_all on a private loop: asyncio.run would leave the thread without the current event loop
    later callers (the Pulumi SDK under mocks) expect."""
    if not infos:
        return
    source.max_bytes = MAX_RESULT_BYTES
    loop = s3.new_event_loop()
    try:
        loop.run_until_complete(s3.read_all(source, infos, handle, workers or s3.DEFAULT_BULK_WORKERS))
    finally:
        loop.close()


def _bulk_entry(source, url: str, info, data, ranged: bool, to_price: list) -> dict | None:
    """The entry of one object read in bulk; None when a ranged read did not parse (read it whole)."""
    entry = new_entry(source, url, info)
    if isinstance(data, ObjectTooLarge):  # grown past the cap since the listing: left unread
        entry["reason"] = too_large(data.size)
        return entry
    if isinstance(data, StorageError):
        entry.update(etag=None, failed=True, reason=f"download failed: {data}")  # not cached: tried again next time
        return entry
    try:
        entry["row"], result = parse(data, source=url, key=info.key, etag=info.etag)
        if entry["row"]["market"] == "spot":
            to_price.append((entry_key(url, info.key), result))
    except ValueError as exc:
        if ranged and str(exc).startswith("corrupt:"):  # perhaps part of a newer, longer object
            return None  # read it whole before judging it
        entry["reason"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - one odd file must not stop the collect
        entry["reason"] = f"unreadable: {type(exc).__name__}: {exc}"
    return entry


def download(
    todo: list[Download],
    workers: int | None,
    spot_pricer: SpotPricer | None,
    stopped: dict[str, str],
    here: bool = False,
) -> Iterator[tuple[str, dict]]:
    """(mkey, entry) of `todo` as each download finishes, through a thread pool of `workers`, or in this
    thread when `here` (local files). A source that stops answering is not tried again (`stopped`: url -> why)."""
    if here or not todo:
        yield from (_fetch(item, stopped, spot_pricer) for item in todo)
        return
    # Ctrl-C (or a caller that stops reading) cancels the downloads not started and waits for none.
    with InterruptiblePool(max(1, min(workers or DEFAULT_WORKERS, len(todo))), "collect-download") as pool:
        for fut in as_completed([pool.submit(_fetch, item, stopped, spot_pricer) for item in todo]):
            yield fut.result()


def _fetch(item: Download, stopped: dict[str, str], spot_pricer: SpotPricer | None) -> tuple[str, dict]:
    store, url, key, info = item
    entry = new_entry(store, url, info)
    failed = {"etag": None, "failed": True}  # not cached: the next collect tries again
    if url in stopped:
        return entry_key(url, key), {**entry, **failed, "reason": f"not tried: {stopped[url]}"}
    if (why := too_large(info.size)) is not None:  # set aside unread
        return entry_key(url, key), {**entry, "reason": why}
    try:
        data = read_capped(store, key, MAX_RESULT_BYTES)
    except ObjectNotFound as exc:  # deleted since the listing: this object only
        return entry_key(url, key), {**entry, **failed, "reason": f"download failed: {exc}"}
    except StorageError as exc:  # the source's other objects are not tried
        stopped.setdefault(url, f"{url} stopped answering ({exc})")
        return entry_key(url, key), {**entry, **failed, "reason": f"download failed: {exc}"}
    try:
        entry["row"] = price_spot(*parse(data, source=url, key=key, etag=info.etag), spot_pricer)
    except ValueError as exc:
        entry["reason"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - one odd file must not stop the collect
        # not cached: a failure in spot pricing (the cloud's API) is tried again next time
        entry.update(etag=None, reason=f"unreadable: {type(exc).__name__}: {exc}")
    return entry_key(url, key), entry


def _read_file(store, key: str, n: int) -> bytes:
    try:
        with open(store._path(key), "rb") as f:  # noqa: SLF001 - payload.storage's own path of a key
            return f.read(n)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ObjectNotFound(f"{store.url_for(key)} does not exist") from None


def _read_gcs(store, key: str, n: int) -> bytes:
    from google.api_core.exceptions import NotFound, RequestRangeNotSatisfiable  # lazy: cloud SDK, gs:// only

    blob = store._bucket.blob(store._key(key))  # noqa: SLF001
    try:
        return blob.download_as_bytes(start=0, end=n - 1, timeout=store._timeout, retry=None)  # noqa: SLF001
    except NotFound:
        raise ObjectNotFound(f"{store.url_for(key)} does not exist") from None
    except RequestRangeNotSatisfiable:  # an empty object has no first byte to range over
        return b""


# Ranged reads of the first n bytes, by payload.storage's store class (S3 reads go through obstore).
_CAPPED_READERS = {"FileStore": _read_file, "GCSStore": _read_gcs}


def read_capped(store, key: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an object (one more says it is over the cap), a ranged read with the
    store's retries (obstore retries S3's itself); a store of another kind (a test's wrapper) is read whole."""
    if type(store).__name__ in ("S3Store", "S3Bulk"):
        return (store if isinstance(store, S3Bulk) else s3_location(store.url)).read(key, limit)
    reader = _CAPPED_READERS.get(type(store).__name__)
    if reader is None:
        return store.get_bytes(key)
    return with_retries(
        f"download {store.url_for(key)}", lambda: reader(store, key, limit + 1), store.retries, store.backoff
    )
