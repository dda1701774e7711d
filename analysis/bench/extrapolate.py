"""From one probe to the whole job: wall hours and billed cost, with an interval.

    seconds = overhead + finish + periodic + warm-up + (work - warm-up samples) / throughput

Every term is measured by the probe; the high end of the throughput interval gives the short time and
the low cost. Each duration is billed on its own under the offering's terms (analysis.price.billed), so
per-hour billing rounds each one up and a minimum applies to each. docs/bench-method.md has the method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from analysis.price.billed import CostError, billed
from infra.catalog import BillingTerms
from payload.steady import Steady

SECONDS_PER_HOUR = 3600.0
MEASURED, EXTRAPOLATED = "measured", "extrapolated"


@dataclass(frozen=True)
class JobEstimate:
    """Wall hours (overhead included) and billed USD; a bound that does not exist is inf."""

    hours: float
    hours_low: float
    hours_high: float
    usd: float
    usd_low: float
    usd_high: float
    billed_hours: float
    basis: dict[str, str]  # field -> "measured" | "extrapolated"
    notes: tuple[str, ...]
    periodic_seconds: float = 0.0

    def fields(self, priced: bool) -> dict[str, float]:
        """The --json row's est_* figures (no cost without a price)."""
        return {
            f"est_{k}": getattr(self, k)
            for k in ("hours", "hours_low", "hours_high", "usd", "usd_low", "usd_high")[: 6 if priced else 3]
        }


@dataclass(frozen=True)
class PeriodicCost:
    """The whole job's pauses (evaluation, checkpoint, epoch end): seconds, interval, pauses seen, a note."""

    seconds: float
    low: float
    high: float
    seen: int
    note: str | None = None


NOT_MEASURED = PeriodicCost(0.0, 0.0, 0.0, 0, "excludes evaluation/checkpoint pauses: not measured")
_ONE_PAUSE = (
    "evaluation/checkpoint pauses from one pause only ({extra:.1f} s after {first:,.0f} samples; fewer than two "
    "periods seen): charged {period}, and the interval runs from that pause alone to one every {first:,.0f} samples"
)


def periodic_cost(
    gaps: list, work_samples: float, *, seen_samples: float, seen_seconds: float, scale: float = 1.0
) -> PeriodicCost:
    """The pauses a job of `work_samples` pays, from the probe's `gaps` (payload.steady.Gap); `scale` turns
    the readings' clock into wall seconds.

    Two or more pauses: pauses 2..n over the samples from pause 1 to pause n, so a period counts once
    whatever the job does first. One: a job counts from 0, so a pause after S1 samples recurs every
    max(S1, samples seen since); the interval runs from that pause alone to one every S1."""
    _check("work_samples", work_samples, allow_zero=False)
    gaps = [(float(at), float(samples), float(extra) * scale) for at, samples, extra in gaps]
    if not gaps:
        note = "may exclude evaluation/checkpoint pauses: the probe saw none in "
        return PeriodicCost(0.0, 0.0, 0.0, 0, note + f"{seen_seconds:.0f} s ({seen_samples:,.0f} samples)")
    if len(gaps) == 1:
        _, first, extra = gaps[0]
        period = max(first, seen_samples - first)
        if period <= 0:
            return PeriodicCost(extra, extra, extra, 1, _ONE_PAUSE.format(extra=extra, first=first, period="once"))
        seconds = work_samples * extra / period
        high = work_samples * extra / first if first > 0 else seconds
        note = _ONE_PAUSE.format(extra=extra, first=first, period=f"every {period:,.0f} samples")
        return PeriodicCost(seconds, min(extra, seconds), max(high, seconds), 1, note)
    span = gaps[-1][1] - gaps[0][1]
    later = [extra for _, _, extra in gaps[1:]]
    if span <= 0:  # pauses with no samples between them: one long pause, charged once per probe's samples
        span, later = max(seen_samples, 1.0), [sum(extra for _, _, extra in gaps)]
    per_pause = work_samples / span
    note = (
        f"includes evaluation/checkpoint pauses as measured: {sum(later) / len(later):.1f} s every "
        f"{span / len(later):,.0f} samples ({len(gaps)} seen)"
    )
    low, high = (per_pause * len(later) * f(later) for f in (min, max))
    return PeriodicCost(per_pause * sum(later), low, high, len(gaps), note)


def probe_periodic(probe: dict, work_samples: float, scale: float = 1.0) -> PeriodicCost | None:
    """`periodic_cost` of a probe record (result["probe"]); None for a record from before pauses were measured."""
    points = probe.get("points") or []
    if "gaps" not in probe or not points:
        return None
    seen_seconds = (float(points[-1][0]) - float(points[0][0])) * scale
    return periodic_cost(
        probe["gaps"], work_samples, seen_samples=float(points[-1][1]), seen_seconds=seen_seconds, scale=scale
    )


def work_samples(task: Any) -> float | None:
    """The whole job's samples when the task file alone says (else each probe fills in: answer.candidate_row)."""
    work = getattr(task, "work", None)
    total = work.total_samples() if work is not None else None
    return float(total) if total is not None else None


def estimate_job(
    *,
    overhead_seconds: float,
    work_samples: float,
    steady: Steady,
    terms: BillingTerms,
    hourly_usd: float,
    periodic: PeriodicCost | None = None,
    finish_seconds: float = 0.0,
) -> JobEstimate:
    """The whole job's hours and billed cost. `finish_seconds`: the job's end to the machine's release (0:
    not timed); `steady` must be the rate between pauses (the probe takes them out), or they count twice."""
    periodic = periodic or NOT_MEASURED
    for name, value, zero_ok in (
        ("overhead_seconds", overhead_seconds, True),
        ("finish_seconds", finish_seconds, True),
        ("work_samples", work_samples, False),
        ("hourly_usd", hourly_usd, True),
        *((f"periodic_{k}", getattr(periodic, k), True) for k in ("seconds", "low", "high")),
    ):
        _check(name, value, allow_zero=zero_ok)
    rate = steady.samples_per_second
    if not (rate > 0 and math.isfinite(rate)):
        raise CostError(
            f"the probe's throughput is {rate} samples/s: "
            "nothing to extrapolate from (did the job make progress during the probe?)"
        )
    if not 0 <= steady.low <= rate <= steady.high:
        raise CostError(
            f"throughput interval {steady.low}..{steady.high} samples/s does not hold its rate "
            f"{rate}: pass the Steady that payload.steady.steady_rate returned"
        )
    # the first samples ran at the warm-up's pace, so the job pays its measured time once; a record without
    # the warm-up's samples charges it nothing; a job that fits in the warm-up pays its share of it
    done, warmup_seconds, remaining = steady.warmup_samples, 0.0, work_samples
    if done is not None and math.isfinite(done) and done >= 0:
        warmup_seconds = steady.warmup_seconds * (min(1.0, work_samples / done) if done else 1.0)
        remaining = max(0.0, work_samples - done)
    fixed = overhead_seconds + finish_seconds + warmup_seconds
    seconds = fixed + periodic.seconds + remaining / rate
    fast = fixed + periodic.low + remaining / steady.high
    slow = fixed + periodic.high + (remaining / steady.low if steady.low > 0 else math.inf)
    billed_hours, usage, fees = billed(terms, seconds, hourly_usd)
    usd_low, usd_high = (sum(billed(terms, s, hourly_usd)[1:]) for s in (fast, slow))
    overhead = overhead_seconds + finish_seconds + periodic.seconds
    return JobEstimate(
        *(s / SECONDS_PER_HOUR for s in (seconds, fast, slow)),
        usage + fees,
        usd_low,
        usd_high,
        billed_hours,
        # which figures the probe measured and which are extrapolated from them (--json field names)
        basis=dict.fromkeys(("overhead_seconds", "samples_per_second"), MEASURED)
        | dict.fromkeys(("est_hours", "est_usd"), EXTRAPOLATED)
        | {k: MEASURED for k, v in (("periodic_seconds", periodic.seconds), ("finish_seconds", finish_seconds)) if v},
        notes=_notes(terms, steady, seconds, billed_hours, overhead, periodic),
        periodic_seconds=periodic.seconds,
    )


def estimate_on(cand: Any, **figures: Any) -> tuple[JobEstimate | None, str | None]:
    """`estimate_job` under a candidate's billing terms at its price (0 without one), or the reason there is none."""
    if cand.terms is None:
        return None, f"no billing terms for {cand.offering} in the catalog"
    return estimate_job(terms=cand.terms, hourly_usd=float(cand.hourly_usd or 0.0), **figures), None


def _check(name: str, value: float, *, allow_zero: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "more than zero"
        raise CostError(f"{name} must be a finite number, {need}; got {value!r}")


def _notes(terms, steady, seconds, billed_hours, fixed, periodic) -> tuple[str, ...]:
    """What a reader must know to trust (or not) the figures."""
    notes = []
    if not steady.steady:
        width = steady.rel_halfwidth
        spread = f"+/-{width:.1%}" if isinstance(width, (int, float)) and math.isfinite(width) else "unbounded"
        why = steady.unsteady or f"95% interval {spread}, {steady.windows} windows"
        notes.append(f"throughput was not steady by the end of the probe ({why}): a longer probe narrows it")
    if steady.low <= 0:
        notes.append("the throughput interval reaches zero: no upper bound on time or cost")
    notes += [periodic.note] if periodic.note else []
    if fixed > seconds - fixed:
        notes.append("overhead (boot, image pull, setup) is longer than the training itself")
    used_hours = seconds / SECONDS_PER_HOUR
    if billed_hours > used_hours * (1 + 1e-9):
        notes.append(f"billed {terms.describe()}: {billed_hours:.4g} h billed for {used_hours:.4g} h used")
    notes += _TERMS_NOTES.get(terms.kind, lambda t: ())(terms)
    if terms.monthly_fee_usd:
        notes.append(f"includes the ${terms.monthly_fee_usd:g}/month account fee, prorated over the job")
    return tuple(notes)


_TERMS_NOTES = {
    "monthly": lambda t: (
        f"monthly rental prorated at {t.hours_per_month:g} h/month, charged as used "
        "(renting for this job alone may cost the whole month)",
    ),
    "amortised": lambda t: ("on-prem: amortised purchase + electricity per hour, charged as used",),
}
