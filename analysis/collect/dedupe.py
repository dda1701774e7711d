"""One table row per run, whichever copies of its result a collect found: the
same run reaches a collect more than once (a resumed run rewrites its result,
a bucket given under two URLs, a result copied under another stack), and the
table names one winner, the same every time, by evidence its writer cannot
forge, and says why the others lost."""

from __future__ import annotations

from analysis.collect.summary import Summary
from analysis.collect.trust import row_problem
from analysis.collect.validation import misplaced_check


def row_order(row: dict) -> tuple[str, str]:
    """The order of the table's rows: by run id, then stack."""
    return row["run_id"], row["stack"]


def dedupe(
    entries: dict[str, dict], summary: Summary, *, now: float | None = None, reasons: dict[str, str] | None = None
) -> list[dict]:
    """One row per (stack, run id). Copies of a run rank by evidence the
    writer of a result cannot forge: the order the user gave the sources in
    (`summary.sources`; the first source wins), then the entry key; the first
    copy that is believable (analysis.collect.trust) is kept, one that is not
    is set aside with its reason, and every later copy is set aside naming the
    winner (without a source order, the newest finished_at wins). Copies are
    compared only within one stack's prefix: a result under another stack
    never displaces it. The entry keys set aside go to `reasons`, with why;
    entries without a row are reported with their reason."""
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
    return sorted(rows, key=row_order)


def _by_precedence(found: list[tuple[str, dict]], order: dict[str, int]) -> list[tuple[str, dict]]:
    """Copies of one run, the one to keep first: by source order when known, else newest finished_at."""
    ranked = sorted(found, key=lambda c: c[0])  # the entry key: a fixed order whatever order they were found in
    if order:
        return sorted(ranked, key=lambda c: order.get(c[1].get("source"), len(order)))
    return sorted(ranked, key=lambda c: c[1]["row"].get("finished_at") or "", reverse=True)


def _set_aside(summary: Summary, reasons: dict, mkey: str, entry: dict, reason: str) -> None:
    reasons[mkey] = reason
    summary.skipped.append({"key": entry["key"], "url": entry.get("url"), "reason": reason})
