"""The next stack's new results downloaded while this stack's are parsed and judged.

On the bulk path (s3://) no download is in flight while a step parses and
judges, and on a bucket the network is what a collect waits on. So once a
step's own downloads are done, the next stack's new results (from the listing
the list-ahead already has) are downloaded on a thread and event loop of their
own and handed to that stack's step as bytes, judged as if it had read them.

Only what the step would read anyway is fetched (not unchanged, not over the
size cap, at most PREFETCH_BYTES in all), one stack ahead, never more. A
prefetch or a read of it that fails hands over nothing: the step reads those
itself, with its own retries and errors. A collect abandoned (Ctrl-C, an
error) stops its prefetch at the next object that arrives.
"""

from __future__ import annotations

from concurrent.futures import Future

from analysis.collect.s3 import ObjectTooLarge
from analysis.collect.sources import read_on_private_loop, unchanged
from analysis.collect.validation import classify, too_large
from payload.storage import StorageError

# The most bytes of results downloaded ahead of their step (real results are a few kB each:
# about 20,000 of them); past it the step reads the rest itself.
PREFETCH_BYTES = 64 * 1024 * 1024

# One prefetched object: the size its listing gave, its bytes (or the StorageError its read ended
# with) and whether they were read by range (that size), as analysis.collect.s3.read_all hands them over.
Fetched = tuple[int | None, object, bool]


class Prefetch:
    """Downloads the next stack's new results on `pool` (one thread): the collect sets
    `following` before each step, which calls `start` once its own downloads are done."""

    def __init__(self, pool, manifest, workers: int | None):
        self.pool, self.manifest, self.workers = pool, manifest, workers  # pool: analysis.interruptible
        self.following: str | None = None  # the stack whose results to fetch next
        self.jobs: dict[tuple[str, str], Future] = {}

    def start(self, views) -> None:
        """Start fetching the results of `following` in every bulk source that lists it ahead (once)."""
        prefix, self.following = self.following, None
        if prefix is None:
            return
        ahead = [(v, v.ahead[prefix]) for v in views if v.bulk and v.failed is None and prefix in v.ahead]
        for view, listing in ahead:
            known = self.manifest.stack_versions(view.url, prefix)  # sqlite: read here, in the collect's thread
            budget = PREFETCH_BYTES // len(ahead)
            job = self.pool.submit(_fetch, view, listing, known, budget, self.workers, self.pool.stop)
            self.jobs[(view.url, prefix)] = job

    def take(self, url: str, prefix: str) -> dict[str, Fetched]:
        """{key: (size listed, bytes, ranged)} fetched ahead for one source's stack; empty when nothing was (or it failed)."""
        job = self.jobs.pop((url, prefix), None)
        if job is None:
            return {}
        try:
            return job.result()
        except Exception:  # noqa: BLE001 - a failed prefetch is only a missed head start: the step reads
            return {}

    def clear(self) -> None:
        """Drop what no step took (its stack went another way)."""
        self.jobs.clear()


class _Abandoned(Exception):
    """The collect was abandoned: the prefetch stops at the next object that arrives."""


def _fetch(view, listing: Future, known: dict, budget: int, workers: int | None, stop) -> dict[str, Fetched]:
    """The new results of one listed stack, downloaded (on the prefetch thread); `known`: the
    manifest's {key: (etag, size)} of the stack; `stop`: set when the collect is abandoned."""
    objects = listing.result()  # the list-ahead's listing; its failure is the step's to report
    keys, _, _ = classify(objects)
    wanted = []
    for key in keys:
        info = objects[key]
        etag, size = known.get(key, (None, None))
        if unchanged({"etag": etag, "size": size}, info) or too_large(info.size) is not None:
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
