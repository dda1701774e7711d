"""Downloading a stack's result objects: s3:// through analysis.collect.s3 (many requests in flight on
one event loop), the others through payload.storage in a thread pool (local files in this thread). Every
path hands collect the same thing: (mkey, entry), the entry holding the row or why it was set aside.
Spot runs are priced from their cloud's spot price history (an API call per run, failing one run at a
time with the reason, never the collect). On s3://, the next stack's new results are downloaded ahead
(Prefetch) while this stack's are parsed and judged."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import replace

from analysis.collect import s3
from analysis.collect.s3 import ObjectTooLarge, S3Bulk, s3_location
from analysis.collect.validation import MAX_RESULT_BYTES, classify, parse, too_large
from analysis.interruptible import InterruptiblePool
from analysis.price.spot import price_run
from infra import clouds
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

    _read_all(source, wanted, keep, workers)
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

        _read_all(source, [replace(info, size=None) for info in whole], judge_whole, workers)
    yield from got.items()


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
    todo: list[Download], workers: int | None, spot_pricer: SpotPricer | None, stopped: dict[str, str]
) -> Iterator[tuple[str, dict]]:
    """(mkey, entry) of `todo` as each download finishes, through a thread pool of `workers`. A source that
    stops answering is not tried again (`stopped`: url -> why)."""
    if not todo:
        return
    # Ctrl-C (or a caller that stops reading) cancels the downloads not started and waits for none.
    with InterruptiblePool(max(1, min(workers or DEFAULT_WORKERS, len(todo))), "collect-download") as pool:
        for fut in as_completed([pool.submit(fetch, item, stopped, spot_pricer) for item in todo]):
            yield fut.result()


def fetch(item: Download, stopped: dict[str, str], spot_pricer: SpotPricer | None) -> tuple[str, dict]:
    """(mkey, entry) of one download, read with payload.storage (capped) and parsed."""
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
        # a str path: Python 3.11's pathlib interns every part, a run's directory per result in the process's
        # one table of interned strings (its reallocation then lands in a collect as memory held)
        with open(os.path.join(store.root, key.lstrip("/")), "rb") as f:
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


SpotPricer = Callable[[dict], dict]

# The cloud SDK clients keep 10 pooled connections (botocore max_pool_connections): more threads churn them.
PRICING_WORKERS = 10


def spot_history_pricer(mode: str = "auto") -> SpotPricer | None:
    """The pricer of spot runs on clouds that keep a spot price history, None for "off"; with "auto", only
    where that cloud's credentials resolve (checked once per cloud)."""
    if mode == "off":
        return None
    state: dict[str, bool] = {}

    def pricer(result: dict) -> dict | None:
        provider = (result.get("offering") or {}).get("provider")
        if (history := _spot_history(provider)) is None:
            return None
        if mode == "auto" and provider not in state:
            state[provider] = history.has_credentials()
        if mode == "auto" and not state[provider]:
            return None
        return price_run(result)

    return pricer


def _spot_history(provider: str | None):
    return clouds.get(provider).spot_history() if clouds.is_cloud(provider) else None


def price_spot(row: dict, result: dict, spot_pricer: SpotPricer | None) -> dict:
    """The row of a spot run on a cloud that keeps a spot price history, with the series each attempt paid
    in its billing windows (pricing time-weights them)."""
    if spot_pricer is None or row["market"] != "spot" or _spot_history(row["provider"]) is None:
        return row
    if not (priced := spot_pricer(result)):  # no history where the run ran, or no credentials for it
        return row
    paid = {a["attempt"]: a for a in priced.get("attempts", []) if a.get("series")}
    windows = json.loads(row["attempts_json"])
    for w in windows:
        if (a := paid.get(w["attempt"])) is not None:
            w["spot_prices"], w["spot_price_source"] = [list(p) for p in a["series"]], a["source"]
    row["attempts_json"] = json.dumps(windows, separators=(",", ":"))
    row["spot_price_method"] = priced.get("method")
    row["spot_price_warnings"] = "; ".join(priced.get("warnings") or []) or None
    return row


def price_bulk(entries: dict[str, dict], to_price: list[tuple[str, dict]], spot_pricer: SpotPricer) -> set[str]:
    """Price the bulk path's spot runs in a thread pool. Returns the entry keys it could not price (set
    aside with why, not cached: tried again next time)."""

    def one(item) -> str | None:
        mkey, result = item
        entry = entries[mkey]
        try:
            entry["row"] = price_spot(entry["row"], result, spot_pricer)
        except Exception as exc:  # noqa: BLE001 - as in the thread path: the file is set aside with why
            entry.pop("row")
            entry.update(etag=None, reason=f"unreadable: {type(exc).__name__}: {exc}")
            return mkey
        return None

    with ThreadPoolExecutor(max_workers=PRICING_WORKERS) as pool:
        return {mkey for mkey in pool.map(one, to_price) if mkey is not None}


# On the bulk path (s3://), the next stack's new results downloaded (on a thread and event loop of their
# own) and handed to its step as if it had read them: only what it would read (changed, under the size
# cap, PREFETCH_BYTES in all), one stack ahead. What fails hands over nothing (the step reads it itself);
# an abandoned collect stops it at the next object that arrives.
# The most bytes downloaded ahead (about 20,000 results of a few kB); the step reads the rest itself.
PREFETCH_BYTES = 64 * 1024 * 1024

# One prefetched object: (size listed, bytes or StorageError, read by range), as s3.read_all hands them.
Fetched = tuple[int | None, object, bool]


class Prefetch:
    """The collect sets `following` before each step, which calls `start` once its own downloads are done."""

    def __init__(self, pool, manifest, workers: int | None):
        self.pool, self.manifest, self.workers = pool, manifest, workers  # pool: analysis.interruptible
        self.following: str | None = None  # the stack whose results to fetch next
        self.jobs: dict[tuple[str, str], Future] = {}

    def start(self, views) -> None:
        prefix, self.following = self.following, None
        if prefix is None:
            return
        ahead = [(v, v.ahead[prefix]) for v in views if v.bulk and v.failed is None and prefix in v.ahead]
        for view, listing in ahead:
            entries = self.manifest.stack_entries(view.url, prefix)  # sqlite: read in the collect's thread
            known = {e["key"]: e for e in entries.values()}
            budget = PREFETCH_BYTES // len(ahead)
            job = self.pool.submit(_fetch_ahead, view, listing, known, budget, self.workers, self.pool.stop)
            self.jobs[(view.url, prefix)] = job

    def take(self, url: str, prefix: str) -> dict[str, Fetched]:
        """{key: Fetched} fetched ahead for one source's stack; empty when nothing was (or it failed)."""
        job = self.jobs.pop((url, prefix), None)
        try:
            return {} if job is None else job.result()
        except Exception:  # noqa: BLE001 - a failed prefetch is only a missed head start: the step reads
            return {}


class _Abandoned(Exception):  # the collect was abandoned: the prefetch stops at the next object
    pass


def _fetch_ahead(view, listing: Future, known: dict, budget: int, workers: int | None, stop) -> dict[str, Fetched]:
    """The new results of one listed stack; `known`: the manifest's entries by key; `stop`: abandoned."""
    objects = listing.result()  # the list-ahead's listing; its failure is the step's to report
    keys, _, _ = classify(objects)
    wanted = []
    for key in keys:
        info = objects[key]
        if unchanged(known.get(key), info) or too_large(info.size) is not None:
            continue
        if (info.size or 0) > budget:
            break
        budget -= info.size or 0
        wanted.append(info)
    got: dict[str, Fetched] = {}

    def keep(info, data, ranged: bool) -> bool:
        if stop.is_set():
            raise _Abandoned
        if not isinstance(data, StorageError) or isinstance(data, ObjectTooLarge):  # a failed read: the step's
            got[info.key] = (info.size, data, ranged)
        return False  # judged by the step, which reads a ranged read that does not parse again, whole

    _read_all(view.store, wanted, keep, workers)
    return got


def _read_all(source, infos: list, handle, workers: int | None) -> None:
    source.max_bytes = MAX_RESULT_BYTES  # what a collect reads of a result.json at most
    s3.read_all(source, infos, handle, workers)
