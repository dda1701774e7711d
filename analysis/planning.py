"""What `gpubench up` would launch for a stack and the most it can cost, from the catalog and the stack
files only (no Pulumi, no cloud call): `plan` prints it, `up` shows it before asking; its estimate from the
stack's runs in the results table (`measured_runs_of`: plan and preview)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from analysis.options import table_location
from analysis.price.billed import cost_of
from infra import cloud_init
from infra.catalog import load_catalog
from infra.catalog.estimate import MeasuredRuns, estimate_costs
from infra.config import BenchmarkConfig, parse_config
from infra.launch import payload_env, resolve
from infra.stacks import load_config
from payload.timestamps import iso, utcnow


def measured_runs_of(where: Path | str, stacks: Sequence[str] | None = None) -> MeasuredRuns:
    """The billed time of the completed runs of `stacks` (None: every stack) in the results table at
    `where` (a directory or bucket prefix collect wrote, or its results.parquet itself); only those
    are read, never the whole table. No table, or no analysis extra: none, and the note says why."""
    text = str(where)
    table = str(Path(text).parent) if text.endswith(".parquet") else text
    try:  # heavy: pyarrow and deltalake, the analysis extra; `gpubench plan` runs without it
        from analysis.report.query import NoResultsTable, billed_seconds, results_dataset
    except ImportError:  # the analysis extra (pyarrow, deltalake) is not installed
        return MeasuredRuns(
            {}, None, f"{where} was not read: install the analysis extra (pip install 'gpubench[analysis]')"
        )
    try:
        dataset = results_dataset(table)
    except NoResultsTable:
        return MeasuredRuns({}, None, f"no results table at {where} (run `gpubench collect`, or pass --table DIR)")
    export = Path(table) / "results.parquet"  # the source names the file when that is what was read
    return MeasuredRuns(
        billed_seconds(dataset, stacks), str(export) if "://" not in table and export.is_file() else table, None
    )


def plan_stack(name: str, catalog, measured=None) -> dict:
    """One stack's plan line: offering, market, price, deadline, cost bound, warnings, user-data."""
    cfg = parse_config(load_config(name), name)
    if not isinstance(cfg, BenchmarkConfig):
        unknown = dict.fromkeys(("offering", "market", "hourly_usd", "price_as_of", "max_hours"))
        what = f"a private results bucket ({cfg.provider}), no instance"
        plan = {"bound_usd": 0.0, "estimated_cost": [], "what": what, "warnings": [], "user_data": None}
        return {"stack": name, "kind": "results", **unknown, **plan}
    launch = resolve(cfg, catalog)
    bound = None
    if launch.hourly_usd is not None:
        bound = cost_of(
            launch.offering.id, cfg.max_hours * 3600, market=cfg.market, hourly_usd=launch.hourly_usd, catalog=catalog
        ).cost_usd
    gpu = f"{launch.offering.gpu_count}x {launch.offering.gpu_model}" if launch.offering.gpu_model else "no GPU"
    deadline = iso(utcnow() + timedelta(hours=cfg.max_hours), seconds=True)
    results = cfg.results or f"<resultsUrl of stack {cfg.results_ref(launch.provider).split(':', 1)[1]}>"
    env = payload_env(launch, results, deadline)  # the deadline as if launched now
    return {
        "stack": name,
        "kind": "benchmark",
        "offering": launch.offering.id,
        "market": cfg.market,
        "hourly_usd": launch.hourly_usd,
        "price_as_of": launch.price.as_of.isoformat() if launch.price is not None else None,
        "max_hours": cfg.max_hours,
        "bound_usd": bound,
        "estimated_cost": estimate_costs(cfg, launch.hourly_usd, measured),
        "what": f"1 instance ({gpu}) running {', '.join(cfg.suite)}",
        "warnings": list(launch.warnings),
        "user_data": cloud_init.render_user_data(cloud_init.PayloadLaunch(launch.image, env)),
    }


@dataclass
class PlanOutcome:
    """Every stack's plan and the total bound (stacks without a catalog price are listed, not summed)."""

    plans: list[dict[str, Any]]

    @property
    def unpriced(self) -> list[str]:
        return [p["stack"] for p in self.plans if p["bound_usd"] is None]

    @property
    def total(self) -> dict[str, Any]:
        priced = [p["bound_usd"] for p in self.plans if p["bound_usd"] is not None]
        return {"bound_usd": round(sum(priced), 6), "stacks": len(self.plans), "unpriced": self.unpriced}

    @property
    def price_dates(self) -> list[Any]:
        return [p["price_as_of"] for p in self.plans]


def plan_stacks(names: Sequence[str], *, table: str | None = None, catalog: Any = None) -> PlanOutcome:
    """The plans of `names`, each estimate measured from the results table at `table` (default ./table)."""
    catalog = catalog or load_catalog()
    measured = measured_runs_of(table_location(table), names)  # only these stacks' runs are read
    return PlanOutcome([plan_stack(n, catalog, measured) for n in names])
