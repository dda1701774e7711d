"""One collect: every source surveyed, then the table's stacks one at a time (survey, stackstep),
committed in batches (Batch), then the export. It holds one stack and one batch at a time, never the
table, and a collect that adds a few runs reads, judges and writes only those."""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from analysis.collect import s3
from analysis.collect.lock import table_lock
from analysis.collect.manifest import MANIFEST_NAME, Manifest, ManifestDamaged, replay
from analysis.collect.sources import Prefetch, SpotPricer
from analysis.collect.stackstep import (
    StackChanges,
    StepContext,
    appended_step,
    step,
    unreadable_names,
)
from analysis.collect.survey import SourceView, survey_store
from analysis.collect.validation import Summary, classify, wrong_layout
from analysis.dataset.export import (
    export_current,
    export_table,
    remove_stale_temporaries,
    remove_table,
    table_is_whole,
    table_paths,
    write_table_batches,
)
from analysis.dataset.location import DiskFull, first_line, is_disk_full, resolve
from analysis.dataset.stackwise import TableView, commit, pricing_identity
from analysis.dataset.store import StoredRows
from analysis.interruptible import InterruptiblePool
from analysis.progress import Progress
from payload import layout
from payload.storage import StorageError, open_store
from payload.userdirs import user_dir

# A local table of at most this many rows gets results.parquet and results.csv after a collect that
# changed it; a larger one on request (`--export`): a rewrite costs as much as the table.
EXPORT_MAX_ROWS = 10_000

# A bucket's stacks listed this many steps ahead, each on its own thread: an S3 listing costs about as
# much as reading the stack's results, so with one ahead each step still waited for its listing.
LIST_AHEAD = 2


def collect(
    urls: list[str],
    table: str | Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    store_opener: Callable | None = None,
    spot_pricer: SpotPricer | None = None,
    full: bool = False,
    export: bool | None = None,
) -> tuple[Summary, Sequence[dict]]:
    """Collect runs from `urls` into the results dataset at `table` (a directory or a bucket prefix),
    writing only what changed. Returns the summary and the table's rows (one per run, read on first use).
    New spot runs are priced by `spot_pricer`. `export`: None writes results.parquet and results.csv
    beside a local table of at most EXPORT_MAX_ROWS rows (a larger one's stale export is removed), True
    whatever the size (a bucket's table: in the manifest's directory), False never. s3:// is read
    through obstore unless a `store_opener` is given; `workers`: requests in flight (default 128 there,
    10 in gs://'s thread pool). `full` lists every file of settled stacks again."""
    t0 = time.perf_counter()
    loc = resolve(table)
    out = manifest_home(loc)
    urls = list(urls)

    def once(full: bool) -> tuple[Summary, int]:
        """Survey, then every stack and the export: (summary, the table's row count)."""
        summary = Summary(sources=urls)
        views, not_found = _survey(urls, manifest, summary, store_opener, full)
        if not_found:  # runs were expected and some source held none: nothing is touched
            tv = TableView(loc)
            current = loc.local is not None and export_current(out, tv.version)
            summary.table = _names(loc, out, export is not False and current)
            return summary, tv.count()
        count, version = _collect_stacks(loc, views, manifest, summary, workers, spot_pricer, bar)
        _export(loc, out, summary, count, version, export)
        return summary, count

    # the objects alive before the collect frozen out of the garbage collector's scans (each full collection
    # would scan them all again: a third of the CPU of parsing a result); a caller's freeze is kept
    frozen = not gc.get_freeze_count()
    if frozen:
        gc.freeze()
    try:
        remove_stale_temporaries(out)
        manifest = Manifest(out / MANIFEST_NAME)
        bar = Progress(None, "collect", unit="obj", enabled=progress)
        try:
            try:  # damaged entries: every file listed and read again
                summary, count = once(not manifest.readable() or full)
            except ManifestDamaged:  # found past its first pages: started over, every file read again
                summary, count = once(True)
        finally:
            bar.close()
            manifest.close()
    except BaseException as exc:
        # what it committed is the table's: an export now behind it is removed (readers then read the table)
        with suppress(Exception):
            if loc.local is not None and table_is_whole(out) and not export_current(out, TableView(loc).version):
                remove_table(out)
        if isinstance(exc, Exception) and not isinstance(exc, DiskFull) and is_disk_full(exc):
            raise DiskFull(loc.text if loc.local is not None else str(out), first_line(exc)) from exc
        raise
    finally:
        if frozen:
            gc.unfreeze()
    summary.valid = count
    summary.seconds = time.perf_counter() - t0
    return summary, StoredRows(loc, count)


def _survey(urls, manifest: Manifest, summary: Summary, store_opener, full: bool):
    """Every source looked at once: ([SourceView], urls where runs were expected and none were found)."""
    views, not_found = [], []
    for url in urls:
        view = SourceView(
            url,
            settled={} if full else manifest.settled(url),
            manifest=manifest,
        )
        view.bulk = store_opener is None and s3.is_s3(url)  # many reads in flight through obstore
        try:
            loose = survey_store(view, s3.S3Bulk if view.bulk else store_opener or open_store)
        except StorageError as exc:  # an outage must not empty the table: its rows are kept
            view.failed = str(exc)
            summary.skipped.append({"key": url, "url": url, "reason": f"cannot list the bucket: {exc}"})
            summary.incomplete.append(f"{url}: cannot list the bucket")
        else:
            if not _found_runs(view, loose, summary):
                not_found.append(url)
        views.append(view)
    return views, not_found


def _found_runs(view: SourceView, loose: list[str], summary: Summary) -> bool:
    """False (said why) for a source with no runs where runs were expected: a missing or empty directory
    or prefix, or objects none in the layout. Files under runs/ but in no run directory are set aside."""
    url = view.url
    if view.prefixes:
        for s in classify(loose)[1]:
            summary.skipped.append({**s, "url": view.store.url_for(s["key"])})
        return True
    if loose:
        reason, short = wrong_layout(url, loose), "no runs in the expected layout"
    else:
        root = getattr(view.store, "root", None)  # payload.storage lists a missing directory as empty
        missing = isinstance(root, Path) and not root.exists()
        if not missing and urlparse(url).scheme in ("s3", "gs") and not urlparse(url).path.strip("/"):
            return True  # s3://bucket or gs://bucket: a place that exists on its own and may be empty
        where = "a directory that does not exist" if missing else "it holds nothing (empty, or a misspelt prefix?)"
        reason = f"no runs found under {url}: {where}; expected {layout.LAYOUT} there; the table is left as it was"
        short = "no runs found (empty, missing or misspelt?)"
    summary.skipped.append({"key": url, "url": url, "reason": reason})
    summary.incomplete.append(f"{url}: {short}")
    return False


def _collect_stacks(loc, views: list[SourceView], manifest: Manifest, summary: Summary, workers, spot_pricer, bar):
    """Every stack of the sources, the manifest and the table, one at a time, under the table's lock.
    Returns the table's (row count, version)."""
    urls = [v.url for v in views]
    with table_lock(loc):
        tv = TableView(loc)
        ok = [v for v in views if v.failed is None]
        known = {v.url: manifest.prefixes(v.url) | set(v.settled) for v in ok}
        in_table = {layout.stack_prefix(s) for s in tv.stacks() if layout.name_problem("stack name", s) is None}
        prefixes = sorted(set().union(*(v.prefixes for v in ok), *known.values(), in_table))
        in_step = manifest.table_version is not None and manifest.table_version == tv.version
        in_step = in_step and manifest.sources() <= set(urls)
        fast = {p for p in prefixes if in_step and _unchanged_everywhere(p, ok, known)}
        # the price catalog is looked at only when a stack is opened (as a collect with nothing new never was)
        identity = manifest.priced_with if len(fast) == len(prefixes) and manifest.priced_with else pricing_identity()
        if identity != manifest.priced_with:
            fast = set()  # priced under another catalog: every stack is compared, its rows priced again
        # in step with the table, priced alike and every source listed: a stack that only gained runs costs its new runs
        trusting = in_step and identity == manifest.priced_with and len(ok) == len(views)
        ctx = StepContext(views, manifest, tv, summary, identity, workers, spot_pricer, bar)
        batch = Batch(loc, ctx)
        stepped = [p for p in prefixes if p not in fast]
        # the next stacks a step lists, listed during this one
        following = {p: stepped[i + 1 : i + 1 + LIST_AHEAD] for i, p in enumerate(stepped)}
        with (
            InterruptiblePool(LIST_AHEAD, "collect-list-ahead") as ahead,
            InterruptiblePool(1, "collect-prefetch") as early,
        ):
            ctx.prefetch = Prefetch(early, manifest, workers)
            for prefix in prefixes:
                if prefix in fast:  # settled and unchanged everywhere: counted and its notes replayed, nothing read
                    for view in ok:
                        if prefix in view.unlisted:
                            replay(summary, view.settled[prefix])
                    continue
                for then in following[prefix]:
                    for view in ok:
                        view.list_ahead(then, ahead)
                ctx.prefetch.following = next(iter(following[prefix]), None)
                changes = appended_step(ctx, prefix, ok, known) if trusting else None
                batch.add(changes or step(ctx, prefix))
            for view in ok:
                view.ahead.clear()  # a listing a step did not need (its stack took another path)
                summary.skipped += [{**n, "url": view.url} for n in unreadable_names(view, layout.ROOT)]
            ctx.prefetch.jobs.clear()  # what no step took (its stack went another way)
        batch.flush()
        # journals read further for stacks that stayed settled
        manifest.finish({v.url: v.restamped for v in ok}, urls, tv.version, identity)
        return tv.count(), tv.version


COMMIT_ROWS = 10_000  # rows written or removed per commit
COMMIT_ENTRIES = 50_000  # manifest entries held before they are written


class Batch:
    """Several stacks' changes in one commit to the table (one per stack is slow, one per collect holds every
    row), then their manifest entries: a collect interrupted between batches loses nothing."""

    def __init__(self, loc, ctx: StepContext):
        self.loc, self.ctx = loc, ctx
        self.pending = StackChanges()

    def add(self, changes: StackChanges) -> None:
        """Committed once COMMIT_ROWS rows or COMMIT_ENTRIES manifest entries wait."""
        p = self.pending
        p.rows += changes.rows
        p.replacing |= changes.replacing
        p.deleted += changes.deleted
        p.entries += changes.entries
        p.removed += changes.removed
        p.settled.update(changes.settled)
        if len(p.rows) + len(p.deleted) >= COMMIT_ROWS or len(p.entries) >= COMMIT_ENTRIES:
            self.flush()

    def flush(self) -> None:
        p = self.pending
        written, refused = commit(self.loc, p.rows, p.deleted, p.replacing, self.ctx.identity)
        if written:
            self.ctx.table.refresh()
            self.ctx.summary.table_written = True
        if refused:
            self._set_aside(refused)
        self.ctx.manifest.write(p.entries, p.removed, p.settled, table_version=self.ctx.table.version)
        self.pending = StackChanges()

    def _set_aside(self, refused: list[tuple[dict, str]]) -> None:
        """Rows the table cannot hold, set aside with the reason (summary, manifest entry, settled record);
        a row re-priced from the table keeps its row."""
        entries = {(e.get("source"), e.get("key")): e for _, e in self.pending.entries if e.get("row") is not None}
        for row, reason in refused:
            entry = entries.get((row["source"], row["key"]))
            if entry is None:
                self.ctx.summary.skipped.append(
                    {"key": row["key"], "url": row["source"], "reason": f"kept the previous row: {reason}"}
                )
                continue
            entry.pop("row")
            entry["reason"] = reason
            note = {"key": entry["key"], "url": entry.get("url"), "reason": reason}
            self.ctx.summary.skipped.append(note)
            where = (entry["source"], layout.stack_prefix_of(entry["key"]))
            if (record := self.pending.settled.get(where)) is not None:
                self.pending.settled[where] = replace(record, notes=(*record.notes, note))


def _unchanged_everywhere(prefix: str, views: list[SourceView], known: dict[str, set[str]]) -> bool:
    """A stack settled and unchanged in every source that has it, and in no source it has left."""
    found = False
    for v in views:
        if prefix in v.unlisted:
            found = True
        elif prefix in v.prefixes or prefix in known[v.url]:
            return False
    return found


def _export(loc, out: Path, summary: Summary, count: int, version: int | None, export: bool | None) -> None:
    """The export (see collect's `export`), written when the table changed or it is missing, damaged or
    behind `version`; and where the table is named."""
    current = export_current(out, version)
    wanted = export if export is not None else (loc.local is not None and count <= EXPORT_MAX_ROWS)
    if wanted:
        if summary.table_written or not current:
            if version is not None:
                export_table(loc.uri, out)
            else:  # nothing was ever collected into the table
                write_table_batches([], out)
            summary.table_written = True
            current = True
    elif export is None and loc.local is not None and (summary.table_written or not current):
        remove_table(out)  # too large to rewrite on every collect: a stale export is never read
        current = False
    summary.table = _names(loc, out, current and export is not False)


def _names(loc, out: Path, exported: bool) -> dict[str, str]:
    """Where the table is: the dataset, and its exports when they are current."""
    return {**(table_paths(out) if exported else {}), "dataset": loc.text}


def manifest_home(loc) -> Path:
    """Where a table's collect manifest lives: a local table's directory; for a bucket's, this machine's
    cache (a new machine starts empty and writes nothing twice: the table says what it holds)."""
    if loc.local is not None:
        return loc.local
    return user_dir("cache") / "tables" / hashlib.sha256(loc.uri.encode()).hexdigest()[:16]
