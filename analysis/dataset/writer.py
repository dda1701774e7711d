"""What a collect writes: the rows it found, compared with the table's, and
only the difference committed (new rows appended; rows re-read, re-priced or
won by another copy replaced; rows whose object is gone removed).

Its own module because the comparison is what keeps a collect's cost to what
is new: the table is read for five short columns (source, key, etag, the
catalog that priced it, stack), never whole, and only the changed rows are
priced and written."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from analysis.dataset.location import Location, resolve
from analysis.dataset.lock import table_lock
from analysis.dataset.pricing import pricing_identity
from analysis.dataset.schema import SCHEMA, month_of
from analysis.dataset.store import append, current_keys, replace, table_version

BATCH_ROWS = 10_000  # rows priced and converted to Arrow at a time


@dataclass
class Published:
    """What one publish changed in the table."""

    added: int = 0
    replaced: int = 0
    removed: int = 0
    version: int | None = None  # the table's version afterwards (None: there is still no table)

    @property
    def written(self) -> bool:
        return bool(self.added or self.replaced or self.removed)


def publish_rows(table: str | Location, rows: Sequence[dict], changed: Iterable[tuple[str, str]] = ()) -> Published:
    """Make the table's rows be `rows` (unpriced collect rows, one per run),
    writing only the difference; `changed` names (source, key) pairs whose row
    was read again this time (replaced even with the same ETag). As the runs
    table always was, the table holds the runs of the sources of the latest
    collect: rows of a source it did not name are removed. Holds the table's
    lock while it compares and commits."""
    loc = table if isinstance(table, Location) else resolve(table)
    identity = pricing_identity()
    with table_lock(loc):
        have = _index(current_keys(loc))
        want = {(r["source"], r["key"]): r for r in rows}
        changed = set(changed)
        new = [r for k, r in want.items() if k not in have]
        again = [r for k, r in want.items() if k in have and (k in changed or have[k][:2] != (r["etag"], identity))]
        gone = [(have[k][2], *k) for k in have if k not in want]
        out = Published(len(new), len(again), len(gone))
        if again or gone:
            import pyarrow as pa

            replace(loc, pa.Table.from_batches(list(arrow_batches([*new, *again], identity)), SCHEMA), _deleted(gone))
        elif new:
            append(loc, arrow_batches(new, identity))
        out.version = table_version(loc)
    return out


def _index(keys) -> dict[tuple[str, str], tuple[str, str, str]]:
    """{(source, key): (etag, priced_with, stack)} of the table's rows."""
    columns = [keys[c].to_pylist() for c in ("source", "key", "etag", "priced_with", "stack")]
    return {(s, k): (e, p, st) for s, k, e, p, st in zip(*columns, strict=True)}


def _deleted(gone: list[tuple[str, str, str]]):
    import pyarrow as pa

    stacks, sources, keys = (list(c) for c in zip(*gone, strict=True)) if gone else ([], [], [])
    return pa.table(
        {
            "stack": pa.array(stacks, pa.string()),
            "source": pa.array(sources, pa.string()),
            "key": pa.array(keys, pa.string()),
        }
    )


def arrow_batches(rows: Sequence[dict], identity: str | None = None) -> Iterator:
    """`rows` priced and as record batches of SCHEMA, BATCH_ROWS at a time."""
    identity = identity or pricing_identity()
    for start in range(0, len(rows), BATCH_ROWS):
        yield from to_arrow(rows[start : start + BATCH_ROWS], identity).to_batches()


def to_arrow(rows: Sequence[dict], identity: str):
    """A batch of collect rows priced with the current catalog, as a table of SCHEMA."""
    import pandas as pd
    import pyarrow as pa

    from analysis.price.runs import price_rows
    from analysis.table import COLUMNS

    rows = list(rows)
    df = price_rows(pd.DataFrame(rows, columns=list(COLUMNS)), rows)
    df["month"] = [month_of(r.get("started_at")) for r in rows]
    df["priced_with"] = identity
    return pa.Table.from_pandas(df[SCHEMA.names], schema=SCHEMA, preserve_index=False)
