"""One table row per run, whichever copies of its result a collect found.

Its own module because the same run reaches a collect more than once (a
resumed run rewrites its result, one bucket may be given under two URLs, a
result may be copied under another stack), and the table must name one
winner, the same one every time, and say why the others lost."""

from __future__ import annotations

from analysis.collect.summary import Summary
from analysis.collect.validation import misplaced_check


def row_order(row: dict) -> tuple[str, str]:
    """The order of the table's rows: by run id, then stack."""
    return row["run_id"], row["stack"]


def dedupe(entries: dict[str, dict], summary: Summary, dropped: set[str] | None = None) -> list[dict]:
    """One row per (stack, run id): the newest finished_at wins (a resumed run's
    last result covers every attempt, and the same bucket may be reached through
    two URLs); the others are set aside, naming the winner, and their entry
    keys added to `dropped`. Copies are compared only within one stack's
    prefix: a result under another stack never displaces it. Entries without a
    row are reported as set aside with their reason."""
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
    return sorted((kept[0] for kept in best.values()), key=row_order)
