"""Collect every run's result.json from one or more results buckets.

Lists each bucket once, downloads only objects whose ETag (S3), etag /
generation (GCS) or size+mtime (file) changed since the last collect, and
keeps a manifest (analysis.manifest, SQLite) in the output directory so the
next collect fetches nothing it already has. s3:// buckets take the bulk path
(analysis.bulk: obstore, ~128 requests in flight, listing split by stack;
a settled stack is listed by run directory, not file by file);
gs:// and file:// go through payload.storage in a bounded thread pool. Each object is judged on its
own: a corrupt, partial, unknown or duplicate file is set aside with the
reason and collection goes on. Writes the runs table (Parquet + CSV).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from analysis.fastjson import loads_finite
from analysis.manifest import MANIFEST_NAME, Manifest, SettledStack
from analysis.migrations import MigrationError, migrate
from analysis.table import result_to_row
from payload import layout

TABLE_STEM = "results"
# The SDK clients keep 10 pooled connections by default (botocore
# max_pool_connections, requests' pool_maxsize); more threads than that only
# churn connections. The bulk path (s3://) defaults to bulk.DEFAULT_BULK_WORKERS.
DEFAULT_WORKERS = 10

# What a run directory may hold besides result.json (bucket layout: payload.layout).
KNOWN_RUN_FILES = layout.RUN_FILES
KNOWN_RUN_DIRS = layout.RUN_DIRS


@dataclass
class Summary:
    sources: list[str]
    runs: int = 0
    valid: int = 0
    new: int = 0
    cached: int = 0
    skipped: list[dict] = field(default_factory=list)
    table: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    table_written: bool = False
    settled_stacks: int = 0  # s3:// stacks checked by run directory only (analysis.manifest)
    # why this collect is incomplete (a location not listed, a download failed): the exit code says so
    incomplete: list[str] = field(default_factory=list)

    def set_aside(self) -> list[dict]:
        """The set-aside files by key: the same order however they were found (listed, or carried over)."""
        return sorted(self.skipped, key=lambda s: (str(s.get("key")), str(s.get("reason"))))

    def to_dict(self) -> dict:
        return {
            "runs": self.runs,
            "valid": self.valid,
            "new": self.new,
            "cached": self.cached,
            "skipped": self.set_aside(),
            "sources": self.sources,
            "table": self.table,
            "table_written": self.table_written,
            "settled_stacks": self.settled_stacks,
            "complete": not self.incomplete,
            "incomplete": self.incomplete,
            "seconds": round(self.seconds, 3),
        }


@lru_cache(maxsize=1)
def _fast_validator():
    """The payload's schema compiled by jsonschema-rs (Rust; about 0.008 ms a
    result on this machine, against 0.04 for fastjsonschema), or None
    if not installed. Its `is_valid` answers only yes or no."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    from payload.schema import load_schema

    return jsonschema_rs.validator_for(load_schema())


def validate(result: dict) -> None:
    """Accept what the compiled schema accepts; anything it rejects (or cannot
    read, such as an integer beyond 64 bits) goes to the payload's own
    validator, which has the final word and the error messages."""
    from payload.schema import validate_result

    fast = _fast_validator()
    if fast is not None:
        try:
            if fast.is_valid(result):
                return
        except Exception:  # noqa: BLE001,S110 - whatever it cannot read, the payload's validator judges
            pass
    validate_result(result)


SpotPricer = Callable[[dict], dict]


def spot_history_pricer(mode: str = "auto") -> SpotPricer | None:
    """The spot-history pricer for spot runs on clouds that keep a spot price
    history (analysis.prices.spot.price_run), or None when `mode` is "off".
    With "auto" it is used only when that cloud's credentials resolve; the
    check runs once per cloud, at its first spot run."""
    if mode == "off":
        return None
    state: dict[str, bool] = {}

    def pricer(result: dict) -> dict | None:
        from analysis.price.spot import price_run
        from infra import clouds

        provider = (result.get("offering") or {}).get("provider")
        history = clouds.get(provider).spot_history() if clouds.is_cloud(provider) else None
        if history is None:
            return None
        if mode == "auto" and provider not in state:
            state[provider] = history.has_credentials()
        if mode == "auto" and not state[provider]:
            return None
        return price_run(result)

    return pricer


def _keeps_spot_history(provider: str | None) -> bool:
    from infra import clouds

    return clouds.is_cloud(provider) and clouds.get(provider).spot_history() is not None


def attach_spot_history(row: dict, priced: dict | None) -> dict:
    """Store the spot price series each attempt paid (from EC2's history) in the
    row's billing windows, where pricing time-weights them over the window."""
    if not priced:
        return row
    series = {a["attempt"]: a.get("series") for a in priced.get("attempts", [])}
    windows = json.loads(row["attempts_json"])
    for w in windows:
        if series.get(w["attempt"]):
            w["spot_prices"] = [list(p) for p in series[w["attempt"]]]
            w["spot_price_source"] = next(a["source"] for a in priced["attempts"] if a["attempt"] == w["attempt"])
    row["attempts_json"] = json.dumps(windows, separators=(",", ":"))
    row["spot_price_method"] = priced.get("method")
    row["spot_price_warnings"] = "; ".join(priced.get("warnings") or []) or None
    return row


def parse_result(
    data: bytes, *, source: str, key: str, etag: str | None, spot_pricer: SpotPricer | None = None
) -> dict:
    """Bytes of a result.json -> row. Raises ValueError with the reason.
    Spot runs are priced from their cloud's spot history when `spot_pricer` is given."""
    row, result = _parse(data, source=source, key=key, etag=etag)
    return price_spot(row, result, spot_pricer)


def price_spot(row: dict, result: dict, spot_pricer: SpotPricer | None) -> dict:
    if spot_pricer is not None and row["market"] == "spot" and _keeps_spot_history(row["provider"]):
        row = attach_spot_history(row, spot_pricer(result))
    return row


def _parse(data, *, source: str, key: str, etag: str | None) -> tuple[dict, dict]:
    """(row, migrated result) of one result.json's bytes; ValueError with the reason."""
    from payload.schema import ResultValidationError

    data = bytes(data)
    if not data.strip():
        raise ValueError("corrupt: empty file (upload interrupted?)")
    try:
        raw, finite = loads_finite(data)
    except UnicodeDecodeError:
        raise ValueError("corrupt: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"corrupt: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated upload?)"
        ) from None
    try:
        result, version = migrate(raw)
        validate(result)
    except MigrationError as exc:
        raise ValueError(f"unknown schema: {exc}") from None
    except ResultValidationError as exc:
        problems = exc.problems[:5] + ([f"... {len(exc.problems) - 5} more"] if len(exc.problems) > 5 else [])
        raise ValueError("invalid: " + "; ".join(problems)) from None
    # a document orjson read holds no NaN or infinity (it refuses them); a migrated one is checked again
    row = result_to_row(
        result,
        source=source,
        key=key,
        etag=etag,
        schema_version_read=version,
        check_finite=not (finite and result is raw),
    )
    return row, result


PARTIAL_UPLOAD = "partial: temporary upload file"
UNKNOWN_RUN_FILE = "unknown file in a run directory (expected result.json, events.jsonl, epochs.csv, checkpoints/)"


def run_file_problem(rest: str) -> str | None:
    """Why a file of a run directory (other than result.json) is set aside, or None for a known one."""
    if rest in KNOWN_RUN_FILES or rest.startswith(KNOWN_RUN_DIRS):
        return None
    if rest.split("/")[-1].startswith(".") or rest.endswith((".tmp", ".part")):
        return PARTIAL_UPLOAD
    return UNKNOWN_RUN_FILE


def classify(keys: Iterable[str]) -> tuple[list[str], list[dict], int]:
    """(result keys, set-aside files, number of run directories) from a
    bucket listing. Only keys under runs/ are ours; anything else is left alone."""
    results, skipped, runs = [], [], {}
    for key in keys:
        m = layout.parse_key(key)
        if m is None:
            if key.startswith(layout.ROOT):
                skipped.append({"key": key, "reason": "unknown file: not inside runs/<stack>/<run-id>/"})
            continue
        run = runs.setdefault((m.stack, m.run_id), {"result": False, "files": []})
        if m.is_result:
            run["result"] = True
            results.append(key)
        elif (why := run_file_problem(m.rest)) is None:
            run["files"].append(m.rest)
        else:
            skipped.append({"key": key, "reason": why})
    for (stack, run_id), run in runs.items():
        if not run["result"]:
            found = ", ".join(sorted({f.split("/")[0] for f in run["files"]})) or "nothing"
            skipped.append(
                {
                    "key": layout.run_prefix(stack, run_id),
                    "reason": f"partial run: no result.json (still running, or stopped before writing it); has {found}",
                }
            )
    return results, skipped, len(runs)


def collect(
    urls: list[str],
    out_dir: str | Path,
    *,
    workers: int | None = None,
    progress: bool = False,
    store_opener: Callable | None = None,
    spot_pricer: SpotPricer | None = None,
    bulk: bool | None = None,
    full: bool = False,
) -> tuple[Summary, list[dict]]:
    """Collect runs from `urls` into `out_dir`. Returns the summary and the
    table rows (valid, de-duplicated by run id). New AWS spot runs are priced
    from EC2's spot price history through `spot_pricer` (see spot_history_pricer);
    cached rows keep the series they were collected with.

    s3:// URLs take the bulk path (analysis.bulk) unless `bulk` is False or a
    `store_opener` is given (tests wrap stores to watch each download);
    `workers` is the number of requests in flight (default 128 there, 10 in
    the thread pool of the other stores). On the bulk path a settled stack
    (analysis.manifest) is not listed file by file while its run directories
    stay the same; `full` lists every file again."""
    from analysis import bulk as bulk_mod
    from payload.storage import ObjectNotFound, StorageError, open_store

    opener = store_opener or open_store
    t0 = time.perf_counter()
    out = Path(out_dir)
    remove_stale_temporaries(out)
    manifest = Manifest(out / MANIFEST_NAME)
    try:
        entries: dict[str, dict] = {}
        summary = Summary(sources=list(urls))
        todo: list[tuple[object, str, str, object]] = []  # (store, source url, key, ObjectInfo)
        to_price: list[tuple[str, dict]] = []  # (mkey, migrated result) of bulk-read spot runs
        failed: set[str] = set()  # mkeys whose download failed this time
        settled_before: dict[str, dict[str, SettledStack]] = {}  # source -> stack prefix -> as stored
        unlisted: dict[str, list[str]] = {}  # source -> settled stacks whose files were not listed
        settled_now: dict[str, dict[str, SettledStack]] = {}  # what the manifest will hold
        nothing_listed = True  # every source took the bulk path and every stack in it was settled
        deferred: list[str] = []  # such sources, not yet carried over (the stored outcome may answer for them)
        # every stack of every source settled at the end: only then may the outcome answer a later collect
        # (a stack that was not settled may vanish, and settled stacks alone would not show it)
        all_settled = True
        bar = _Bar(progress)

        def cached(url: str, info) -> dict | None:
            old = manifest.entries.get(f"{url}|{info.key}")
            if old is not None and info.etag and old.get("etag") == info.etag and old.get("size") == info.size:
                return old
            return None

        def classified(url: str, store, listing: dict, settled_runs: int = 0) -> list[str]:
            result_keys, set_aside, n_runs = classify(listing)
            if listing and n_runs + settled_runs == 0:
                # objects, but none in the layout: a wrong prefix, not an empty bucket; keep the old rows
                summary.skipped.append({"key": url, "url": url, "reason": wrong_layout(url, listing)})
                summary.incomplete.append(f"{url}: no runs in the expected layout")
                entries.update({k: v for k, v in manifest.entries.items() if v.get("source") == url})
                return []
            summary.runs += n_runs
            for s in set_aside:
                summary.skipped.append({**s, "url": store.url_for(s["key"])})
            return result_keys

        def keep_old(url: str, exc: Exception) -> None:
            summary.skipped.append({"key": url, "url": url, "reason": f"cannot list the bucket: {exc}"})
            summary.incomplete.append(f"{url}: cannot list the bucket")
            # keep what we had from it: an outage must not empty the table
            entries.update({k: v for k, v in manifest.entries.items() if v.get("source") == url})

        def settle(mkey: str, entry: dict) -> None:
            """Record one downloaded object; a failed download keeps the row it had."""
            if entry.pop("failed", False):
                failed.add(mkey)
                why = entry["reason"]
                summary.incomplete.append(f"{entry['url']}: {why}")
                previous = manifest.entries.get(mkey)
                if previous is not None and "row" in previous:
                    entry = previous
                    summary.skipped.append(
                        {"key": entry["key"], "url": entry.get("url"), "reason": f"kept the previous row: {why}"}
                    )
            entries[mkey] = entry
            summary.new += 1

        for url in urls:
            if store_opener is None and bulk is not False and bulk_mod.available(url):
                settled_before[url] = {} if full else manifest.settled(url)
                now = time.time()
                try:
                    source = bulk_mod.S3Bulk(url)
                    trusted = {p: s.digest for p, s in settled_before[url].items() if s.fresh(now)}
                    priced: list[tuple[str, dict]] = []  # this source's spot runs: priced only if it listed whole
                    listing, got, unlisted[url] = _bulk_fetch(source, url, cached, workers, bar, priced, trusted)
                except StorageError as exc:
                    keep_old(url, exc)
                    nothing_listed = all_settled = False
                    continue
                if not listing and not unlisted[url]:
                    try:  # nothing under runs/: an empty bucket, or the wrong place?
                        elsewhere = source.sample()
                    except StorageError as exc:
                        keep_old(url, exc)
                        nothing_listed = all_settled = False
                        continue
                    if elsewhere:  # the wrong-layout error, and the old rows kept
                        classified(url, source, dict.fromkeys(elsewhere))
                        nothing_listed = all_settled = False
                        continue
                if not listing and set(unlisted[url]) == set(settled_before[url]):
                    deferred.append(url)  # nothing listed file by file, no stack gone
                    continue
                to_price.extend(priced)
                nothing_listed = False
                settled_runs = _keep_unlisted(
                    url, unlisted[url], settled_before[url], manifest.entries, entries, summary
                )
                for key in classified(url, source, listing, settled_runs):
                    mkey = f"{url}|{key}"
                    if mkey in got:
                        settle(mkey, got[mkey])
                    else:
                        entries[mkey] = cached(url, listing[key])
                        summary.cached += 1
                settled_now[url] = {p: settled_before[url][p] for p in unlisted[url]}
                settled_now[url].update(_settled_stacks(url, listing, entries, failed, source, now))
                if any(layout.stack_prefix_of(k) not in settled_now[url] for k in listing):
                    all_settled = False
                continue
            nothing_listed = all_settled = False
            try:
                store = opener(url)
                listing = {o.key: o for o in store.list()}
            except StorageError as exc:
                keep_old(url, exc)
                continue
            for key in classified(url, store, listing):
                old = cached(url, listing[key])
                if old is not None:
                    entries[f"{url}|{key}"] = old
                    summary.cached += 1
                else:
                    todo.append((store, url, key, listing[key]))

        outcome = manifest.outcome()
        if nothing_listed and outcome and outcome.get("sources") == list(urls) and table_is_whole(out):
            # nothing new anywhere: the last collect's table and judgement stand
            rows = _answer_from_manifest(manifest, outcome, settled_before, summary, out)
            if rows is not None:
                summary.seconds = time.perf_counter() - t0
                return summary, rows
        for url in deferred:  # carried over from the manifest, and judged again below with the rest
            _keep_unlisted(url, unlisted[url], settled_before[url], manifest.entries, entries, summary)
            settled_now[url] = dict(settled_before[url])
        if manifest.damaged and any(unlisted.values()):
            # the settled stacks' rows were in the unreadable part: list and read every file
            bar.close()
            manifest.close()
            return collect(
                urls,
                out_dir,
                workers=workers,
                progress=progress,
                store_opener=store_opener,
                spot_pricer=spot_pricer,
                bulk=bulk,
                full=True,
            )

        stopped: dict[str, str] = {}  # source -> why it stopped answering: detected once, not per object

        def fetch(item) -> tuple[str, dict]:
            store, url, key, info = item
            entry = {"source": url, "key": key, "url": store.url_for(key), "etag": info.etag, "size": info.size}
            if url in stopped:
                return f"{url}|{key}", {**entry, "etag": None, "failed": True, "reason": f"not tried: {stopped[url]}"}
            try:
                data = store.get_bytes(key)
            except ObjectNotFound as exc:  # deleted since the listing: this object only
                return f"{url}|{key}", {**entry, "etag": None, "failed": True, "reason": f"download failed: {exc}"}
            except StorageError as exc:
                # not cached: the next collect tries again; the source's other objects are not tried
                stopped.setdefault(url, f"{url} stopped answering ({exc})")
                return f"{url}|{key}", {**entry, "etag": None, "failed": True, "reason": f"download failed: {exc}"}
            try:
                entry["row"] = parse_result(data, source=url, key=key, etag=info.etag, spot_pricer=spot_pricer)
            except ValueError as exc:
                entry["reason"] = str(exc)
            except Exception as exc:  # noqa: BLE001 - one odd file must not stop the collect
                # not cached: a failure in spot pricing (the cloud's API) is tried again next time
                entry.update(etag=None, reason=f"unreadable: {type(exc).__name__}: {exc}")
            return f"{url}|{key}", entry

        bar.add(len(todo))
        if todo:
            with ThreadPoolExecutor(max_workers=max(1, min(workers or DEFAULT_WORKERS, len(todo)))) as pool:
                for fut in as_completed([pool.submit(fetch, item) for item in todo]):
                    settle(*fut.result())
                    bar.update()
        bar.close()
        if spot_pricer is not None and to_price:
            unpriced = _price_bulk(entries, to_price, spot_pricer)
            for mkey in unpriced:  # a stack with a run to price again is not settled
                e = entries[mkey]
                if settled_now.get(e["source"], {}).pop(layout.stack_prefix_of(e["key"]), None) is not None:
                    all_settled = False

        n_skipped, dropped = len(summary.skipped), set()
        rows = _dedupe(entries, summary, dropped)
        summary.table = table_paths(out)
        if summary.incomplete and not rows and any("row" in e for e in manifest.entries.values()):
            # a failed or mistaken collect never replaces a non-empty table with an empty one
            rows = _dedupe(manifest.entries, Summary(sources=[]))
            summary.valid = len(rows)
            summary.seconds = time.perf_counter() - t0
            return summary, rows
        summary.valid = len(rows)
        fingerprint = _fingerprint(entries)
        if fingerprint != manifest.table_fingerprint or not table_is_whole(out):
            write_table(rows, out)
            summary.table_written = True
        old_entries = manifest.entries
        changed = [k for k, e in entries.items() if old_entries.get(k) is not e]
        removed = [k for k in old_entries if k not in entries]
        judged = summary.skipped[n_skipped:]  # what de-duplication set aside, and why
        new_outcome = {"sources": list(urls), "dropped": sorted(dropped), "skipped": judged}
        # only what changed is written: at 100,000 runs the manifest is about 200 MB
        manifest.update(
            entries,
            changed,
            removed,
            fingerprint,
            settled=settled_now,
            outcome=new_outcome if all_settled and not summary.incomplete else None,
        )
    finally:
        manifest.close()
    summary.seconds = time.perf_counter() - t0
    return summary, rows


def _keep_unlisted(url, prefixes, settled, old_entries, entries, summary) -> int:
    """Carry the entries, run count and set-aside notes of `url`'s settled
    stacks that were not listed file by file over from the manifest; returns their runs."""
    if not prefixes:
        return 0
    wanted = set(prefixes)
    for mkey, e in old_entries.items():
        if e.get("source") == url and layout.stack_prefix_of(e["key"]) in wanted:
            entries[mkey] = e
            summary.cached += 1
    return _count_settled(summary, (settled[p] for p in prefixes))


def _count_settled(summary: Summary, stacks: Iterable[SettledStack]) -> int:
    """Add settled stacks carried over from the manifest to `summary` (stacks,
    runs, set-aside notes); returns their runs."""
    runs = 0
    for s in stacks:
        summary.settled_stacks += 1
        runs += s.runs
        summary.skipped.extend(s.notes)
    summary.runs += runs
    return runs


def _settled_stacks(url: str, listing: dict, entries: dict, failed: set[str], store, now: float) -> dict:
    """The stacks of `url`'s file-by-file listing that are settled: every run
    directory has a result.json that parsed, with a final status, read without
    failure this time; no half-uploaded file and nothing outside a run
    directory. Unknown files in run directories are allowed, kept as notes."""
    from analysis.bulk import runs_digest
    from payload.result import FINAL_STATUSES

    stacks: dict[str, dict] = {}
    for key in listing:
        prefix = layout.stack_prefix_of(key)
        if prefix is None:
            continue
        s = stacks.setdefault(prefix, {"runs": set(), "with_result": set(), "ok": True, "notes": []})
        m = layout.parse_key(key)
        if m is None:  # beside the run directories
            s["ok"] = False
            continue
        s["runs"].add(m.run_id)
        if m.is_result:
            mkey = f"{url}|{key}"
            row = (entries.get(mkey) or {}).get("row")
            if mkey in failed or row is None or row.get("status") not in FINAL_STATUSES:
                s["ok"] = False
            s["with_result"].add(m.run_id)
        elif (why := run_file_problem(m.rest)) == UNKNOWN_RUN_FILE:
            s["notes"].append({"key": key, "reason": why, "url": store.url_for(key)})
        elif why is not None:
            s["ok"] = False  # an upload in progress
    return {
        prefix: SettledStack(len(s["runs"]), runs_digest(s["runs"]), tuple(s["notes"]), now)
        for prefix, s in stacks.items()
        if s["ok"] and s["runs"] == s["with_result"]
    }


def _answer_from_manifest(manifest, outcome: dict, settled: dict, summary: Summary, out: Path) -> list[dict] | None:
    """A collect that found every stack settled and as before: the stored rows
    and the last de-duplication's notes, without judging every row again.
    None (and `summary` untouched) when the stored rows cannot be read."""
    rows = manifest.kept_rows(set(outcome.get("dropped", [])))
    if rows is None:
        return None
    for stacks in settled.values():
        summary.cached += _count_settled(summary, stacks.values())  # one result per run
    summary.skipped.extend(outcome.get("skipped", []))
    rows.sort(key=lambda r: (r["run_id"], r["stack"]))
    summary.valid = len(rows)
    summary.table = table_paths(out)
    return rows


def wrong_layout(url: str, listing: Iterable[str]) -> str:
    """The error for a location holding objects but no runs: the layout, and the URL probably meant."""
    keys = sorted(listing)
    hint = ""
    for key in keys:
        head, sep, _ = key.rpartition("/" + layout.ROOT)
        parts = key.split("/")
        if sep and parse_key_ok(key[len(head) + 1 :]):
            hint = f"; did you mean {url.rstrip('/')}/{head}?"
            break
        if len(parts) == 3 and parts[2] == layout.RESULT_NAME and url.rstrip("/").endswith("/runs"):
            hint = f"; did you mean {url.rstrip('/')[: -len('/runs')]}? (the URL is the folder holding runs/)"
            break
    sample = ", ".join(keys[:3]) + (" ..." if len(keys) > 3 else "")
    return (
        f"no runs in the expected layout {layout.LAYOUT} under {url} ({len(keys)} object(s), e.g. {sample})"
        f"{hint}; the table is left as it was"
    )


def parse_key_ok(key: str) -> bool:
    return layout.parse_key(key) is not None


def misplaced_check(row: dict, key: str) -> dict:
    """The row, if the result is where it claims to be; ValueError("misplaced: ...") otherwise.

    Each stack may write only under its own `runs/<stack>/`, so a result whose
    stack or run id disagrees with its key is a copy or a forgery: it must never
    stand in for (or displace) the run it names."""
    where = layout.parse_key(key)
    claims = (row.get("stack"), row.get("run_id"))
    if where is not None and (where.stack, where.run_id) == claims:
        return row
    try:
        expected = f" (its place is {layout.result_key(*claims)})"
    except layout.BadKeyPart:
        expected = " (its stack or run id cannot even be a key)"
    raise ValueError(
        f"misplaced: the result says stack {claims[0]!r}, run {claims[1]!r}, but is stored at {key}{expected}"
    )


class _Bar:
    """A tqdm bar on stderr whose total grows as listings arrive; a no-op when off."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar = enabled, None

    def add(self, n: int) -> None:
        if not self.enabled or n == 0:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=0, desc="collect", unit="obj", file=sys.stderr, leave=False)
        self.bar.total += n
        self.bar.refresh()

    def update(self) -> None:
        if self.bar is not None:
            self.bar.update()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _bulk_fetch(
    source, url: str, cached, workers: int | None, bar: _Bar, to_price: list, settled: dict[str, str]
) -> tuple[dict, dict, list[str]]:
    """List and download one s3:// source through analysis.bulk, parsing each
    result as it arrives; `settled` stacks ({prefix: runs digest}) are listed
    file by file only if their run directories changed. Returns ({key:
    ObjectInfo} listing, {mkey: entry} fetched, prefixes of the settled stacks not listed)."""

    from analysis import bulk as bulk_mod
    from payload.storage import StorageError

    got: dict[str, dict] = {}

    def wanted(info) -> bool:
        m = layout.parse_key(info.key)
        if m is None or not m.is_result or cached(url, info) is not None:
            return False
        bar.add(1)
        return True

    def handle(info, data, ranged: bool) -> bool:
        """Record one object; True asks for a whole re-read of a ranged read that did not parse."""
        key = info.key
        entry = {"source": url, "key": key, "url": source.url_for(key), "etag": info.etag, "size": info.size}
        if isinstance(data, StorageError):
            entry.update(etag=None, failed=True, reason=f"download failed: {data}")  # not cached: tried again next time
        else:
            try:
                entry["row"], result = _parse(data, source=url, key=key, etag=info.etag)
                if entry["row"]["market"] == "spot":
                    to_price.append((f"{url}|{key}", result))
            except ValueError as exc:
                if ranged and str(exc).startswith("corrupt:"):  # perhaps part of a newer, longer object
                    return True  # read it whole before judging it
                entry["reason"] = str(exc)
            except Exception as exc:  # noqa: BLE001 - one odd file must not stop the collect
                entry["reason"] = f"unreadable: {type(exc).__name__}: {exc}"
        got[f"{url}|{key}"] = entry
        bar.update()
        return False

    async def run():
        return await bulk_mod.fetch_all(source, wanted, handle, workers or bulk_mod.DEFAULT_BULK_WORKERS, settled)

    # A private loop, not asyncio.run: that would leave the thread without a current event loop,
    # which later callers in the same process (the Pulumi SDK under mocks) expect to find.
    loop = bulk_mod.new_event_loop()
    try:
        listing, unlisted = loop.run_until_complete(run())
    finally:
        loop.close()
    return {o.key: o for o in listing}, got, unlisted


def _price_bulk(entries: dict[str, dict], to_price: list[tuple[str, dict]], spot_pricer: SpotPricer) -> set[str]:
    """Spot pricing calls the cloud's API per run: done after the bulk download,
    in the thread pool, so it never stalls the download loop. Returns the
    entry keys it could not price: set aside with why, and not cached (the
    next collect reads and prices them again)."""

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

    with ThreadPoolExecutor(max_workers=DEFAULT_WORKERS) as pool:
        return {mkey for mkey in pool.map(one, to_price) if mkey is not None}


def _dedupe(entries: dict[str, dict], summary: Summary, dropped: set[str] | None = None) -> list[dict]:
    """One row per (stack, run id): the newest finished_at wins (a resumed run's
    last result covers every attempt, and the same bucket may be reached through
    two URLs); the others are set aside, naming the winner, and their entry
    keys added to `dropped`. Copies are compared only within one stack's
    prefix: a result under another stack never displaces it."""
    dropped = set() if dropped is None else dropped
    best: dict[tuple[str, str], tuple[dict, str, str]] = {}
    for mkey in sorted(entries):
        e = entries[mkey]
        if "row" not in e:
            summary.skipped.append({"key": e["key"], "url": e.get("url"), "reason": e.get("reason", "unknown")})
            continue
        row, url = e["row"], e.get("url")
        try:
            misplaced_check(row, e["key"])  # here, not at download: cached rows are judged too
        except ValueError as exc:
            summary.skipped.append({"key": e["key"], "url": url, "reason": str(exc)})
            dropped.add(mkey)
            continue
        ident = (row["stack"], row["run_id"])
        cur = best.get(ident)
        if cur is None:
            best[ident] = (row, url, mkey)
            continue
        newer = (row["finished_at"] or "") > (cur[0]["finished_at"] or "")
        keep, drop = ((row, url, mkey), cur) if newer else (cur, (row, url, mkey))
        best[ident] = keep
        dropped.add(drop[2])
        summary.skipped.append(
            {
                "key": drop[0]["key"],
                "url": drop[1],
                "reason": f"duplicate of run {row['run_id']}: kept {keep[1]} (finished {keep[0]['finished_at']})",
            }
        )
    return [best[k][0] for k in sorted(best, key=lambda ident: (ident[1], ident[0]))]


def _fingerprint(entries: dict[str, dict]) -> str:
    import hashlib

    h = hashlib.sha256()
    for k in sorted(entries):
        h.update(f"{k}\0{entries[k].get('etag')}\0{'row' in entries[k]}\n".encode())
    return h.hexdigest()


def write_table(rows: list[dict], out_dir: str | Path) -> dict[str, str]:
    """The runs table as Parquet and CSV, priced with the recorded prices.
    Written to temporary names first, so a crash leaves the old table whole."""
    import pandas as pd

    from analysis.price.runs import price_rows
    from analysis.table import COLUMNS

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df = price_rows(pd.DataFrame(rows, columns=list(COLUMNS)), rows)
    paths = table_paths(out)
    for ext, write in (
        ("parquet", lambda d, p: d.to_parquet(p, index=False)),
        ("csv", lambda d, p: d.to_csv(p, index=False)),
    ):
        tmp = out / f".{TABLE_STEM}.{ext}.{os.getpid()}.tmp"
        write(df, tmp)
        os.replace(tmp, paths[ext])
    return paths


def table_paths(out_dir: str | Path) -> dict[str, str]:
    """Where the runs table is written: {"parquet": path, "csv": path}."""
    return {ext: str(Path(out_dir) / f"{TABLE_STEM}.{ext}") for ext in ("parquet", "csv")}


def table_is_whole(out_dir: str | Path) -> bool:
    """Both table files exist and the Parquet footer reads: a truncated or
    overwritten table is rebuilt even when the manifest says nothing changed."""
    out = Path(out_dir)
    parquet, csv = out / f"{TABLE_STEM}.parquet", out / f"{TABLE_STEM}.csv"
    if not parquet.is_file() or not csv.is_file() or csv.stat().st_size == 0:
        return False
    try:
        import pyarrow.parquet as pq

        pq.read_metadata(parquet)
    except Exception:  # noqa: BLE001 - any unreadable table is rebuilt
        return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_stale_temporaries(out_dir: str | Path) -> list[Path]:
    """Delete `.results.<ext>.<pid>.tmp` files a killed collect left behind (its
    process is gone); a collect still running in the same directory keeps its own."""
    out, removed = Path(out_dir), []
    if not out.is_dir():
        return removed
    for tmp in out.glob(f".{TABLE_STEM}.*.*.tmp"):
        pid = tmp.name.split(".")[-2]
        if pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)):
            continue
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed


def read_table(out_dir: str | Path):
    """The runs table collect wrote to `out_dir` (Parquet)."""
    import pandas as pd

    path = Path(out_dir) / f"{TABLE_STEM}.parquet"
    if not path.exists():
        raise FileNotFoundError(f"no results table at {path}; run `python -m analysis collect --out {out_dir}` first")
    return pd.read_parquet(path)
