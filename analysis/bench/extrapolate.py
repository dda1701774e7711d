"""From one probe to the whole job: wall hours and billed cost, with an interval.

    seconds = overhead + finish + periodic + warm-up + (work - warm-up samples) / throughput

`overhead` (launch to first timed step: boot, image pull, setup), `finish`
(the job's end to the machine's release: result files, upload), the warm-up
(its seconds and the samples done by its end), the throughput between pauses
and the pauses themselves (evaluation, checkpoint, epoch end: their seconds
per sample, `periodic_cost`) are measured by the probe; the whole job's time
and cost are extrapolated. The interval comes from the throughput's: the high throughput
gives the short time and the low cost, the low throughput the long time and
the high cost. Each of the three durations is billed on its own under the
offering's terms (analysis.price.billed.billed), so per-hour billing rounds
each one up to whole hours and a minimum applies to each.
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
    """The whole job on one offering. Hours are wall hours including overhead;
    USD is billed cost under the offering's rule at the price paid.
    A bound that does not exist (the throughput interval reaches zero) is inf."""

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


@dataclass(frozen=True)
class PeriodicCost:
    """The whole job's pauses (evaluation, checkpoint, epoch end): seconds, their interval, what the
    probe saw of them (`seen` pauses) and what a reader must know (`note`)."""

    seconds: float
    low: float
    high: float
    seen: int
    note: str | None = None


def periodic_cost(
    gaps: list, work_samples: float, *, seen_samples: float, seen_seconds: float, scale: float = 1.0
) -> PeriodicCost:
    """The pauses a whole job of `work_samples` pays, from the probe's `gaps`
    ([start, samples at the start, extra seconds], payload.steady.Gap) over the
    `seen_samples` and `seen_seconds` it watched; `scale` turns the readings' clock into wall seconds.

    Two or more pauses: the extra seconds per sample between the first and the last
    (pauses 2..n over the samples from pause 1 to pause n, so a period counts once
    whatever the job does first); the interval takes the shortest and the longest pause.
    One: a job counts samples from 0, so one pause after S1 samples is charged once every
    max(S1, samples seen since it) samples (no second came that soon); the interval runs
    from that pause alone to one every S1. None: nothing charged, and the note says the
    estimate may exclude them."""
    _check("work_samples", work_samples, allow_zero=False)
    gaps = [(float(at), float(samples), float(extra) * scale) for at, samples, extra in gaps]
    if not gaps:
        return PeriodicCost(
            0.0,
            0.0,
            0.0,
            0,
            f"may exclude evaluation/checkpoint pauses: the probe saw none in {seen_seconds:.0f} s "
            f"({seen_samples:,.0f} samples)",
        )
    if len(gaps) == 1:
        _, first, extra = gaps[0]
        period = max(first, seen_samples - first)
        if period <= 0:
            return PeriodicCost(extra, extra, extra, 1, _ONE_PAUSE.format(extra=extra, first=first, period="once"))
        seconds = work_samples * extra / period
        high = work_samples * extra / first if first > 0 else seconds
        return PeriodicCost(
            seconds,
            min(extra, seconds),
            max(high, seconds),
            1,
            _ONE_PAUSE.format(extra=extra, first=first, period=f"every {period:,.0f} samples"),
        )
    span = gaps[-1][1] - gaps[0][1]
    later = [extra for _, _, extra in gaps[1:]]
    if span <= 0:  # pauses with no samples between them: one long pause, charged once per probe's samples
        span, later = max(seen_samples, 1.0), [sum(extra for _, _, extra in gaps)]
    per_pause = work_samples / span
    return PeriodicCost(
        per_pause * sum(later),
        per_pause * len(later) * min(later),
        per_pause * len(later) * max(later),
        len(gaps),
        f"includes evaluation/checkpoint pauses as measured: {sum(later) / len(later):.1f} s every "
        f"{span / len(later):,.0f} samples ({len(gaps)} seen)",
    )


def probe_periodic(probe: dict, work_samples: float, scale: float = 1.0) -> PeriodicCost | None:
    """`periodic_cost` of a probe record (result["probe"]); None for a record from before pauses were measured."""
    points = probe.get("points") or []
    if "gaps" not in probe or not points:
        return None
    seen_seconds = float(points[-1][0]) - float(points[0][0])
    return periodic_cost(
        probe["gaps"], work_samples, seen_samples=float(points[-1][1]), seen_seconds=seen_seconds * scale, scale=scale
    )


_ONE_PAUSE = (
    "evaluation/checkpoint pauses from one pause only ({extra:.1f} s after {first:,.0f} samples; fewer than two "
    "periods seen): charged {period}, and the interval runs from that pause alone to one every {first:,.0f} samples"
)


def work_samples(task: Any) -> float | None:
    """The whole job's samples when the task file alone says (else each probe fills in: answer.job_work)."""
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
    """The whole job's hours and billed cost from a probe's overhead, steady rate and pauses.

    `finish_seconds` is the measured time from the job's end to the machine's release
    (result files, upload), billed like the overhead; 0 when the probe did not time it.
    `periodic` is `periodic_cost` of the probe's pauses (None: not measured). The steady rate
    must be the rate between pauses (the probe takes them out), or they count twice."""
    _check("overhead_seconds", overhead_seconds, allow_zero=True)
    _check("finish_seconds", finish_seconds, allow_zero=True)
    _check("work_samples", work_samples, allow_zero=False)
    _check("hourly_usd", hourly_usd, allow_zero=True)
    for name in ("seconds", "low", "high"):
        _check(f"periodic_{name}", getattr(periodic, name) if periodic else 0.0, allow_zero=True)
    periodic_seconds = periodic.seconds if periodic else 0.0
    if not (steady.samples_per_second > 0 and math.isfinite(steady.samples_per_second)):
        raise CostError(
            f"the probe's throughput is {steady.samples_per_second} samples/s: "
            "nothing to extrapolate from (did the job make progress during the probe?)"
        )
    if not 0 <= steady.low <= steady.samples_per_second <= steady.high:
        raise CostError(
            f"throughput interval {steady.low}..{steady.high} samples/s does not hold its rate "
            f"{steady.samples_per_second}: pass the Steady that payload.steady.steady_rate returned"
        )
    warmup_seconds, remaining = warmup_share(steady, work_samples)
    fixed = overhead_seconds + finish_seconds + warmup_seconds
    seconds = fixed + periodic_seconds + remaining / steady.samples_per_second
    fast = fixed + (periodic.low if periodic else 0.0) + remaining / steady.high
    slow = fixed + (periodic.high if periodic else 0.0) + (remaining / steady.low if steady.low > 0 else math.inf)
    billed_hours, usage, fees = billed(terms, seconds, hourly_usd)
    usd_low, usd_high = (sum(billed(terms, s, hourly_usd)[1:]) for s in (fast, slow))
    return JobEstimate(
        hours=seconds / SECONDS_PER_HOUR,
        hours_low=fast / SECONDS_PER_HOUR,
        hours_high=slow / SECONDS_PER_HOUR,
        usd=usage + fees,
        usd_low=usd_low,
        usd_high=usd_high,
        billed_hours=billed_hours,
        basis=_basis(periodic_seconds, finish_seconds),
        notes=_notes(
            terms,
            steady,
            seconds=seconds,
            billed_hours=billed_hours,
            fixed=overhead_seconds + finish_seconds + periodic_seconds,
            periodic=periodic,
        ),
        periodic_seconds=periodic_seconds,
    )


def warmup_share(steady: Steady, work_samples: float) -> tuple[float, float]:
    """(warm-up seconds charged as measured, samples left for the steady rate).

    The job's first samples ran at the warm-up's pace, not the steady one: the
    probe measured how long the warm-up took and how many samples it had done
    by its end, so the job pays that time once and the rest at the steady rate.
    A probe record without the warm-up's samples charges every sample at the
    steady rate (the warm-up is then not counted)."""
    done = steady.warmup_samples
    if done is None or not math.isfinite(done) or done < 0:
        return 0.0, work_samples
    if done >= work_samples:  # the whole job fits in the warm-up: its share of the warm-up time
        return steady.warmup_seconds * work_samples / done if done else 0.0, 0.0
    return float(steady.warmup_seconds), work_samples - done


def _check(name: str, value: float, *, allow_zero: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "more than zero"
        raise CostError(f"{name} must be a finite number, {need}; got {value!r}")


def _basis(periodic_seconds: float, finish_seconds: float) -> dict[str, str]:
    """Which figures the probe measured and which are extrapolated from them (--json field names)."""
    timed = {"periodic_seconds": periodic_seconds, "finish_seconds": finish_seconds}
    basis = dict.fromkeys(("overhead_seconds", "samples_per_second"), MEASURED)
    return basis | dict.fromkeys(("est_hours", "est_usd"), EXTRAPOLATED) | {k: MEASURED for k, v in timed.items() if v}


def _notes(
    terms: BillingTerms,
    steady: Steady,
    *,
    seconds: float,
    billed_hours: float,
    fixed: float,
    periodic: PeriodicCost | None,
) -> tuple[str, ...]:
    """What a reader must know to trust (or not) the figures."""
    notes = []
    if not steady.steady:
        width = steady.rel_halfwidth
        spread = f"+/-{width:.1%}" if isinstance(width, (int, float)) and math.isfinite(width) else "unbounded"
        why = steady.unsteady or f"95% interval {spread}, {steady.windows} windows"
        notes.append(f"throughput was not steady by the end of the probe ({why}): a longer probe narrows it")
    if steady.low <= 0:
        notes.append("the throughput interval reaches zero: no upper bound on time or cost")
    if periodic is None:
        notes.append("excludes evaluation/checkpoint pauses: not measured")
    elif periodic.note:
        notes.append(periodic.note)
    if fixed > seconds - fixed:
        notes.append("overhead (boot, image pull, setup) is longer than the training itself")
    used_hours = seconds / SECONDS_PER_HOUR
    if billed_hours > used_hours * (1 + 1e-9):
        notes.append(f"billed {terms.describe()}: {billed_hours:.4g} h billed for {used_hours:.4g} h used")
    notes.extend(_TERMS_NOTES.get(terms.kind, lambda t: ())(terms))
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
