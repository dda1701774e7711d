"""The export (results.parquet, results.csv) of a small table, sorted in
memory, is the one DuckDB's sort writes for any table: the same rows in the
same order, the same bytes of CSV."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from synthetic_results import make_result, result_bytes, result_key

from analysis.collect import collect
from analysis.dataset import export
from analysis.dataset.store import open_dataset


def _results() -> list[dict]:
    """Run ids whose byte order is not their case-blind order, and one run id in two stacks."""
    out = []
    for i, run_id in enumerate(["b-run", "B-run", "a-run", "9-run", "Z9", "z1"]):
        r = make_result(["aws/p2.xlarge", "aws/p3.2xlarge"][i % 2], "resnet50", repeat=i, hourly_usd=1.0 + i)
        r["run_id"] = run_id
        out.append(r)
    twin = copy.deepcopy(out[1])  # the same run id under the other stack
    twin["stack"], twin["offering"] = out[0]["stack"], out[0]["offering"]
    twin["hardware"] = out[0]["hardware"]
    return [*out, twin]


def test_a_small_tables_export_sorted_in_memory_is_duckdbs(tmp_path, monkeypatch):
    src = tmp_path / "results"
    for r in _results():
        path = src / result_key(r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result_bytes(r))
    table = tmp_path / "table"
    summary, _ = collect([str(src)], table, export=False)
    assert summary.valid == 7, summary.skipped
    in_memory = pa.Table.from_batches(list(export._sorted_batches(str(table))))
    by_duckdb = pa.Table.from_batches(list(export._duckdb_sorted(open_dataset(str(table)))))
    assert in_memory.equals(by_duckdb) and in_memory.schema == export.EXPORT_SCHEMA
    pairs = list(zip(in_memory["run_id"].to_pylist(), in_memory["stack"].to_pylist(), strict=True))
    assert pairs == sorted(pairs) and len(set(pairs)) == 7

    small = export.export_table(str(table), tmp_path / "small")
    monkeypatch.setattr(export, "IN_MEMORY_ROWS", 0)  # every table through DuckDB
    large = export.export_table(str(table), tmp_path / "large")
    assert Path(small["csv"]).read_bytes() == Path(large["csv"]).read_bytes()
    assert pq.read_table(small["parquet"]).equals(pq.read_table(large["parquet"]))


def test_the_csv_neutralises_whole_columns_as_each_cell_alone_would():
    """csv_safe works a column of strings at once: the same CSV bytes as
    neutralise_cell applied to every cell, for Arrow-backed, Python and
    object columns, nulls and empty strings included."""
    import io

    import pandas as pd

    from analysis.collect.store import FORMULA_STARTS, csv_safe, neutralise_cell

    cells = [f"{c}x" for c in FORMULA_STARTS] + ["ok", None, "", "a=b", "'=x", "=", "\n=x", "é+"]
    frames = [
        pa.table({"t": pa.array(cells, pa.string()), "n": pa.array([None] * len(cells), pa.string())}).to_pandas(),
        pd.DataFrame({"t": pd.Series(cells, dtype="string[python]"), "f": [1.5] * len(cells)}),
        pd.DataFrame({"mixed": pd.Series([1, "=x", None, 2.5, *cells[:-4]], dtype=object)}),
        pd.DataFrame({"plain": pd.Series(["a", "b"], dtype="str")}),
    ]
    for df in frames:
        by_cell = df.assign(**{c: df[c].map(neutralise_cell) for c in df.columns})
        want, got = io.StringIO(), io.StringIO()
        by_cell.to_csv(want, index=False, lineterminator="\r\n")
        csv_safe(df).to_csv(got, index=False, lineterminator="\r\n")
        assert got.getvalue() == want.getvalue()
    assert "'=x" in csv_safe(frames[0])["t"].tolist() and csv_safe(frames[3]) is frames[3]
