"""`gpubench predict`: from rates measured on some GPUs (``--measured T4:1=410``), every other candidate's
rate by the spec-ratio model with its interval, then the whole job through the bench's own candidates and
extrapolation. Every figure says whether it was measured or predicted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analysis.bench.answer import answer
from analysis.bench.candidates import CandidateError, alternatives, cloud_candidates, known_gpu
from analysis.bench.extrapolate import estimate_on, work_samples
from analysis.predict import calibration as cal
from infra.catalog import load_catalog
from payload.steady import Steady
from payload.workloads.spec import parse_accelerators

MEASURED, PREDICTED, NOT_PREDICTABLE = "measured", "predicted", "not-predictable"
MEASURED_FORM = "GPU[:N]=RATE (samples per second of the whole machine), e.g. T4:1=410 or A100:8=9500"
ROW_FIELDS = (
    "offering name kind market gpu gpu_count basis reason samples_per_second samples_per_second_low "
    "samples_per_second_high est_hours est_hours_low est_hours_high est_usd est_usd_low est_usd_high "
    "hourly_usd price_source price_date notes"
).split()
CANDIDATE_FIELDS = "offering name kind market gpu gpu_count hourly_usd price_source price_date".split()


class PredictError(ValueError):
    """The prediction cannot be made as asked; the message names the value and the fix."""


@dataclass(frozen=True)
class Measured:
    """A rate measured on a machine of `count` GPUs of `gpu` (the catalog's spelling)."""

    gpu: str
    count: int
    rate: float

    @property
    def label(self) -> str:
        return f"{self.gpu}:{self.count}"


def parse_measured(items: Sequence[str], catalog: Any) -> list[Measured]:
    """`GPU[:N]=RATE` items, each GPU known to the catalog; the same GPU and count twice must agree."""
    if not items:
        raise PredictError(f"no --measured rate: give at least one, {MEASURED_FORM}")
    found: dict[str, Measured] = {}
    for item in items:
        ask, sep, value = str(item).partition("=")
        if not sep:
            raise PredictError(f"--measured {item!r}: no '=RATE'; give {MEASURED_FORM}")
        try:
            (accel,) = parse_accelerators(ask.strip())
            gpu = known_gpu(catalog, accel.name, f"--measured {item!r}")
        except (ValueError, CandidateError) as exc:
            raise PredictError(str(exc) if isinstance(exc, CandidateError) else f"--measured {item!r}: {exc}") from None
        try:
            rate = float(value)
        except ValueError:
            raise PredictError(
                f"--measured {item!r}: {value.strip()!r} is not a number; give {MEASURED_FORM}"
            ) from None
        if not math.isfinite(rate) or rate <= 0:
            raise PredictError(
                f"--measured {item!r}: the rate must be a finite number of samples per second above zero, got "
                f"{value.strip()}; give {MEASURED_FORM}"
            )
        one = Measured(gpu, accel.count, rate)
        before = found.setdefault(one.label, one)
        if before.rate != one.rate:
            raise PredictError(
                f"--measured {one.label} is given twice with different rates ({before.rate:g} and {one.rate:g} "
                "samples/s); give it once (the rate you trust, or the mean of both runs)"
            )
    return list(found.values())


def gpu_specs(catalog: Any) -> dict[str, Any]:
    """Every GPU model's datasheet figures, read through the catalog's offerings."""
    return {o.gpu.model: o.gpu for o in catalog.offerings() if o.gpu}


@dataclass(frozen=True)
class Fit:
    """The model as used for this job: its alpha and where it came from."""

    alpha: float
    basis: str
    calibration: cal.Calibration


def fit(
    measured: Sequence[Measured], specs: dict[str, Any], calib: cal.Calibration, family: str, precision: str
) -> Fit:
    """alpha from the measured GPUs when two or more of them differ, pulled toward the prior; else the prior."""
    prior, group = cal.prior_alpha(calib.priors, family, precision)
    per_gpu = _per_gpu_rates(measured, specs, precision, calib.efficiency)
    pairs = []
    for s, t in ((s, t) for s in per_gpu for t in per_gpu if s < t):
        xc, xb = cal.log_ratios(specs[s], specs[t], precision)
        pairs.append((xc, xb, math.log(per_gpu[t] / per_gpu[s])))
    if not any(abs(xc - xb) > 1e-12 for xc, xb, _ in pairs):
        return Fit(prior, f"prior for {group}, fitted on the calibration tables", calib)
    alpha = cal.fit_alpha(pairs, prior, cal.PRIOR_WEIGHT)
    return Fit(alpha, f"fitted on the measured {', '.join(sorted(per_gpu))}, pulled toward the {group} prior", calib)


def _per_gpu_rates(measured: Sequence[Measured], specs: dict, precision: str, efficiency: float) -> dict[str, float]:
    """One GPU's rate per measured model that has the figures (geometric mean over its machine sizes)."""
    logs: dict[str, list[float]] = {}
    for m in measured:
        if m.gpu in specs and not _missing(specs[m.gpu], precision):
            logs.setdefault(m.gpu, []).append(math.log(m.rate / cal.machine_factor(m.count, efficiency)))
    return {gpu: math.exp(math.fsum(v) / len(v)) for gpu, v in logs.items()}


def _missing(spec: Any, precision: str) -> str | None:
    """What the model lacks of a GPU's figures, or None."""
    try:
        cal.figures(spec, precision)
    except cal.NotPredictable as exc:
        return str(exc)
    return None


def predict_rate(target: str, count: int, measured: Sequence[Measured], specs: dict, model: Fit, precision: str):
    """(rate, low, high) of a machine of `count` `target` GPUs; NotPredictable names what is missing."""
    spec = specs.get(target)
    if spec is None:
        raise cal.NotPredictable(f"the catalog has no datasheet figures for {target}")
    cal.figures(spec, precision)  # the target's own figures, named when missing
    sources = _per_gpu_rates(measured, specs, precision, model.calibration.efficiency)
    if not sources:
        problems = [p for m in measured if (p := _missing(specs[m.gpu], precision))]
        raise cal.NotPredictable("no measured GPU has the figures the model needs: " + "; ".join(problems))
    logs = [
        math.log(rate * cal.ratio(model.alpha, *cal.log_ratios(specs[s], spec, precision)))
        for s, rate in sources.items()
    ]
    rate = math.exp(math.fsum(logs) / len(logs)) * cal.machine_factor(count, model.calibration.efficiency)
    k = model.calibration.factor
    return rate, rate / k, rate * k


def candidate_row(cand: Any, measured, specs, model: Fit, precision: str, job: dict) -> dict[str, Any]:
    """One candidate's row: its rate (measured or predicted, with its interval) and its whole job."""
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS) | {k: getattr(cand, k) for k in CANDIDATE_FIELDS} | {"notes": []}
    own = next((m for m in measured if m.gpu == cand.gpu and m.count == cand.gpu_count), None)
    if own is not None:
        rate = low = high = own.rate
        row["basis"] = MEASURED
    else:
        try:
            rate, low, high = predict_rate(cand.gpu, cand.gpu_count, measured, specs, model, precision)
        except cal.NotPredictable as exc:
            return row | {"basis": NOT_PREDICTABLE, "reason": f"not predictable: {exc}"}
        row["basis"] = PREDICTED
        calib = model.calibration
        if specs[cand.gpu].architecture not in {specs[g].architecture for g in calib.gpus if g in specs}:
            row["notes"].append(
                f"{cand.gpu} ({specs[cand.gpu].architecture}) is outside the calibration data ({', '.join(calib.gpus)}): "
                "the model extrapolates from datasheet ratios alone; probe it if the choice turns on it"
            )
    row.update(samples_per_second=rate, samples_per_second_low=low, samples_per_second_high=high)
    job_fields = _whole_job(cand, rate, low, high, job)
    return row | job_fields | {"notes": row["notes"] + job_fields.get("notes", [])}


def _whole_job(cand: Any, rate: float, low: float, high: float, job: dict) -> dict[str, Any]:
    """The whole job's hours and cost from a rate: the bench's extrapolation and billing, unchanged."""
    if job["work_samples"] is None:
        return {"reason": "the task file has no `work:` section: the rate alone, no whole job"}
    steady = Steady(rate, low, high, (high - low) / (2 * rate), 0.0, 0, True)
    est, why = estimate_on(
        cand, overhead_seconds=job["overhead_seconds"], work_samples=job["work_samples"], steady=steady
    )
    if est is None:
        return {"reason": why}
    notes = [n for n in est.notes if "probe" not in n] + list(job["notes"])
    return est.fields(cand.hourly_usd is not None) | {"notes": notes}


def _asks(task: Any, gpus: str | None, measured: Sequence[Measured], catalog: Any) -> str:
    """The alternatives to price, as one --gpus string: --gpus or the task's, and every measured GPU too.
    Each name is checked here, so an error names where it was written."""
    named = gpus or getattr(getattr(task, "resources", None), "accelerators", None)
    try:
        listed, where = alternatives(task, gpus) if named else ([], "")
        names = [f"{known_gpu(catalog, a.name, where)}:{a.count}" for a in listed]
    except CandidateError as exc:
        raise PredictError(str(exc)) from None
    return ",".join(dict.fromkeys(names + [m.label for m in measured]))


def _model_doc(model: Fit, family: str, precision: str) -> dict[str, Any]:
    calib = model.calibration
    errors = [abs(h.error) for h in calib.held]
    return {
        "name": "spec-ratio",
        "formula": "rate_t = rate_s * (C_t/C_s)**alpha * (B_t/B_s)**(1-alpha); N GPUs: N * E**log2(N)",
        "compute_figure": {"mixed": "fp16_tensor_tflops", "fp32": "tf32_tflops, else fp32_tflops"}[precision],
        "precision": precision,
        "family": family,
        "alpha": model.alpha,
        "alpha_basis": model.basis,
        "scaling_efficiency": calib.efficiency,
        "interval_factor": calib.factor,
        "interval_basis": (
            f"the {cal.INTERVAL_QUANTILE:.0%} quantile of the calibration's leave-one-out errors, never "
            f"narrower than the {cal.STACK_SPREAD - 1:.0%} spread between published software stacks"
        ),
        "method": "docs/bench-method.md, section 5",
        "calibration": {
            "rows": len(calib.rows),
            "gpus": calib.gpus,
            "families": calib.families,
            "sources": cal.sources(calib.rows),
            "leave_one_out": {
                "predictions": len(errors),
                "median_abs_error": cal.quantile(errors, 0.5),
                "p90_abs_error": cal.quantile(errors, 0.9),
            },
        },
    }


def predict(
    task: Any,
    measured_items: Sequence[str],
    *,
    gpus: str | None = None,
    spot: bool | None = None,
    precision: str = "mixed",
    family: str = cal.ANY_FAMILY,
    overhead_seconds: float = 0.0,
    catalog: Any = None,
    as_of: Any = None,
) -> dict[str, Any]:
    """The --json document: the model, the measured rates, one row per candidate, the answer."""
    catalog = catalog or load_catalog()
    specs = gpu_specs(catalog)
    calib = cal.shipped(tuple(sorted(specs.items())))
    # the command's argparse `choices` refuse these too; a caller of this function is told the same way
    for flag, value, allowed in (
        ("precision", precision, cal.PRECISIONS),
        ("family", family, (cal.ANY_FAMILY, *calib.families)),
    ):
        if value not in allowed:
            raise PredictError(f"--{flag} {value!r} is not one of {', '.join(allowed)}")
    if not (isinstance(overhead_seconds, (int, float)) and math.isfinite(overhead_seconds) and overhead_seconds >= 0):
        raise PredictError(f"--overhead-minutes {overhead_seconds / 60:g}: give zero or more minutes")
    measured = parse_measured(measured_items, catalog)
    asks = _asks(task, gpus, measured, catalog)
    try:
        candidates, unmatched = cloud_candidates(task, gpus=asks, spot=spot, catalog=catalog, as_of=as_of)
    except CandidateError as exc:
        raise PredictError(str(exc)) from None
    model = fit(measured, specs, calib, family, precision)
    job = {
        "work_samples": work_samples(task),
        "overhead_seconds": float(overhead_seconds),
        "notes": [] if overhead_seconds else ["excludes boot, image pull and setup: pass --overhead-minutes"],
    }
    rows = [candidate_row(c, measured, specs, model, precision, job) for c in candidates]
    # the bench's ranking and sentence over measured and predicted rows, saying which picks are predicted
    out = answer(rows, deadline_hours=None, budget_usd=None)
    out["sentence"] += predicted_picks(out, {r["offering"] for r in rows if r["basis"] == PREDICTED})
    return {
        "task": str(getattr(task, "path", "") or ""),
        "market": "spot" if any(c.market == "spot" for c in candidates) else "on-demand",
        "measured": [{"gpu": m.gpu, "gpu_count": m.count, "samples_per_second": m.rate} for m in measured],
        "model": _model_doc(model, family, precision),
        "candidates": rows,
        "unmatched": unmatched,
        "answer": out,
    }


def predicted_picks(out: dict[str, Any], guessed: set[str]) -> str:
    """What the answer's sentence adds when a pick's figures are predicted (`guessed` offerings), not measured."""
    picked = [
        f"{key} ({out[key]['offering']})"
        for key in ("cheapest", "fastest")
        if (out.get(key) or {}).get("offering") in guessed
    ]
    if not picked:
        return ""
    return f" Predicted, not measured: the {' and the '.join(picked)}; a probe of it settles the choice."
