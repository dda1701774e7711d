"""analysis.dataset.sql: what DataFusion reads of a pyarrow Dataset, and in which order."""

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from analysis.dataset.sql import connect, num, one_of


@pytest.mark.parametrize("stacks", [["b", "a", "b", "a"], ["a"] * 4], ids=["two files", "one file"])
def test_a_partitioned_dataset_is_read_in_its_own_order_with_its_partition_columns(tmp_path, stacks):
    """Hive-partitioned files (even one): copied into one file, in the dataset's order, partitions as columns."""
    rows = pa.table({"stack": stacks, "run_id": ["4", "3", "2", "1"]})
    ds.write_dataset(rows, tmp_path / "t", format="parquet", partitioning=["stack"], partitioning_flavor="hive")
    data = ds.dataset(tmp_path / "t", format="parquet", partitioning="hive")
    with connect() as con:
        con.register("t", data)
        got = con.rows("SELECT run_id, stack, row_number() OVER () AS i FROM t")
    assert got == [(r, s, i) for i, (r, s) in enumerate(zip(*data.to_table().to_pydict().values()), 1)]


def test_one_local_parquet_file_is_read_in_place_and_text_is_quoted(tmp_path):
    path = tmp_path / "results.parquet"
    pq.write_table(pa.table({"name": ["o'brien", "x", None], "v": ["1.5", "nan", "no"]}), path)
    with connect() as con:
        con.register("t", ds.dataset(path, format="parquet"))
        assert con.rows(f"SELECT name, {num('v')} FROM t WHERE {one_of('name', ['o' + chr(39) + 'brien'])}") == [
            ("o'brien", 1.5)
        ]
        assert con.rows(f"SELECT count(*) FROM t WHERE {one_of('name', [])}") == [(0,)]
        assert [n for (n,) in con.rows(f"SELECT {num('v')} FROM t")] == [1.5, None, None]
        assert not list(con._work.glob("*.parquet"))  # noqa: SLF001 - no copy was made
