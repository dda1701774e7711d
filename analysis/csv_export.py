"""The CSV dialect of every file gpubench exports for spreadsheets
(results.csv, a report's summary.csv): RFC 4180 through Arrow's writer, and
text cells that a spreadsheet would evaluate as formulas neutralised. Its
own module because a result's text (a stack name, an error) reaches both
files, and one of them written without the neutralisation would let a
forged result run a formula in whoever opens it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

# What a spreadsheet evaluates when a cell starts with it (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# one pass over a column: a cell starting with any of FORMULA_STARTS
_FORMULA_PATTERN = "^[" + "".join("\\" + c if c in "-\\]^" else c for c in FORMULA_STARTS) + "]"


def csv_safe(table):
    """The Arrow table (or record batch) for the CSV export: a text cell a
    spreadsheet would evaluate as a formula (it starts with one of
    FORMULA_STARTS) prefixed with a single quote, so it is shown as text; NaN
    written as an empty cell like a null (Parquet keeps the true values).
    Whole columns at once, in Arrow: no Python call per cell."""
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
    """The export's CSV dialect: RFC 4180 (CRLF rows, a cell quoted when it is
    text, so a bare CR or LF inside it cannot split its row), a header row of
    bare names, nulls as empty cells."""
    return pcsv.WriteOptions(quoting_style="needed", quoting_header="none", eol="\r\n")


def write_csv(table, path) -> None:
    """One CSV file of an Arrow table, through Arrow's writer (C++, about 20x
    pandas' to_csv), text cells neutralised (csv_safe)."""
    pcsv.write_csv(csv_safe(table), path, csv_options())


def frame_to_csv(df, path) -> None:
    """A pandas frame through write_csv."""
    write_csv(pa.Table.from_pandas(df, preserve_index=False), path)
