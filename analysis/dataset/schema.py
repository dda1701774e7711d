"""The columns of the results dataset and their Arrow types: analysis.dataset.row.COLUMN_SPEC's, then
analysis.price.runs.PRICE_COLUMNS (text unless named in _PRICE_FLOATS), and two of the dataset's own:
``month`` (``YYYY-MM`` of ``started_at``; with ``stack``, the partition) and ``priced_with`` (the price
catalog a row was priced with: a collect under another catalog prices it again). Readers get every
public column, ``month`` included (engines filter on it)."""

from __future__ import annotations

import pyarrow as pa

from analysis.dataset.row import COLUMN_SPEC
from analysis.price.runs import PRICE_COLUMNS

PARTITION_COLUMNS = ("stack", "month")
INTERNAL_COLUMNS = ("priced_with",)
KEY_COLUMNS = ("source", "key")  # rows are matched to the objects they were read from by these
ORDER = [("run_id", "ascending"), ("stack", "ascending")]  # the rows' order; as SQL's ORDER BY ... NULLS LAST

_PRICE_FLOATS = "hourly_usd instance_hours billed_hours billed_cost_usd train_hours train_cost_usd setup_fee_usd"
_ARROW = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
_TYPES = {c: _ARROW[t] for c, (t, _) in COLUMN_SPEC.items()} | dict.fromkeys(_PRICE_FLOATS.split(), pa.float64())
if _unknown := set(_PRICE_FLOATS.split()) - set(PRICE_COLUMNS):  # never silently text
    raise ImportError(f"analysis.dataset.schema types columns no table has: {', '.join(sorted(_unknown))}")

# the runs table's columns (results.parquet), in order: the one list, made where the values are made
TABLE_COLUMNS = (*COLUMN_SPEC, *PRICE_COLUMNS)


def _field(name: str) -> pa.Field:
    return pa.field(name, _TYPES.get(name, pa.string()))


PUBLIC_SCHEMA = pa.schema([_field(c) for c in (*TABLE_COLUMNS, "month")])
SCHEMA = pa.schema([*PUBLIC_SCHEMA, *(_field(c) for c in INTERNAL_COLUMNS)])
EXPORT_SCHEMA = pa.schema([_field(c) for c in TABLE_COLUMNS])


def month_of(started_at) -> str:
    """The partition month of a run: ``YYYY-MM`` of its start, ``unknown`` without one."""
    text = str(started_at or "")
    return text[:7] if len(text) >= 7 and text[4] == "-" else "unknown"
