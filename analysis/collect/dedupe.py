"""One table row per run, whichever copies of its result a collect found (a resumed run, a bucket under
two URLs, a copy under another stack): the same winner every time, and why the others lost."""

from __future__ import annotations

import operator

from analysis.collect.summary import Summary
from analysis.collect.trust import row_problem
from analysis.collect.validation import misplaced_check


def dedupe(
    entries: dict[str, dict], summary: Summary, *, now: float | None = None, reasons: dict[str, str] | None = None
) -> list[dict]:
    """One row per (stack, run id). Copies rank by what a result's writer cannot forge: the order of the
    sources (`summary.sources`; without one, the newest finished_at), then the entry key. The first
    believable copy (analysis.collect.trust) wins; the others are set aside with why (in `reasons`)."""
    reasons = {} if reasons is None else reasons
    copies: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    for mkey in sorted(entries):
        e = entries[mkey]
        if "row" not in e:
            summary.skipped.append({"key": e["key"], "url": e.get("url"), "reason": e.get("reason", "unknown")})
            continue
        try:
            misplaced_check(e["row"], e["key"])  # here, not at download: cached rows are judged too
        except ValueError as exc:
            _set_aside(summary, reasons, mkey, e, str(exc))
            continue
        copies.setdefault((e["row"]["stack"], e["row"]["run_id"]), []).append((mkey, e))
    order = {url: i for i, url in enumerate(summary.sources)}
    rows = []
    for found in copies.values():
        winner = None
        for mkey, e in _by_precedence(found, order):
            if winner is not None:
                kept = winner[1]
                reason = f"duplicate of run {kept['row']['run_id']}: kept {kept.get('url')}"
                _set_aside(summary, reasons, mkey, e, f"{reason} (finished {kept['row']['finished_at']})")
            elif problem := row_problem(e["row"], now):
                _set_aside(summary, reasons, mkey, e, problem)
            else:
                winner = (mkey, e)
        if winner is not None:
            rows.append(winner[1]["row"])
    return sorted(rows, key=operator.itemgetter("run_id", "stack"))  # the table's order (schema.ORDER)


def _by_precedence(found: list[tuple[str, dict]], order: dict[str, int]) -> list[tuple[str, dict]]:
    ranked = sorted(found, key=lambda c: c[0])  # the entry key: a fixed order whatever order they were found in
    if order:
        return sorted(ranked, key=lambda c: order.get(c[1].get("source"), len(order)))
    return sorted(ranked, key=lambda c: c[1]["row"].get("finished_at") or "", reverse=True)


def _set_aside(summary: Summary, reasons: dict, mkey: str, entry: dict, reason: str) -> None:
    reasons[mkey] = reason
    summary.skipped.append({"key": entry["key"], "url": entry.get("url"), "reason": reason})
