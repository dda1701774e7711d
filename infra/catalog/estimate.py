"""A stack's cost per benchmark, estimated from plain figures (no results table).

Infra does not read what analysis writes: the caller (analysis, which reads
the results table `collect` writes) passes the billed seconds of the stack's
collected runs as a `MeasuredRuns`. The estimate of a benchmark is then the
median billed time of its completed runs x the hourly price; without runs it
is the deadline bound maxHours x hourly price. Each estimate says which.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MeasuredRuns:
    """Billed seconds of completed runs per (stack, benchmark), where they
    were read (`where`, e.g. the table's path) or why none were (`note`)."""

    seconds: Mapping[tuple[str, str], Sequence[float]] = field(default_factory=dict)
    where: str | None = None
    note: str | None = None


def estimate_costs(cfg: Any, hourly: float | None, measured: MeasuredRuns | None = None) -> list[dict[str, Any]]:
    """Per benchmark of `cfg` (a BenchmarkConfig: stack, suite, max_hours):
    the median billed seconds of its measured runs when there are some, else
    the deadline bound (saying why: no runs given, none of this benchmark)."""
    if hourly is None:
        return [{"benchmark": b, "usd": None, "seconds": None, "source": "no catalog price"} for b in cfg.suite]
    if measured is None:
        measured = MeasuredRuns(note="no collected runs given; `gpubench preview` and `gpubench plan` read them")
    origin = f" in {measured.where}" if measured.where else ""
    rows: list[dict[str, Any]] = []
    for bench in cfg.suite:
        runs = measured.seconds.get((cfg.stack, bench), ())
        if runs:
            seconds = float(statistics.median(runs))
            rows.append(
                {
                    "benchmark": bench,
                    "usd": round(seconds / 3600 * hourly, 4),
                    "seconds": seconds,
                    "runs": len(runs),
                    "source": f"measured: median billed time of {len(runs)} collected run(s){origin} x hourly price",
                }
            )
        else:
            why = measured.note or f"no completed run of this stack and benchmark{origin}"
            rows.append(
                {
                    "benchmark": bench,
                    "usd": round(cfg.max_hours * hourly, 4),
                    "seconds": cfg.max_hours * 3600,
                    "runs": 0,
                    "source": f"bound: maxHours x hourly price ({why})",
                }
            )
    return rows
