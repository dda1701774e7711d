"""Judging what a bucket holds: which keys are results, which files are set aside and why, and whether a
result.json's bytes make a table row (an older schema version lifted first: MIGRATIONS), the same
whichever way a file was read; Summary, what one collect reports (``to_dict``: ``--json``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from analysis.dataset.row import result_to_row
from analysis.fastjson import NestedTooDeeply, loads_finite
from payload import layout
from payload.schema import SCHEMA_VERSION, ResultValidationError, is_valid, validate_result

# What a run directory may hold besides result.json (payload.layout); log-tail.txt is a job's rolling log
# tail (payload.workloads.job.LOG_TAIL_NAME: named here, that module loads the job runner)
LOG_TAIL_NAME = "log-tail.txt"
KNOWN_RUN_FILES = (*layout.RUN_FILES, LOG_TAIL_NAME)

PARTIAL_UPLOAD = "partial: temporary upload file"
UNREADABLE_NAME = "unreadable name: not UTF-8 text (shown escaped); rename it to collect it"
UNKNOWN_RUN_FILE = (
    "unknown file in a run directory (expected result.json, events.jsonl, epochs.csv, log-tail.txt, checkpoints/)"
)

# The largest result.json a collect reads (a real one is a few kB): past it a file is set aside unread,
# so a planted file can neither fill memory nor grow the manifest or the table.
MAX_RESULT_BYTES = 4 * 1024 * 1024


@dataclass
class Summary:
    sources: list[str]
    runs: int = 0
    valid: int = 0
    new: int = 0
    cached: int = 0
    skipped: list[dict] = field(default_factory=list)
    table: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    table_written: bool = False
    settled_stacks: int = 0  # not listed file by file: checked by stamp, journal or run directories
    # why this collect is incomplete (a location not listed, a download failed): the exit code says so
    incomplete: list[str] = field(default_factory=list)

    def set_aside(self) -> list[dict]:
        """The set-aside files by key: the same order however they were found."""
        return sorted(self.skipped, key=lambda n: (str(n.get("key")), str(n.get("reason"))))

    def to_dict(self) -> dict:
        return {
            **vars(self),
            "skipped": self.set_aside(),
            "complete": not self.incomplete,
            "seconds": round(self.seconds, 3),
        }


def too_large(size: int | None) -> str | None:
    if size is not None and size > MAX_RESULT_BYTES:
        cap = MAX_RESULT_BYTES // (1024 * 1024)
        return f"too large: {size} bytes or more, over the {cap} MiB a result.json may have (set aside unread)"
    return None


def parse(data, *, source: str, key: str, etag: str | None) -> tuple[dict, dict]:
    """(row, migrated result) of one result.json's bytes; ValueError with the reason."""
    if (why := too_large(len(data))) is not None:  # what a capped read handed over: never parsed
        raise ValueError(why)
    data = bytes(data)
    if not data.strip():
        raise ValueError("corrupt: empty file (upload interrupted?)")
    try:
        raw, finite = loads_finite(data)
    except UnicodeDecodeError:
        raise ValueError("corrupt: not UTF-8 text") from None
    except NestedTooDeeply:
        raise ValueError("corrupt: nested too deeply to be a result") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"corrupt: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated upload?)"
        ) from None
    try:
        result, version = migrate(raw)
        if not is_valid(result):  # a yes costs 0.016 ms; validate_result says why not
            validate_result(result)
    except MigrationError as exc:
        raise ValueError(f"unknown schema: {exc}") from None
    except ResultValidationError as exc:
        problems = exc.problems[:5] + ([f"... {len(exc.problems) - 5} more"] if len(exc.problems) > 5 else [])
        raise ValueError("invalid: " + "; ".join(problems)) from None
    # a document orjson read holds no NaN or infinity (it refuses them); a migrated one is checked again
    try:
        row = result_to_row(
            result,
            source=source,
            key=key,
            etag=etag,
            schema_version_read=version,
            check_finite=not (finite and result is raw),
        )
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a value the row cannot be made from sets this result aside, nothing more
        raise ValueError(f"invalid: {type(exc).__name__}: {exc}") from None
    return row, result


def run_file_problem(rest: str) -> str | None:
    """Why a file of a run directory (not result.json) is set aside, None for a known one."""
    if layout.version_of(rest)[0] in KNOWN_RUN_FILES or rest.startswith(layout.RUN_DIRS):
        return None
    if rest.split("/")[-1].startswith(".") or rest.endswith((".tmp", ".part")):
        return PARTIAL_UPLOAD
    return UNKNOWN_RUN_FILE


def classify(keys: Iterable[str]) -> tuple[list[str], list[dict], int]:
    """(result keys, set-aside files, number of run directories) of a listing; keys outside runs/ are left alone."""
    results, skipped, runs = [], [], {}
    for key in keys:
        m = layout.parse_key(key)
        if m is None:
            if key.startswith(layout.ROOT):
                skipped.append({"key": key, "reason": "unknown file: not inside runs/<stack>/<run-id>/"})
            continue
        run = runs.setdefault((m.stack, m.run_id), {"result": False, "files": []})
        if m.is_result:
            run["result"] = True
            results.append(key)
        elif (why := run_file_problem(m.rest)) is None:
            run["files"].append(m.rest)
        else:
            skipped.append({"key": key, "reason": why})
    for (stack, run_id), run in runs.items():
        if not run["result"]:
            found = ", ".join(sorted({f.split("/")[0] for f in run["files"]})) or "nothing"
            skipped.append(
                {
                    "key": f"{layout.ROOT}{stack}/{run_id}/",  # as listed: a name outside the slugs is no error here
                    "reason": f"partial run: no result.json (still running, or stopped before writing it); has {found}",
                }
            )
    return results, skipped, len(runs)


def wrong_layout(url: str, listing: Iterable[str]) -> str:
    """The error for a location holding objects but no runs: the layout, and the URL probably meant."""
    keys = sorted(listing)
    hint = ""
    for key in keys:
        head, sep, _ = key.rpartition("/" + layout.ROOT)
        parts = key.split("/")
        if sep and layout.parse_key(key[len(head) + 1 :]) is not None:
            hint = f"; did you mean {url.rstrip('/')}/{head}?"
            break
        if len(parts) == 3 and parts[2] == layout.RESULT_NAME and url.rstrip("/").endswith("/runs"):
            hint = f"; did you mean {url.rstrip('/')[: -len('/runs')]}? (the URL is the folder holding runs/)"
            break
    sample = ", ".join(keys[:3]) + (" ..." if len(keys) > 3 else "")
    return (
        f"no runs in the expected layout {layout.LAYOUT} under {url} ({len(keys)} object(s), e.g. {sample})"
        f"{hint}; the table is left as it was"
    )


def misplaced_check(row: dict, key: str) -> dict:
    """The row, if the result is where it claims to be; else ValueError("misplaced: ...") (a copy or forgery)."""
    where = layout.parse_key(key)
    claims = (row.get("stack"), row.get("run_id"))
    if where is not None and (where.stack, where.run_id) == claims:
        return row
    try:
        expected = f" (its place is {layout.result_key(*claims)})"
    except layout.BadKeyPart:
        expected = " (its stack or run id cannot even be a key)"
    raise ValueError(
        f"misplaced: the result says stack {claims[0]!r}, run {claims[1]!r}, but is stored at {key}{expected}"
    )


# Schema migrations: MIGRATIONS maps a version to the function lifting a result to the next (schema v2
# means adding `1: _v1_to_v2`); a result without `schema_version` is v0.
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
            "final_accuracy": old.get("accuracy"),
            **dict.fromkeys(("samples_per_second_spread", "gpu_utilization_mean", "gpu_memory_peak_gb")),
            **dict.fromkeys(("epochs_completed", "steps_completed")),
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
        "warnings": ["migrated from result schema v0 (the flat prototype format) by analysis.collect.validation"],
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
