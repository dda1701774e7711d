"""SQL over a results dataset with the DataFusion deltalake ships (`deltalake.QueryBuilder`), bounded in
memory and spilling to a private temporary directory. It reads Parquet files, not Arrow objects: a dataset
that is not one local Parquet file is first streamed into one there. One partition per scan keeps row order."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import QueryBuilder

MEMORY_LIMIT = "512M"
BATCH_ROWS = 50_000
# https://datafusion.apache.org/user-guide/configs.html
_SETTINGS = {
    "datafusion.execution.target_partitions": "1",  # one stream per scan: the file's row order
    "datafusion.execution.parquet.schema_force_view_types": "false",  # plain strings, as pandas reads them
}


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def text(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def one_of(column: str, values: Iterable[str]) -> str:
    """`column` is one of `values` (false for none)."""
    listed = ", ".join(text(v) for v in values)
    return f"{column} IN ({listed})" if listed else "false"


def num(x: str) -> str:
    """A number: NaN is missing (NULL), and so is text that is no number."""
    return f"nanvl(TRY_CAST({x} AS DOUBLE), NULL)"


class Engine:
    def __init__(self, work: Path, memory_limit: str, batch_rows: int | None):
        batch = {} if batch_rows is None else {"datafusion.execution.batch_size": str(batch_rows)}
        self._qb = QueryBuilder({**_SETTINGS, **batch})
        self._work = work
        runtime = {"memory_limit": memory_limit, "temp_directory": str(work)}  # a SET, not a session option
        for key, value in runtime.items():
            self.table(f"SET datafusion.runtime.{key} = {text(value)}")

    def batches(self, sql: str) -> Iterator[pa.RecordBatch]:
        for batch in self._qb.execute(sql):
            yield pa.record_batch(batch)

    def table(self, sql: str) -> pa.Table:
        return pa.table(self._qb.execute(sql).read_all())

    def rows(self, sql: str) -> list[tuple]:
        table = self.table(sql)
        return list(zip(*(c.to_pylist() for c in table.columns))) if table.num_columns else []

    def register(self, name: str, dataset: Any, columns: list[str] | None = None) -> None:
        """The table `name` over a pyarrow Dataset's rows, in their order (a copy holds only `columns`)."""
        path = self._parquet(name, dataset, columns)
        self.table(f"CREATE EXTERNAL TABLE {q(name)} STORED AS PARQUET LOCATION {text(path)}")

    def _parquet(self, name: str, dataset: Any, columns: list[str] | None) -> str:
        """The one local Parquet file of `dataset`'s rows: its own, or a copy in the work directory."""
        if (
            isinstance(dataset, ds.FileSystemDataset)
            and isinstance(dataset.filesystem, pafs.LocalFileSystem)
            and isinstance(dataset.format, ds.ParquetFileFormat)
            and len(dataset.files) == 1
            and pq.read_schema(dataset.files[0]) == dataset.schema  # no partition column, no cast
        ):
            return dataset.files[0]
        path = self._work / f"{name}.parquet"
        schema = dataset.schema if columns is None else pa.schema([dataset.schema.field(c) for c in columns])
        with pq.ParquetWriter(str(path), schema) as writer:
            # fragment by fragment, in order: the dataset's own scanner reads ahead of a slower
            # writer without bound (1.4 GB over 1,000,000 rows), a fragment's at most its file
            for fragment in dataset.get_fragments():
                for batch in fragment.to_batches(
                    schema=dataset.schema, columns=schema.names, batch_size=BATCH_ROWS, batch_readahead=1
                ):
                    writer.write_batch(batch)
        return str(path)


@contextmanager
def connect(memory_limit: str = MEMORY_LIMIT, batch_rows: int | None = None) -> Iterator[Engine]:
    """A DataFusion session bounded to `memory_limit` with a private temporary directory; output batches of
    `batch_rows` rows (None: DataFusion's 8,192)."""
    with tempfile.TemporaryDirectory(prefix="gpubench-query-") as work:
        yield Engine(Path(work), memory_limit, batch_rows)
