"""``results.parquet`` and ``results.csv`` made from the dataset: the files a
person opens in a spreadsheet, or a tool of an earlier release reads.

They are an export, not the store: written next to a local table after a
collect that changed it (or on request, anywhere), by run id then stack, in
batches through DuckDB (which sorts within a memory limit, spilling to disk);
a table small enough to hold is sorted in memory by Arrow instead (DuckDB's
start and scan cost more than the sort of a few thousand rows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from analysis.dataset.location import resolve
from analysis.dataset.schema import EXPORT_SCHEMA, PUBLIC_SCHEMA
from analysis.dataset.store import delta_table, open_dataset, snapshot

BATCH_ROWS = 20_000
DUCKDB_MEMORY = "512MB"
IN_MEMORY_ROWS = 20_000  # at most this many rows are sorted in memory (about 20 MB)
ORDER = [("run_id", "ascending"), ("stack", "ascending")]  # as DuckDB's ORDER BY: bytes, nulls last


def export_table(table: str, out_dir: str | Path) -> dict[str, str]:
    """Write the table's current rows to `out_dir`/results.parquet and
    results.csv, published as one pair; returns their paths."""
    from analysis.collect.store import write_table_batches

    loc = resolve(table)
    dt = delta_table(loc)
    if dt is None:  # an older collect's results.parquet, read as it is
        return write_table_batches(_sorted_batches(open_dataset(table)), EXPORT_SCHEMA, out_dir)
    # the version exported is the one read: an export that lags the table is known by it (export_version)
    data = snapshot(dt, loc, PUBLIC_SCHEMA)
    return write_table_batches(_sorted_batches(data), EXPORT_SCHEMA, out_dir, version=dt.version())


def _sorted_batches(data) -> Iterator:
    """The rows of a dataset as EXPORT_SCHEMA batches, by run id then stack."""
    if data.count_rows() <= IN_MEMORY_ROWS:
        rows = data.to_table(columns=EXPORT_SCHEMA.names).sort_by(ORDER)
        yield from _as_export(rows).to_batches(BATCH_ROWS)
        return
    yield from _duckdb_sorted(data)


def _as_export(rows):
    return rows.cast(EXPORT_SCHEMA) if rows.schema != EXPORT_SCHEMA else rows


def _duckdb_sorted(data) -> Iterator:
    """A table of any size sorted by DuckDB within DUCKDB_MEMORY, spilling to disk beyond."""
    import duckdb

    con = duckdb.connect()
    try:
        con.register("data", data)
        con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute("SET enable_progress_bar = false")  # it would print on stdout, into --json
        columns = ", ".join(f'"{c}"' for c in EXPORT_SCHEMA.names)
        reader = con.sql(f"SELECT {columns} FROM data ORDER BY run_id, stack").to_arrow_reader(BATCH_ROWS)  # noqa: S608
        for batch in reader:
            yield _as_export(batch)
    finally:
        con.close()
