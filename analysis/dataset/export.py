"""``results.parquet`` and ``results.csv``, the files a person opens in a spreadsheet: the dataset by run id
then stack (sorted by Arrow while small, else by DataFusion, spilling to disk). Each is written under a
temporary name (``.results.<ext>.<pid>.tmp``, removed by the next export once its process is gone) and
renamed onto its own, the CSV first: the Parquet footer names the table version the pair is of."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from analysis.csv_export import csv_options, csv_safe, frame_to_csv
from analysis.dataset.location import resolve
from analysis.dataset.row import COLUMNS
from analysis.dataset.store import (
    EXPORT_NAME,
    EXPORT_SCHEMA,
    ORDER,
    TableNotFound,
    delta_table,
    open_dataset,
    snapshot,
)
from analysis.price.runs import price_runs
from payload import proctree

BATCH_ROWS = 20_000
SORT_MEMORY = "512M"
IN_MEMORY_ROWS = 20_000  # at most this many rows are sorted in memory (about 20 MB)
TABLE_STEM = "results"
EXTENSIONS = ("parquet", "csv")
VERSION_KEY = b"gpubench.table_version"  # in results.parquet's footer: the dataset version it was exported from


def table_paths(out_dir: str | Path) -> dict[str, str]:
    """Where the runs table is written: {"parquet": path, "csv": path}."""
    return {ext: str(Path(out_dir) / f"{TABLE_STEM}.{ext}") for ext in EXTENSIONS}


def export_table(table: str, out_dir: str | Path) -> dict[str, str]:
    """The table's current rows to `out_dir`/results.parquet and results.csv; their paths. Raises TableNotFound."""
    loc = resolve(table)
    dt = delta_table(loc)
    if dt is None:
        raise TableNotFound(loc)
    # the version exported is the one read: an export that lags the table is known by it (export_current)
    return write_table_batches(_sorted_batches(snapshot(dt, loc)), out_dir, dt.version())


def write_table(rows: list[dict], out_dir: str | Path) -> dict[str, str]:
    """Collect rows as the runs table's Parquet and CSV files, priced with their recorded prices."""
    import pandas as pd  # heavy: pandas, only this and read_table use it (not a collect)

    df = price_runs(pd.DataFrame(rows, columns=list(COLUMNS)), rows=rows)
    return _publish(
        out_dir, lambda paths: (df.to_parquet(paths["parquet"], index=False), frame_to_csv(df, paths["csv"]))
    )


def write_table_batches(batches, out_dir: str | Path, version: int | None = None) -> dict[str, str]:
    """The runs table as Parquet and CSV, streamed from batches of EXPORT_SCHEMA; `version`: the dataset's they are of."""
    schema = EXPORT_SCHEMA
    if version is not None:
        schema = schema.with_metadata({**(schema.metadata or {}), VERSION_KEY: str(version).encode()})

    def write(paths: dict[str, Path]) -> None:
        with (
            pq.ParquetWriter(paths["parquet"], schema) as parquet,
            pcsv.CSVWriter(paths["csv"], schema, write_options=csv_options()) as csv,
        ):
            for batch in batches:
                parquet.write_batch(batch)
                csv.write_batch(csv_safe(batch))

    return _publish(out_dir, write)


def _publish(out_dir: str | Path, write: Callable[[dict[str, Path]], object]) -> dict[str, str]:
    """`write` fills both files under temporary names, then each is renamed onto its own."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    temporary = {ext: out / f".{TABLE_STEM}.{ext}.{os.getpid()}.tmp" for ext in EXTENSIONS}
    try:
        write(temporary)
        for ext in reversed(EXTENSIONS):  # the Parquet file, which names the version, last
            os.replace(temporary[ext], out / f"{TABLE_STEM}.{ext}")
    finally:
        for path in temporary.values():
            path.unlink(missing_ok=True)
    return table_paths(out)


def read_table(out_dir: str | Path):
    """The runs table at `out_dir` as a DataFrame: its results.parquet when there is one, else the dataset."""
    import pandas as pd  # heavy: pandas, only this and write_table use it (not a collect)

    loc = resolve(out_dir)
    path = loc.local / EXPORT_NAME if loc.local is not None else None
    if path is not None and path.exists():
        return pd.read_parquet(path)
    try:
        data = open_dataset(str(out_dir))
    except TableNotFound:
        raise FileNotFoundError(
            f"no results table at {out_dir}; run `gpubench collect --table {out_dir}` first"
        ) from None
    return data.to_table(columns=EXPORT_SCHEMA.names).sort_by(ORDER).to_pandas()


def export_current(out_dir: str | Path, version: int | None) -> bool:
    """Whether results.parquet and results.csv are whole and exported from the dataset at `version` (the
    footer names it; an export that names none is of a table never collected into)."""
    if not table_is_whole(out_dir):
        return False
    try:
        meta = pq.read_schema(Path(out_dir) / EXPORT_NAME).metadata or {}
    except Exception:  # noqa: BLE001 - an unreadable export is not current
        return False
    text = meta.get(VERSION_KEY, b"").decode("ascii", "replace")
    return (int(text) if text.isdigit() else None) == version


def table_is_whole(out_dir: str | Path) -> bool:
    """Both files exist and the Parquet footer reads (else the export is rebuilt)."""
    parquet, csv = (Path(p) for p in table_paths(out_dir).values())
    if not parquet.is_file() or not csv.is_file() or csv.stat().st_size == 0:
        return False
    try:
        pq.read_metadata(parquet)
    except Exception:  # noqa: BLE001 - any unreadable table is rebuilt
        return False
    return True


def remove_table(out_dir: str | Path) -> None:
    """Remove results.parquet and results.csv: a stale export must not be read."""
    for path in table_paths(out_dir).values():
        Path(path).unlink(missing_ok=True)
    remove_stale_temporaries(out_dir)


def remove_stale_temporaries(out_dir: str | Path) -> list[Path]:
    """Delete the temporary files of exports whose process is gone."""
    out = Path(out_dir)
    removed = []
    for path in sorted(out.glob(f".{TABLE_STEM}.*.*.tmp")) if out.is_dir() else []:
        pid = path.name.split(".")[-2]
        if pid.isdigit() and (int(pid) == os.getpid() or not proctree.alive(int(pid))):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _sorted_batches(data) -> Iterator:
    if data.count_rows() <= IN_MEMORY_ROWS:
        rows = data.to_table(columns=EXPORT_SCHEMA.names).sort_by(ORDER)
        yield from (rows.cast(EXPORT_SCHEMA) if rows.schema != EXPORT_SCHEMA else rows).to_batches(BATCH_ROWS)
        return
    yield from _spilled_sorted(data)


def _spilled_sorted(data) -> Iterator:
    from analysis.dataset.sql import connect, q  # heavy: pyarrow.dataset and DataFusion, only for a large table

    with connect(SORT_MEMORY, batch_rows=BATCH_ROWS) as con:  # a row group per batch
        con.register("data", data, columns=EXPORT_SCHEMA.names)
        columns = ", ".join(q(c) for c in EXPORT_SCHEMA.names)
        order = ", ".join(f"{q(c)} ASC NULLS LAST" for c, _ in ORDER)
        for batch in con.batches(f"SELECT {columns} FROM data ORDER BY {order}"):  # noqa: S608
            yield batch.cast(EXPORT_SCHEMA) if batch.schema != EXPORT_SCHEMA else batch
