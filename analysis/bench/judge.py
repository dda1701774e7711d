"""Predictions judged on the user's own data: a bench records the rates it predicted (bench.json
`predictions`); when one is measured later (a follow-up probe, or a later bench of the same task file)
the answer sets the two side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from analysis.bench.record import BenchRecord
from analysis.predict.predict import PREDICTED

PREDICTIONS = "predictions"  # the bench record's key
RATE = "samples_per_second"
KEPT = ("offering", "market", RATE, f"{RATE}_low", f"{RATE}_high", "est_hours", "est_usd")


def _key(row: dict) -> tuple[str, str]:
    return (str(row.get("offering")), str(row.get("market")))


def recorded(
    rows: Iterable[dict], bench_id: str, alpha: float | None, at: str, benchmark: str | None = None
) -> list[dict]:
    """The predicted rows as the record keeps them; `benchmark` is the name the task's runs carry in the results
    table (`gpubench report` matches later runs by it)."""
    return [
        {k: r.get(k) for k in KEPT} | {"bench_id": bench_id, "alpha": alpha, "at": at, "benchmark": benchmark}
        for r in rows
        if r.get("status") == PREDICTED and isinstance(r.get(RATE), (int, float))
    ]


def predictions_in(directories: Iterable[Path]) -> Iterator[tuple[dict, dict]]:
    """(record, prediction) for every prediction the bench records in `directories` hold, in their order."""
    for directory in directories:
        try:
            data = BenchRecord.load(directory).data
        except ValueError:
            continue  # an unreadable record is `gpubench status`'s to name, not the answer's
        for p in data.get(PREDICTIONS) or []:
            if isinstance(p, dict) and isinstance(p.get(RATE), (int, float)):
                yield data, p


def earlier(task: str, directories: Sequence[Path], bench_id: str) -> dict[tuple[str, str], dict]:
    """The newest prediction per (offering, market) that earlier benches of the same task file recorded
    (`directories` oldest first: a newer prediction replaces an older one)."""
    return {
        _key(p): p
        for data, p in predictions_in(directories)
        if data.get("task") == task and data.get("bench_id") != bench_id
    }


def checks(rows: Iterable[dict], forecasts: dict[tuple[str, str], dict]) -> list[dict]:
    """For every measured row with a prediction: the two figures, the error and whether the interval held."""
    out = []
    for r in rows:
        p, measured = forecasts.get(_key(r)), r.get(RATE)
        if p is None or r.get("status") == PREDICTED or not isinstance(measured, (int, float)) or measured <= 0:
            continue
        low, high = p.get(f"{RATE}_low"), p.get(f"{RATE}_high")
        out.append(
            {
                "offering": r["offering"],
                "market": r.get("market"),
                "predicted": p[RATE],
                "predicted_low": low,
                "predicted_high": high,
                "measured": measured,
                "error_pct": 100.0 * (p[RATE] - measured) / measured,
                "within_interval": low is not None and high is not None and low <= measured <= high,
                "predicted_by": p.get("bench_id"),
            }
        )
    return out


def line(c: dict) -> str:
    """'aws/g6.xlarge: predicted 1,900.0 samples/s (1,500.0-2,400.0), measured 2,000.0, error -5.0 %'."""
    low, high = c.get("predicted_low"), c.get("predicted_high")
    span = f" ({low:,.1f}-{high:,.1f})" if low is not None and high is not None else ""
    held = "inside" if c["within_interval"] else "outside"
    return (
        f"{c['offering']}: predicted {c['predicted']:,.1f} samples/s{span}, measured {c['measured']:,.1f}, "
        f"error {c['error_pct']:+.1f} % ({held} the interval; predicted by bench {c['predicted_by']})"
    )
