"""Before anything starts: every option value and what was asked of the task (BenchError, exit 2), for
cloud probes what a launch needs (NotReady, exit 3), and the plan: each probe's whole allowed time (boot
allowance plus probe limit) billed under its offering's rule, refused when it could pass --budget.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.bench.candidates import Candidate
from analysis.bench.probes import probe_cost
from analysis.output import fmt_usd, print_table
from analysis.readiness import launch_checks
from payload import exitcodes
from payload.exitcodes import UsageError
from payload.money import USD_SIGN

# Launch, image pull and the task's `setup` before the job's first step: ten minutes covers a cloud GPU
# machine pulling a framework image; a probe still booting after it is stopped.
DEFAULT_BOOT_ALLOWANCE_SECONDS = 600.0
TABLE_HEADERS = ("#", "candidate", "offering", "market", "gpus", "$/h", "billing", "price as of", "probe at most")


class BudgetExceeded(UsageError):
    """The probes could cost more than the budget; the message names the bound, the budget and the fix."""


@dataclass
class ProbePlan:
    """The candidates to probe, how long each probe may run, and the most each (and all) can cost."""

    candidates: list[Candidate]
    probe_seconds: float
    boot_allowance_seconds: float
    bounds: dict[str, float]  # candidate name -> the most its probe can cost (priced candidates only)

    def __post_init__(self):
        self.total_bound_usd = sum(self.bounds.values())
        self.unpriced = [c.name for c in self.candidates if c.name not in self.bounds]  # no price: no bound

    def table(self) -> str:
        """The candidate table printed before anything starts: what runs where, at what price, at most."""
        out = io.StringIO()
        rows = []
        for i, c in enumerate(self.candidates, 1):
            gpus, billing = (f"{c.gpu_count}x {c.gpu}" if c.gpu else "-"), (c.terms.describe() if c.terms else "-")
            bound = USD_SIGN.format(self.bounds[c.name]) if c.name in self.bounds else "unpriced"
            rows.append((i, c.name, c.offering, c.market, gpus, fmt_usd(c.hourly_usd), billing, c.price_date, bound))
        print_table(rows, TABLE_HEADERS, out=out)
        minutes = self.probe_seconds / 60
        boot = self.boot_allowance_seconds / 60
        out.write(
            f"\nEach probe runs the job for at most {minutes:g} min after up to {boot:g} min of boot, image pull and "
            f"setup, billed under the offering's rule; all {len(self.candidates)} probes together cost at most "
            f"{USD_SIGN.format(self.total_bound_usd)}.\n"
        )
        if self.unpriced:
            out.write(f"Not in that total (no price in the catalog): {', '.join(self.unpriced)}.\n")
        for c in self.candidates:
            for note in c.notes:
                if note.startswith("retired"):
                    out.write(f"{c.ask or c.name} ({c.name}): {note}; retired offerings are never probed.\n")
        return out.getvalue()


def make_plan(
    candidates: Sequence[Candidate],
    *,
    probe_minutes: float,
    boot_allowance_seconds: float = DEFAULT_BOOT_ALLOWANCE_SECONDS,
) -> ProbePlan:
    """Bound every candidate's probe: (probe limit + boot allowance) billed under its rule at its price; ValueError
    for a limit or allowance no probe can have (bench() checks its options first, a caller of this may not)."""
    problems = check_options(probe_minutes=probe_minutes)
    if not (isinstance(boot_allowance_seconds, (int, float)) and boot_allowance_seconds >= 0):
        problems.append(f"boot allowance {boot_allowance_seconds}: must be zero or more seconds")
    if problems:
        raise ValueError("; ".join(problems))
    names = [c.name for c in candidates]
    doubles = sorted({n for n in names if names.count(n) > 1})
    if doubles:
        raise ValueError(f"two candidates share the stack name {', '.join(doubles)}; list each place once")
    probe_seconds, boot = float(probe_minutes) * 60.0, float(boot_allowance_seconds)
    costs = {c.name: probe_cost(c, probe_seconds + boot) for c in candidates}
    return ProbePlan(list(candidates), probe_seconds, boot, {n: usd for n, usd in costs.items() if usd is not None})


def check_budget(plan: ProbePlan, budget_usd: float | None) -> None:
    """Refuse to start when the probes alone could cost more than the budget; ValueError for a budget that is no
    number of dollars above zero."""
    if problems := check_options(budget_usd=budget_usd):
        raise ValueError(problems[0])
    if budget_usd is None or plan.total_bound_usd <= budget_usd:
        return
    dearest = max(plan.bounds, key=plan.bounds.__getitem__)
    raise BudgetExceeded(
        f"the probes could cost up to {USD_SIGN.format(plan.total_bound_usd)} ({len(plan.bounds)} probes of at most "
        f"{plan.probe_seconds / 60:g} min plus {plan.boot_allowance_seconds / 60:g} min boot, billed under each "
        f"offering's rule), more than --budget {USD_SIGN.format(budget_usd)}; raise --budget, shorten --probe-minutes, "
        f"or drop candidates (the dearest probe is {dearest}, up to {USD_SIGN.format(plan.bounds[dearest])})"
    )


class NotReady(exitcodes.GpubenchError, RuntimeError):
    """Cloud probes cannot launch from here; the message names every missing piece and its fix."""

    exit_code = exitcodes.MISSING


@dataclass(frozen=True)
class Option:
    """A numeric option's range: above `low` (or at it when `low_ok`), at most `high`, which no real job needs."""

    flag: str
    unit: str
    low: float
    high: float
    why_high: str
    example: str
    low_ok: bool = False


OPTIONS = {
    "probe_minutes": Option(
        "--probe-minutes", "minutes", 0, 24 * 60, "a day: a probe measures a rate, then stops", "--probe-minutes 10"
    ),
    "deadline_hours": Option("--deadline", "hours", 0, 24 * 366, "a year", "--deadline 12"),
    "budget_usd": Option("--budget", "US dollars", 0, 10_000_000, "ten million dollars", "--budget 20"),
    "hourly_usd": Option(
        "--hourly-usd", "US dollars an hour", 0, 10_000, "USD 10,000 an hour", "--hourly-usd 0.25", low_ok=True
    ),
}


def check_options(**values: Any) -> list[str]:
    """Every problem among the numeric options given (name=value, names from OPTIONS; None: not given)."""
    problems = []
    for o, value in ((OPTIONS[name], value) for name, value in values.items() if value is not None):
        lowest = f">= {o.low:g}" if o.low_ok else f"> {o.low:g}"
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number or value < o.low or (value == o.low and not o.low_ok):
            problems.append(f"{o.flag} {value}: give {o.unit} {lowest}, e.g. {o.example}")
        elif value > o.high:
            problems.append(f"{o.flag} {value:g}: more than {o.high:g} {o.unit} ({o.why_high}); give e.g. {o.example}")
    return problems


def check_probe_count(probe: int | None, candidates: int) -> str | None:
    """`--probe N` once the candidates are known: at most as many as there are."""
    if probe is None or probe <= candidates:
        return None
    return (
        f"--probe {probe}: there are only {candidates} candidate(s); give --probe {candidates} or fewer "
        "(or leave it out to probe every candidate)"
    )


def check_request(
    task: Any, *, gpus, spot=None, local, hosts, throughput_only, deadline_hours, hourly_usd=None, probe=None
) -> list[str]:
    """Problems with what was asked of this task: `--probe N` not a whole number of cloud candidates (the model
    needs the catalog's GPU figures), a missing `work:`, options that cannot apply."""
    problems = []
    machines = "--local" if local else "--hosts"
    if probe is not None and (isinstance(probe, bool) or not isinstance(probe, int) or probe < 1):
        problems.append(
            f"--probe {probe}: give how many candidates to probe first, a whole number from 1, e.g. --probe 2"
        )
    elif probe is not None and (local or hosts):
        problems.append(
            f"--probe with {machines}: the rest are predicted from the catalog's GPU figures, which cloud "
            f"offerings have and {machines} machines do not; drop --probe"
        )
    if getattr(task, "work", None) is None and not throughput_only:
        problems.append(
            f"{task.path}: no `work:` section, so the whole job's hours and cost cannot be estimated; add one "
            "(e.g. `work: {epochs: 90, samples_per_epoch: 1281167}`, docs/bench.md) or pass --throughput-only "
            "to measure samples/s alone"
        )
    if throughput_only and deadline_hours is not None:
        problems.append("--deadline with --throughput-only: a deadline needs the whole job's estimate; drop one")
    if spot is not None and (local or hosts):
        problems.append(
            f"{'--spot' if spot else '--on-demand'} with {machines}: the market applies to cloud offerings only; drop it"
        )
    if hourly_usd is not None and not local:
        problems.append("--hourly-usd prices this machine (--local) only; drop it, or add --local")
    if gpus and (local or hosts):
        where = "--local probes this machine only" if local else "--hosts probes those hosts only"
        problems.append(
            f"--gpus {gpus} with {machines}: {where}, whatever GPUs it has; "
            "drop --gpus, or leave out --local/--hosts to compare cloud offerings"
        )
    return problems


def preflight_key(bench_id: str) -> str:
    """The object the bucket check writes: under the bench's own prefix, never among the runs."""
    return f"_gpubench/bench/{bench_id}/preflight.json"


def check_ready(
    candidates: Sequence[Any],
    results_url: str,
    bench_id: str,
    *,
    pulumi: bool,
    cwd=None,
    checks: Callable[..., list[dict]] | None = None,
) -> list[dict]:
    """The launch checks for the cloud candidates, if any; NotReady names each that failed with its fix."""
    providers = sorted({c.provider for c in candidates if c.kind == "cloud"})
    if not providers:
        return []
    made = (checks or launch_checks)(providers, results_url, preflight_key(bench_id), pulumi=pulumi, cwd=cwd)
    missing = [c for c in made if not c["ok"]]
    if missing:
        lines = "\n".join(f"  {c['check']}: {c['detail']}" for c in missing)
        raise NotReady(
            f"cloud probes cannot start from here; nothing was asked and nothing started. Missing:\n{lines}\n"
            "(`gpubench check` lists every check.)"
        )
    return made
