"""The table as a collect working stack by stack sees it: one stack's keys, a few of its rows, the stacks
it holds (every read one stack's partition or the log alone), and a batch of changes committed at once:
rows priced with the current catalog and converted to the table's types, one that does not fit set aside."""

from __future__ import annotations

import hashlib
import operator
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from analysis.dataset.location import Location, first_line
from analysis.dataset.row import COLUMNS
from analysis.dataset.store import (
    KEY_COLUMNS,
    PARTITION_COLUMNS,
    SCHEMA,
    append,
    delta_table,
    filesystem,
    month_of,
    replace,
)
from analysis.price.runs import PRICE_COLUMNS, price_run
from infra.catalog import DATA_DIR, PRICES_DIR_ENV, load_catalog, user_catalog_dirs

if TYPE_CHECKING:
    import pyarrow.dataset as ds

Key = tuple[str, str]  # (source, key) of the result.json a row was read from
# what a data file holds: the table's columns but the partition ones (in the log and the paths)
FILE_SCHEMA = pa.schema([f for f in SCHEMA if f.name not in PARTITION_COLUMNS])
BATCH_ROWS = 10_000  # rows priced and converted to Arrow at a time


class TableView:
    """The table's snapshot at one version, read one stack partition at a time."""

    def __init__(self, loc: Location):
        self.loc = loc
        self.refresh()

    def refresh(self) -> None:
        """Read the table's latest snapshot (after a commit)."""
        self.dt = delta_table(self.loc)
        self._files: dict[str, list[str]] | None = None

    @property
    def version(self) -> int | None:
        return None if self.dt is None else self.dt.version()

    def _partition(self, stack: str) -> ds.Dataset:
        """One stack's data files only (the log says which are whose), of the columns the files hold."""
        if self._files is None:
            adds = pa.table(self.dt.get_add_actions(flatten=True)).select(["path", "partition.stack"]).to_pydict()
            self._files = {}
            for path, owner in zip(adds["path"], adds["partition.stack"], strict=True):
                self._files.setdefault(owner, []).append(path)
            self._fs = filesystem(self.dt, self.loc)
        import pyarrow.dataset as ds  # heavy: loads pandas (0.15 s); collect's light readers never scan

        return ds.dataset(self._files.get(stack, []), schema=FILE_SCHEMA, format="parquet", filesystem=self._fs)

    def keys(self, stack: str) -> dict[Key, tuple[str | None, str | None]]:
        """{(source, key): (etag, priced_with)} of the rows of one stack."""
        if self.dt is None:
            return {}
        got = self._partition(stack).to_table(columns=[*KEY_COLUMNS, "etag", "priced_with"]).to_pydict()
        return {
            (s, k): (e, p)
            for s, k, e, p in zip(got["source"], got["key"], got["etag"], got["priced_with"], strict=True)
        }

    def rows(self, stack: str, keys: Iterable[Key]) -> list[dict]:
        """The collect rows (analysis.dataset.row.COLUMNS) of some of one stack's rows."""
        wanted = set(keys)
        if self.dt is None or not wanted:
            return []
        sources = sorted({s for s, _ in wanted})
        found = self._partition(stack).to_table(
            columns=[c for c in COLUMNS if c != "stack"],
            filter=pc.field("key").isin(sorted(k for _, k in wanted)) & pc.field("source").isin(sources),
        )
        return [{**r, "stack": stack} for r in found.to_pylist() if (r["source"], r["key"]) in wanted]

    def stacks(self) -> set[str]:
        """The stacks the table holds rows of, from its log."""
        return set() if self.dt is None else {p["stack"] for p in self.dt.partitions()}

    def count(self) -> int:
        """The table's rows, from its log's statistics."""
        return 0 if self.dt is None else self.dt.count()


def commit(
    loc: Location, rows: Sequence[dict], deleted: Sequence[tuple[str, str, str]], replacing: bool, identity: str
) -> tuple[bool, list[tuple[dict, str]]]:
    """One commit: `rows` priced and added (replacing the row of their (source, key) when `replacing`),
    each (stack, source, key) of `deleted` removed; only new rows, a plain append. Returns (whether
    anything was written, [(row, why)] of rows the table cannot hold, which fail no other)."""
    table, refused = storable(rows, identity)
    if not len(table) and not deleted:
        return False, refused
    if replacing or deleted:
        replace(loc, table, deleted)
    else:
        append(loc, table.to_batches())
    return True, refused


def pricing_identity() -> str:
    """Which price catalog priced a row (`priced_with`: rows priced under another are priced again): a digest
    of the catalog files' paths, sizes and modification times, which costs nothing when nothing changed."""
    extra = [Path(d) for d in os.environ.get(PRICES_DIR_ENV, "").split(os.pathsep) if d]
    h = hashlib.sha256()
    for root in [Path(DATA_DIR), *extra, *user_catalog_dirs()]:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file():
                st = path.stat()
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def to_arrow(rows: Sequence[dict], identity: str):
    """Collect rows priced with the current catalog, as a table of SCHEMA; each column built with its
    type (an integer is stored exactly or refused, never rounded through a float column)."""
    rows = list(rows)
    catalog = load_catalog()
    priced = [price_run(r, None, catalog) for r in rows]
    made = {
        **_columns(rows, COLUMNS),
        **_columns(priced, PRICE_COLUMNS),
        "month": [month_of(r.get("started_at")) for r in rows],
        "priced_with": [identity] * len(rows),
    }
    columns = []
    for f in SCHEMA:
        values = made[f.name]
        if pa.types.is_integer(f.type) and float in set(map(type, values)):  # the schema's 5.0 is 5
            values = [int(v) if isinstance(v, float) and v.is_integer() else v for v in values]
        # a number's NaN (an unpriced run's cost) stored as null, as a pandas frame stored it
        columns.append(pa.array(values, f.type, from_pandas=pa.types.is_floating(f.type)))
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def _columns(records: list[dict], names: Sequence[str]) -> dict[str, Sequence]:
    """{name: its values} of `records`, transposed in one pass (a row lacking a name has None there)."""
    if not records:
        return {n: [] for n in names}
    try:
        return dict(zip(names, zip(*map(operator.itemgetter(*names), records), strict=True), strict=True))
    except KeyError:
        return {n: [r.get(n) for r in records] for n in names}


def storable(rows: Sequence[dict], identity: str):
    """(the rows that fit, as one table of SCHEMA, [(row, why)] of those that do not: an integer past 64
    bits, text that is not Unicode, a number no price can be computed from). A batch that does not
    convert is halved until each row that fails alone is found."""
    tables, refused = [], []

    def convert(part: Sequence[dict]) -> None:
        try:
            tables.append(to_arrow(part, identity))
        except Exception as exc:  # noqa: BLE001 - any failure of a value: that row alone is set aside
            if len(part) == 1:
                refused.append((part[0], f"unstorable: {type(exc).__name__}: {first_line(exc, 300)}"))
                return
            half = len(part) // 2
            convert(part[:half])
            convert(part[half:])

    rows = list(rows)
    for start in range(0, len(rows), BATCH_ROWS):
        convert(rows[start : start + BATCH_ROWS])
    table = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
    return table, refused
