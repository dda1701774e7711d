"""Writes one run's files under ``runs/<stack>/<run-id>/``.

``result.json`` is validated against the schema before every write (a result
that does not validate is a bug here, not something to upload), then
``events.jsonl`` and ``epochs.csv`` (the seeds' own per-epoch log: epoch,
elapsed seconds of that epoch, loss, acc, val_loss, val_acc; epochs are
numbered from 1 and continue across resumed attempts). Uploads that fail go
to the spool (payload.spool) and are reported in ``spooled``; an uploaded
result is announced in the results journal (payload.journal).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import sys
from typing import Literal

from payload.journal import announce
from payload.layout import next_generation, run_prefix, versioned
from payload.schema import SCHEMA_VERSION, validate_result

EPOCH_COLUMNS = ("epoch", "elapsed", "loss", "acc", "val_loss", "val_acc")

Status = Literal["completed", "failed", "interrupted"]
# A final result ends its benchmark on this launch; `interrupted` means a spot restart resumes it.
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed"})


def epochs_csv(rows: list[dict]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=EPOCH_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in EPOCH_COLUMNS})
    return buf.getvalue().encode()


class RunWriter:
    """Uploads a run's artifacts through a SpoolingStore-like object, never over an existing object.

    Each attempt of a run writes its own generation of every file (payload.layout.versioned):
    a first attempt the plain names (result.json, ...), a resumed one result.v1.json, ...;
    files written again within an attempt (checkpoint state, log tail) take `next_key`."""

    def __init__(self, store, stack: str, run_id: str, generation: int = 0):
        self.store, self.stack, self.run_id = store, stack, run_id
        self.prefix = run_prefix(stack, run_id)
        self.generation = generation
        self._parts: dict[str, itertools.count] = {}

    @classmethod
    def resuming(cls, store, stack: str, run_id: str, attempts_before: int) -> RunWriter:
        """The writer of a resumed attempt: one generation above what the run's directory holds
        (at least `attempts_before`, should the listing fail)."""
        prefix = run_prefix(stack, run_id)
        try:
            listed = next_generation(info.key[len(prefix) :] for info in store.list(prefix))
        except Exception:  # noqa: BLE001 - bucket down: the attempt count is a safe lower bound
            listed = 0
        return cls(store, stack, run_id, max(listed, attempts_before))

    def key(self, name: str) -> str:
        """This attempt's key of a file it writes once."""
        return self.prefix + versioned(name, self.generation)

    def next_key(self, name: str) -> str:
        """A new key for one more write of `name` in this attempt (part 0, 1, 2, ...)."""
        part = next(self._parts.setdefault(name, itertools.count()))
        return self.prefix + versioned(name, self.generation, part)

    def artifacts(self) -> dict:
        return {
            "result": self.key("result.json"),
            "events": self.key("events.jsonl"),
            "epochs": self.key("epochs.csv"),
            "checkpoints": self.prefix + "checkpoints/",
        }

    def write_result(self, result: dict) -> bool:
        """Upload result.json; once it is in the bucket (not spooled), announce it in the journal.

        A journal entry that cannot be written is said on stderr, not in the run's files:
        result.json is already uploaded and events.jsonl before it, and neither is ever
        rewritten for a hint that a full listing makes up for. The run's outcome is unchanged."""
        data = json.dumps(result, indent=2, sort_keys=False).encode()
        validate_result(json.loads(data))  # what is written: a version string of torch's is a str subclass
        key = self.key("result.json")
        uploaded = self.store.put_bytes(key, data, "application/json") is not False
        if uploaded:
            announce(self.store, key, warn=_say)
        return uploaded

    def write_events(self, timeline) -> bool:
        return self.store.put_bytes(self.key("events.jsonl"), timeline.to_jsonl(), "application/x-ndjson") is not False

    def write_epochs(self, rows: list[dict]) -> bool:
        return self.store.put_bytes(self.key("epochs.csv"), epochs_csv(rows), "text/csv") is not False

    def write_all(self, result: dict, timeline, rows: list[dict]) -> bool:
        """Epochs and events first, result.json last: its presence means complete."""
        ok = self.write_epochs(rows)
        ok = self.write_events(timeline) and ok
        return self.write_result(result) and ok


def _say(message: str) -> None:
    print(f"[gpubench] {message}", file=sys.stderr, flush=True)


# Every metric is present in a result, null when not measured: "not measured" is explicit.
METRICS = (
    "train_seconds samples_per_second samples_per_second_spread warmup_steps final_accuracy final_loss "
    "gpu_utilization_mean gpu_memory_peak_gb gpu_power_mean_w gpu_samples epochs_completed steps_completed "
    "samples_trained"
).split()


def new_result(
    *,
    run_id: str,
    stack: str,
    status: Status,
    started_at: str,
    finished_at: str,
    offering: dict,
    price: dict,
    hardware: dict,
    software: dict,
    benchmark: dict,
    attempts: list[dict],
    timeline: list[dict],
    metrics: dict | None = None,
    error: str | None = None,
    warnings: list[str] | None = None,
    artifacts: dict | None = None,
    exit_code: int | None = None,
    probe: dict | None = None,
) -> dict:
    """A result in the schema's order (keyword-only so nothing is swapped); `probe` only for probes."""
    result = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "stack": stack,
        "status": status,
        "started_at": started_at,
        "finished_at": finished_at,
        "offering": offering,
        "price": price,
        "hardware": hardware,
        "software": software,
        "benchmark": benchmark,
        "metrics": {**dict.fromkeys(METRICS), **(metrics or {})},
        "attempts": attempts,
        "timeline": timeline,
        "error": error,
        "warnings": list(warnings or []),
        "artifacts": dict(artifacts or {}),
    }
    if exit_code is not None:
        result["exit_code"] = exit_code
    if probe is not None:
        result["probe"] = probe
    return result
