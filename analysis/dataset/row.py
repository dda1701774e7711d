"""One validated result.json -> one flat row of facts, no prices (a new price snapshot never needs a
re-download), with each attempt's billing window (launch to termination) from the timeline."""

from __future__ import annotations

import hashlib
import json
import operator
from datetime import datetime

import orjson

from payload.benchmarks import REGISTRY
from payload.schema import non_finite
from payload.timestamps import iso, parse_time

# Billing stops at termination (or the shutdown after which the instance terminates), most precise
# first; without any, at the attempt's recorded end, else its last sign of work.
WINDOW_END_EVENTS = ("instance_terminated", "shutdown", "shutdown_requested")
LAST_WORK_EVENTS = ("upload", "run_end", "train_end")
SPOT_PRICE_EVENT = "spot_price"  # {"event": "spot_price", "hourly_usd": x}: a price change during the run

# Every column of a row, in order: its type (analysis.dataset.store gives it its Arrow type) and where a
# result holds it ("section.field"), or "" where result_to_row works it out.
COLUMN_SPEC: dict[str, tuple[type, str]] = {
    "run_id": (str, "run_id"),
    "stack": (str, "stack"),
    "status": (str, "status"),
    "probe": (bool, ""),
    "started_at": (str, "started_at"),
    "finished_at": (str, "finished_at"),
    "schema_version_read": (int, ""),
    "offering_id": (str, "offering.id"),
    "provider": (str, "offering.provider"),
    "offering_kind": (str, "offering.kind"),
    "region": (str, "offering.region"),
    "zone": (str, "offering.zone"),
    "instance_type": (str, "offering.instance_type"),
    "market": (str, ""),
    "recorded_hourly_usd": (float, "price.hourly_usd"),
    "recorded_spot_hourly_usd": (float, "price.spot_hourly_usd"),
    "recorded_price_source": (str, "price.source"),
    "recorded_price_as_of": (str, "price.as_of"),
    "recorded_price_origin": (str, "price.origin"),
    "device": (str, "hardware.device"),
    "gpu_model": (str, "hardware.gpu_model"),
    "gpus_used": (int, "hardware.gpu_count"),
    "gpu_memory_gb": (float, "hardware.gpu_memory_gb"),
    "driver_version": (str, "hardware.driver_version"),
    "payload_version": (str, "software.payload_version"),
    "tensorflow": (str, "software.tensorflow"),
    "image": (str, "software.image"),
    "benchmark": (str, "benchmark.name"),
    "benchmark_kind": (str, "benchmark.kind"),
    "backend": (str, ""),
    "all_reduce": (str, "benchmark.all_reduce"),
    "precision": (str, "benchmark.precision"),
    "per_gpu_batch_size": (int, "benchmark.per_gpu_batch_size"),
    "global_batch_size": (int, "benchmark.global_batch_size"),
    "replicas": (int, "benchmark.replicas"),
    "data": (str, "benchmark.data"),
    "fingerprint": (str, "benchmark.fingerprint"),
    "workload": (str, ""),
    "workload_label": (str, ""),
    "sample_unit": (str, ""),
    "train_seconds": (float, "metrics.train_seconds"),
    "phase_total_seconds": (float, ""),
    "samples_per_second": (float, "metrics.samples_per_second"),
    "samples_per_second_p10": (float, ""),
    "samples_per_second_p90": (float, ""),
    "final_accuracy": (float, "metrics.final_accuracy"),
    "gpu_utilization_mean": (float, "metrics.gpu_utilization_mean"),
    "epochs_completed": (int, "metrics.epochs_completed"),
    "steps_completed": (int, "metrics.steps_completed"),
    "samples_trained": (int, "metrics.samples_trained"),
    "attempts": (int, ""),
    "launch_at": (str, ""),
    "terminated_at": (str, ""),
    "instance_seconds": (float, ""),
    "window_notes": (str, ""),
    "attempts_json": (str, ""),
    "spot_price_method": (str, ""),
    "spot_price_warnings": (str, ""),
    "error": (str, "error"),
    "source": (str, ""),
    "key": (str, ""),
    "etag": (str, ""),
}
COLUMNS = tuple(COLUMN_SPEC)
_COPIED = [(c, *path.rpartition(".")[::2]) for c, (_, path) in COLUMN_SPEC.items() if path]


# Parameters named first in a workload's label; any other (maxlen, hidden units, ...) is named when
# it differs from the benchmark's default.
_LABELLED = ("epochs", "samples", "steps", "steps_per_epoch", "image_size")
_NOT_PARAMS = ("batch_size",)  # its own column (per_gpu_batch_size)
# Recorded by newer payloads: a different backend or workload spec is a different workload.
_EXTRA = ("backend", "workload_spec_hash")

# Built once: json.dumps builds a new encoder per call given any option (same text).
_SPEC_JSON = json.JSONEncoder(sort_keys=True, default=str)
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))

# (key, label) by spec (_spec_key): a handful of workloads over thousands of results. Bounded.
_WORKLOADS: dict[bytes | str, tuple[str, str]] = {}
_WORKLOADS_MAX = 4096


def _spec_key(spec: dict) -> bytes | str:
    """orjson's sorted JSON, 6x cheaper than json's; with a null (None and NaN alike there) or
    what orjson refuses (integers past 64 bits), json's text."""
    try:
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return _SPEC_JSON.encode(spec)
    return key if b"null" not in key else _SPEC_JSON.encode(spec)


def workload(b: dict, m: dict) -> tuple[str, str]:
    """(key, label) of what a run trained: benchmark, every work-changing parameter, per-GPU
    batch and precision; runs of different keys are never pooled. Without recorded parameters
    (v0 results), completed epochs/steps stand in. `b`, `m`: as parsed (a tuple would key as a list)."""
    params = dict(b.get("params") or {})
    if not params:
        params = {k: v for k, v in (("epochs", m.get("epochs_completed")), ("steps", m.get("steps_completed"))) if v}
    spec = {
        "benchmark": b["name"],
        "params": {k: v for k, v in params.items() if k not in _NOT_PARAMS},
        "per_gpu_batch_size": b.get("per_gpu_batch_size"),
        "precision": b.get("precision"),
        **{k: b[k] for k in _EXTRA if b.get(k) is not None},
    }
    cache_key = _spec_key(spec)
    known = _WORKLOADS.get(cache_key)
    if known is None:
        if len(_WORKLOADS) >= _WORKLOADS_MAX:
            _WORKLOADS.clear()
        key = hashlib.sha256(_SPEC_JSON.encode(spec).encode()).hexdigest()[:12]
        known = _WORKLOADS[cache_key] = (key, workload_label(b["name"], spec))
    return known


def workload_label(name: str, spec: dict) -> str:
    """Short name of a configuration: "2 ep x 12,000 samples, batch 128, fp32"."""
    params = spec["params"]
    defaults = dict(REGISTRY[name].defaults) if name in REGISTRY else {}

    def count(value) -> str:  # 12,000 for numbers; anything else as written (the schema types params loosely)
        return f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)

    head = [
        f"{params[k] if k == 'epochs' else count(params[k])} {unit}"
        for k, unit in (("epochs", "ep"), ("samples", "samples"), ("steps_per_epoch", "steps/ep"), ("steps", "steps"))
        if params.get(k) is not None
    ]
    parts = [" x ".join(head)] if head else []
    if spec.get("per_gpu_batch_size") is not None:
        parts.append(f"batch {spec['per_gpu_batch_size']}")
    if params.get("image_size") is not None:
        parts.append(f"{params['image_size']} px")
    if spec.get("precision"):
        parts.append(str(spec["precision"]))
    for k in sorted(params):
        if k in _LABELLED or (k in defaults and params[k] == defaults[k]):
            continue
        if params[k] is None and k not in defaults:
            continue
        v = params[k]
        parts.append(f"{k} {('on' if v else 'off') if isinstance(v, bool) else f'{v:,}' if isinstance(v, int) else v}")
    parts += [f"{k} {spec[k]}" for k in _EXTRA if spec.get(k) is not None]
    return ", ".join(parts)


_ATTEMPT = operator.itemgetter("attempt")
_TIME = operator.itemgetter(0)


def _events_by_attempt(result: dict, attempts: list[dict]) -> dict[int, list[tuple[datetime, dict]]]:
    """Timeline events by attempt: one without an attempt number goes to the attempt it falls in,
    an instance_launch just before an attempt's start to that attempt."""
    starts = [(parse_time(a["start"]), a["attempt"]) for a in attempts]
    out: dict[int, list[tuple[datetime, dict]]] = {a["attempt"]: [] for a in attempts}
    for ev in result.get("timeline") or []:
        t = parse_time(ev["time"])
        n = ev.get("attempt")
        if n not in out:
            if ev["event"] == "instance_launch":
                n = next((a for s, a in starts if s >= t), starts[-1][1])
            else:
                n = next((a for s, a in reversed(starts) if s <= t), starts[0][1])
        out[n].append((t, ev))
    for evs in out.values():
        evs.sort(key=_TIME)
    return out


def _found(events, names, pick=min) -> tuple[datetime, str] | None:
    """(`pick` of its times, name) of the first of `names` that `events` hold, or None."""
    for name in names:
        if hits := [t for t, e in events if e["event"] == name]:
            return pick(hits), name
    return None


def billing_windows(result: dict) -> list[dict]:
    """Per attempt: the billed window, how each end was found, and the spot price changes up to its end."""
    finished = parse_time(result["finished_at"])
    attempts = sorted(result["attempts"], key=_ATTEMPT)
    grouped = _events_by_attempt(result, attempts)
    spot_all = sorted(
        (iso(parse_time(e["time"])), float(e["hourly_usd"]))
        for e in result.get("timeline") or []
        if e["event"] == SPOT_PRICE_EVENT and isinstance(e.get("hourly_usd"), (int, float))
    )
    windows = []
    for a in attempts:
        evs = grouped[a["attempt"]]
        start = _found(evs, ("instance_launch",))
        start_t, start_how = start if start else (parse_time(a["start"]), "attempt start (no instance_launch event)")
        end = _found(evs, WINDOW_END_EVENTS, max)
        if end:
            end_t, end_how = end
        elif a.get("end"):
            end_t, end_how = parse_time(a["end"]), "attempt end (no shutdown event)"
        else:
            last = _found(evs, LAST_WORK_EVENTS, max) or (
                (max(t for t, _ in evs), evs[-1][1]["event"]) if evs else None
            )
            end_t, end_how = last if last else (finished, "result finished_at")
            end_how = f"{end_how} (attempt has no end)"
        if end_t < start_t:
            end_t, end_how = start_t, f"{end_how}; before the start, taken as zero length"
        # the spot price is the market's, not the instance's: every change
        # recorded up to this attempt's end bears on it
        end_iso = iso(end_t)
        spot = [p for p in spot_all if p[0] <= end_iso]
        windows.append(
            {
                "attempt": a["attempt"],
                "status": a["status"],
                "start": iso(start_t),
                "end": end_iso,
                "seconds": (end_t - start_t).total_seconds(),
                "start_from": start_how,
                "end_from": end_how,
                "spot_prices": spot,
            }
        )
    return windows


def result_to_row(
    result: dict, *, source: str, key: str, etag: str | None, schema_version_read: int, check_finite: bool = True
) -> dict:
    """The table row of one valid (migrated) result. Raises ValueError on a NaN or infinite number (collect
    sets the file aside with the reason); `check_finite=False` only for a result parsed by a reader that refuses them."""
    if check_finite and (problems := non_finite(result)):  # it would become a NaN median or cost
        raise ValueError("invalid: " + "; ".join(problems[:5]))
    b, m = result["benchmark"], result["metrics"]
    spread = m.get("samples_per_second_spread") or {}
    windows = billing_windows(result)
    notes = sorted({w[end] for w in windows for end in ("start_from", "end_from") if "no " in w[end]})
    workload_key, workload_name = workload(b, m)
    made = {
        # a short probe of a user's job (gpubench bench), not a full run: reports keep the two apart
        "probe": result.get("probe") is not None,
        "schema_version_read": schema_version_read,
        "market": result["offering"].get("market") or "on-demand",
        "backend": result["software"].get("backend") or "tensorflow",  # results from before --backend all ran on it
        "workload": workload_key,
        "workload_label": workload_name,
        "sample_unit": REGISTRY[b["name"]].sample_unit if b["name"] in REGISTRY else "sample",
        "phase_total_seconds": (m.get("phase_seconds") or {}).get("total"),
        "samples_per_second_p10": spread.get("p10"),
        "samples_per_second_p90": spread.get("p90"),
        "attempts": len(windows),
        "launch_at": windows[0]["start"] if windows else None,
        "terminated_at": windows[-1]["end"] if windows else None,
        "instance_seconds": sum(w["seconds"] for w in windows),
        "window_notes": "; ".join(notes) or None,
        "attempts_json": _COMPACT_JSON.encode(windows),
        "spot_price_method": None,
        "spot_price_warnings": None,
        "source": source,
        "key": key,
        "etag": etag,
    }
    for column, section, field in _COPIED:
        made[column] = result[section].get(field) if section else result.get(field)
    return {c: made[c] for c in COLUMNS}
