"""The columns of the results dataset and their Arrow types.

The columns are named where they are made (analysis.dataset.row.COLUMNS, then
analysis.price.runs.PRICE_COLUMNS); here they get their type: text unless
named below, and a name below that is no column fails at import, never
silently turns into text. The dataset adds two of its own:

- ``month`` (``YYYY-MM`` of ``started_at``): with ``stack``, the partition;
- ``priced_with``: the price catalog a row was priced with; a collect under
  another catalog prices the rows again and replaces them.

Readers get the public columns only (``month`` included: engines filter on it).
"""

from __future__ import annotations

import pyarrow as pa

from analysis.dataset.row import COLUMNS
from analysis.price.runs import PRICE_COLUMNS

PARTITION_COLUMNS = ("stack", "month")
INTERNAL_COLUMNS = ("priced_with",)
# rows are matched to the objects they were read from by these
KEY_COLUMNS = ("source", "key")

_BOOL = ("probe",)
_INT = (
    "schema_version_read",
    "gpus_used",
    "per_gpu_batch_size",
    "global_batch_size",
    "replicas",
    "epochs_completed",
    "steps_completed",
    "samples_trained",
    "attempts",
)
_FLOAT = (
    "recorded_hourly_usd",
    "recorded_spot_hourly_usd",
    "gpu_memory_gb",
    "train_seconds",
    "phase_total_seconds",
    "samples_per_second",
    "samples_per_second_p10",
    "samples_per_second_p90",
    "final_accuracy",
    "gpu_utilization_mean",
    "instance_seconds",
    "hourly_usd",
    "instance_hours",
    "billed_hours",
    "billed_cost_usd",
    "train_hours",
    "train_cost_usd",
    "setup_fee_usd",
)
_TYPES = {**dict.fromkeys(_BOOL, pa.bool_()), **dict.fromkeys(_INT, pa.int64()), **dict.fromkeys(_FLOAT, pa.float64())}

# the runs table's columns (results.parquet), in order: the one list, made where the values are made
TABLE_COLUMNS = (*COLUMNS, *PRICE_COLUMNS)
_UNKNOWN = sorted(set(_TYPES) - set(TABLE_COLUMNS))
if _UNKNOWN:
    raise ImportError(f"analysis.dataset.schema types columns no table has: {', '.join(_UNKNOWN)}")


def _field(name: str) -> pa.Field:
    return pa.field(name, _TYPES.get(name, pa.string()))


PUBLIC_SCHEMA = pa.schema([_field(c) for c in (*TABLE_COLUMNS, "month")])
SCHEMA = pa.schema([*PUBLIC_SCHEMA, *(_field(c) for c in INTERNAL_COLUMNS)])
EXPORT_SCHEMA = pa.schema([_field(c) for c in TABLE_COLUMNS])


def month_of(started_at) -> str:
    """The partition month of a run: ``YYYY-MM`` of its start, ``unknown`` without one."""
    text = str(started_at or "")
    return text[:7] if len(text) >= 7 and text[4] == "-" else "unknown"
