"""Re-price a whole results dataset at a date (`report --as-of`) a batch at a time, into a Parquet file the
report's queries then read in place of the table."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from analysis.price.runs import PRICE_COLUMNS, price_runs
from infra.catalog import load_catalog

BATCH_ROWS = 20_000
_TEXT = {"price_basis", "price_source", "price_as_of", "billing", "billing_as_of", "price_note"}


def _priced_schema(schema: Any) -> Any:
    """The dataset's columns without its prices, then PRICE_COLUMNS as price_runs adds them."""
    fields = [f for f in schema if f.name not in PRICE_COLUMNS]
    fields += [pa.field(c, pa.string() if c in _TEXT else pa.float64()) for c in PRICE_COLUMNS]
    return pa.schema(fields)


def reprice_dataset(dataset: Any, as_of: date, path: str | Path, catalog: Any = None) -> Any:
    """`dataset` with every run re-priced from the catalog in force on `as_of`,
    written to `path` (Parquet) batch by batch; returns it as a Dataset."""
    catalog = catalog or load_catalog()
    schema = _priced_schema(dataset.schema)
    with pq.ParquetWriter(str(path), schema) as writer:
        for batch in dataset.to_batches(batch_size=BATCH_ROWS):
            if not batch.num_rows:
                continue
            priced = price_runs(batch.to_pandas(), as_of=as_of, catalog=catalog)
            writer.write_table(pa.Table.from_pandas(priced[schema.names], schema=schema, preserve_index=False))
    return ds.dataset(str(path), format="parquet")
