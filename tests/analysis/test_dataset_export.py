"""The export (results.parquet, results.csv) of a small table, sorted in
memory, is the one DataFusion's spilled sort writes for any table: the same rows in the
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


def test_a_small_tables_export_sorted_in_memory_is_the_spilled_sorts(tmp_path, monkeypatch):
    src = tmp_path / "results"
    for r in _results():
        path = src / result_key(r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result_bytes(r))
    table = tmp_path / "table"
    summary, _ = collect([str(src)], table, export=False)
    assert summary.valid == 7, summary.skipped
    in_memory = pa.Table.from_batches(list(export._sorted_batches(open_dataset(str(table)))))
    spilled = pa.Table.from_batches(list(export._spilled_sorted(open_dataset(str(table)))))
    assert in_memory.equals(spilled) and in_memory.schema == export.EXPORT_SCHEMA
    pairs = list(zip(in_memory["run_id"].to_pylist(), in_memory["stack"].to_pylist(), strict=True))
    assert pairs == sorted(pairs) and len(set(pairs)) == 7

    small = export.export_table(str(table), tmp_path / "small")
    monkeypatch.setattr(export, "IN_MEMORY_ROWS", 0)  # every table through the spilled sort (DataFusion)
    large = export.export_table(str(table), tmp_path / "large")
    assert Path(small["csv"]).read_bytes() == Path(large["csv"]).read_bytes()
    assert pq.read_table(small["parquet"]).equals(pq.read_table(large["parquet"]))


def test_the_csv_neutralises_whole_columns_as_each_cell_alone_would(tmp_path):
    """csv_safe works a column at once, in Arrow: each text cell comes out as
    neutralise_cell makes it alone, nulls and empty strings included, in a
    table and a record batch; NaN is written as an empty cell like a null; a
    table with nothing to neutralise is handed back as it is."""
    import csv as csv_mod

    from analysis.csv_export import FORMULA_STARTS, csv_safe, write_csv

    def neutralise_cell(value):  # one cell alone: what every text cell of the CSV must come out as
        return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value

    cells = [f"{c}x" for c in FORMULA_STARTS] + ["ok", None, "", "a=b", "'=x", "=", "\n=x", "é+", "x\r=y"]
    floats = [float("nan"), None, 1.5, *[0.25] * (len(cells) - 3)]
    table = pa.table({"t": pa.array(cells, pa.string()), "f": pa.array(floats, pa.float64()), "n": [None] * len(cells)})
    large = table.set_column(0, "t", table.column("t").cast(pa.large_string()))  # what pandas' frames give
    for data in (table, table.to_batches()[0], large):
        safe = csv_safe(data)
        assert type(safe) is type(data) and safe.schema == data.schema
        assert safe.column("t").to_pylist() == [neutralise_cell(c) for c in cells]
        assert safe.column("f").to_pylist() == [None, None, 1.5, *floats[3:]]
    plain = pa.table({"t": ["a", "b=c", None], "f": [1.0, None, 2.0]})
    assert csv_safe(plain) is plain

    write_csv(table, tmp_path / "t.csv")
    with open(tmp_path / "t.csv", newline="", encoding="utf-8") as f:  # the csv module keeps a quoted CR as written
        rows = list(csv_mod.reader(f))
    assert rows[0] == ["t", "f", "n"] and len(rows) == len(cells) + 1  # no cell's CR or LF split its row
    assert [r[0] for r in rows[1:]] == [neutralise_cell(c) or "" for c in cells]
    assert [r[1] for r in rows[1:3]] == ["", ""] and rows[3][1] == "1.5"
