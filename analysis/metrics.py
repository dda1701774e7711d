"""Metrics over the priced runs table: per offering x benchmark summaries
(median and spread over repeats), relative time and cost, throughput per
dollar, ImageNet-equivalent figures, multi-GPU scaling, on-prem break-even,
the Pareto frontier and recommendations.

Everything here is a pure function of DataFrames so the report, the CLI and
the tests compute the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.reference import imagenet_schedules

DEFAULT_BASE = "aws/p2.xlarge"  # a single K80, the base configuration of seed 002
# What makes runs repeats of one another: a batch size or precision of its own
# is another configuration, never pooled into the same median.
# The Keras backend is one too: backends are compared side by side (seed 002 compared frameworks).
CONFIG = ["backend", "precision", "per_gpu_batch_size"]
GROUP = ["benchmark", "offering_id", "market", "gpus_used", *CONFIG]
# Which run cost the frontier and the recommendations rank by.
COST_BASES = {"billed": "billed_cost_usd", "train": "train_cost_usd"}


@dataclass
class Options:
    base: str = DEFAULT_BASE
    deadline_hours: float | None = None
    budget_usd: float | None = None
    cost_basis: str = "billed"

    @property
    def cost_column(self) -> str:
        try:
            return COST_BASES[self.cost_basis]
        except KeyError:
            raise ValueError(f"cost basis {self.cost_basis!r} is not one of {', '.join(COST_BASES)}") from None


def completed(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs that finished: failed and interrupted runs are billed but not timed."""
    if "backend" not in runs.columns:  # tables from before backends were recorded: all tensorflow
        runs = runs.assign(backend="tensorflow")
    return runs[runs["status"] == "completed"]


def _joined(values) -> str | None:
    vals = [str(v) for v in dict.fromkeys(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return "; ".join(vals) or None


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per benchmark x offering x market: medians, min/max and the
    relative spread ((max - min) / median) over repeats."""
    done = completed(runs)
    if done.empty:
        return pd.DataFrame(columns=GROUP + ["repeats"])
    num = {
        "train_hours": "train_hours",
        "instance_hours": "instance_hours",
        "train_cost_usd": "train_cost_usd",
        "billed_cost_usd": "billed_cost_usd",
        "samples_per_second": "samples_per_second",
        "hourly_usd": "hourly_usd",
        "final_accuracy": "final_accuracy",
        "gpu_utilization_mean": "gpu_utilization_mean",
    }
    g = done.groupby(GROUP, dropna=False, sort=True)
    out = g.size().rename("repeats").to_frame()
    for col in num:
        s = pd.to_numeric(done[col], errors="coerce").groupby([done[k] for k in GROUP], dropna=False)
        out[col] = s.median()
        if col in ("train_hours", "train_cost_usd", "billed_cost_usd", "samples_per_second"):
            out[f"{col}_min"], out[f"{col}_max"] = s.min(), s.max()
            out[f"{col}_spread"] = (out[f"{col}_max"] - out[f"{col}_min"]) / out[col]
    for col in (
        "provider",
        "offering_kind",
        "gpu_model",
        "price_basis",
        "price_source",
        "price_as_of",
        "billing",
        "price_note",
    ):
        out[col] = g[col].agg(_joined)
    out["setup_fee_usd"] = g["setup_fee_usd"].max()
    out = out.reset_index()
    return add_throughput_metrics(out)


def add_throughput_metrics(summary: pd.DataFrame) -> pd.DataFrame:
    """Images per dollar and ImageNet-equivalent time and cost (seed 004)."""
    s = summary.copy()
    sps, hourly = s["samples_per_second"], s["hourly_usd"]
    s["images_per_usd"] = (sps * 3600.0 / hourly).where((hourly > 0) & (sps > 0))
    sched = imagenet_schedules()
    samples = s["benchmark"].map(lambda b: sched.get(b, {}).get("samples"))
    s["imagenet_samples"] = samples
    s["imagenet_hours"] = (samples / sps / 3600.0).where(sps > 0)
    s["imagenet_cost_usd"] = s["imagenet_hours"] * hourly
    return s


def relative_to_base(summary: pd.DataFrame, base: str = DEFAULT_BASE) -> pd.DataFrame:
    """Time and cost as multiples of the base offering's, per benchmark
    (seed 002). The base's on-demand row is preferred; a benchmark the base
    did not run gets NaN and says so in `relative_note`."""
    s = summary.copy()
    for col in ("rel_time", "rel_train_cost", "rel_billed_cost"):
        s[col] = math.nan
    s["relative_note"] = None
    for (bench, *config), idx in s.groupby(["benchmark", *CONFIG], dropna=False).groups.items():
        rows = s.loc[idx]
        cand = rows[rows["offering_id"] == base]
        if cand.empty:
            ran = ((s["benchmark"] == bench) & (s["offering_id"] == base)).any()
            s.loc[idx, "relative_note"] = (
                f"base {base} has no completed {bench} run"
                if not ran
                else f"base {base} has no completed {bench} run at "
                + ", ".join(f"{k} {v}" for k, v in zip(CONFIG, config))
            )
            continue
        # on-demand sorts before spot; the offering as sold (all its GPUs) first
        b = cand.sort_values(["market", "gpus_used"], ascending=[True, False]).iloc[0]
        s.loc[idx, "rel_time"] = rows["train_hours"] / b["train_hours"]
        s.loc[idx, "rel_train_cost"] = rows["train_cost_usd"] / b["train_cost_usd"]
        s.loc[idx, "rel_billed_cost"] = rows["billed_cost_usd"] / b["billed_cost_usd"]
        s.loc[idx, "relative_note"] = f"vs {base} {b['market']}"
    return s


def pareto_mask(x: pd.Series, y: pd.Series) -> pd.Series:
    """True for points no other point beats on both x and y (lower is better)."""
    pts = list(zip(x.tolist(), y.tolist()))
    keep = []
    for i, (xi, yi) in enumerate(pts):
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (xi, yi)):
            keep.append(False)
            continue
        dominated = any(
            (xj <= xi and yj <= yi) and (xj < xi or yj < yi)
            for j, (xj, yj) in enumerate(pts)
            if j != i and not (math.isnan(xj) or math.isnan(yj))
        )
        keep.append(not dominated)
    return pd.Series(keep, index=x.index)


def add_frontier(summary: pd.DataFrame, cost_column: str = "billed_cost_usd") -> pd.DataFrame:
    """`on_frontier` (time vs total cost) and `on_hourly_frontier` (time vs
    cost per hour, the seed 003 chart), per benchmark."""
    s = summary.copy()
    s["on_frontier"] = False
    s["on_hourly_frontier"] = False
    for _, idx in s.groupby("benchmark").groups.items():
        rows = s.loc[idx]
        s.loc[idx, "on_frontier"] = pareto_mask(rows["train_hours"], rows[cost_column])
        s.loc[idx, "on_hourly_frontier"] = pareto_mask(rows["train_hours"], rows["hourly_usd"])
    return s


SCALING_COLUMNS = [
    "benchmark",
    "gpu_model",
    "offering_id",
    "market",
    "gpus",
    "speedup",
    "ideal",
    "efficiency",
    "reference",
]
BREAKEVEN_COLUMNS = [
    "benchmark",
    "onprem",
    "cloud",
    "market",
    "cloud_gpus_used",
    "onprem_throughput",
    "cloud_throughput",
    "cloud_hourly_usd",
    "breakeven_days_per_month",
    "note",
]


def scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """Multi-GPU speed-up and efficiency against the 1-GPU run of the same GPU
    model: efficiency = throughput_n / (n x throughput_1). The 1-GPU run on
    the same offering (seed 000, figure 2) is preferred, else the median over
    1-GPU offerings of that model. Without throughput, 1/time stands in."""
    rows = []
    if summary.empty:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    s = summary[summary["gpus_used"].notna() & summary["gpu_model"].notna()]
    for (bench, model, *_), grp in s.groupby(["benchmark", "gpu_model", *CONFIG], dropna=False):
        tp = grp["samples_per_second"].where(grp["samples_per_second"] > 0, 1.0 / grp["train_hours"])
        ones = grp[grp["gpus_used"] == 1]
        if ones.empty:
            continue
        for i, r in grp[grp["gpus_used"] > 1].iterrows():
            same = ones[ones["offering_id"] == r["offering_id"]]
            ref = same if not same.empty else ones
            tp1 = float(tp.loc[ref.index].median())
            n = int(r["gpus_used"])
            speedup = float(tp.loc[i]) / tp1
            rows.append(
                {
                    "benchmark": bench,
                    "gpu_model": model,
                    "offering_id": r["offering_id"],
                    "market": r["market"],
                    "gpus": n,
                    "speedup": speedup,
                    "ideal": float(n),
                    "efficiency": speedup / n,
                    "reference": "same offering, 1 GPU"
                    if not same.empty
                    else f"1-GPU {model} offerings ({', '.join(sorted(set(ref['offering_id'])))})",
                }
            )
    return pd.DataFrame(rows, columns=SCALING_COLUMNS)


def _throughput(r) -> float:
    sps = r["samples_per_second"]
    return float(sps) if sps and sps > 0 else 1.0 / float(r["train_hours"])


def breakeven(summary: pd.DataFrame, catalog=None) -> pd.DataFrame:
    """Days of use per month above which each measured on-prem box is
    cheaper per sample than each cloud offering (seed 004, section 5.2)."""
    from analysis.cost import breakeven_days_per_month
    from infra.catalog import CatalogError, load_catalog

    if summary.empty:
        return pd.DataFrame(columns=BREAKEVEN_COLUMNS)
    catalog = catalog or load_catalog()
    specs = {}
    for oid in summary["offering_id"].dropna().unique():
        try:
            o = catalog.get(oid)
        except CatalogError:
            continue
        if o.onprem is not None:
            specs[oid] = o.onprem
    rows = []
    for bench, grp in summary.groupby("benchmark"):
        boxes = grp[grp["offering_id"].isin(specs)]
        clouds = grp[~grp["offering_id"].isin(specs) & (grp["hourly_usd"] > 0)]
        for _, box in boxes.iterrows():
            for _, c in clouds.iterrows():
                days = breakeven_days_per_month(
                    specs[box["offering_id"]], _throughput(box), float(c["hourly_usd"]), _throughput(c)
                )
                rows.append(
                    {
                        "benchmark": bench,
                        "onprem": box["offering_id"],
                        "cloud": c["offering_id"],
                        "market": c["market"],
                        "cloud_gpus_used": c["gpus_used"],
                        "onprem_throughput": _throughput(box),
                        "cloud_throughput": _throughput(c),
                        "cloud_hourly_usd": c["hourly_usd"],
                        "breakeven_days_per_month": days,
                        "note": (
                            "never: on-prem electricity alone costs more per sample"
                            if days is None
                            else f"never within a month: needs {days:.0f} days of use, more than a month has"
                            if days > 31
                            else None
                        ),
                    }
                )
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)


def recommend(summary: pd.DataFrame, opts: Options) -> list[dict]:
    """Per benchmark: cheapest, fastest, and the best under the deadline
    (cheapest that finishes in time) and under the budget (fastest that fits)."""
    cost = opts.cost_column
    out = []
    for bench, grp in summary.groupby("benchmark"):
        g = grp[grp[cost].notna() & grp["train_hours"].notna()]

        def pick(frame, col, why):
            if frame.empty:
                return {"offering_id": None, "why": why}
            r = frame.sort_values([col, "offering_id"]).iloc[0]
            return {
                "offering_id": r["offering_id"],
                "market": r["market"],
                "hours": float(r["train_hours"]),
                "cost_usd": float(r[cost]),
                "price_as_of": r["price_as_of"],
                "price_source": r["price_source"],
            }

        rec = {
            "benchmark": bench,
            "cost_basis": opts.cost_basis,
            "cheapest": pick(g, cost, "no priced run"),
            "fastest": pick(g, "train_hours", "no timed run"),
        }
        if opts.deadline_hours is not None:
            rec["under_deadline"] = pick(
                g[g["train_hours"] <= opts.deadline_hours],
                cost,
                f"no offering trains {bench} within {opts.deadline_hours:g} h",
            )
            rec["deadline_hours"] = opts.deadline_hours
        if opts.budget_usd is not None:
            rec["under_budget"] = pick(
                g[g[cost] <= opts.budget_usd],
                "train_hours",
                f"no offering trains {bench} for at most ${opts.budget_usd:g}",
            )
            rec["budget_usd"] = opts.budget_usd
        out.append(rec)
    return out


def analyse(runs: pd.DataFrame, opts: Options) -> dict:
    """Every table the report shows, from the priced runs table."""
    summary = summarize(runs)
    if not summary.empty:
        summary = add_frontier(relative_to_base(summary, opts.base), opts.cost_column)
    return {
        "summary": summary,
        "scaling": scaling(summary),
        "breakeven": breakeven(summary),
        "recommendations": recommend(summary, opts) if not summary.empty else [],
    }
