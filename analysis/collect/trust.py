"""Whether a parsed row could be a real run's where it is stored (anyone who can write to the bucket
writes results): names in the allowed alphabet, times and numbers possible, the offering its stack runs
on the GPU it recorded. A row that fails is set aside with the reason, never counted. ``dedupe``: one
table row per run, whichever copies of its result a collect found (a resumed run, a bucket under two
URLs, a copy under another stack): the same winner every time, and why the others lost."""

from __future__ import annotations

import operator
import re
import time
from functools import lru_cache

from analysis.collect.validation import Summary, misplaced_check
from analysis.dataset.row import COLUMN_SPEC, parse_time
from infra.catalog import load_catalog
from payload import layout

# A clock on a rented machine may run a little ahead of ours; more than this is not skew.
CLOCK_SKEW_S = 300.0

# column -> the kind of name it holds (payload.layout.NAME_PATTERNS)
NAMED_COLUMNS = (("stack", "stack name"), ("run_id", "run id"), ("offering_id", "offering id"))

# Quantities no run can make negative (durations, rates, counts, prices): every number of a row but accuracy.
NON_NEGATIVE = tuple(c for c, (kind, _) in COLUMN_SPEC.items() if kind in (int, float) and c != "final_accuracy")

# (earlier, later): events a run records in this order (up to the skew between two machines' clocks).
IN_ORDER = (("started_at", "finished_at"), ("launch_at", "terminated_at"))
TIMES = ("started_at", "finished_at", "launch_at", "terminated_at")


def dedupe(entries: dict[str, dict], summary: Summary, *, now: float | None = None) -> list[dict]:
    """One row per (stack, run id). Copies rank by what a result's writer cannot forge: the order of the
    sources (`summary.sources`; without one, the newest finished_at), then the entry key. The first
    believable copy (row_problem) wins; the others are set aside with why (in their entry's "reason")."""

    def set_aside(e: dict, reason: str) -> None:
        e["reason"] = reason
        summary.skipped.append({"key": e["key"], "url": e.get("url"), "reason": reason})

    copies: dict[tuple[str, str], list[dict]] = {}
    for mkey in sorted(entries):  # by entry key: a fixed order whatever order they were found in
        e = entries[mkey]
        if "row" not in e:
            summary.skipped.append({"key": e["key"], "url": e.get("url"), "reason": e.get("reason", "unknown")})
            continue
        try:
            misplaced_check(e["row"], e["key"])  # here, not at download: cached rows are judged too
        except ValueError as exc:
            set_aside(e, str(exc))
            continue
        copies.setdefault((e["row"]["stack"], e["row"]["run_id"]), []).append(e)
    order = {url: i for i, url in enumerate(summary.sources)}
    rows = []
    for found in copies.values():
        if order:  # sorts are stable: equal ranks keep the entry keys' order
            found.sort(key=lambda e: order.get(e.get("source"), len(order)))
        else:
            found.sort(key=lambda e: e["row"].get("finished_at") or "", reverse=True)
        winner = None
        for e in found:
            if winner is not None:
                kept = winner["row"]
                reason = f"duplicate of run {kept['run_id']}: kept {winner.get('url')}"
                set_aside(e, f"{reason} (finished {kept['finished_at']})")
            elif problem := row_problem(e["row"], now):
                set_aside(e, problem)
            else:
                winner = e
                rows.append(e["row"])
    return sorted(rows, key=operator.itemgetter("run_id", "stack"))  # the table's order (store.ORDER)


def row_problem(row: dict, now: float | None = None) -> str | None:
    """Why `row` cannot be a real run's (the reason a collect sets it aside with), or None."""
    now = time.time() if now is None else now
    return name_problem(row) or number_problem(row) or time_problem(row, now) or offering_problem(row)


def name_problem(row: dict) -> str | None:
    for column, kind in NAMED_COLUMNS:
        value = row.get(column)
        if value is None and column == "offering_id":  # a run started without --offering
            continue
        if (why := layout.name_problem(kind, value)) is not None:
            return f"invalid: {why}"
    return None


def number_problem(row: dict) -> str | None:
    for column in NON_NEGATIVE:
        value = row.get(column)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return f"implausible: {column} is {value}; no run has a negative duration, rate, count or price"
    return None


def time_problem(row: dict, now: float) -> str | None:
    times = {}
    for column in TIMES:
        try:
            times[column] = parse_time(row.get(column))
        except (TypeError, ValueError):
            return f"invalid: {column} {row.get(column)!r} is not a timestamp"
    for column, t in times.items():
        if t is not None and t.timestamp() > now + CLOCK_SKEW_S:
            return f"implausible: {column} {row[column]} is in the future (more than {CLOCK_SKEW_S:.0f} s ahead)"
    for earlier, later in IN_ORDER:
        a, b = times[earlier], times[later]
        if a is not None and b is not None and (a - b).total_seconds() > CLOCK_SKEW_S:
            return f"implausible: {later} {row[later]} is before {earlier} {row[earlier]}"
    return None


def offering_problem(row: dict) -> str | None:
    claimed, stack = row.get("offering_id"), row.get("stack")
    if not claimed:
        return None
    expected = stack_offering(stack)
    if expected is not None and expected != claimed:
        return f"misplaced: stack {stack} runs offering {expected}, but the result claims {claimed}"
    if expected is None and (family := family_problem(stack, claimed)):
        return family
    catalog_gpu = offering_gpu(claimed)
    recorded = row.get("gpu_model")
    if catalog_gpu and recorded and _gpu_token(catalog_gpu) not in _gpu_token(recorded):
        return f"misplaced: offering {claimed} has a {catalog_gpu} GPU, but the result recorded {recorded!r}"
    return None


@lru_cache(maxsize=4096)
def family_problem(stack: str, claimed: str) -> str | None:
    """A stack no stack file or catalog names, named like a cloud's (`aws-...`), claims only that cloud's family."""
    offering = _catalog_offering(claimed)
    provider = claimed.split("/", 1)[0]
    named_for = next((p for p in _cloud_providers() if stack.startswith(f"{p}-")), None)
    if named_for is None:
        return None  # a stack name of the user's own: nothing to compare
    if named_for != provider:
        return f"misplaced: stack {stack} is named for {named_for}, but the result claims offering {claimed}"
    if offering is None or not offering.is_cloud:
        return None
    family = "-".join(offering.stack_names()[0].split("-")[:2])
    if stack != family and not stack.startswith(family + "-"):
        return f"misplaced: stack {stack} is not a {family}-... stack, but the result claims offering {claimed}"
    return None


def _gpu_token(name: str) -> str:
    """A GPU name compared without case, spaces or dashes: 'Tesla T4' holds 'T4', 'GTX 1080 Ti' 'GTX-1080-Ti'."""
    return re.sub(r"[^A-Z0-9]", "", str(name).upper())


# The catalog is read once; what the checks derive from it is cached per name (thousands of rows name a
# handful). Only names already checked against the alphabet are cache keys, never a free-text GPU model.
@lru_cache(maxsize=1)
def _catalog():
    """The offering catalog, None when it cannot be loaded (the checks that need it are skipped)."""
    try:
        return load_catalog()
    except Exception:  # noqa: BLE001 - a broken catalog must not stop a collect; its checks are skipped
        return None


def _catalog_offering(offering_id: str):
    try:
        return _catalog().get(offering_id)
    except Exception:  # noqa: BLE001 - no catalog, or an id it does not know (an old or private offering)
        return None


@lru_cache(maxsize=1)
def _cloud_providers() -> tuple[str, ...]:
    if (catalog := _catalog()) is None:
        return ()
    return tuple(p for p in catalog.providers() if any(o.is_cloud for o in catalog.offerings(p)))


@lru_cache(maxsize=4096)
def offering_gpu(offering_id: str) -> str | None:
    """The catalog's GPU model of an offering; None without a GPU or unknown (local, SSH boxes)."""
    return getattr(_catalog_offering(offering_id), "gpu_model", None)


@lru_cache(maxsize=4096)
def stack_offering(stack: str) -> str | None:
    """The offering a stack runs: its stack file's gpubench:offering, else the catalog's; None if unknown."""
    try:
        # lazy: 0.2 s of stack-file models that observe and bench, reading results through collect, never need
        from infra.stacks import STACKS_DIR, load_config

        if (STACKS_DIR / f"Pulumi.{stack}.yaml").is_file():
            offering = load_config(stack).get("gpubench:offering")
            if offering:
                return str(offering)
    except Exception:  # noqa: BLE001,S110 - an unreadable stack file: the catalog below, else unknown
        pass
    if (catalog := _catalog()) is None:
        return None
    known = catalog.cloud_stacks().get(stack)
    return known[0].id if known else None
