"""A stack's cost per benchmark: the median billed time of its collected runs (`MeasuredRuns`, passed
by analysis: infra never reads the results table) x the hourly price, else the bound maxHours x price.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MeasuredRuns:
    """Billed seconds of completed runs per (stack, benchmark); where they were read, or why none were."""

    seconds: Mapping[tuple[str, str], Sequence[float]] = field(default_factory=dict)
    where: str | None = None
    note: str | None = None


def estimate_costs(cfg: Any, hourly: float | None, measured: MeasuredRuns | None = None) -> list[dict[str, Any]]:
    """One row per benchmark of `cfg` (a BenchmarkConfig), each saying where its figure comes from."""
    if hourly is None:
        return [{"benchmark": b, "usd": None, "seconds": None, "source": "no catalog price"} for b in cfg.suite]
    if measured is None:
        measured = MeasuredRuns(note="no collected runs given; `gpubench preview` and `gpubench plan` read them")
    origin = f" in {measured.where}" if measured.where else ""
    rows: list[dict[str, Any]] = []
    for bench in cfg.suite:
        runs = measured.seconds.get((cfg.stack, bench), ())
        seconds = float(statistics.median(runs)) if runs else cfg.max_hours * 3600
        why = measured.note or f"no completed run of this stack and benchmark{origin}"
        source = (
            f"measured: median billed time of {len(runs)} collected run(s){origin} x hourly price"
            if runs
            else f"bound: maxHours x hourly price ({why})"
        )
        usd = round(seconds / 3600 * hourly, 4) if runs else round(cfg.max_hours * hourly, 4)
        rows.append({"benchmark": bench, "usd": usd, "seconds": seconds, "runs": len(runs), "source": source})
    return rows
