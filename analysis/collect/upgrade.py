"""Schema migrations for result.json: MIGRATIONS maps a version to the function lifting a result to the
next (schema v2 means adding `1: _v1_to_v2`); a result without `schema_version` is v0."""

from __future__ import annotations

import copy
from collections.abc import Callable

from payload.schema import SCHEMA_VERSION


class MigrationError(ValueError):
    """A result whose version cannot be brought to the current schema."""


# v0, the flat prototype format (before the schema file existed), has: run_id, stack, status,
# offering (id string), market, instance_type, instance_id, zone, hourly_usd, price_source,
# price_as_of, gpu {name, count, memory_gb, driver}, benchmark (name string), params, batch_size
# (per GPU, one replica per GPU), train_seconds, images_per_second, accuracy, started_at,
# finished_at, events [{time, event}], error.
def _v0_to_v1(old: dict) -> dict:
    """Unknown v0 values become null, never invented; the result says it was migrated."""
    gpu = old.get("gpu") or {}
    start, end, zone, offering = old.get("started_at"), old.get("finished_at"), old.get("zone"), old.get("offering")
    batch = int(old.get("batch_size") or 1)
    count = int(gpu.get("count") or 0)
    status = old.get("status", "completed")
    return {
        "schema_version": 1,
        "run_id": old["run_id"],
        "stack": old["stack"],
        "status": status,
        "started_at": start,
        "finished_at": end,
        "offering": {
            "id": offering,
            "provider": offering.split("/", 1)[0] if isinstance(offering, str) and "/" in offering else None,
            "region": (zone or "")[:-1] or None,  # the zone without its letter
            "zone": zone,
            "instance_type": old.get("instance_type"),
            "instance_id": old.get("instance_id"),
            "market": old.get("market"),
        },
        "price": {  # v0 only knew an hourly price handed in by the launcher
            "hourly_usd": old.get("hourly_usd"),
            "spot_hourly_usd": None,
            "source": old.get("price_source"),
            "as_of": old.get("price_as_of"),
            "origin": "env" if old.get("hourly_usd") is not None else None,
        },
        "hardware": {
            "device": "GPU" if count else "CPU",
            "gpu_model": gpu.get("name"),
            "gpu_count": count,
            "gpu_memory_gb": gpu.get("memory_gb"),
            "driver_version": gpu.get("driver"),
        },
        "software": {
            "payload_version": str(old.get("payload_version", "0")),
            "python": "unknown",
            "tensorflow": old.get("tensorflow"),
            "image": old.get("image"),
        },
        "benchmark": {
            "name": old["benchmark"],
            "kind": "epochs" if old.get("accuracy") is not None else "throughput",
            "params": dict(old.get("params") or {}),
            "data": "unknown",
            "precision": "fp32",
            "per_gpu_batch_size": batch,
            "global_batch_size": batch * max(count, 1),
            "replicas": max(count, 1),
            "fingerprint": f"v0:{old['stack']}:{old['benchmark']}",
        },
        "metrics": {
            "train_seconds": old.get("train_seconds"),
            "samples_per_second": old.get("images_per_second"),
            "samples_per_second_spread": None,
            "final_accuracy": old.get("accuracy"),
            "gpu_utilization_mean": None,
            "gpu_memory_peak_gb": None,
            "epochs_completed": None,
            "steps_completed": None,
        },
        "attempts": [
            {
                "attempt": 1,
                "instance_id": old.get("instance_id"),
                "zone": zone,
                "start": start,
                "end": end,
                "status": status,
            }
        ],
        "timeline": [{"time": e["time"], "event": e["event"], "attempt": 1} for e in old.get("events") or []],
        "error": old.get("error"),
        "warnings": ["migrated from result schema v0 (the flat prototype format) by analysis.collect.upgrade"],
    }


# version -> function lifting a result from that version to version + 1
MIGRATIONS: dict[int, Callable[[dict], dict]] = {0: _v0_to_v1}


def migrate(result: dict) -> tuple[dict, int]:
    """(result at SCHEMA_VERSION, the version it was read at); MigrationError for one newer or with no path."""
    if not isinstance(result, dict):
        raise MigrationError(f"a result must be a JSON object, got {type(result).__name__}")
    version = result.get("schema_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise MigrationError(f"schema_version {version!r} is not a non-negative integer")
    if version > SCHEMA_VERSION:
        raise MigrationError(
            f"schema_version {version} is newer than this reader ({SCHEMA_VERSION}); upgrade gpubench to read it"
        )
    original = version
    if version < SCHEMA_VERSION:
        result = copy.deepcopy(result)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise MigrationError(f"no migration from schema_version {version} (known: {sorted(MIGRATIONS)})")
        try:
            result = step(result)
        except (KeyError, TypeError, AttributeError, ValueError, ArithmeticError) as exc:  # int(1e400) among them
            raise MigrationError(f"cannot migrate from schema_version {version}: {type(exc).__name__}: {exc}") from exc
        version += 1
    return result, original
