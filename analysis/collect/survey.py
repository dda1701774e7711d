"""A collect's first step: each source looked at before any stack is read (a source with no runs where
runs were expected stops the collect before anything is touched). Listed stack by stack (file://, gs://,
s3:// on the bulk path: one stack's listing held at a time) or whole, a source tells the step the same
things: its stacks, the settled and unchanged ones (checked by their run directories only, or on file://
by the directory's stamp, on a bucket by its results journal, payload.layout), a stack's files."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from analysis.collect.manifest import SettledStack, runs_digest
from payload import layout
from payload.layout import JOURNAL_WINDOW_S
from payload.storage import ObjectInfo, StorageError, with_retries


@dataclass
class SourceView:
    url: str
    store: object = None  # payload.storage store, or the bulk path's S3Bulk
    lister: object = None  # lists one stack's files when asked (file://, gs://, s3:// bulk)
    prefixes: set[str] = field(default_factory=set)  # the stacks it has (runs/<stack>/)
    unlisted: set[str] = field(default_factory=set)  # settled stacks whose run directories are as before
    # settled stacks that gained or lost run directories (nothing beside them): {prefix: run ids now};
    # only their new run directories are listed file by file (a settled run's files never change)
    grown: dict[str, list[str]] = field(default_factory=dict)
    settled: dict[str, SettledStack] = field(default_factory=dict)  # as the manifest stored them
    stamps: dict[str, str | None] = field(default_factory=dict)  # file:// stack stamps taken before listing
    listing: dict[str, dict] = field(default_factory=dict)  # listed whole: {prefix: {key: ObjectInfo}}
    failed: str | None = None  # why it could not be listed: its rows are kept
    bulk: bool = False  # read through analysis.collect.s3 (many requests in flight), not the thread pool
    ahead: dict[str, Future] = field(default_factory=dict)  # stacks being listed while earlier ones are stepped
    manifest: object = None  # analysis.collect.manifest.Manifest: which run ids of a journaled stack it holds
    restamped: dict[str, str] = field(default_factory=dict)  # unlisted stacks whose journal was read further
    # settled stacks whose journal names runs the manifest lacks: {prefix: those run ids}; their run
    # directories are not listed, nor (unless a step needs them) the runs the manifest holds read
    journaled: dict[str, list[str]] = field(default_factory=dict)

    def objects(self, prefix: str) -> dict:
        """{key: ObjectInfo} of one stack's files (its newest versions); StorageError when the listing fails."""
        if (listed := self.ahead.pop(prefix, None)) is not None:
            return listed.result()
        if self.lister is None:
            return self.listing.get(prefix, {})
        return self._listed(prefix)

    def list_ahead(self, prefix: str, pool) -> None:
        """Start listing on `pool` a bucket's stack its step will list whole, while earlier steps run."""
        lister = self.lister
        if lister is None or lister.listing_threads <= 1 or self.failed is not None or prefix in self.ahead:
            return
        if prefix not in self.prefixes or any(prefix in s for s in (self.unlisted, self.grown, self.journaled)):
            return  # not listed whole by its step

        def listing() -> dict:  # its stamp, then its listing (a bucket's stamp is a request)
            self.take_stamp(prefix)
            return self._listed(prefix)

        self.ahead[prefix] = pool.submit(listing)

    def take_stamp(self, prefix: str) -> None:
        """The stack's stamp, once, before its listing (a change during it shows next time); None when a
        bucket's journal cannot be read (its run directories are checked next time)."""
        stamp = getattr(self.lister, "stamp", None)
        if prefix in self.stamps or stamp is None:
            return
        try:
            self.stamps[prefix] = stamp(prefix)
        except StorageError:
            self.stamps[prefix] = None

    def _listed(self, prefix: str) -> dict:
        found = retried(self.store, f"list {self.store.url_for(prefix)}", lambda: list(self.lister.objects(prefix)))
        return layout.current_only({o.key: o for o in found})


def retried(store, what: str, fn: Callable):
    """fn() with the store's retries; once for S3Bulk (`retries` None: obstore retries each request)."""
    if store.retries is None:
        return fn()
    return with_retries(what, fn, store.retries, store.backoff)


def survey_store(view: SourceView, opener: Callable) -> list[str]:
    """A source's stacks (settled ones checked now), else its whole listing now. Returns the keys under no stack."""
    store = view.store = opener(view.url)
    kind = _LISTERS.get(type(store).__name__)
    if kind is None:  # a store listed whole
        loose = []
        for key, info in layout.current_only({o.key: o for o in store.list()}).items():
            if (prefix := layout.stack_prefix_of(key)) is None:
                loose.append(key)
            else:
                view.listing.setdefault(prefix, {})[key] = info
        view.prefixes = set(view.listing)
        return loose
    lister = kind(store)
    prefixes, top = retried(store, f"list {store.url_for(layout.ROOT)}", lister.stacks)
    if not prefixes and not top:  # nothing under runs/: what lies there (a sample) says which prefix was meant
        sample = getattr(store, "sample", None)
        return sorted(sample() if sample is not None else layout.current_only({o.key: o for o in store.list()}))
    view.lister, view.prefixes = lister, set(prefixes)
    now = time.time()
    trusted = {p: s.digest for p, s in view.settled.items() if s.fresh(now)}
    _check_settled(view, [p for p in prefixes if p in trusted], trusted)
    return [o.key for o in top]


def _check_settled(view: SourceView, prefixes: list[str], trusted: dict[str, str]) -> None:
    """Sort settled stacks by their run directories: as last listed (`unlisted`) or runs added or removed (`grown`)."""
    store, lister = view.store, view.lister

    stamp = getattr(lister, "stamp", None)
    journaled = getattr(lister, "journal", None) is not None
    if journaled:  # a bucket: stacks with a journal read by it
        prefixes = _by_journal(view, prefixes)
    elif stamp is not None:  # file://: a stack whose directory is as at its last listing is not even read
        view.stamps = {p: stamp(p) for p in prefixes}
        view.unlisted = {p for p in prefixes if view.stamps[p] and view.stamps[p] == view.settled[p].stamp}
        prefixes = [p for p in prefixes if p not in view.unlisted]

    def one(prefix: str) -> tuple[str, list[str], bool]:
        if journaled:  # before the listing: a bucket stack whose journal has begun is read by it next time
            view.take_stamp(prefix)
        runs, stray = retried(store, f"list {store.url_for(prefix)}", lambda: lister.run_dirs(prefix))
        return prefix, runs, stray

    with ThreadPoolExecutor(max_workers=lister.listing_threads) as pool:
        for prefix, runs, stray in pool.map(one, prefixes):
            if stray:
                continue
            # a stack with as many run directories as it had is compared by digest; one with more or
            # fewer has changed (a stack of a million runs that gained a few is not hashed whole)
            if len(runs) == view.settled[prefix].runs and runs_digest(runs) == trusted[prefix]:
                view.unlisted.add(prefix)
                if journaled and view.stamps.get(prefix):
                    view.restamped[prefix] = view.stamps[prefix]
            else:
                view.grown[prefix] = runs


def _by_journal(view: SourceView, prefixes: list[str]) -> list[str]:
    """Sort settled stacks with a journal stamp by their journal: nothing announced the manifest lacks
    (`unlisted`), or runs it lacks (`journaled`: only those listed). Returns the stacks left to check by
    their run directories (no stamp, or an unreadable journal)."""
    store, lister = view.store, view.lister
    asked, rest = [], []
    for prefix in prefixes:
        since = journal_since(view.settled[prefix].stamp)
        (rest if since is None or view.manifest is None else asked).append((prefix, since))

    def one(item: tuple[str, float]) -> tuple[str, str, list[str] | None]:
        prefix, since = item
        now = f"{JOURNAL_STAMP}{time.time():.6f}"  # before the read: what lands during it is read next time
        try:
            since -= JOURNAL_WINDOW_S
            return prefix, now, retried(store, f"list the journal of {prefix}", lambda: lister.journal(prefix, since))
        except StorageError:
            return prefix, now, None

    with ThreadPoolExecutor(max_workers=lister.listing_threads) as pool:
        for prefix, now, runs in pool.map(one, asked):
            if runs is None:
                rest.append((prefix, None))
                continue
            announced = list(dict.fromkeys(runs))
            held = view.manifest.runs_known(view.url, prefix, announced) if announced else set()
            new = [r for r in announced if r not in held]
            if not new:
                view.unlisted.add(prefix)
                if announced:  # read further than the stamp says: the next collect starts from here
                    view.restamped[prefix] = now
                continue
            view.journaled[prefix] = new
            view.stamps[prefix] = now
    return [prefix for prefix, _ in rest]


LISTING_THREADS = 16  # run-directory listings in flight (one request each on gs://)
PAGE = 1000  # objects a bucket listing returns per request (S3, GCS)
FILES_PER_RUN = 4  # what a run directory holds, about: result.json, events.jsonl, epochs.csv, log-tail.txt
JOURNAL_STAMP = "journal@"  # a bucket stack's stamp: when its journal was last known read up to


class _FileStacks:
    """A local results directory (payload.storage.FileStore)."""

    # directories are read one after another: a read is CPU in this process, not a request
    # to wait on, and threads taking turns at the GIL read a million run directories slower
    listing_threads = 1

    def __init__(self, store):
        self.store, self.root = store, Path(store.root)
        # keys (escaped) of names that are not UTF-8: no key, entry or cell can hold them; set aside once
        self.unreadable: set[str] = set()

    def _scan(self, path, rel: str) -> list[os.DirEntry]:
        try:
            with os.scandir(path) as found:
                entries = list(found)
        except (FileNotFoundError, NotADirectoryError):
            return []
        odd = [e.name for e in entries if not _is_text(e.name)]
        self.unreadable.update(
            rel + n.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") for n in odd
        )
        return [e for e in entries if e.name not in odd] if odd else entries

    def stacks(self) -> tuple[list[str], list]:
        base = self.root / layout.ROOT
        prefixes, files = [], []
        for entry in self._scan(base, layout.ROOT):
            if entry.is_dir(follow_symlinks=False):
                prefixes.append(f"{layout.ROOT}{entry.name}/")
            elif entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                files.append(_info(f"{layout.ROOT}{entry.name}", entry.stat()))
        return sorted(prefixes), files

    def new_runs_cheaper(self, new: int, runs: int) -> bool:
        return True

    def stamp(self, prefix: str) -> str | None:
        """What changes when anything is added to or removed from the stack's directory (mtime, inode,
        link count): the next collect trusts a settled stack without reading it while it holds."""
        try:
            st = os.stat(self.root / prefix)
        except OSError:
            return None
        return f"{st.st_mtime_ns}-{st.st_ino}-{st.st_nlink}"

    def run_dirs(self, prefix: str) -> tuple[list[str], bool]:
        """The run directories of a stack, and whether a file lies beside them (read as they come)."""
        runs, stray = [], False
        try:
            with os.scandir(self.root / prefix) as entries:
                for entry in entries:
                    if not _is_text(entry.name):  # set aside when the stack is listed file by file
                        stray = True
                    elif entry.is_dir(follow_symlinks=False):
                        runs.append(entry.name)
                    elif not entry.name.startswith("."):
                        stray = True
        except (FileNotFoundError, NotADirectoryError):
            pass
        return runs, stray

    def objects(self, prefix: str) -> Iterator:
        """Every file under a stack but hidden ones, as payload.storage lists them (never through a symlink)."""
        todo = [(prefix, self.root / prefix)]
        while todo:
            rel, path = todo.pop()
            for entry in self._scan(path, rel):
                if entry.is_dir(follow_symlinks=False):
                    todo.append((f"{rel}{entry.name}/", entry.path))
                elif entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                    yield _info(f"{rel}{entry.name}", entry.stat())


class _DelimiterStacks:
    """A bucket (gs://, or s3:// through S3Bulk) listed a level at a time by delimiter listings."""

    listing_threads = LISTING_THREADS  # one request each: many in flight

    def __init__(self, store, level, objects, journal_keys):
        self.store, self._level, self.objects, self._journal_keys = store, level, objects, journal_keys

    def stacks(self) -> tuple[list[str], list]:
        return self._level(layout.ROOT)

    def new_runs_cheaper(self, new: int, runs: int) -> bool:
        """Whether `new` run directories listed at once beat a stack of `runs` runs listed whole, page by page."""
        return new <= max(1 + runs * FILES_PER_RUN // PAGE, self.listing_threads)

    def run_dirs(self, prefix: str) -> tuple[list[str], bool]:
        subs, objects = self._level(prefix)
        return [s.rstrip("/").rsplit("/", 1)[-1] for s in subs], bool(objects)

    def stamp(self, prefix: str) -> str | None:
        """Taken before a stack is listed whole: the time from which the next collect reads its journal
        instead of its run directories; None for an empty journal (an older payload's). One request."""
        when = time.time()
        stack = layout.stack_of(prefix)
        if layout.name_problem("stack name", stack) is not None:  # no writer announces a stack of that name
            return None
        if not self._journal_keys(layout.journal_prefix(stack), "", limit=1):
            return None
        return f"{JOURNAL_STAMP}{when:.6f}"

    def journal(self, prefix: str, since: float) -> list[str]:
        """The run ids the stack's journal announces from `since` (epoch seconds) on. Raises StorageError."""
        stack = layout.stack_of(prefix)
        if layout.name_problem("stack name", stack) is not None:
            return []
        keys = self._journal_keys(layout.journal_prefix(stack), layout.journal_start(stack, since))
        return [run for key in keys if (run := layout.journal_run(key, stack)) is not None]


def _gcs_blobs(store, prefix: str, **kw):
    """(blobs under `prefix` through payload.storage's client, the length of the store's prefix)."""
    blobs = store._bucket.list_blobs(prefix=store._key(prefix), timeout=store._timeout, retry=None, **kw)  # noqa: SLF001
    return blobs, len(store.prefix) + 1 if store.prefix else 0


def _gcs_level(store, prefix: str) -> tuple[list[str], list]:
    pages, strip = _gcs_blobs(store, prefix, delimiter="/")
    objects = [ObjectInfo(b.name[strip:], int(b.size or 0), b.etag, b.updated) for b in pages]
    return sorted(p[strip:] for p in pages.prefixes), objects


def _gcs_journal_keys(store, prefix: str, start_after: str, limit: int | None = None) -> list[str]:
    """Keys from `start_after` on (GCS's startOffset, inclusive: a journal start is never a key)."""
    start = store._key(start_after) if start_after else None  # noqa: SLF001
    blobs, strip = _gcs_blobs(store, prefix, start_offset=start, max_results=limit)
    return [b.name[strip:] for b in blobs]


_LISTERS = {
    "FileStore": _FileStacks,
    "GCSStore": lambda s: _DelimiterStacks(s, partial(_gcs_level, s), s.list, partial(_gcs_journal_keys, s)),
    "S3Bulk": lambda s: _DelimiterStacks(s, s.level, s.objects, s.keys_after),
}


def journal_since(stamp: str | None) -> float | None:
    """When a bucket stack's stamp was taken, None for another stamp."""
    if not stamp or not stamp.startswith(JOURNAL_STAMP):
        return None
    try:
        return float(stamp[len(JOURNAL_STAMP) :])
    except ValueError:
        return None


def _info(key: str, st: os.stat_result) -> ObjectInfo:
    """A local file's ObjectInfo, with payload.storage's ETag (of its size and mtime)."""
    etag = hashlib.md5(f"{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()  # noqa: S324 - not security
    return ObjectInfo(key, st.st_size, etag, _dt.datetime.fromtimestamp(st.st_mtime, tz=_dt.timezone.utc))


def _is_text(name: str) -> bool:
    """Whether a name read from the disk is text (one that is not UTF-8 holds surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
