"""The whole job's work in the unit its progress was counted in, filled in from what the job printed.

A probe measures a rate in the unit the job's progress came in (samples, or
steps when the task file gives no samples per step, or epochs for the Hugging
Face Trainer's fractions). The task file's `work` may be given in epochs, steps
or samples, with or without their size; what it leaves out comes from the
job's own output (steps per epoch from a `100/180` counter, the epoch count
from `Epoch 1/20`, the whole job's steps from a counter that never resets).
Each figure used says where it came from.
"""

from __future__ import annotations

from typing import Any

__all__ = ["progress_of", "whole_job"]

TASK = "the task file"


def progress_of(result: dict | None) -> dict | None:
    """The progress record a workload's result carries (benchmark.workload.reported.progress), if any."""
    workload = ((result or {}).get("benchmark") or {}).get("workload") or {}
    progress = (workload.get("reported") or {}).get("progress")
    return progress if isinstance(progress, dict) else None


def _figure(progress: dict, name: str) -> tuple[float | None, str | None]:
    item = progress.get(name)
    if isinstance(item, dict) and isinstance(item.get("value"), (int, float)) and item["value"] > 0:
        return float(item["value"]), str(item.get("from") or "the job's output")
    return None, None


def whole_job(work: Any, progress: dict | None) -> dict:
    """{"value": work in `unit`, "unit", "figures": {name: {"value", "from"}}} or {"value": None, "reason"}.

    `work` is the task file's payload.workloads.spec.Work (or None); `progress` a result's progress
    record (None: the job printed gpubench's own lines, counted in samples)."""
    unit = (progress or {}).get("unit") or "samples"
    figures: dict[str, dict] = {}
    known: dict[str, float] = {}

    def take(name: str, value: float | None, source: str | None) -> None:
        if value is not None and name not in known:
            known[name] = float(value)
            figures[name] = {"value": value, "from": source}

    for name in ("samples", "steps", "epochs", "samples_per_step", "samples_per_epoch"):
        take(name, getattr(work, name, None), TASK)
    for name in ("samples_per_step", "samples_per_epoch", "steps_per_epoch", "epochs"):
        take(name, *_figure(progress or {}, name))
    value = _in_unit(unit, known)
    if value is None and "steps" not in known:  # a counter that never reset counts the whole job's steps
        take("steps", *_figure(progress or {}, "job_steps"))
        value = _in_unit(unit, known)
    if value is None:
        given = ", ".join(f"{k}={v:g}" for k, v in known.items()) or "nothing"
        return {
            "value": None,
            "unit": unit,
            "figures": figures,
            "reason": f"the job's progress is counted in {unit} and the whole job's {unit} do not follow from "
            f"{given}: give `work` in {unit}, or the size it lacks (samples_per_step, samples_per_epoch)",
        }
    return {"value": value, "unit": unit, "figures": figures}


def _in_unit(unit: str, k: dict[str, float]) -> float | None:
    """The whole job in `unit`, from the first way the known figures allow."""
    sps, spe, steps_pe = k.get("samples_per_step"), k.get("samples_per_epoch"), k.get("steps_per_epoch")
    if spe is None and steps_pe and sps:
        spe = steps_pe * sps
    if steps_pe is None and spe and sps:
        steps_pe = spe / sps
    per = {"samples": {"samples": 1.0, "steps": sps, "epochs": spe}, "steps": {"steps": 1.0, "epochs": steps_pe}}
    per["steps"]["samples"] = 1 / sps if sps else None
    per["epochs"] = {"epochs": 1.0, "samples": 1 / spe if spe else None, "steps": 1 / steps_pe if steps_pe else None}
    for given in ("samples", "steps", "epochs"):
        factor = per[unit].get(given)
        if given in k and factor:
            return k[given] * factor
    return None
