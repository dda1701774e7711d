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

from analysis.dataset.faults import first_line
from analysis.dataset.location import Location, resolve
from analysis.dataset.lock import table_lock
from analysis.dataset.pricing import pricing_identity
from analysis.dataset.row import COLUMNS
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
    """A batch of collect rows priced with the current catalog, as a table of SCHEMA.

    Each column is built from the rows' own values with its type (no pandas frame
    between): an integer is stored exactly or refused, never rounded through a float
    column because another row has none. Raises whatever a value that does not fit
    its column raises (storable() sets such rows aside)."""
    import pyarrow as pa

    from analysis.price.runs import PRICE_COLUMNS, price_run
    from infra.catalog import load_catalog

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
    import operator

    if not records:
        return {n: [] for n in names}
    try:
        return dict(zip(names, zip(*map(operator.itemgetter(*names), records), strict=True), strict=True))
    except KeyError:
        return {n: [r.get(n) for r in records] for n in names}


def storable(rows: Sequence[dict], identity: str):
    """(the rows that fit the table as one table of SCHEMA, [(row, why)] of those that do not).

    One row whose value the table cannot hold (an integer past 64 bits, text that is
    not Unicode, a number its price cannot be computed from) must only set that row
    aside: a batch that does not convert is split in halves until each row that
    fails alone is found, and the halves that convert are joined."""
    import pyarrow as pa

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
