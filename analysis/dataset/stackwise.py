"""The table as a collect working stack by stack sees it: one stack's keys,
a few of its rows, the stacks and rows it holds, and a batch of changes
committed at once. A collect never loads the whole table: every read here is
of one stack's partition or answered from the table's log alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from analysis.dataset.location import Location
from analysis.dataset.row import COLUMNS
from analysis.dataset.schema import KEY_COLUMNS, PARTITION_COLUMNS, SCHEMA
from analysis.dataset.store import append, delta_table, filesystem, replace
from analysis.dataset.writer import deleted_keys, storable

if TYPE_CHECKING:
    import pyarrow.dataset as ds

Key = tuple[str, str]  # (source, key) of the result.json a row was read from
# what a data file holds: the table's columns but the partition ones (in the log and the paths)
FILE_SCHEMA = pa.schema([f for f in SCHEMA if f.name not in PARTITION_COLUMNS])


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
        """One stack's data files only, as a dataset of the columns the files hold (the
        others are neither opened nor described: the log says which files are whose)."""
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
        """The stacks the table holds rows of, from its log (no data file is read)."""
        if self.dt is None:
            return set()
        return {p["stack"] for p in self.dt.partitions()}

    def count(self) -> int:
        """The table's rows, from its log's statistics (no data file is read)."""
        return 0 if self.dt is None else self.dt.count()


def commit(
    loc: Location, rows: Sequence[dict], deleted: Sequence[tuple[str, str, str]], replacing: bool, identity: str
) -> tuple[bool, list[tuple[dict, str]]]:
    """One commit: `rows` priced and added, replacing the row of their (source, key) when
    `replacing`; each (stack, source, key) of `deleted` removed; only new rows, a plain
    append. Returns (whether anything was written, [(row, why)] of rows the table cannot
    hold): rows are converted first, so one that does not fit fails no other."""
    table, refused = storable(rows, identity)
    if not len(table) and not deleted:
        return False, refused
    if replacing or deleted:
        replace(loc, table, deleted_keys(list(deleted)))
    else:
        append(loc, table.to_batches())
    return True, refused
