"""The whole job's work in the unit its progress was counted in (samples, steps or epochs).

What the task file's `work` leaves out comes from the job's own output (steps per epoch from a `100/180`
counter, epochs from `Epoch 1/20`, the job's steps from a counter that never resets); each figure used says
where it came from."""

from __future__ import annotations

from typing import Any

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
    value, used = _in_unit(unit, known)
    if value is None and "steps" not in known:  # a counter that never reset counts the whole job's steps
        take("steps", *_figure(progress or {}, "job_steps"))
        value, used = _in_unit(unit, known)
    if value is None:
        given = ", ".join(f"{k}={v:g}" for k, v in known.items()) or "nothing"
        return {
            "value": None,
            "unit": unit,
            "figures": figures,
            "reason": f"the job's progress is counted in {unit} and the whole job's {unit} do not follow from "
            f"{given}: give `work` in {unit}, or the size it lacks (samples_per_step, samples_per_epoch)",
        }
    out = {"value": value, "unit": unit, "figures": {k: figures[k] for k in used}}
    unused = {k: v for k, v in figures.items() if k not in used and v["from"] == TASK}
    if unused:  # the task file said it, but it does not convert to the unit counted
        out["unused"] = unused
    return out


def _in_unit(unit: str, k: dict[str, float]) -> tuple[float | None, list[str]]:
    """The whole job in `unit` from the first way the known figures allow, and the figures it used."""
    # per unit: the ways to it, each a product of known figures (a name with "1/" divides)
    ways = {
        "samples": [
            ["samples"],
            ["steps", "samples_per_step"],
            ["epochs", "samples_per_epoch"],
            ["epochs", "steps_per_epoch", "samples_per_step"],
        ],
        "steps": [
            ["steps"],
            ["epochs", "steps_per_epoch"],
            ["samples", "1/samples_per_step"],
            ["epochs", "samples_per_epoch", "1/samples_per_step"],
        ],
        "epochs": [
            ["epochs"],
            ["samples", "1/samples_per_epoch"],
            ["steps", "1/steps_per_epoch"],
            ["steps", "samples_per_step", "1/samples_per_epoch"],
        ],
    }
    for way in ways[unit]:
        names = [w[2:] if w.startswith("1/") else w for w in way]  # not removeprefix: Python 3.8 (the legacy image)
        if all(k.get(n) for n in names):
            value = 1.0
            for w, n in zip(way, names):
                value = value / k[n] if w.startswith("1/") else value * k[n]
            return value, names
    return None, []
