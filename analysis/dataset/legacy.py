"""A table an older collect wrote (``results.parquet`` and ``results.csv`` in
a directory, with its manifest) brought into the dataset, once.

Every row and every column value is kept as it was written (prices
included: the rows are marked as priced by the current catalog, so they are
priced again only when the catalog changes); the old files stay, as the
export the next collect rewrites. A column this release does not know is
kept too (the table's schema grows by it)."""

from __future__ import annotations

from analysis.dataset.location import Location, resolve
from analysis.dataset.lock import table_lock
from analysis.dataset.pricing import pricing_identity
from analysis.dataset.schema import SCHEMA, month_of
from analysis.dataset.store import LEGACY_NAME, append, delta_table

BATCH_ROWS = 20_000


def needs_migration(loc: Location) -> bool:
    """A local directory with an older collect's results.parquet and no dataset yet."""
    return loc.local is not None and (loc.local / LEGACY_NAME).is_file() and delta_table(loc) is None


def migrate_legacy(table: str | Location) -> int | None:
    """Bring the older table at `table` into the dataset; the rows moved, or
    None when there is nothing to migrate (already a dataset, or no table)."""
    loc = table if isinstance(table, Location) else resolve(table)
    if not needs_migration(loc):
        return None
    import pyarrow.parquet as pq

    with table_lock(loc):
        if delta_table(loc) is not None:  # another collect migrated it while we waited
            return None
        legacy = pq.ParquetFile(loc.local / LEGACY_NAME)
        identity = pricing_identity()
        batches = (_converted(b, identity) for b in legacy.iter_batches(BATCH_ROWS))
        return append(loc, batches, schema=_schema(legacy.schema_arrow))


def _schema(old):
    """SCHEMA, with any column of the old table it lacks added at the end."""
    import pyarrow as pa

    extra = [
        pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type) for f in old if f.name not in SCHEMA.names
    ]
    return pa.schema([*SCHEMA, *extra])


def _converted(batch, identity: str):
    """One batch of the old table in the dataset's schema: types fixed, month and priced_with added."""
    import pyarrow as pa

    schema = _schema(batch.schema)
    n = batch.num_rows
    columns = []
    for f in schema:
        if f.name == "month":
            starts = batch.column("started_at").to_pylist() if "started_at" in batch.schema.names else [None] * n
            columns.append(pa.array([month_of(s) for s in starts], pa.string()))
        elif f.name == "priced_with":
            columns.append(pa.array([identity] * n, pa.string()))
        elif f.name in batch.schema.names:
            columns.append(batch.column(f.name).cast(f.type))
        else:  # a column the older table did not have yet
            columns.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
