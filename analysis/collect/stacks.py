"""Listing a results location stack by stack (file://, gs://, s3:// on the bulk path): a collect holds
one stack's listing at a time, and checks a settled stack by its run directories only, or not at all (on
file:// by its directory's stamp, on a bucket by its results journal, payload.layout)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from payload import layout
from payload.storage import ObjectInfo

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


def stack_lister(store):
    kind = _LISTERS.get(type(store).__name__)
    return kind(store) if kind is not None else None


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
