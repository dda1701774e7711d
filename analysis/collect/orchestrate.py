"""One collect, step by step: list every source, answer from the manifest
when nothing changed, download what did, price spot runs, de-duplicate,
write the table, remember what was seen.

Its own module so that the order of those steps, and which state each one
reads and changes (a Collection), can be read in one place; each step's
work is done by the module of its job."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.collect.dedupe import dedupe
from analysis.collect.settled import SettledBook, answer_from_manifest, keep_unlisted, settled_stacks
from analysis.collect.sources import Download, Progress, bulk_fetch, download, entry_key
from analysis.collect.spot import SpotPricer, price_bulk
from analysis.collect.stacks import list_by_stack, stack_lister
from analysis.collect.store import remove_stale_temporaries, table_is_whole, table_paths
from analysis.collect.summary import Summary
from analysis.collect.validation import classify, wrong_layout
from analysis.manifest import MANIFEST_NAME, Manifest
from payload import layout

if TYPE_CHECKING:
    from analysis.dataset import Location


@dataclass
class Collection:
    """What one collect has found so far, against what the manifest holds from the last one."""

    urls: list[str]
    out: Path  # the manifest's directory, and where a local table's exports go
    manifest: Manifest
    summary: Summary
    entries: dict[str, dict] = field(default_factory=dict)  # mkey -> entry: the table's input and the manifest's
    failed: set[str] = field(default_factory=set)  # mkeys whose download failed this time
    todo: list[Download] = field(default_factory=list)  # for the thread pool
    to_price: list[tuple[str, dict]] = field(default_factory=list)  # (mkey, migrated result) of bulk-read spot runs
    settled: SettledBook = field(default_factory=SettledBook)
    # sources where runs were expected and none were found (empty, missing, misspelt, wrong layout):
    # the table and the manifest are then left exactly as they were
    not_found: list[str] = field(default_factory=list)
    # sources listed stack by stack (file://, gs://): their settled stacks are judged after the downloads
    listed_by_stack: list[tuple[str, object, dict]] = field(default_factory=list)
    table: Location | None = None  # the results dataset (analysis.dataset)
    export: bool = True  # results.parquet and results.csv written next to a local table

    def cached(self, url: str, info) -> dict | None:
        """The manifest's entry for a listed object whose ETag and size are unchanged."""
        old = self.manifest.entries.get(entry_key(url, info.key))
        if old is not None and info.etag and old.get("etag") == info.etag and old.get("size") == info.size:
            return old
        return None

    def keep_old(self, url: str, exc: Exception) -> None:
        """A source that cannot be listed: said so, and its rows kept (an outage must not empty the table)."""
        self.summary.skipped.append({"key": url, "url": url, "reason": f"cannot list the bucket: {exc}"})
        self.summary.incomplete.append(f"{url}: cannot list the bucket")
        self._keep_rows_of(url)

    def classified(self, url: str, store, listing: dict, settled_runs: int = 0) -> list[str]:
        """The result keys of a listing; its runs and set-aside files counted in the summary."""
        result_keys, set_aside, n_runs = classify(listing)
        if listing and n_runs + settled_runs == 0:
            # objects, but none in the layout: a wrong prefix, not an empty bucket; keep the old table
            self.nothing_found(url, wrong_layout(url, listing), "no runs in the expected layout")
            return []
        if not listing and settled_runs == 0 and self.nothing_found(url, store=store):
            return []
        self.summary.runs += n_runs
        for s in set_aside:
            self.summary.skipped.append({**s, "url": store.url_for(s["key"])})
        return result_keys

    def nothing_found(self, url: str, reason: str | None = None, short: str | None = None, store=None) -> bool:
        """A source with no runs where runs were expected: True, and the collect marked as finding
        nothing (the table is kept, the exit code says so). Expected: in a directory that does
        not exist, and in an empty directory or prefix, even before the first collect (a misspelt
        prefix finds nothing: that is not success). A bucket's root may be empty: a bucket's runs can all end."""
        missing = _missing_directory(store)
        if reason is None and not missing and is_bucket_root(url):
            return False
        where = "a directory that does not exist" if missing else "it holds nothing (empty, or a misspelt prefix?)"
        reason = reason or (
            f"no runs found under {url}: {where}; expected {layout.LAYOUT} there; the table is left as it was"
        )
        self.summary.skipped.append({"key": url, "url": url, "reason": reason})
        self.summary.incomplete.append(f"{url}: {short or 'no runs found (empty, missing or misspelt?)'}")
        self.not_found.append(url)
        self.settled.not_settled()
        self._keep_rows_of(url)
        return True

    def settle(self, mkey: str, entry: dict) -> None:
        """Record one downloaded object; a failed download keeps the row it had."""
        if entry.pop("failed", False):
            self.failed.add(mkey)
            why = entry["reason"]
            self.summary.incomplete.append(f"{entry['url']}: {why}")
            previous = self.manifest.entries.get(mkey)
            if previous is not None and "row" in previous:
                entry = previous
                self.summary.skipped.append(
                    {"key": entry["key"], "url": entry.get("url"), "reason": f"kept the previous row: {why}"}
                )
        self.entries[mkey] = entry
        self.summary.new += 1

    def take_cached(self, mkey: str, entry: dict) -> None:
        self.entries[mkey] = entry
        self.summary.cached += 1

    def _keep_rows_of(self, url: str) -> None:
        self.entries.update({k: v for k, v in self.manifest.entries.items() if v.get("source") == url})


def collect(
    urls: list[str],
    table: str | Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    store_opener: Callable | None = None,
    spot_pricer: SpotPricer | None = None,
    bulk: bool | None = None,
    full: bool = False,
    export: bool | None = None,
) -> tuple[Summary, Sequence[dict]]:
    """Collect runs from `urls` into the results dataset at `table` (a
    directory or a bucket prefix, analysis.dataset), writing only what
    changed; a local table also gets results.parquet and results.csv as an
    export (`export` False: not; True: also for a bucket's table, into the
    manifest's directory). Returns the summary and the
    table rows (valid, de-duplicated by run id). New AWS spot runs are priced
    from EC2's spot price history through `spot_pricer` (see spot_history_pricer);
    cached rows keep the series they were collected with.

    s3:// URLs take the bulk path (analysis.bulk) unless `bulk` is False or a
    `store_opener` is given (tests wrap stores to watch each download);
    `workers` is the number of requests in flight (default 128 there, 10 in
    the thread pool of the other stores). A settled stack (analysis.manifest)
    is not listed file by file while its run directories stay the same (s3://
    on the bulk path, gs://, file://); `full` lists every file again. A
    collect with nothing new returns the stored rows, read when first used."""
    from analysis.dataset import migrate_legacy, resolve

    t0 = time.perf_counter()
    loc = resolve(table)
    out = manifest_home(loc)
    remove_stale_temporaries(out)
    migrate_legacy(loc)
    manifest = Manifest(out / MANIFEST_NAME)
    bar = Progress(progress)
    try:
        c = Collection(urls=list(urls), out=out, manifest=manifest, summary=Summary(sources=list(urls)), table=loc)
        c.export = export if export is not None else loc.local is not None
        _list_sources(c, workers, bar, store_opener, bulk, full)
        rows = _answer_unchanged(c)
        if rows is None:
            _carry_deferred(c)
            if manifest.damaged and any(c.settled.unlisted.values()):
                # the settled stacks' rows were in the unreadable part: list and read every file
                bar.close()
                manifest.close()
                return collect(
                    urls,
                    table,
                    workers=workers,
                    progress=progress,
                    store_opener=store_opener,
                    spot_pricer=spot_pricer,
                    bulk=bulk,
                    full=True,
                    export=export,
                )
            _download(c, workers, spot_pricer, bar)
            rows = _table(c)
    finally:
        bar.close()
        manifest.close()
    c.summary.seconds = time.perf_counter() - t0
    return c.summary, rows


def _list_sources(c: Collection, workers, bar: Progress, store_opener, bulk: bool | None, full: bool) -> None:
    """Every source listed: s3:// by the bulk path (unless turned off), the others for the thread pool."""
    from analysis import bulk as bulk_mod
    from payload.storage import open_store

    for url in c.urls:
        if store_opener is None and bulk is not False and bulk_mod.available(url):
            _list_bulk(c, url, workers, bar, full)
        else:
            _list_store(c, url, store_opener or open_store, full)


def _list_bulk(c: Collection, url: str, workers, bar: Progress, full: bool) -> None:
    """One s3:// source: its settled stacks checked by run directory, the rest listed, read and parsed."""
    from analysis import bulk as bulk_mod
    from payload.storage import StorageError

    book = c.settled
    book.before[url] = {} if full else c.manifest.settled(url)
    now = time.time()
    try:
        source = bulk_mod.S3Bulk(url)
        trusted = {p: s.digest for p, s in book.before[url].items() if s.fresh(now)}
        priced: list[tuple[str, dict]] = []  # this source's spot runs: priced only if it listed whole
        listing, got, book.unlisted[url] = bulk_fetch(source, url, c.cached, workers, bar, priced, trusted)
        if not listing and not book.unlisted[url]:  # nothing under runs/: an empty bucket, or the wrong place?
            elsewhere = source.sample()
            if elsewhere:  # the wrong-layout error, and the old table kept
                c.classified(url, source, dict.fromkeys(elsewhere))
                return
            if c.nothing_found(url):
                return
    except StorageError as exc:
        c.keep_old(url, exc)
        book.not_settled()
        return
    if not listing and set(book.unlisted[url]) == set(book.before[url]):
        book.deferred.append(url)  # nothing listed file by file, no stack gone
        return
    c.to_price.extend(priced)
    book.nothing_listed = False
    settled_runs = keep_unlisted(url, book.unlisted[url], book.before[url], c.manifest.entries, c.entries, c.summary)
    for key in c.classified(url, source, listing, settled_runs):
        mkey = entry_key(url, key)
        if mkey in got:
            c.settle(mkey, got[mkey])
        else:
            c.take_cached(mkey, c.cached(url, listing[key]))
    book.now[url] = {p: book.before[url][p] for p in book.unlisted[url]}
    book.now[url].update(settled_stacks(url, listing, c.entries, c.failed, source, now))
    if any(layout.stack_prefix_of(k) not in book.now[url] for k in listing):
        book.all_settled = False


def _list_store(c: Collection, url: str, opener: Callable, full: bool) -> None:
    """One source through payload.storage: listed stack by stack where the store
    allows (file://, gs://: settled stacks by run directory only), else whole;
    unchanged objects taken from the manifest, the rest queued."""
    from payload.storage import StorageError

    book = c.settled
    try:
        store = opener(url)
        lister = stack_lister(store)
        if lister is None:
            book.not_settled()
            listing, unlisted = {o.key: o for o in store.list()}, []
        else:
            book.before[url] = {} if full else c.manifest.settled(url)
            now = time.time()
            trusted = {p: s.digest for p, s in book.before[url].items() if s.fresh(now)}
            listing, unlisted = list_by_stack(store, lister, trusted)
            book.unlisted[url] = unlisted
    except StorageError as exc:
        c.keep_old(url, exc)
        book.not_settled()
        return
    settled_runs = 0
    if lister is not None:
        if not listing and unlisted and set(unlisted) == set(book.before[url]):
            book.deferred.append(url)  # every stack settled and unchanged
            return
        book.nothing_listed = False
        settled_runs = keep_unlisted(url, unlisted, book.before[url], c.manifest.entries, c.entries, c.summary)
        c.listed_by_stack.append((url, store, listing))
    for key in c.classified(url, store, listing, settled_runs):
        old = c.cached(url, listing[key])
        if old is not None:
            c.take_cached(entry_key(url, key), old)
        else:
            c.todo.append((store, url, key, listing[key]))


def _settle_listed_stacks(c: Collection) -> None:
    """The settled stacks of the sources listed stack by stack, now that their results are read."""
    book, now = c.settled, time.time()
    for url, store, listing in c.listed_by_stack:
        if url in c.not_found:
            continue
        book.now[url] = {p: book.before[url][p] for p in book.unlisted.get(url, [])}
        book.now[url].update(settled_stacks(url, listing, c.entries, c.failed, store, now))
        if any(layout.stack_prefix_of(k) not in book.now[url] for k in listing):
            book.all_settled = False


def _answer_unchanged(c: Collection) -> list[dict] | None:
    """The last collect's rows, when nothing anywhere changed since and its table is whole; else None."""
    outcome = c.manifest.outcome()
    if c.settled.nothing_listed and outcome and outcome.get("sources") == c.urls and _table_in_step(c):
        rows = answer_from_manifest(c.manifest, outcome, c.settled.before, c.summary, c.out)
        if rows is not None:
            c.summary.table = _table_names(c)
        return rows
    return None


def _table_in_step(c: Collection) -> bool:
    """The dataset is at the version the manifest last wrote or saw, and a
    local table's exports are whole: what the manifest says is what the table holds."""
    from analysis.dataset.store import table_version

    if c.manifest.table_version is None or c.manifest.table_version != table_version(c.table):
        return False
    return not c.export or table_is_whole(c.out)


def _table_names(c: Collection) -> dict[str, str]:
    """Where the table is: the dataset, and its exports when written."""
    return {**(table_paths(c.out) if c.export else {}), "dataset": c.table.text}


def _carry_deferred(c: Collection) -> None:
    """Sources whose stacks were all settled and unchanged, carried over to be judged with the rest."""
    book = c.settled
    for url in book.deferred:
        keep_unlisted(url, book.unlisted[url], book.before[url], c.manifest.entries, c.entries, c.summary)
        book.now[url] = dict(book.before[url])


def _download(c: Collection, workers: int | None, spot_pricer: SpotPricer | None, bar: Progress) -> None:
    """The thread pool's downloads, then the bulk path's spot runs priced."""
    bar.add(len(c.todo))
    for mkey, entry in download(c.todo, workers, spot_pricer):
        c.settle(mkey, entry)
        bar.update()
    bar.close()
    _settle_listed_stacks(c)
    if spot_pricer is not None and c.to_price:
        for mkey in price_bulk(c.entries, c.to_price, spot_pricer):  # a stack with a run to price again
            c.settled.unsettle(c.entries[mkey])


def _table(c: Collection) -> list[dict]:
    """The rows, de-duplicated; the table written if its input changed; the manifest updated."""
    summary = c.summary
    n_skipped, dropped = len(summary.skipped), set()
    rows = dedupe(c.entries, summary, dropped)
    summary.table = _table_names(c)
    if c.not_found:
        # runs were expected and some source held none: neither the table nor the manifest is touched
        rows = dedupe(c.manifest.entries, Summary(sources=c.urls))
        summary.valid = len(rows)
        return rows
    if summary.incomplete and not rows and any("row" in e for e in c.manifest.entries.values()):
        # a failed or mistaken collect never replaces a non-empty table with an empty one
        rows = dedupe(c.manifest.entries, Summary(sources=c.urls))
        summary.valid = len(rows)
        return rows
    summary.valid = len(rows)
    fingerprint = entries_fingerprint(c.entries)
    version = c.manifest.table_version
    if fingerprint != c.manifest.table_fingerprint or not _table_in_step(c):
        version = _publish(c, rows)
    _remember(c, fingerprint, dropped, judged=summary.skipped[n_skipped:], version=version)
    return rows


def _publish(c: Collection, rows: list[dict]) -> int | None:
    """The difference between `rows` and the dataset committed; the exports
    rewritten when the table changed or they are not whole. Returns the table's version."""
    from analysis.dataset import export_table, publish_rows

    old = c.manifest.entries
    changed = [(e["source"], e["key"]) for k, e in c.entries.items() if "row" in e and old.get(k) is not e]
    published = publish_rows(c.table, rows, changed)
    c.summary.table_written = published.written
    if c.export and (published.written or not table_is_whole(c.out)):
        export_table(c.table.uri, c.out) if published.version is not None else _empty_export(c.out)
        c.summary.table_written = True
    return published.version


def _empty_export(out: Path) -> None:
    """The exports of a table with no rows yet (nothing was ever collected into it)."""
    from analysis.collect.store import write_table_batches
    from analysis.dataset.schema import EXPORT_SCHEMA

    write_table_batches([], EXPORT_SCHEMA, out)


def manifest_home(loc) -> Path:
    """Where the collect manifest of a table lives: in a local table's directory;
    for a bucket's table, in this machine's cache ($GPUBENCH_CACHE, else
    ~/.cache/gpubench), one directory per table (the table itself says what it
    holds: a new machine starts with an empty manifest and writes nothing twice)."""
    import os

    if loc.local is not None:
        return loc.local
    root = Path(os.environ.get("GPUBENCH_CACHE") or Path.home() / ".cache" / "gpubench")
    return root / "tables" / hashlib.sha256(loc.uri.encode()).hexdigest()[:16]


def _remember(c: Collection, fingerprint: str, dropped: set[str], judged: list[dict], version: int | None) -> None:
    """Write what changed to the manifest, and the de-duplication's outcome when
    every stack of every source was settled and nothing failed."""
    old_entries = c.manifest.entries
    changed = [k for k, e in c.entries.items() if old_entries.get(k) is not e]
    removed = [k for k in old_entries if k not in c.entries]
    outcome = {"sources": c.urls, "dropped": sorted(dropped), "skipped": judged}
    # only what changed is written: at 100,000 runs the manifest is about 200 MB
    c.manifest.update(
        c.entries,
        changed,
        removed,
        fingerprint,
        settled=c.settled.now,
        outcome=outcome if c.settled.all_settled and not c.summary.incomplete else None,
        table_version=version,
    )


def _missing_directory(store) -> bool:
    """True for a file:// source whose directory does not exist (payload.storage lists it as empty)."""
    root = getattr(store, "root", None)
    return isinstance(root, Path) and not root.exists()


def is_bucket_root(url: str) -> bool:
    """s3://bucket or gs://bucket with no prefix: a place that exists on its own and may be empty."""
    from urllib.parse import urlparse

    parts = urlparse(url)
    return parts.scheme in ("s3", "gs") and bool(parts.netloc) and not parts.path.strip("/")


def entries_fingerprint(entries: dict[str, dict]) -> str:
    """What the table is made of (each entry's key, ETag and whether it has a
    row): the table is rewritten only when this changes, or it is not whole."""
    h = hashlib.sha256()
    for k in sorted(entries):
        h.update(f"{k}\0{entries[k].get('etag')}\0{'row' in entries[k]}\n".encode())
    return h.hexdigest()
