"""Probe reports to the `gpubench bench --json` rows (each extrapolated under its billing rule) and answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from analysis.bench.extrapolate import estimate_on, probe_periodic
from analysis.bench.probes import ESTIMATED, ProbeReport
from analysis.bench.rank import answer, throughput_answer
from payload.steady import Steady
from payload.workloads.conventions.work import progress_of, whole_job

ROW_FIELDS = (
    "offering name kind market status reason overhead_seconds finish_seconds samples_per_second "
    "samples_per_second_low samples_per_second_high est_hours est_hours_low est_hours_high est_usd est_usd_low "
    "est_usd_high probe_usd basis"
).split()
UNTIMED_FINISH = (
    "excludes the time from the job's end to the machine's release (result upload, shutdown): not timed by this probe"
)


def _steady(doc: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(Steady)}
    return Steady(**{k: v for k, v in doc.items() if k in names})


def wall_steady(probe: dict[str, Any]) -> Any:
    """The probe's steady rate per wall second (None without one): a job clock that leaves time out
    (evaluation) runs slower than the wall, which bills; the probe records by how much."""
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
    """Wall seconds per job-clock second, never below 1 (less is the lines arriving in bursts)."""
    ratio = probe.get("wall_per_job_second")
    return float(ratio) if isinstance(ratio, (int, float)) and ratio > 1.0 else 1.0


def job_work(report: ProbeReport, work: Any, work_samples: float | None) -> dict[str, Any]:
    """The whole job in the unit the probe counted: the task file's `work`, gaps filled from the job's output."""
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
        why = "the task file has no `work:` section, so the whole job cannot be extrapolated"
        return {"work": whole}, whole.get("reason", why)
    overhead = probe.get("overhead_seconds")
    est, why = estimate_on(
        cand,
        overhead_seconds=float(overhead or 0.0),
        finish_seconds=float(report.finish_seconds or 0.0),
        work_samples=float(work_samples),
        steady=wall_steady(probe),
        periodic=probe_periodic(probe, float(work_samples), _wall_ratio(probe)),
    )
    if est is None:
        return {}, why
    note = None if overhead is not None else "overhead not measured (no first-step event): the estimate excludes it"
    fields = {"work": whole, "periodic_seconds": est.periodic_seconds, "basis": dict(est.basis)}
    fields |= est.fields(cand.hourly_usd is not None)
    fields["notes"] = [
        *est.notes,
        *([] if report.finish_seconds is not None else [UNTIMED_FINISH]),
        *_clock_note(probe),
    ]
    if cand.hourly_usd is None:
        note = "; ".join(filter(None, [note, f"no hourly price for {cand.offering}: time only"]))
    return fields, note


def _clock_note(probe: dict[str, Any]) -> list[str]:
    ratio = _wall_ratio(probe)
    left_out = f"the job's own clock left out {1 - 1 / ratio:.1%} of the wall time (evaluation, say)"
    return [] if ratio == 1.0 else [left_out + ": rates are per wall second"]


def candidate_row(
    report: ProbeReport, work_samples: float | None, throughput_only: bool = False, work: Any = None
) -> dict[str, Any]:
    """One `--json` candidate row for a probe report (its rate alone with `throughput_only`)."""
    cand, probe = report.candidate, report.probe
    wall = wall_steady(probe)
    rates = (wall.samples_per_second, wall.low, wall.high) if wall else (None, None, None)
    row = row_of(
        **{f"samples_per_second{s}": v for s, v in zip(("", "_low", "_high"), rates)},
        **{k: getattr(cand, k) for k in ("offering", "kind", "market")},
        **{k: getattr(report, k) for k in ("status", "reason", "finish_seconds", "probe_usd")},
        name=report.stack,
        run=report.run_url,
        **{k: probe.get(k) for k in ("overhead_seconds", "stopped_by")},
    )
    if report.status in ESTIMATED and wall and not throughput_only:
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
    """The `gpubench bench --json` document; `predicted`: rows of candidates not probed (`--probe N`)."""
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
