"""On the bulk path (s3://), the next stack's new results downloaded (on a thread and event loop of their
own) while this stack's are parsed and judged, and handed to its step as if it had read them: only what
it would read (changed, under the size cap, PREFETCH_BYTES in all), one stack ahead. What fails hands over
nothing (the step reads it itself); an abandoned collect stops it at the next object that arrives."""

from __future__ import annotations

from concurrent.futures import Future

from analysis.collect.s3 import ObjectTooLarge
from analysis.collect.sources import read_on_private_loop, unchanged
from analysis.collect.validation import classify, too_large
from payload.storage import StorageError

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
            job = self.pool.submit(_fetch, view, listing, known, budget, self.workers, self.pool.stop)
            self.jobs[(view.url, prefix)] = job

    def take(self, url: str, prefix: str) -> dict[str, Fetched]:
        """{key: Fetched} fetched ahead for one source's stack; empty when nothing was (or it failed)."""
        job = self.jobs.pop((url, prefix), None)
        if job is None:
            return {}
        try:
            return job.result()
        except Exception:  # noqa: BLE001 - a failed prefetch is only a missed head start: the step reads
            return {}


class _Abandoned(Exception):  # the collect was abandoned: the prefetch stops at the next object
    pass


def _fetch(view, listing: Future, known: dict, budget: int, workers: int | None, stop) -> dict[str, Fetched]:
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

    read_on_private_loop(view.store, wanted, keep, workers)
    return got
