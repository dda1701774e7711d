"""How good are `gpubench predict`'s predictions? A benchmark, not a test.

1. Leave one GPU out: every GPU of every shipped table (analysis/predict/data/*.csv) is predicted
   from each other GPU of the same table, with the priors fitted on the OTHER workloads only
   (analysis.predict.calibration.leave_one_out). Prints the median and 90th percentile of the
   absolute relative error of the predicted throughput. Goals: median <= 15 %, p90 <= 35 %.
2. The choice with two probes: in every table with --min-set GPUs or more (default 6) that the
   catalog prices, every pair of GPUs is "probed" (its published rates taken as measured), the
   rest predicted from the pair (alpha fitted to it), and the cheapest whole job chosen
   (hourly price of the cheapest one-GPU offering / rate); the choice is compared with the one
   made from every published rate. Goals: the same choice in >= 85 % of sets, a miss costing
   <= 10 % more. Tables smaller than --min-set are not counted (and the count is said).

    PYTHONPATH=$PWD python benchmarks/predict_accuracy.py
    PYTHONPATH=$PWD python benchmarks/predict_accuracy.py --min-set 6 --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MEDIAN_GOAL, P90_GOAL, CHOICE_GOAL, MISS_GOAL = 0.15, 0.35, 0.85, 0.10


def leave_one_out(calib) -> dict:
    from analysis.predict.calibration import quantile

    def summary(held):
        errors = [abs(h.error) for h in held]
        return {
            "predictions": len(errors),
            "median_abs_error": quantile(errors, 0.5),
            "p90_abs_error": quantile(errors, 0.9),
            "mean_signed_error": statistics.fmean(h.error for h in held) if held else None,
        }

    groups: dict[str, list] = defaultdict(list)
    for h in calib.held:
        groups[f"precision {h.precision}"].append(h)
        groups[f"{h.source} -> {h.gpu}"].append(h)
    worst = sorted(calib.held, key=lambda h: -abs(h.error))[:5]
    return {
        "all": summary(calib.held),
        "by": {k: summary(v) for k, v in sorted(groups.items())},
        "worst": [f"{h.workload} {h.precision}: {h.source} -> {h.gpu} {h.error:+.0%}" for h in worst],
    }


def one_gpu_prices(catalog, gpus) -> dict[str, float]:
    """Hourly on-demand USD of the cheapest one-GPU cloud offering per GPU (the bench's own choice)."""
    from analysis.bench.candidates import cloud_candidates

    found, _ = cloud_candidates(None, gpus=",".join(f"{g}:1" for g in gpus), spot=False, catalog=catalog)
    return {c.gpu: c.hourly_usd for c in found if c.hourly_usd}


def choice(calib, specs, catalog, min_set: int) -> dict:
    from analysis.predict.calibration import tables
    from analysis.predict.predict import Measured, fit, predict_rate

    family = {r.workload: r.family for r in calib.rows}
    prices = one_gpu_prices(catalog, calib.gpus)
    sizes, hits, misses = [], 0, []
    for (workload, precision), rates in sorted(tables(calib.rows).items()):
        rates = {g: r for g, r in rates.items() if g in prices}
        sizes.append(len(rates))
        if len(rates) < min_set:
            continue
        best = min(rates, key=lambda g: prices[g] / rates[g])
        for pair in itertools.combinations(sorted(rates), 2):
            measured = [Measured(g, 1, rates[g]) for g in pair]
            model = fit(measured, specs, calib, family[workload], precision)
            guess = {
                g: rates[g] if g in pair else predict_rate(g, 1, measured, specs, model, precision)[0] for g in rates
            }
            chosen = min(rates, key=lambda g: prices[g] / guess[g])
            hits += chosen == best
            if chosen != best:
                misses.append((prices[chosen] / rates[chosen]) / (prices[best] / rates[best]) - 1)
    trials = hits + len(misses)
    return {
        "min_set": min_set,
        "table_sizes": dict(sorted(((n, sizes.count(n)) for n in set(sizes)), reverse=True)),
        "sets": trials,
        "same_choice": hits / trials if trials else None,
        "median_miss_cost": statistics.median(misses) if misses else None,
        "worst_miss_cost": max(misses) if misses else None,
        "priced_gpus": prices,
    }


def verdicts(loo: dict, pick: dict) -> list[str]:
    allm = loo["all"]
    lines = [
        _verdict("median absolute error <= 15 %", allm["median_abs_error"], MEDIAN_GOAL, True),
        _verdict("90th percentile <= 35 %", allm["p90_abs_error"], P90_GOAL, True),
    ]
    if not pick["sets"]:
        sizes = ", ".join(f"{count} of {n}" for n, count in pick["table_sizes"].items())
        lines.append(
            f"  [not measurable] choice >= 85 % and miss <= 10 %: no shipped table has {pick['min_set']} or more "
            f"priced GPUs (tables by priced GPUs: {sizes})"
        )
        return lines
    lines.append(_verdict("same cheapest choice >= 85 %", pick["same_choice"], CHOICE_GOAL, False))
    worst = pick["worst_miss_cost"] or 0.0
    lines.append(_verdict("a miss costs <= 10 % more", worst, MISS_GOAL, True))
    return lines


def _verdict(text: str, value: float, goal: float, at_most: bool) -> str:
    met = value <= goal if at_most else value >= goal
    return f"  [{'met' if met else 'NOT met'}] {text} ({value:.1%})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min-set", type=int, default=6, help="the fewest GPUs a table needs for the choice test")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON document")
    args = parser.parse_args()
    from analysis.predict import calibration as cal
    from analysis.predict.predict import gpu_specs
    from infra.catalog import load_catalog

    catalog = load_catalog()
    specs = gpu_specs(catalog)
    calib = cal.calibrate(cal.load_rows(), specs)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    doc = {
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.node()}: {platform.platform()}, python {platform.python_version()}",
        "commit": commit.stdout.strip(),
        "rows": len(calib.rows),
        "gpus": calib.gpus,
        "scaling_efficiency": calib.efficiency,
        "interval_factor": calib.factor,
        "priors": {f"{f}, {p}": a for (f, p), a in sorted(calib.priors.items())},
        "leave_one_out": leave_one_out(calib),
        "choice": choice(calib, specs, catalog, args.min_set),
    }
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(f"# {doc['when']}, {doc['machine']}, commit {doc['commit']}")
    print(f"# {doc['rows']} rows of {', '.join(doc['gpus'])}; interval x/{calib.factor:.3f}, E {calib.efficiency:.3f}")
    print(json.dumps({k: doc[k] for k in ("priors", "leave_one_out", "choice")}, indent=1))
    print("\n".join(verdicts(doc["leave_one_out"], doc["choice"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
