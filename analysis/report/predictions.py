"""The report's "Predictions against measurements": each `gpubench bench` prediction (bench.json) beside the
newest completed run of its benchmark, offering and market started after it (a full run before a probe), judged
as a bench judges them (analysis.bench.judge)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.bench.judge import checks, line, predictions_in
from analysis.bench.record import bench_dirs
from analysis.dataset.sql import num, one_of
from analysis.observe import time_of

COLUMNS = ("benchmark", "offering_id", "market", "probe", "run_id", "started_at", "samples_per_second")


def recorded(directories: Sequence[Path] | None = None) -> list[dict]:
    """Every prediction the bench records hold (`directories`: bench workspaces, default every one found),
    oldest bench first."""
    found = predictions_in(bench_dirs() if directories is None else directories)
    return [p for _, p in found if p.get("benchmark")]


def measured_runs(query: Any, benchmarks: Sequence[str]) -> list[dict]:
    """The completed runs of these benchmarks with a rate, from the report's query (analysis.report.query)."""
    if not benchmarks or not set(COLUMNS) <= query.columns:
        return []
    frame = query.frame(
        f"SELECT {', '.join(COLUMNS)} FROM runs WHERE status = 'completed' AND {one_of('benchmark', benchmarks)} "
        f"AND {num('samples_per_second')} > 0"
    )
    return frame.to_dict("records")


def judged(predictions: Sequence[dict], runs: Sequence[dict]) -> list[dict]:
    """Each prediction (the newest per benchmark, offering and market) beside the newest run after it."""
    newest: dict[tuple, dict] = {}
    for p in predictions:
        newest[(p["benchmark"], p.get("offering"), p.get("market"))] = p
    out = []
    for (benchmark, offering, market), p in sorted(newest.items(), key=lambda kv: tuple(map(str, kv[0]))):
        after = time_of(p.get("at"))
        later = [
            r
            for r in runs
            if (r["benchmark"], r["offering_id"], r["market"]) == (benchmark, offering, market)
            and after is not None
            and (time_of(r["started_at"]) or after) > after
        ]
        if not later:
            continue
        run = max(later, key=lambda r: (not r["probe"], time_of(r["started_at"])))
        row = {"offering": offering, "market": market, "status": "measured"}
        found = checks([row | {"samples_per_second": float(run["samples_per_second"])}], {(offering, market): p})
        out += [
            c
            | {"benchmark": benchmark, "measured_by": ("probe " if run["probe"] else "full run ") + str(run["run_id"])}
            for c in found
        ]
    return out


def lines(found: Sequence[dict]) -> list[str]:
    """One line per prediction judged, as a bench prints it, naming the run that measured it."""
    return [f"{c['benchmark']} on {line(c)}; measured by {c['measured_by']}" for c in found]
