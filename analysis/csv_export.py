"""The CSV dialect of every export (results.csv, a report's summary.csv): RFC 4180 through Arrow's writer,
text a spreadsheet would evaluate as a formula neutralised, in one place so that no export forgets it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet evaluates (OWASP, CSV injection)
_FORMULA_PATTERN = "^[" + "".join("\\" + c if c in "-\\]^" else c for c in FORMULA_STARTS) + "]"


def csv_safe(table):
    """The Arrow table (or record batch) with a text cell starting with one of FORMULA_STARTS prefixed with
    a single quote, shown as text, and NaN as an empty cell like a null; whole columns at once, in Arrow."""
    columns, changed = [], False
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            formula = pc.match_substring_regex(col, _FORMULA_PATTERN)
            if pc.any(formula).as_py():
                col, changed = (
                    pc.if_else(
                        formula,
                        pc.binary_join_element_wise(pa.scalar("'", field.type), col, pa.scalar("", field.type)),
                        col,
                    ),
                    True,
                )
        elif pa.types.is_floating(field.type):
            nan = pc.is_nan(col)
            if pc.any(nan).as_py():
                col, changed = pc.if_else(nan, pa.scalar(None, field.type), col), True
        columns.append(col)
    if not changed:
        return table
    return type(table).from_arrays(columns, schema=table.schema)


def csv_options():
    """RFC 4180: CRLF rows, text quoted when needed (a CR or LF inside cannot split its row), a bare header."""
    return pcsv.WriteOptions(quoting_style="needed", quoting_header="none", eol="\r\n")


def write_csv(table, path) -> None:
    """An Arrow table as CSV through Arrow's writer (about 20x pandas' to_csv), neutralised (csv_safe)."""
    pcsv.write_csv(csv_safe(table), path, csv_options())


def frame_to_csv(df, path) -> None:
    write_csv(pa.Table.from_pandas(df, preserve_index=False), path)
