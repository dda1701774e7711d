"""One run's files under ``runs/<stack>/<run-id>/``: ``result.json`` (validated before every write: one that
does not validate is a bug here), ``events.jsonl`` and ``epochs.csv`` (epochs numbered across attempts).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from typing import Literal

from payload.events import note
from payload.layout import next_generation, run_prefix, versioned
from payload.schema import SCHEMA_VERSION, validate_result
from payload.spool import announce

EPOCH_COLUMNS = ("epoch", "elapsed", "loss", "acc", "val_loss", "val_acc")

Status = Literal["completed", "failed", "interrupted"]
# A final result ends its benchmark on this launch; `interrupted` means a spot restart resumes it.
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed"})


class RunWriter:
    """Uploads a run's files through a SpoolingStore-like object, never over an existing one: each attempt
    writes its own generation (payload.layout.versioned), a file written again within it takes `next_key`."""

    def __init__(self, store, stack: str, run_id: str, generation: int = 0):
        self.store, self.stack, self.run_id = store, stack, run_id
        self.prefix = run_prefix(stack, run_id)
        self.generation = generation
        self._parts: dict[str, itertools.count] = {}

    @classmethod
    def resuming(cls, store, stack: str, run_id: str, attempts_before: int) -> RunWriter:
        """A resumed attempt's writer: one generation above the run's directory (at least `attempts_before`)."""
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

    def write_all(self, result: dict, timeline, rows: list[dict]) -> bool:
        """Epochs and events first, result.json last: its presence means complete. Once it is in the bucket (not
        spooled) it is announced in the journal (a failed entry is said on stderr: a full listing makes up for it)."""
        epochs = io.StringIO()
        w = csv.DictWriter(epochs, fieldnames=EPOCH_COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows({k: ("" if row.get(k) is None else row[k]) for k in EPOCH_COLUMNS} for row in rows)
        files = (
            ("epochs.csv", epochs.getvalue().encode(), "text/csv"),
            ("events.jsonl", timeline.to_jsonl(), "application/x-ndjson"),
        )
        ok = all([self.store.put_bytes(self.key(name), data, kind) is not False for name, data, kind in files])
        data = json.dumps(result, indent=2).encode()
        validate_result(json.loads(data))  # what is written: a version string of torch's is a str subclass
        if self.store.put_bytes(self.key("result.json"), data, "application/json") is False:
            return False
        announce(self.store, self.key("result.json"), warn=note)
        return ok


METRICS = (
    "train_seconds samples_per_second samples_per_second_spread warmup_steps final_accuracy final_loss "
    "gpu_utilization_mean gpu_memory_peak_gb gpu_power_mean_w gpu_samples epochs_completed steps_completed "
    "samples_trained"
).split()


# The schema's order of a result's fields; exit_code and probe only when known.
FIELDS = (
    "schema_version run_id stack status started_at finished_at offering price hardware software benchmark "
    "metrics attempts timeline error warnings artifacts exit_code probe"
).split()


def new_result(*, status: Status, metrics: dict | None = None, **fields) -> dict:
    """A result in the schema's order, every metric present (null when not measured). Keyword-only, so nothing
    is swapped; the schema, checked on every write, says which fields are required."""
    fields = {"schema_version": SCHEMA_VERSION, "status": status, "error": None, "warnings": [], **fields}
    fields.update(metrics={**dict.fromkeys(METRICS), **(metrics or {})}, artifacts=dict(fields.get("artifacts") or {}))
    fields["warnings"] = list(fields["warnings"] or [])
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"new_result() got unknown fields: {', '.join(sorted(unknown))}")
    return {k: fields[k] for k in FIELDS if k in fields and not (k in ("exit_code", "probe") and fields[k] is None)}
