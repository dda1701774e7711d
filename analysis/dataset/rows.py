"""The rows a collect returns: the table's current rows, read only when a
caller first uses them (a collect never holds every row itself).

Its own module because collect's callers (teardown, campaigns, tests) take
the rows as a sequence of collect rows (analysis.table.COLUMNS, by run id
then stack) while the rows live in the dataset alone."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.dataset.location import Location


class StoredRows(Sequence):
    """The table's rows as collect rows, by run id then stack; read on first use."""

    def __init__(self, loc: Location, count: int):
        self.loc, self.count = loc, count
        self._rows: list[dict] | None = None

    def _all(self) -> list[dict]:
        if self._rows is None:
            from analysis.dataset.store import delta_table, open_dataset
            from analysis.table import COLUMNS

            if delta_table(self.loc) is None:
                self._rows = []
            else:
                data = open_dataset(self.loc.uri).to_table(columns=list(COLUMNS))
                self._rows = data.sort_by([("run_id", "ascending"), ("stack", "ascending")]).to_pylist()
        return self._rows

    def __len__(self) -> int:
        return self.count if self._rows is None else len(self._rows)

    def __getitem__(self, i):
        return self._all()[i]

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Sequence)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredRows({len(self)} rows of {self.loc.text})"
