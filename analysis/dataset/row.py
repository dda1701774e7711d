"""One validated result.json -> one flat row of facts (no prices applied): prices
are computed from rows, so a new price snapshot never needs a re-download. The
billing windows (instance launch to termination, per attempt) are derived here
from the timeline because that is where the billed time is."""

from __future__ import annotations

import hashlib
import json
import operator
from datetime import datetime

import orjson

from payload.benchmarks import REGISTRY
from payload.schema import non_finite
from payload.timestamps import iso, parse_time

# Timeline events that open and close an attempt's billed window, most precise first: billing
# starts at launch, stops at termination (or the shutdown after which the instance terminates).
WINDOW_START_EVENTS = ("instance_launch", "boot_done", "container_start", "run_start")
WINDOW_END_EVENTS = ("instance_terminated", "shutdown", "shutdown_requested", "upload", "run_end", "train_end")
SPOT_PRICE_EVENT = "spot_price"  # {"event": "spot_price", "hourly_usd": x}: a price change during the run

COLUMNS = (
    "run_id",
    "stack",
    "status",
    "probe",
    "started_at",
    "finished_at",
    "schema_version_read",
    "offering_id",
    "provider",
    "offering_kind",
    "region",
    "zone",
    "instance_type",
    "market",
    "recorded_hourly_usd",
    "recorded_spot_hourly_usd",
    "recorded_price_source",
    "recorded_price_as_of",
    "recorded_price_origin",
    "device",
    "gpu_model",
    "gpus_used",
    "gpu_memory_gb",
    "driver_version",
    "payload_version",
    "tensorflow",
    "image",
    "benchmark",
    "benchmark_kind",
    "backend",
    "all_reduce",
    "precision",
    "per_gpu_batch_size",
    "global_batch_size",
    "replicas",
    "data",
    "fingerprint",
    "workload",
    "workload_label",
    "sample_unit",
    "train_seconds",
    "phase_total_seconds",
    "samples_per_second",
    "samples_per_second_p10",
    "samples_per_second_p90",
    "final_accuracy",
    "gpu_utilization_mean",
    "epochs_completed",
    "steps_completed",
    "samples_trained",
    "attempts",
    "launch_at",
    "terminated_at",
    "instance_seconds",
    "window_notes",
    "attempts_json",
    "spot_price_method",
    "spot_price_warnings",
    "error",
    "source",
    "key",
    "etag",
)


# Benchmark parameters that change the work a run does, named in this order
# in the label; any other parameter (maxlen, hidden units, ...) is part of the
# workload too and named when it differs from the benchmark's default.
_LABELLED = ("epochs", "samples", "steps", "steps_per_epoch", "image_size")
# The per-GPU batch is its own column (first-class flag), the rest are named above.
_NOT_PARAMS = ("batch_size",)
# Recorded by newer payloads, when present: a different backend or workload
# spec is a different workload even with the same parameters.
_EXTRA = ("backend", "workload_spec_hash")

# Built once: json.dumps builds a new encoder on every call given any option.
# Same classes and options as json.dumps, so the same text.
_SPEC_JSON = json.JSONEncoder(sort_keys=True, default=str)
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))

# (key, label) by spec (_spec_key): a sweep has a handful of workloads over thousands of
# results; the label's benchmark defaults are fixed at import. Bounded for an unusual corpus.
_WORKLOADS: dict[bytes | str, tuple[str, str]] = {}
_WORKLOADS_MAX = 4096


def _spec_key(spec: dict) -> bytes | str:
    """A spec's cache key: orjson's sorted JSON, 6x cheaper than the json module's
    text. orjson writes null for None and NaN alike: a spec with a null (or that
    orjson refuses: integers past 64 bits) takes the json module's text."""
    try:
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return _SPEC_JSON.encode(spec)
    return key if b"null" not in key else _SPEC_JSON.encode(spec)


def _sample_unit(name: str) -> str:
    """What one sample of this benchmark is, from its declaration in the payload."""
    b = REGISTRY.get(name)
    return b.sample_unit if b is not None else "sample"


def _fmt_param(key: str, value) -> str:
    if isinstance(value, bool):
        return f"{key} {'on' if value else 'off'}"
    return f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}"


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
        parts.append(_fmt_param(k, params[k]))
    parts += [f"{k} {spec[k]}" for k in _EXTRA if spec.get(k) is not None]
    return ", ".join(parts)


def _refuse_non_finite(result: dict) -> None:
    """NaN or infinity in a result would become a NaN median or cost: refuse it here, with its path."""
    problems = non_finite(result)
    if problems:
        raise ValueError("invalid: " + "; ".join(problems[:5]))


_ATTEMPT = operator.itemgetter("attempt")
_TIME = operator.itemgetter(0)


def _events_by_attempt(result: dict, attempts: list[dict]) -> dict[int, list[tuple[datetime, dict]]]:
    """Timeline events grouped by `attempts` (the result's, in order). Events
    without an attempt number go to the attempt they fall in; an
    instance_launch just before an attempt's start belongs to that attempt."""
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
    """Per attempt: start/end of the billed window, how each was found, and
    the spot price changes recorded during it."""
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
        start = _found(evs, WINDOW_START_EVENTS[:1])
        start_t, start_how = start if start else (parse_time(a["start"]), "attempt start (no instance_launch event)")
        end = _found(evs, WINDOW_END_EVENTS[:3], max)
        if end:
            end_t, end_how = end
        elif a.get("end"):
            end_t, end_how = parse_time(a["end"]), "attempt end (no shutdown event)"
        else:
            last = _found(evs, WINDOW_END_EVENTS[3:], max) or (
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


def _setup_columns(result: dict) -> dict:
    """The row's columns of where and on what a run ran: offering, recorded price, hardware, software."""
    o, p, hw, sw = result["offering"], result["price"], result["hardware"], result["software"]
    return {
        "offering_id": o.get("id"),
        "provider": o.get("provider"),
        "offering_kind": o.get("kind"),
        "region": o.get("region"),
        "zone": o.get("zone"),
        "instance_type": o.get("instance_type"),
        "market": o.get("market") or "on-demand",
        "recorded_hourly_usd": p.get("hourly_usd"),
        "recorded_spot_hourly_usd": p.get("spot_hourly_usd"),
        "recorded_price_source": p.get("source"),
        "recorded_price_as_of": p.get("as_of"),
        "recorded_price_origin": p.get("origin"),
        "device": hw.get("device"),
        "gpu_model": hw.get("gpu_model"),
        "gpus_used": hw.get("gpu_count"),
        "gpu_memory_gb": hw.get("gpu_memory_gb"),
        "driver_version": hw.get("driver_version"),
        "payload_version": sw.get("payload_version"),
        "tensorflow": sw.get("tensorflow"),
        "image": sw.get("image"),
    }


def result_to_row(
    result: dict, *, source: str, key: str, etag: str | None, schema_version_read: int, check_finite: bool = True
) -> dict:
    """The table row of one valid (migrated) result. Raises ValueError on
    a NaN or infinite number (collect sets the file aside with the reason);
    `check_finite=False` only for a result parsed by a reader that refuses them."""
    if check_finite:
        _refuse_non_finite(result)
    sw, b, m = result["software"], result["benchmark"], result["metrics"]
    spread = m.get("samples_per_second_spread") or {}
    windows = billing_windows(result)
    notes = sorted(
        {w["start_from"] for w in windows if "no " in w["start_from"]}
        | {w["end_from"] for w in windows if "no " in w["end_from"]}
    )
    workload_key, workload_name = workload(b, m)
    return {
        "run_id": result["run_id"],
        "stack": result["stack"],
        "status": result["status"],
        # a short probe of a user's job (gpubench bench), not a full run: reports keep the two apart
        "probe": result.get("probe") is not None,
        "started_at": result["started_at"],
        "finished_at": result["finished_at"],
        "schema_version_read": schema_version_read,
        **_setup_columns(result),
        "benchmark": b["name"],
        "benchmark_kind": b["kind"],
        # results from before --backend all ran on tensorflow
        "backend": sw.get("backend") or "tensorflow",
        "all_reduce": b.get("all_reduce"),
        "precision": b.get("precision"),
        "per_gpu_batch_size": b.get("per_gpu_batch_size"),
        "global_batch_size": b.get("global_batch_size"),
        "replicas": b.get("replicas"),
        "data": b.get("data"),
        "fingerprint": b.get("fingerprint"),
        "workload": workload_key,
        "workload_label": workload_name,
        "sample_unit": _sample_unit(b["name"]),
        "train_seconds": m.get("train_seconds"),
        "phase_total_seconds": (m.get("phase_seconds") or {}).get("total"),
        "samples_per_second": m.get("samples_per_second"),
        "samples_per_second_p10": spread.get("p10"),
        "samples_per_second_p90": spread.get("p90"),
        "final_accuracy": m.get("final_accuracy"),
        "gpu_utilization_mean": m.get("gpu_utilization_mean"),
        "epochs_completed": m.get("epochs_completed"),
        "steps_completed": m.get("steps_completed"),
        "samples_trained": m.get("samples_trained"),
        "attempts": len(windows),
        "launch_at": windows[0]["start"] if windows else None,
        "terminated_at": windows[-1]["end"] if windows else None,
        "instance_seconds": sum(w["seconds"] for w in windows),
        "window_notes": "; ".join(notes) or None,
        "attempts_json": _COMPACT_JSON.encode(windows),
        "spot_price_method": None,
        "spot_price_warnings": None,
        "error": result.get("error"),
        "source": source,
        "key": key,
        "etag": etag,
    }
