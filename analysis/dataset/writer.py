"""Collect rows as the table stores them: priced with the current catalog and
converted to the table's Arrow types, a row whose value does not fit set aside
alone (storable); the (stack, source, key) of rows to delete (deleted_keys)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import pyarrow as pa

from analysis.dataset.faults import first_line
from analysis.dataset.row import COLUMNS
from analysis.dataset.schema import SCHEMA, month_of
from analysis.price.runs import PRICE_COLUMNS, price_run
from infra.catalog import load_catalog

BATCH_ROWS = 10_000  # rows priced and converted to Arrow at a time


def deleted_keys(gone: list[tuple[str, str, str]]):
    stacks, sources, keys = (list(c) for c in zip(*gone, strict=True)) if gone else ([], [], [])
    return pa.table(
        {
            "stack": pa.array(stacks, pa.string()),
            "source": pa.array(sources, pa.string()),
            "key": pa.array(keys, pa.string()),
        }
    )


def to_arrow(rows: Sequence[dict], identity: str):
    """A batch of collect rows priced with the current catalog, as a table of SCHEMA. Each
    column is built from the rows' own values with its type: an integer is stored exactly
    or refused, never rounded through a float column because another row has none."""
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
    """(the rows that fit, as one table of SCHEMA, [(row, why)] of those that do not: an
    integer past 64 bits, text that is not Unicode, a number no price can be computed
    from). A batch that does not convert is halved until each row that fails alone is found."""
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
