"""``results.parquet`` and ``results.csv`` made from the dataset: the files a
person opens in a spreadsheet, or a tool of an earlier release reads.

They are an export, not the store: written next to a local table after a
collect that changed it (or on request, anywhere), by run id then stack, in
batches through DuckDB (which sorts within a memory limit, spilling to disk)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from analysis.dataset.schema import EXPORT_SCHEMA
from analysis.dataset.store import open_dataset

BATCH_ROWS = 20_000
DUCKDB_MEMORY = "512MB"


def export_table(table: str, out_dir: str | Path) -> dict[str, str]:
    """Write the table's current rows to `out_dir`/results.parquet and
    results.csv, published as one pair; returns their paths."""
    from analysis.collect.store import write_table_batches

    return write_table_batches(_sorted_batches(table), EXPORT_SCHEMA, out_dir)


def _sorted_batches(table: str) -> Iterator:
    import duckdb

    con = duckdb.connect()
    try:
        con.register("data", open_dataset(table))
        con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")  # it would print on stdout, into --json
        columns = ", ".join(f'"{c}"' for c in EXPORT_SCHEMA.names)
        reader = con.sql(f"SELECT {columns} FROM data ORDER BY run_id, stack").to_arrow_reader(BATCH_ROWS)  # noqa: S608
        for batch in reader:
            yield batch.cast(EXPORT_SCHEMA) if batch.schema != EXPORT_SCHEMA else batch
    finally:
        con.close()
