"""One stack of a collect across every source: listed, its changed results read and judged against the
other copies of the same runs, and its difference with the table worked out. A collect's memory is bounded
by one step: nothing it holds outlives it but the changes it hands the batch and the summary's counts."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial

from analysis.collect.manifest import SettledStack, replay, runs_digest, runs_digest_with, settled_stack
from analysis.collect.sources import SpotPricer, bulk_read, download, entry_key, fetch, price_bulk, unchanged
from analysis.collect.survey import SourceView
from analysis.collect.trust import dedupe
from analysis.collect.validation import UNREADABLE_NAME, Summary, classify
from payload import layout
from payload.storage import ObjectInfo, StorageError


@dataclass
class StepContext:
    views: list[SourceView]
    manifest: object  # analysis.collect.manifest.Manifest
    table: object  # analysis.dataset.stackwise.TableView
    summary: Summary
    identity: str  # the price catalog rows are priced with now
    workers: int | None = None
    spot_pricer: SpotPricer | None = None
    bar: object = None  # analysis.progress.Progress (a no-op when off)
    stopped: dict = field(default_factory=dict)  # url -> why it stopped answering: not tried again
    prefetch: object = None  # analysis.collect.sources.Prefetch (set by the collect): the next stack's results


@dataclass
class StackChanges:
    rows: list[dict] = field(default_factory=list)  # collect rows to write
    replacing: bool = False  # some of them replace a row of the same object
    deleted: list[tuple[str, str, str]] = field(default_factory=list)  # (stack, source, key)
    entries: list[tuple[str, dict]] = field(default_factory=list)  # manifest entries to write
    removed: list[str] = field(default_factory=list)  # manifest entries to drop
    settled: dict[tuple[str, str], SettledStack | None] = field(default_factory=dict)


@dataclass
class _Stack:
    prefix: str
    old: dict[str, dict] = field(default_factory=dict)  # manifest entries (mkey -> entry)
    cached: dict[str, dict] = field(default_factory=dict)  # unchanged, not read again
    fresh: dict[str, dict] = field(default_factory=dict)  # read this time
    kept: set[str] = field(default_factory=set)  # read failed: the previous row stays
    todo: list = field(default_factory=list)  # (view, key, info) to read
    mode: dict[str, str] = field(default_factory=dict)  # url -> settled | listed | absent | failed
    objects: dict[str, dict] = field(default_factory=dict)  # url -> {key: info} of listed sources
    results: dict[str, set[str]] = field(default_factory=dict)  # url -> its current result keys here
    notes: dict[str, list[dict]] = field(default_factory=dict)  # url -> files set aside in it
    stamps: dict[str, str | None] = field(default_factory=dict)  # url -> file:// stack stamp before listing
    # url -> when the run directories were last listed, for a stack grown by its journal (not all listed)
    listed_at: dict[str, float] = field(default_factory=dict)

    @property
    def stack(self) -> str:
        return layout.stack_of(self.prefix)


def step(ctx: StepContext, prefix: str) -> StackChanges:
    """One stack across every source: list, read what changed, judge, and the changes to commit."""
    st = _Stack(prefix)
    for view in ctx.views:
        _gather(ctx, st, view)
    have = ctx.table.keys(st.stack)
    _widen(ctx, st, have)
    return _judge(ctx, st, have)


def _judge(ctx: StepContext, st: _Stack, have: dict) -> StackChanges:
    """Read what the step must, judge it, and the changes (`have`: the table's keys of the stack)."""
    _read(ctx, st)
    judged = Summary(sources=[v.url for v in ctx.views])
    winners = dedupe({k: e for k, e in st.fresh.items() if k not in st.kept}, judged)
    _note(ctx, st, judged.skipped)
    changes = _table_changes(ctx, st, have, winners)
    _manifest_changes(st, changes)
    return changes


def appended_step(ctx: StepContext, prefix: str, views: list[SourceView], known: dict[str, set[str]]):
    """A settled stack of one source that only gained run directories: only those listed, read and judged
    (the table, in step with the manifest, has no row of them). None when the whole step is needed: another
    source has it (`known`: each source's stacks in the manifest), a run directory the manifest knows is
    gone, or one cannot be listed."""
    owners = [v for v in views if prefix in v.prefixes or prefix in known[v.url]]
    if len(owners) != 1 or owners[0].lister is None:
        return None
    view = owners[0]
    now_runs = view.grown.get(prefix)  # None: found by its journal, or not grown
    if prefix in view.journaled:  # the runs its journal names that the manifest lacks
        new_runs = view.journaled[prefix]
    elif now_runs is None:
        return None
    else:
        old_runs = run_dirs_of(prefix, ctx.manifest.stack_keys(view.url, prefix))
        new_runs = [r for r in now_runs if r not in old_runs]
        # run directory names are unique: every known run is still there when the ones not new are as many
        if len(old_runs) != view.settled[prefix].runs or len(now_runs) - len(new_runs) != len(old_runs):
            return None
    settled, st = view.settled[prefix], _Stack(prefix)
    try:
        if view.lister.new_runs_cheaper(len(new_runs), settled.runs + len(new_runs)):
            objects = _listed_runs(view, prefix, new_runs)
        else:  # a bucket: fewer requests to list the stack whole, its new runs' files kept
            wanted = set(new_runs)
            objects = {k: i for k, i in view.objects(prefix).items() if run_dirs_of(prefix, [k]) <= wanted}
    except StorageError:
        return None
    found = run_dirs_of(prefix, objects)
    new_runs = [r for r in new_runs if r in found]  # a journal may name a run no longer (or never) there
    for other in ctx.views:
        if other is not view:
            st.mode[other.url], st.results[other.url] = "absent", set()
    st.notes[view.url] = list(settled.notes)
    _take_listing(ctx, st, view, objects, {})
    ctx.summary.runs += settled.runs
    ctx.summary.cached += settled.runs
    changes = _judge(ctx, st, {})
    grown = changes.settled.get((view.url, prefix))
    if grown is not None:  # the new runs are settled too: the whole stack stays settled
        changes.settled[(view.url, prefix)] = SettledStack(
            settled.runs + grown.runs,
            # an old digest of no known kind cannot be extended: of the runs as listed (or the manifest's and the new)
            runs_digest_with(settled.digest, new_runs)
            or runs_digest(
                now_runs
                if now_runs is not None
                else [*run_dirs_of(prefix, ctx.manifest.stack_keys(view.url, prefix)), *new_runs]
            ),
            grown.notes,
            settled.listed_at,
            view.stamps.get(prefix),
        )
    elif not new_runs:  # the journal named only runs that are not there: the stack is as it was
        changes.settled[(view.url, prefix)] = replace(settled, stamp=view.stamps.get(prefix) or settled.stamp)
    return changes


def _gather(ctx: StepContext, st: _Stack, view: SourceView) -> None:
    """One source's part of the stack: settled (carried over), listed (cached or to read), absent, or failed."""
    url, prefix, summary = view.url, st.prefix, ctx.summary
    if view.failed is not None:
        st.mode[url] = "failed"
        return
    old = ctx.manifest.stack_entries(url, prefix)
    st.old.update(old)
    if prefix in view.unlisted:
        st.mode[url] = "settled"
        replay(summary, view.settled[prefix])
        st.cached.update(old)
        st.results[url] = {e["key"] for e in old.values()}
        return
    if prefix not in view.prefixes:
        st.mode[url], st.results[url] = "absent", set()
        return
    view.take_stamp(prefix)  # before the listing: a change during it shows next time
    try:
        known: dict[str, list[dict]] = {}  # run id -> its entries, for a stack that gained runs
        if prefix in view.grown or prefix in view.journaled:
            for e in old.values():
                if (run := _run_of(e["key"])) is not None:
                    known.setdefault(run[1], []).append(e)
        if prefix in view.journaled and prefix not in view.grown:  # the runs it holds, and those announced
            view.grown[prefix] = [*known, *(r for r in view.journaled[prefix] if r not in known)]
        runs = view.grown.get(prefix)
        # a bucket lists a stack of many runs whole in a few pages: cheaper than a request per new run directory
        if runs is not None and view.lister.new_runs_cheaper(sum(1 for r in runs if r not in known), len(runs)):
            objects = _grown(view, prefix, old, known, st)
            if prefix in view.journaled:
                st.listed_at[url] = view.settled[prefix].listed_at
        else:
            objects = view.objects(prefix)
    except StorageError as exc:
        st.mode[url] = "failed"
        summary.skipped.append({"key": view.store.url_for(prefix), "url": url, "reason": f"cannot list: {exc}"})
        summary.incomplete.append(f"{view.store.url_for(prefix)}: cannot list")
        return
    _take_listing(ctx, st, view, objects, old)


def _take_listing(ctx: StepContext, st: _Stack, view: SourceView, objects: dict, old: dict[str, dict]) -> None:
    """A listed source's files: counted, set aside, cached (unchanged since `old`) or to read."""
    url, summary = view.url, ctx.summary
    st.stamps[url] = view.stamps.get(st.prefix)
    st.mode[url], st.objects[url] = "listed", objects
    keys, set_aside, n_runs = classify(objects)
    set_aside += unreadable_names(view, st.prefix)
    summary.runs += n_runs
    st.notes.setdefault(url, []).extend({**s, "url": view.store.url_for(s["key"])} for s in set_aside)
    st.results[url] = set(keys)
    for key in keys:
        mkey, info = entry_key(url, key), objects[key]
        if unchanged(o := old.get(mkey), info):
            st.cached[mkey] = o
        else:
            st.todo.append((view, key, info))


def unreadable_names(view: SourceView, prefix: str) -> list[dict]:
    """Notes of the files under `prefix` whose name is not text (a local lister notes them), each given once."""
    odd = getattr(view.lister, "unreadable", None)
    if not odd:
        return []
    mine = sorted(k for k in odd if k.startswith(prefix))
    odd.difference_update(mine)
    return [{"key": k, "reason": UNREADABLE_NAME} for k in mine]


def _grown(view: SourceView, prefix: str, old: dict[str, dict], known: dict[str, list[dict]], st: _Stack) -> dict:
    """A settled stack that gained or lost runs: its new run directories listed, the others'
    files as the manifest knows them (final results never change)."""
    objects = _listed_runs(view, prefix, [r for r in view.grown[prefix] if r not in known])
    for run_id in view.grown[prefix]:
        if run_id in known:
            objects.update((e["key"], _info_of(e)) for e in known[run_id])
    kept_runs = set(view.grown[prefix]) & set(known)
    old_keys = {e["key"] for e in old.values()}
    st.notes[view.url] = [
        n
        for n in view.settled[prefix].notes
        if n["key"] not in old_keys and (_run_of(n["key"]) or ("", ""))[1] in kept_runs
    ]
    return objects


def _listed_runs(view: SourceView, prefix: str, run_ids: list[str]) -> dict:
    """{key: ObjectInfo} of some run directories, as many listed at a time as the lister takes. Raises StorageError."""
    objects: dict = {}
    prefixes = [f"{prefix}{run_id}/" for run_id in run_ids]
    with ThreadPoolExecutor(max_workers=max(1, min(view.lister.listing_threads, len(prefixes)))) as pool:
        for found in pool.map(view.objects, prefixes):
            objects.update(found)
    return objects


def _widen(ctx: StepContext, st: _Stack, have: dict) -> None:
    """Read again every other copy of a run that changed (a new copy may win or lose against it),
    and any result whose row the table lacks (another machine's collect, or removed)."""
    touched = {_run_of(key) for _, key, _ in st.todo} | {_run_of(e["key"]) for e in st.fresh.values()}
    views = {v.url: v for v in ctx.views}
    for mkey, e in list(st.cached.items()):
        in_table = e.get("has_row") and "reason" not in e
        missing = in_table and (e["source"], e["key"]) not in have
        if missing or (e.get("has_row") and _run_of(e["key"]) in touched):
            del st.cached[mkey]
            view = views[e["source"]]
            info = st.objects.get(e["source"], {}).get(e["key"]) or _info_of(e)
            st.todo.append((view, e["key"], info))
    ctx.summary.cached += sum(1 for e in st.cached.values() if st.mode.get(e["source"]) == "listed")


def _read(ctx: StepContext, st: _Stack) -> None:
    """The results to read, read; failures settled."""
    ctx.bar.set_total((ctx.bar.total or 0) + len(st.todo))
    for mkey, entry in _downloads(ctx, st):
        st.fresh[mkey] = entry
        ctx.bar.advance()
    for mkey, entry in st.fresh.items():
        ctx.summary.new += 1
        if not entry.pop("failed", False):
            continue
        # not read: its previous row stays (said so), else it is set aside for now
        ctx.summary.incomplete.append(f"{entry['url']}: {entry['reason']}")
        previous = st.old.get(mkey)
        if previous is not None and previous.get("has_row") and "reason" not in previous:
            st.kept.add(mkey)
            why = f"kept the previous row: {entry['reason']}"
            ctx.summary.skipped.append({"key": entry["key"], "url": entry.get("url"), "reason": why})


def _downloads(ctx: StepContext, st: _Stack):
    """(mkey, entry) of st.todo: local files in this thread, a bulk source's through analysis.collect.s3
    (then the next stack's prefetch starts), the others' through the thread pool."""
    local, pooled = [], []
    for view, key, info in st.todo:
        if not view.bulk:
            (local if type(view.store).__name__ == "FileStore" else pooled).append((view.store, view.url, key, info))
    yield from (fetch(item, ctx.stopped, ctx.spot_pricer) for item in local)  # in this thread: a read is CPU
    yield from download(pooled, ctx.workers, ctx.spot_pricer, ctx.stopped)
    start_next = partial(ctx.prefetch.start, ctx.views)
    for view in ctx.views:
        mine = [(key, info) for v, key, info in st.todo if v is view and view.bulk]
        ready = ctx.prefetch.take(view.url, st.prefix)
        if not mine:
            continue
        to_price: list = []
        got = dict(bulk_read(view.store, view.url, mine, ctx.workers, to_price, ready, start_next))
        if ctx.spot_pricer is not None and to_price:
            price_bulk(got, to_price, ctx.spot_pricer)
        yield from got.items()
    start_next()  # when nothing of this stack was read in bulk (else a no-op: started once)


def _note(ctx: StepContext, st: _Stack, judged: list[dict]) -> None:
    """Every file set aside in the stack (found now, or cached with its reason), in the summary and by
    source (for its settled record)."""
    summary = ctx.summary
    for notes in st.notes.values():
        summary.skipped.extend(notes)
    summary.skipped.extend(judged)
    source_of = {e.get("url"): e["source"] for e in st.fresh.values()}
    for note in judged:
        st.notes.setdefault(source_of.get(note.get("url")), []).append(note)
    for e in st.cached.values():
        if "reason" in e and st.mode.get(e["source"]) == "listed":
            note = {"key": e["key"], "url": e.get("url"), "reason": e["reason"]}
            summary.skipped.append(note)
            st.notes.setdefault(e["source"], []).append(note)
    reread = {e["key"] for e in st.fresh.values()}
    for view in ctx.views:  # a settled source's notes were replayed; those about a result read again go
        if st.mode.get(view.url) == "settled" and reread:
            for n in view.settled[st.prefix].notes:
                if n["key"] in reread and n in summary.skipped:
                    summary.skipped.remove(n)


def _table_changes(ctx: StepContext, st: _Stack, have: dict, winners: list[dict]) -> StackChanges:
    """The rows to write (new, changed, priced under another catalog) and to remove."""
    changes = StackChanges()
    keep: set[tuple[str, str]] = set()
    for row in winners:
        k = (row["source"], row["key"])
        keep.add(k)
        if k not in have or have[k] != (row["etag"], ctx.identity):
            changes.rows.append(row)
            changes.replacing |= k in have
    for e in st.cached.values():
        if e.get("has_row") and "reason" not in e:
            keep.add((e["source"], e["key"]))
    keep |= {(st.fresh[m]["source"], st.fresh[m]["key"]) for m in st.kept}
    # Only a source this collect listed can lose a row (its object is gone); a source that failed, or
    # one this collect was not given, keeps every row it has (an outage or a typo never empties the
    # table) unless a copy of the same run read now replaces it: one row per run.
    listed = {url for url, mode in st.mode.items() if mode in ("listed", "absent")}
    reread = {(e["source"], e["key"]) for e in st.fresh.values()}
    won = {_run_of(row["key"]) for row in winners} - {None}
    for k in have:
        if k[0] not in listed and k not in reread and _run_of(k[1]) not in won:
            keep.add(k)
    changes.deleted = [(st.stack, *k) for k in have if k not in keep]
    stale = [k for k in keep if k in have and have[k][1] != ctx.identity and k not in reread]
    if stale:  # priced under another catalog: priced again from the row the table holds
        changes.rows += ctx.table.rows(st.stack, stale)
        changes.replacing = True
    return changes


def _manifest_changes(st: _Stack, changes: StackChanges) -> None:
    """The entries read now, those whose object is gone, and each listed source's settled record."""
    changes.entries = [(m, e) for m, e in st.fresh.items() if m not in st.kept]
    current = {entry_key(url, k) for url, keys in st.results.items() for k in keys}
    changes.removed = [m for m, e in st.old.items() if m not in current and st.mode.get(e["source"]) != "failed"]
    now = time.time()

    def status(url: str, key: str) -> str | None:
        """The status of a result of `url` as it stands now, None without a row."""
        mkey = entry_key(url, key)
        if mkey in st.kept:
            return None
        if (e := st.fresh.get(mkey)) is not None:
            return (e.get("row") or {}).get("status")
        e = st.cached.get(mkey)
        return e.get("status") if e is not None and e.get("has_row") else None

    for url, mode in st.mode.items():
        if mode == "absent":
            changes.settled[(url, st.prefix)] = None
        elif mode == "listed":
            notes = sorted(st.notes.get(url, []), key=lambda n: (str(n.get("key")), str(n.get("reason"))))
            record = settled_stack(st.objects[url], partial(status, url), notes, st.listed_at.get(url, now))
            stamp = st.stamps.get(url)
            changes.settled[(url, st.prefix)] = None if record is None else replace(record, stamp=stamp)


def run_dirs_of(prefix: str, keys: Iterable[str]) -> set[str]:
    """The run directories keys of the stack `prefix` lie in (no parse: a million keys are cheap)."""
    start = len(prefix)
    return {key[start:].split("/", 1)[0] for key in keys}


def _run_of(key: str) -> tuple[str, str] | None:
    m = layout.parse_key(key)
    return None if m is None else (m.stack, m.run_id)


def _info_of(entry: dict):
    """The ObjectInfo of a result known only from the manifest (its stack was not listed)."""
    return ObjectInfo(entry["key"], int(entry.get("size") or 0), entry.get("etag"), None)
