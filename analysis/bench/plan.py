"""What the probes may cost before anything starts: each probe's whole allowed time (boot allowance plus
probe limit) billed under its offering's rule; a budget that bound exceeds is refused."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field

from analysis.bench.candidates import Candidate
from analysis.bench.preflight import check_option
from analysis.bench.readings import probe_cost
from analysis.output import fmt_usd, print_table
from infra.conventions import UsageError
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
    total_bound_usd: float
    unpriced: list[str] = field(default_factory=list)  # candidate names with no price: no bound

    @property
    def billed_seconds_limit(self) -> float:
        """The longest a probe's machine is used: the probe limit plus the boot allowance."""
        return self.probe_seconds + self.boot_allowance_seconds

    def table(self) -> str:
        """The candidate table printed before anything starts: what runs where, at what price, at most."""
        out = io.StringIO()
        rows = [
            (
                i,
                c.name,
                c.offering,
                c.market,
                f"{c.gpu_count}x {c.gpu}" if c.gpu else "-",
                fmt_usd(c.hourly_usd),
                c.terms.describe() if c.terms else "-",
                c.price_date,
                USD_SIGN.format(self.bounds[c.name]) if c.name in self.bounds else "unpriced",
            )
            for i, c in enumerate(self.candidates, 1)
        ]
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
    """Bound every candidate's probe: (probe limit + boot allowance) billed under its rule at its price."""
    problem = check_option("probe_minutes", probe_minutes)
    if problem:
        raise ValueError(problem)
    if not boot_allowance_seconds >= 0:
        raise ValueError(f"boot allowance {boot_allowance_seconds}: must be zero or more seconds")
    names = [c.name for c in candidates]
    doubles = sorted({n for n in names if names.count(n) > 1})
    if doubles:
        raise ValueError(f"two candidates share the stack name {', '.join(doubles)}; list each place once")
    probe_seconds = float(probe_minutes) * 60.0
    limit = probe_seconds + float(boot_allowance_seconds)
    bounds: dict[str, float] = {}
    unpriced: list[str] = []
    for c in candidates:
        bound, _ = probe_cost(c, limit)
        if bound is None:
            unpriced.append(c.name)
        else:
            bounds[c.name] = bound
    return ProbePlan(
        candidates=list(candidates),
        probe_seconds=probe_seconds,
        boot_allowance_seconds=float(boot_allowance_seconds),
        bounds=bounds,
        total_bound_usd=sum(bounds.values()),
        unpriced=unpriced,
    )


def check_budget(plan: ProbePlan, budget_usd: float | None) -> None:
    """Refuse to start when the probes alone could cost more than the budget."""
    problem = check_option("budget_usd", budget_usd)
    if problem:
        raise ValueError(problem)
    if budget_usd is None or plan.total_bound_usd <= budget_usd:
        return
    dearest = max(plan.bounds, key=plan.bounds.__getitem__)
    raise BudgetExceeded(
        f"the probes could cost up to {USD_SIGN.format(plan.total_bound_usd)} ({len(plan.bounds)} probes of at most "
        f"{plan.probe_seconds / 60:g} min plus {plan.boot_allowance_seconds / 60:g} min boot, billed under each "
        f"offering's rule), more than --budget {USD_SIGN.format(budget_usd)}; raise --budget, shorten --probe-minutes, "
        f"or drop candidates (the dearest probe is {dearest}, up to {USD_SIGN.format(plan.bounds[dearest])})"
    )
