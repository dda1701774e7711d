"""The results dataset as a Delta Lake table (docs/scale.md): opened, read, appended to and changed, each
change one atomic commit in its log; its columns' Arrow types (row.COLUMN_SPEC's, the price columns, text
unless in _PRICE_FLOATS, and its own ``month`` and ``priced_with``); StoredRows, the rows a collect returns."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.fs import DeltaStorageHandler

from analysis.dataset.location import Location, TableDamaged, first_line, resolve
from analysis.dataset.row import COLUMN_SPEC, COLUMNS
from analysis.price.runs import PRICE_COLUMNS

if TYPE_CHECKING:
    import pyarrow.dataset as ds

PARTITION_COLUMNS = ("stack", "month")
INTERNAL_COLUMNS = ("priced_with",)
KEY_COLUMNS = ("source", "key")  # rows are matched to the objects they were read from by these
ORDER = [("run_id", "ascending"), ("stack", "ascending")]  # the rows' order; as SQL's ORDER BY ... NULLS LAST

_PRICE_FLOATS = "hourly_usd instance_hours billed_hours billed_cost_usd train_hours train_cost_usd setup_fee_usd"
_ARROW = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
_TYPES = {c: _ARROW[t] for c, (t, _) in COLUMN_SPEC.items()} | dict.fromkeys(_PRICE_FLOATS.split(), pa.float64())
if _unknown := set(_PRICE_FLOATS.split()) - set(PRICE_COLUMNS):  # never silently text
    raise ImportError(f"analysis.dataset.store types columns no table has: {', '.join(sorted(_unknown))}")

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


EXPORT_NAME = "results.parquet"  # the export beside a local table; alone, a table narrowed to a campaign
MERGE_CHUNK = 50_000  # rows per merge commit: a merge holds its source in memory
COMMIT_ATTEMPTS = 5  # a commit that lost a race with another writer is tried again this often


class TableNotFound(ValueError):
    def __init__(self, loc: Location):
        super().__init__(f"no results table at {loc.text}; collect into it first: gpubench collect --table {loc.text}")


def delta_table(loc: Location) -> DeltaTable | None:
    """The Delta table at `loc`, None when there is none yet; TableDamaged when its log cannot be read."""
    local = loc.local
    if local is not None and not (local / "_delta_log").is_dir():
        return None
    try:
        return DeltaTable(loc.uri, storage_options=loc.storage_options or None)
    except TableNotFoundError:
        return None
    except DeltaError as exc:
        unreachable = ("ObjectStore", "error sending request", "Generic S3 error", "GCS error")
        if local is None and any(word in str(exc) for word in unreachable):  # a bucket that did not answer
            raise  # is not a damaged table
        raise TableDamaged(loc.text, first_line(exc)) from None


def snapshot(dt: DeltaTable, loc: Location) -> ds.Dataset:
    """`dt`'s snapshot as a pyarrow Dataset of PUBLIC_SCHEMA, through Arrow's own file system where it can:
    deltalake's Python one hands Arrow buffers owned by Python, which the parquet reader may release on an
    Arrow thread while the interpreter exits ("terminate called without an active exception")."""
    return dt.to_pyarrow_dataset(schema=PUBLIC_SCHEMA, filesystem=filesystem(dt, loc))


def filesystem(dt: DeltaTable, loc: Location):
    """A pyarrow file system rooted at the table: Arrow's own for a directory or s3://; gs:// through
    deltalake's (Arrow's GcsFileSystem would serve, but gcp-storage-emulator, the tests' GCS fake, lacks
    the XML API deltalake writes with, so no test could prove it)."""
    if loc.local is not None:
        return pa_fs.SubTreeFileSystem(str(loc.local), pa_fs.LocalFileSystem())
    if loc.uri.startswith("s3://"):
        # Arrow's S3 client with deltalake's options; without keys there, the AWS SDK's own chain
        options = loc.storage_options
        endpoint = urlparse(options.get("AWS_ENDPOINT_URL") or "")
        s3 = pa_fs.S3FileSystem(
            access_key=options.get("AWS_ACCESS_KEY_ID"),
            secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
            session_token=options.get("AWS_SESSION_TOKEN"),
            region=options.get("AWS_REGION"),
            endpoint_override=endpoint.netloc or None,
            scheme=endpoint.scheme or "https",
        )
        return pa_fs.SubTreeFileSystem(loc.uri.removeprefix("s3://"), s3)
    return pa_fs.PyFileSystem(
        DeltaStorageHandler.from_table(dt._table, loc.storage_options or None, dt._table.get_add_file_sizes())  # noqa: SLF001 - as deltalake's own reader does
    )


def open_dataset(table: str) -> ds.Dataset:
    """The table's current snapshot as a pyarrow Dataset (PUBLIC_SCHEMA); a directory holding only a
    ``results.parquet`` (a campaign's narrowed table) is read as it is. Raises TableNotFound."""
    loc = resolve(table)
    dt = delta_table(loc)
    if dt is None:
        export = loc.local / EXPORT_NAME if loc.local is not None else None
        if export is not None and export.is_file():
            import pyarrow.dataset as ds  # heavy: loads pandas (0.15 s); collect's light readers never scan

            return ds.dataset(str(export), format="parquet")
        raise TableNotFound(loc)
    return snapshot(dt, loc)


def append(loc: Location, batches: Iterable[pa.RecordBatch]) -> None:
    """Append `batches` (of SCHEMA) in one commit, streamed."""
    write_deltalake(
        loc.uri,
        pa.RecordBatchReader.from_batches(SCHEMA, batches),
        mode="append",
        partition_by=list(PARTITION_COLUMNS),
        storage_options=loc.storage_options or None,
        schema_mode="merge",  # a column an older table had and this release lacks stays
        target_file_size=64 * 1024 * 1024,
    )


def replace(loc: Location, rows: pa.Table, deleted: Sequence[tuple[str, str, str]]) -> None:
    """One commit per MERGE_CHUNK rows: each of `rows` replaces the row of its (source, key) or is added;
    each (stack, source, key) of `deleted` is removed. A commit that loses a race is retried."""
    gone = dict(zip(("stack", "source", "key"), map(list, zip(*deleted, strict=True)), strict=False))
    marks = pa.table({f.name: pa.array(gone.get(f.name, [None] * len(deleted)), f.type) for f in SCHEMA})
    changes = pa.concat_tables([rows, marks]).append_column(
        "_delete", pa.array([False] * len(rows) + [True] * len(deleted), pa.bool_())
    )
    for start in range(0, len(changes), MERGE_CHUNK):
        _merge(loc, changes.slice(start, MERGE_CHUNK))


def _merge(loc: Location, changes: pa.Table) -> None:
    for attempt in range(COMMIT_ATTEMPTS):
        dt = delta_table(loc)
        if dt is None:  # no table yet: the rows are all new
            append(loc, changes.filter(pc.invert(changes["_delete"])).drop_columns(["_delete"]).to_batches())
            return
        try:
            (
                dt.merge(
                    changes,
                    predicate="t.stack = s.stack AND t.source = s.source AND t.key = s.key",
                    source_alias="s",
                    target_alias="t",
                )
                .when_matched_delete(predicate="s._delete")
                .when_matched_update_all(predicate="NOT s._delete", except_cols=["_delete"])
                .when_not_matched_insert_all(predicate="NOT s._delete", except_cols=["_delete"])
                .execute()
            )
            return
        except CommitFailedError:
            if attempt == COMMIT_ATTEMPTS - 1:
                raise
            time.sleep(0.2 * 2**attempt)


class StoredRows(Sequence):
    """The table's rows as collect rows, by run id then stack; read on first use."""

    def __init__(self, loc: Location, count: int):
        self.loc, self.count = loc, count
        self._rows: list[dict] | None = None

    def _all(self) -> list[dict]:
        if self._rows is None:
            if delta_table(self.loc) is None:
                self._rows = []
            else:
                data = open_dataset(self.loc.uri).to_table(columns=list(COLUMNS))
                self._rows = data.sort_by(ORDER).to_pylist()
        return self._rows

    def __len__(self) -> int:
        return self.count if self._rows is None else len(self._rows)

    def __getitem__(self, i):
        return self._all()[i]

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Sequence)) else NotImplemented

    def __repr__(self) -> str:
        return f"StoredRows({len(self)} rows of {self.loc.text})"
