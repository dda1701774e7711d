"""The report's tables derived from the summary (a row per configuration x offering x market x GPUs x
price, aggregated from the runs by analysis.report.query): relative time and cost, ImageNet-equivalent
figures, multi-GPU scaling, on-prem break-even, the Pareto frontier and recommendations."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.price.billed import DEFAULT_BUDGET_USD, DEFAULT_DEADLINE_HOURS, breakeven_days_per_month
from analysis.reference.studies import imagenet_schedules
from analysis.report.answer import add_price_hint
from infra.catalog import CatalogError, load_catalog

# Preferred bases for the relative columns, in order: a single K80 (seed 002's base); else see default_base.
BASE_PREFERENCE = ("aws/p2.xlarge", "gcp/n1-standard-4+1xk80", "gcp/n1-standard-1+1xk80")
DEFAULT_BASE = BASE_PREFERENCE[0]
# Runs are repeats of one another when their workload is the same (analysis.dataset.row.workload); backend,
# precision and batch size are in it and shown as columns too (seed 002 compared frameworks side by side).
CONFIG = ["backend", "precision", "per_gpu_batch_size"]
WORKLOAD = ["benchmark", "workload"]
# Runs at different hourly prices are different rows, never averaged into a price nobody paid (spot runs
# share one row and list the prices they paid).
GROUP = [*WORKLOAD, "offering_id", "market", "gpus_used", *CONFIG, "price_key"]
# Which run cost the frontier and the recommendations rank by.
COST_BASES = {"billed": "billed_cost_usd", "train": "train_cost_usd"}
# A summary row's figures over its runs (analysis.report.query): medians, the spread of some, and the texts
# its runs name, each once.
MEDIANS = (
    "train_hours instance_hours train_cost_usd billed_cost_usd samples_per_second hourly_usd "
    "samples_per_usd final_accuracy gpu_utilization_mean"
).split()
SPREADS = ("train_hours", "train_cost_usd", "billed_cost_usd", "samples_per_second")
JOINED = (
    "workload_label sample_unit provider offering_kind gpu_model price_basis price_source price_as_of "
    "billing price_note"
).split()


@dataclass
class Options:
    base: str | None = None  # None: default_base(summary)
    deadline_hours: float | None = DEFAULT_DEADLINE_HOURS
    budget_usd: float | None = DEFAULT_BUDGET_USD
    cost_basis: str = "billed"

    @property
    def cost_column(self) -> str:
        return COST_BASES[self.cost_basis]


def add_throughput_metrics(summary: pd.DataFrame) -> pd.DataFrame:
    """ImageNet-equivalent time and cost (seed 004), from the row's median throughput at its price."""
    s = summary.copy()
    sps, hourly = s["samples_per_second"], s["hourly_usd"]
    sched = imagenet_schedules()
    samples = s["benchmark"].map(lambda b: sched.get(b, {}).get("samples"))
    s["imagenet_samples"] = samples
    s["imagenet_hours"] = (samples / sps / 3600.0).where(sps > 0)
    s["imagenet_cost_usd"] = s["imagenet_hours"] * hourly
    return s


def default_base(summary: pd.DataFrame) -> str:
    """The first of BASE_PREFERENCE in the data, else the offering that ran the most configurations (ties:
    alphabetical), so the relative columns are never all blank; without any offering, DEFAULT_BASE."""
    if summary.empty:
        return DEFAULT_BASE
    present = set(summary["offering_id"].dropna())
    preferred = next((o for o in BASE_PREFERENCE if o in present), None)
    counts = summary.dropna(subset=["offering_id"]).groupby("offering_id")["workload"].nunique()
    return preferred or min(counts.items(), key=lambda kv: (-kv[1], kv[0]), default=(DEFAULT_BASE,))[0]


def relative_to_base(summary: pd.DataFrame, base: str | None = None) -> pd.DataFrame:
    """Time and cost as multiples of the base offering's, per configuration (seed 002); a configuration
    the base did not run gets NaN and says so in `relative_note`."""
    s = summary.copy()
    base = base or default_base(s)
    s[["rel_time", "rel_train_cost", "rel_billed_cost"]] = math.nan
    s["relative_note"], s["base"] = None, base
    for (bench, _wl), idx in s.groupby(WORKLOAD, dropna=False).groups.items():
        rows = s.loc[idx]
        cand = rows[rows["offering_id"] == base]
        if cand.empty:
            ran = ((s["benchmark"] == bench) & (s["offering_id"] == base)).any()  # another configuration
            at = f" at {rows['workload_label'].iloc[0] or 'this configuration'}" if ran else ""
            s.loc[idx, "relative_note"] = f"base {base} has no completed {bench} run{at}"
            continue
        # on-demand before spot; the offering as sold (all its GPUs) first; of several prices, the lowest
        b = cand.sort_values(["market", "gpus_used", "hourly_usd"], ascending=[True, False, True]).iloc[0]
        s.loc[idx, "rel_time"] = rows["train_hours"] / b["train_hours"]
        s.loc[idx, "rel_train_cost"] = rows["train_cost_usd"] / b["train_cost_usd"]
        s.loc[idx, "rel_billed_cost"] = rows["billed_cost_usd"] / b["billed_cost_usd"]
        s.loc[idx, "relative_note"] = f"vs {base} {b['market']}"
    return s


def pareto_mask(x: pd.Series, y: pd.Series) -> pd.Series:
    """True for points no other point beats on both x and y (lower is better); a missing value is never on it."""
    pts = list(zip(x.tolist(), y.tolist()))
    known = [not (pd.isna(a) or pd.isna(b)) for a, b in pts]
    beaten = [
        any(known[j] and xj <= xi and yj <= yi and (xj, yj) != (xi, yi) for j, (xj, yj) in enumerate(pts))
        for xi, yi in pts
    ]
    return pd.Series([k and not b for k, b in zip(known, beaten)], index=x.index)


def add_frontier(summary: pd.DataFrame, cost_column: str = "billed_cost_usd") -> pd.DataFrame:
    """`on_frontier` (time vs total cost) and `on_hourly_frontier` (time vs cost per hour, seed 003's chart)."""
    s = summary.copy()
    s["on_frontier"] = False
    s["on_hourly_frontier"] = False
    for _, idx in s.groupby(WORKLOAD, dropna=False).groups.items():
        rows = s.loc[idx]
        s.loc[idx, "on_frontier"] = pareto_mask(rows["train_hours"], rows[cost_column])
        s.loc[idx, "on_hourly_frontier"] = pareto_mask(rows["train_hours"], rows["hourly_usd"])
    return s


SCALING_COLUMNS = (
    "benchmark workload workload_label gpu_model offering_id market gpus speedup ideal efficiency reference"
).split()
BREAKEVEN_COLUMNS = (
    "benchmark workload workload_label onprem cloud market cloud_gpus_used onprem_throughput "
    "cloud_throughput cloud_hourly_usd breakeven_days_per_month twice_cheaper_days_per_month note"
).split()


def scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """Multi-GPU speed-up and efficiency = throughput_n / (n x throughput_1), against the 1-GPU run on the
    same offering (seed 000, figure 2), else the median 1-GPU offering of the model; 1/time stands in for
    a missing throughput."""
    if summary.empty:
        return pd.DataFrame(columns=SCALING_COLUMNS)
    rows = []
    s = summary[summary["gpus_used"].notna() & summary["gpu_model"].notna()]
    for (bench, wl, model), grp in s.groupby([*WORKLOAD, "gpu_model"], dropna=False):
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
            reference = (
                "same offering, 1 GPU"
                if not same.empty
                else f"1-GPU {model} offerings ({', '.join(sorted(set(ref['offering_id'])))})"
            )
            row = (r["workload_label"], model, r["offering_id"], r["market"], n, speedup, float(n), speedup / n)
            rows.append((bench, wl, *row, reference))
    return pd.DataFrame(rows, columns=SCALING_COLUMNS)


def _throughput(r) -> float:
    sps = r["samples_per_second"]
    return float(sps) if sps and sps > 0 else 1.0 / float(r["train_hours"])


def _never(days: float | None) -> str | None:
    if days is None:
        return "never: on-prem electricity alone costs more per sample"
    if days > 31:
        return f"never within a month: needs {days:.0f} days of use, more than a month has"
    return None


def breakeven(summary: pd.DataFrame, catalog=None, times: float = 2.0) -> pd.DataFrame:
    """Per configuration: the days of use a month above which each measured on-prem box is cheaper per
    sample than each cloud offering, and above which it is `times` as cheap (seed 004, section 5.2: 2x)."""
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
    for (bench, wl), grp in summary.groupby(WORKLOAD, dropna=False):
        boxes = grp[grp["offering_id"].isin(specs)]
        clouds = grp[~grp["offering_id"].isin(specs) & (grp["hourly_usd"] > 0)]
        for _, box in boxes.iterrows():
            spec = specs[box["offering_id"]]
            for _, c in clouds.iterrows():
                rates = (_throughput(box), float(c["hourly_usd"]), _throughput(c))
                days = breakeven_days_per_month(spec, *rates)
                twice = breakeven_days_per_month(spec, *rates, times=times)
                pair = (box["workload_label"], box["offering_id"], c["offering_id"], c["market"], c["gpus_used"])
                measured = (_throughput(box), _throughput(c), c["hourly_usd"])
                rows.append((bench, wl, *pair, *measured, days, twice, _never(days)))
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)


def recommend(summary: pd.DataFrame, opts: Options) -> list[dict]:
    """Per configuration: cheapest, fastest (needs no price), the cheapest within the deadline and the
    fastest within the budget; offerings without a price are listed in `unpriced` with how to price them."""
    cost = opts.cost_column
    out = []
    for (bench, wl), grp in summary.groupby(WORKLOAD, dropna=False):
        timed = grp[grp["train_hours"].notna()]
        g = timed[timed[cost].notna()]

        def pick(frame, col, why):
            if frame.empty:
                return {"offering_id": None, "why": why}
            r = frame.sort_values([col, "offering_id"]).iloc[0]
            c = r[cost]
            return {
                "offering_id": r["offering_id"],
                "market": r["market"],
                "gpus_used": None if pd.isna(r["gpus_used"]) else int(r["gpus_used"]),
                "hours": float(r["train_hours"]),
                "cost_usd": None if pd.isna(c) else float(c),
                "prices_paid": r["prices_paid"],
                "price_as_of": None if pd.isna(r["price_as_of"]) else r["price_as_of"],
                "price_source": None if pd.isna(r["price_source"]) else r["price_source"],
            }

        unpriced = timed[timed[cost].isna()]
        rec = {
            "benchmark": bench,
            "workload": wl,
            "workload_label": grp["workload_label"].iloc[0] if "workload_label" in grp else None,
            "sample_unit": grp["sample_unit"].iloc[0] if "sample_unit" in grp else None,
            "cost_basis": opts.cost_basis,
            "cheapest": pick(g, cost, "no priced run"),
            "fastest": pick(timed, "train_hours", "no timed run"),
            "unpriced": [
                {
                    "offering_id": r["offering_id"],
                    "market": r["market"],
                    "hours": float(r["train_hours"]),
                    "why": r["price_note"] if isinstance(r["price_note"], str) else "no price",
                    "how_to_price": add_price_hint(r["offering_id"], r["market"]),
                }
                for r in unpriced.drop_duplicates(["offering_id", "market"]).to_dict("records")
            ],
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


def analyse_summary(summary: pd.DataFrame, opts: Options) -> dict:
    """Every table the report shows, from the summary (analysis.report.query.RunsQuery.summary)."""
    if not summary.empty:
        opts.base = opts.base or default_base(summary)
        summary = add_frontier(relative_to_base(summary, opts.base), opts.cost_column)
    return {
        "summary": summary,
        "scaling": scaling(summary),
        "breakeven": breakeven(summary),
        "recommendations": recommend(summary, opts) if not summary.empty else [],
    }
