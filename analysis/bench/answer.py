"""From probe reports to the bench's answer: one row per candidate, the estimate, the ranked answer.

Each probe's figures come from its own result.json (`probe`: overhead, steady
rate and interval); the whole job is extrapolated by analysis.bench.extrapolate
under the candidate's billing rule and ranked by analysis.bench.rank. The rows
are the `--json` candidates of `gpubench bench`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from analysis.bench.extrapolate import estimate_job, probe_periodic
from analysis.bench.rank import answer, throughput_answer
from analysis.bench.readings import ESTIMATED, ProbeReport
from payload.steady import Steady
from payload.workloads.conventions.work import progress_of, whole_job

ROW_FIELDS = (
    "offering",
    "name",
    "kind",
    "market",
    "status",
    "reason",
    "overhead_seconds",
    "finish_seconds",
    "samples_per_second",
    "samples_per_second_low",
    "samples_per_second_high",
    "est_hours",
    "est_hours_low",
    "est_hours_high",
    "est_usd",
    "est_usd_low",
    "est_usd_high",
    "probe_usd",
    "basis",
)


UNTIMED_FINISH = (
    "excludes the time from the job's end to the machine's release (result upload, shutdown): not timed by this probe"
)


def _steady(doc: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(Steady)}
    return Steady(**{k: v for k, v in doc.items() if k in names})


def wall_steady(probe: dict[str, Any]) -> Any:
    """The probe's steady rate per wall second (None without one).

    The rate is measured on the job's own clock when its lines carry one; a clock that
    leaves time out (training seconds without evaluation) runs slower than the wall,
    which bills. The probe records how much (`wall_per_job_second`, from the lines'
    arrival times): rates are divided by it and the warm-up's seconds multiplied."""
    if not probe.get("steady"):
        return None
    steady = _steady(probe["steady"])
    ratio = _wall_ratio(probe)
    if ratio == 1.0:
        return steady
    per_wall = {k: getattr(steady, k) for k in ("samples_per_second", "low", "high")}
    per_wall = {k: v / ratio if isinstance(v, (int, float)) else v for k, v in per_wall.items()}
    return dataclasses.replace(steady, **per_wall, warmup_seconds=steady.warmup_seconds * ratio)


def _wall_ratio(probe: dict[str, Any]) -> float:
    """Wall seconds per job-clock second, never below 1 (a job's clock cannot outrun the wall; less is
    the lines arriving in bursts)."""
    ratio = probe.get("wall_per_job_second")
    return float(ratio) if isinstance(ratio, (int, float)) and ratio > 1.0 else 1.0


def job_work(report: ProbeReport, work: Any, work_samples: float | None) -> dict[str, Any]:
    """The whole job in the unit the probe counted (payload.workloads.conventions.work): the task file's
    `work`, with what it left out filled in from the job's own output, each figure with its source."""
    progress = progress_of(report.result)
    if progress is None and work is None:
        return {"value": work_samples, "unit": "samples", "figures": {}}
    return whole_job(work, progress)


def _estimate(report: ProbeReport, work_samples: float | None, work: Any = None) -> tuple[dict[str, Any], str | None]:
    """The estimate's row fields, and a reason when there is none (or it is partial)."""
    cand, probe = report.candidate, report.probe
    whole = job_work(report, work, work_samples)
    work_samples = whole["value"]
    if work_samples is None:
        return {"work": whole}, whole.get(
            "reason", "the task file has no `work:` section, so the whole job cannot be extrapolated"
        )
    if cand.terms is None:
        return {}, f"no billing terms for {cand.offering} in the catalog"
    overhead = probe.get("overhead_seconds")
    note = None if overhead is not None else "overhead not measured (no first-step event): the estimate excludes it"
    est = estimate_job(
        overhead_seconds=float(overhead or 0.0),
        finish_seconds=float(report.finish_seconds or 0.0),
        work_samples=float(work_samples),
        steady=wall_steady(probe),
        terms=cand.terms,
        hourly_usd=float(cand.hourly_usd if cand.hourly_usd is not None else 0.0),
        periodic=probe_periodic(probe, float(work_samples), _wall_ratio(probe)),
    )
    fields = {
        "work": whole,
        "periodic_seconds": est.periodic_seconds,
        "est_hours": est.hours,
        "est_hours_low": est.hours_low,
        "est_hours_high": est.hours_high,
        "basis": dict(est.basis),
        "notes": list(est.notes) + ([] if report.finish_seconds is not None else [UNTIMED_FINISH]) + _clock_note(probe),
    }
    if cand.hourly_usd is not None:
        fields.update(est_usd=est.usd, est_usd_low=est.usd_low, est_usd_high=est.usd_high)
    else:
        note = "; ".join(filter(None, [note, f"no hourly price for {cand.offering}: time only"]))
    return fields, note


def _clock_note(probe: dict[str, Any]) -> list[str]:
    ratio = _wall_ratio(probe)
    if ratio == 1.0:
        return []
    return [
        f"the job's own clock left out {1 - 1 / ratio:.1%} of the wall time (evaluation, say): "
        "rates are per wall second"
    ]


def candidate_row(
    report: ProbeReport, work_samples: float | None, throughput_only: bool = False, work: Any = None
) -> dict[str, Any]:
    """One `--json` candidate row for a probe report (its rate alone with `throughput_only`)."""
    cand, probe = report.candidate, report.probe
    wall = wall_steady(probe)
    steady = {"samples_per_second": wall.samples_per_second, "low": wall.low, "high": wall.high} if wall else {}
    row = row_of(
        offering=cand.offering,
        name=report.stack,
        kind=cand.kind,
        market=cand.market,
        status=report.status,
        reason=report.reason,
        overhead_seconds=probe.get("overhead_seconds"),
        finish_seconds=report.finish_seconds,
        samples_per_second=steady.get("samples_per_second"),
        samples_per_second_low=steady.get("low"),
        samples_per_second_high=steady.get("high"),
        probe_usd=report.probe_usd,
        run=report.run_url,
        stopped_by=probe.get("stopped_by"),
    )
    if report.status in ESTIMATED and steady and not throughput_only:
        fields, note = _estimate(report, work_samples, work)
        row.update(fields)
        if note:
            row["reason"] = "; ".join(filter(None, [row["reason"], note]))
    return row


def row_of(**fields: Any) -> dict[str, Any]:
    """A `--json` candidate row: every ROW_FIELDS key, those not given None, `basis` {} unless given."""
    return dict.fromkeys(ROW_FIELDS) | {"basis": {}} | fields


def answer_doc(
    task: str,
    reports: Sequence[ProbeReport],
    unmatched: Sequence[dict[str, Any]],
    *,
    work_samples: float | None,
    deadline_hours: float | None,
    budget_usd: float | None,
    throughput_only: bool = False,
    work: Any = None,
    predicted: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The `gpubench bench --json` document; with `throughput_only` the rates alone, fastest first. `work` is
    the task file's (rows fill in from each probe); `predicted`: rows of candidates not probed (`bench --probe
    N`, analysis.bench.settle), ranked alike."""
    rows = [candidate_row(r, work_samples, throughput_only, work) for r in reports] + list(predicted)
    # a GPU alternative that matched no offering: named with the reason, never probed
    rows += [row_of(offering=u["ask"], kind="cloud", status="unmatched", reason=u["reason"]) for u in unmatched]
    costs = [r["probe_usd"] for r in rows if r["probe_usd"] is not None]
    return {
        "task": task,
        "work_samples": work_samples,
        "candidates": rows,
        "answer": throughput_answer(rows)
        if throughput_only
        else answer(rows, deadline_hours=deadline_hours, budget_usd=budget_usd),
        "throughput_only": throughput_only,
        "probe_total_usd": round(sum(costs), 6),
    }
