"""The report's figures as its query computes them over the results table:
golden tables (a few runs, every expected figure worked out by hand in the
comments), the page's counts and run lists over many runs, the readers of a
table (its export, an Arrow dataset, a Hive-partitioned one, the Delta table
alone) giving the same figures."""

from __future__ import annotations

import math
import random
from datetime import date

import pandas as pd
import pytest
from queried import as_collected
from synthetic_results import T0, demo_like_results, make_result, result_bytes, result_key

from analysis.collect import read_table
from analysis.collect.run import collect_results
from analysis.metrics import GROUP, JOINED
from analysis.report.build import write_report
from analysis.report.query import NoResultsTable, report_query, results_dataset
from payload.storage import open_store

# the charts are described, not drawn: these tests are about the page's tables and text (tests/chart_content.py)
pytestmark = pytest.mark.usefixtures("charts_described")


def _collect(tmp_path, results) -> str:
    src, out = tmp_path / "results", tmp_path / "table"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(src)], out, spot_history="off")
    return str(out)


def _spot_and_retries() -> list[dict]:
    """Spot runs with price histories (each run its own price), retried runs,
    repeats of odd and even counts, runs without GPU count or throughput."""
    rng = random.Random(7)
    out = []
    offers = (
        ("aws/p2.xlarge", "spot", None),
        ("aws/p3.2xlarge", "on-demand", 3.06),
        ("aws/p3.2xlarge", "on-demand", 2.5),
        ("gcp/n1-standard-8+1xv100", "on-demand", None),
    )
    for bench in ("resnet50", "mnist-cnn"):
        for i, (o, market, hourly) in enumerate(offers):
            for rep in range(rng.randint(1, 5)):
                history = [(0.0, rng.uniform(0.2, 0.4)), (600.0, rng.uniform(0.2, 0.4))] if market == "spot" else None
                out.append(
                    make_result(
                        o,
                        bench,
                        train_seconds=rng.uniform(300, 5000),
                        samples_per_second=None if rep == 3 else rng.uniform(10, 500),
                        market=market,
                        hourly_usd=hourly,
                        spot_hourly_usd=0.3 if market == "spot" else None,
                        spot_prices=history,
                        attempts=1 + rep % 3,
                        accuracy=rng.choice((None, rng.random())),
                        gpu_utilization=rng.choice((None, rng.uniform(10, 99))),
                        repeat=100 * i + rep,
                        start=T0.replace(day=1 + rep),
                        params={"steps": 500 * (1 + rep % 2)},
                    )
                )
    out.append(make_result("aws/p2.xlarge", "resnet50", status="interrupted", repeat=901))
    return out


FIXTURES = {"demo-like": demo_like_results, "spot and retries": _spot_and_retries}


@pytest.fixture(scope="module", params=sorted(FIXTURES))
def table(request, tmp_path_factory) -> str:
    return _collect(tmp_path_factory.mktemp("query"), FIXTURES[request.param]())


def test_many_runs_that_did_not_complete_are_counted_and_the_latest_listed(table, tmp_path):
    """More incomplete runs than the page lists: counted per stack, offering and
    status, the most recent NOT_DONE_SAMPLE listed, latest first."""
    from analysis.report.query import NOT_DONE_SAMPLE

    runs = read_table(table)
    failed = runs[runs["status"] == "completed"].head(2)
    extra = NOT_DONE_SAMPLE * 3
    rows = failed.iloc[[i % len(failed) for i in range(extra)]].reset_index(drop=True)  # one take, not a concat per row
    rng = random.Random(3)
    days = [rng.randint(1, 28) for _ in range(extra)]  # ties on purpose: broken by table order
    rows = rows.assign(
        run_id=[f"gone-{i:04d}" for i in range(extra)],
        status=["failed" if i % 3 else "interrupted" for i in range(extra)],
        started_at=[f"2026-02-{d:02d}T10:00:00.000Z" for d in days],
        error=[f"error {i}" for i in range(extra)],
    )
    many = tmp_path / "many"
    many.mkdir()
    pd.concat([runs, rows], ignore_index=True).to_parquet(many / "results.parquet")
    with report_query(results_dataset(str(many))) as query:
        facts = query.facts()
    everyone = pd.concat([runs, rows], ignore_index=True)
    gone = everyone[everyone["status"] != "completed"]
    assert facts.not_done_total == len(gone) > NOT_DONE_SAMPLE
    assert int(facts.not_done_counts["runs"].sum()) == len(gone)
    assert len(facts.not_done) == NOT_DONE_SAMPLE
    starts = list(facts.not_done["started_at"])
    assert starts == sorted(starts, reverse=True) and starts[0] == max(gone["started_at"])
    page = write_report(str(many), table=str(many)).html.read_text(encoding="utf-8")
    listed = page.split('id="not-completed"')[1]
    assert listed.count("gone-") == NOT_DONE_SAMPLE
    assert f"To list all {len(gone):,}" in listed and "WHERE status IS DISTINCT FROM" in listed


def test_probe_runs_are_left_out_of_every_figure_and_counted(table, tmp_path):
    runs = read_table(table)
    probed = tmp_path / "probed"
    probed.mkdir()
    is_probe = runs["offering_id"] == "aws/p3.2xlarge"
    runs.assign(probe=is_probe).to_parquet(probed / "results.parquet")
    with report_query(results_dataset(str(probed))) as query:
        summary, facts = query.summary(), query.facts()
        assert query.probes() == int(is_probe.sum()) > 0
    assert "aws/p3.2xlarge" not in set(summary["offering_id"]) and len(summary)
    assert facts.total == int((~is_probe).sum())
    assert "aws/p3.2xlarge" not in set(facts.measured.get("offering_id", ()))


def test_an_empty_table_gives_the_empty_report(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    rows = read_table(_collect(tmp_path, [make_result(status="failed", repeat=5)]))
    rows.iloc[0:0].to_parquet(empty / "results.parquet")
    for as_of in (None, date(2018, 2, 8)):
        with report_query(results_dataset(str(empty)), as_of=as_of) as query:
            summary, facts, probes = query.summary(), query.facts(), query.probes()
        assert summary.empty and list(summary.columns) == [*GROUP, "repeats"]
        assert (facts.total, facts.completed, probes, len(facts.not_done), facts.measured.empty) == (0, 0, 0, 0, True)
    got = write_report(str(empty))
    assert got.empty and "no completed runs" in got.text()


def test_no_table_names_the_location_and_the_fix(tmp_path):
    with pytest.raises(NoResultsTable, match=r"no results table at .*results\.parquet; run .*collect") as err:
        results_dataset(str(tmp_path / "nowhere"))
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, ValueError)


def test_an_arrow_dataset_and_a_hive_partitioned_one_give_the_same_figures(table, tmp_path):
    """A dataset that is not one local Parquet file (here in memory, in practice a bucket's,
    or Hive-partitioned files) is streamed into one before the query reads it: the same
    summary, facts and probes as the table file."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    rows = pq.read_table(f"{table}/results.parquet")
    ds.write_dataset(rows, tmp_path / "hive", format="parquet", partitioning=["stack"], partitioning_flavor="hive")
    hive = ds.dataset(tmp_path / "hive", format="parquet", partitioning="hive")
    with report_query(results_dataset(table)) as query:
        expected = query.summary(), query.facts(), query.probes()
    for dataset in (ds.dataset(rows), hive):
        with report_query(dataset) as query:
            got = query.summary(), query.facts(), query.probes()
        if dataset is hive:  # the files are read stack by stack: the same runs, in another order
            expected_summary = expected[0].drop(columns=list(JOINED))
            pd.testing.assert_frame_equal(got[0].drop(columns=list(JOINED)), expected_summary, check_exact=True)
            assert got[1].total == expected[1].total and got[1].completed == expected[1].completed
            continue
        pd.testing.assert_frame_equal(got[0], expected[0], check_exact=True)
        pd.testing.assert_frame_equal(got[1].not_done, expected[1].not_done, check_exact=True)
        pd.testing.assert_frame_equal(got[1].measured, expected[1].measured, check_exact=True)
        pd.testing.assert_frame_equal(got[1].row_facts, expected[1].row_facts, check_exact=True)
        assert (got[1].total, got[1].completed, got[2]) == (expected[1].total, expected[1].completed, expected[2])


def test_a_table_collected_without_exports_is_queried_as_the_results_dataset(tmp_path):
    """No results.parquet beside the Delta table (a bucket's, or --no-export): the
    report and the plan's billed time query the dataset and find the same figures."""
    from analysis.metrics import GROUP
    from analysis.planning import measured_runs_of

    results = demo_like_results()
    exported = _collect(tmp_path / "exported", results)
    src, bare = tmp_path / "bare" / "results", tmp_path / "bare" / "table"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(src)], bare, spot_history="off", export=False)
    assert not (bare / "results.parquet").exists()

    got, want = write_report(str(bare)), write_report(exported)
    assert got.runs == want.runs > 0
    numbers = [*GROUP, "repeats", "train_hours", "train_cost_usd", "billed_cost_usd"]
    pd.testing.assert_frame_equal(got.tables["summary"][numbers], want.tables["summary"][numbers], check_exact=True)
    by_run = lambda m: {k: sorted(v) for k, v in m.seconds.items()}  # noqa: E731 - order is the scan's
    assert by_run(measured_runs_of(bare)) == by_run(measured_runs_of(exported)) != {}
    assert measured_runs_of(bare).where == str(bare)


# --- Golden tables: nine runs of resnet50, every expected figure worked out by hand ---------------

_SAME = {  # one configuration: batch 32, fp32, tensorflow, 1 GPU
    "benchmark": "resnet50",
    "workload": "w1",
    "workload_label": "2 epochs, batch 32, fp32",
    "sample_unit": "image",
    "backend": "tensorflow",
    "precision": "fp32",
    "per_gpu_batch_size": 32,
    "gpus_used": 1,
    "data": "synthetic",
    "device": "GPU",
    "stack": "s1",
}
# (run, offering, market, status, probe, train h, samples/s, USD/h, price source, price basis, started)
_RUNS = (
    ("r3", "aws/p3.2xlarge", "on-demand", "completed", False, 4.0, 25.0, 3.0, "B", "catalog", "2026-01-03"),
    ("r1", "aws/p3.2xlarge", "on-demand", "completed", False, 1.0, 100.0, 3.0, "A", "catalog", "2026-01-01"),
    ("r2", "aws/p3.2xlarge", "on-demand", "completed", False, 2.0, 50.0, 3.0, "A", "catalog", "2026-01-02"),
    ("r4", "aws/p3.2xlarge", "on-demand", "completed", False, 1.5, 80.0, 2.5, "A", "recorded", "2026-01-04"),
    ("r5", "aws/p2.xlarge", "spot", "completed", False, 3.0, 30.0, 0.2, "S", "spot", "2026-01-05"),
    ("r6", "aws/p2.xlarge", "spot", "completed", False, 5.0, 20.0, 0.4, "S", "spot", "2026-01-06"),
    ("r7", "aws/p2.xlarge", "spot", "failed", False, None, None, 0.3, "S", "spot", "2026-01-07"),
    ("r8", "aws/p3.2xlarge", "on-demand", "completed", True, 0.1, 200.0, 3.0, "A", "catalog", "2026-01-08"),
    ("r9", "gcp/x", "on-demand", "completed", False, 0.5, None, None, None, None, "2026-01-09"),
)


def _golden_runs() -> pd.DataFrame:
    rows = []
    for run, offering, market, status, probe, hours, sps, hourly, source, basis, started in _RUNS:
        rows.append(
            {
                **_SAME,
                "run_id": run,
                "offering_id": offering,
                "market": market,
                "status": status,
                "probe": probe,
                "train_hours": hours,
                "samples_per_second": sps,
                "hourly_usd": hourly,
                "train_cost_usd": None if hours is None or hourly is None else hours * hourly,
                "billed_cost_usd": None if hourly is None else (hours or 0.2) * hourly + 0.1,
                "price_source": source,
                "price_basis": basis and f"{basis} price",
                "price_as_of": "2026-01-01" if basis == "catalog" else None,
                "started_at": started,
                "setup_fee_usd": None,
                "data": "real" if run == "r5" else "synthetic",
            }
        )
    return as_collected(pd.DataFrame(rows))


def _golden_table(tmp_path, runs: pd.DataFrame) -> str:
    out = tmp_path / "golden"
    out.mkdir()
    runs.to_parquet(out / "results.parquet")
    return str(out)


# (offering, market, price key, repeats, train h median, min, max, spread, samples/s median,
#  USD/h median, samples per USD median, price sources joined, prices paid, ImageNet hours)
GOLDEN_SUMMARY = [
    # r5, r6 (spot: one row, each run at its own price): hours (3 + 5) / 2 = 4, spread (5 - 3) / 4;
    # samples/s (30 + 20) / 2 = 25; USD/h (0.2 + 0.4) / 2; per USD: 30 x 3600 / 0.2 = 540,000 and
    # 20 x 3600 / 0.4 = 180,000, median 360,000; ImageNet: 153,600,000 images / 25 per s / 3600 s
    (
        "aws/p2.xlarge",
        "spot",
        "spot",
        2,
        4.0,
        3.0,
        5.0,
        0.5,
        25.0,
        0.3,
        360_000.0,
        "S",
        "USD 0.2-0.4/h (spot, 2 prices, each run at its own)",
        153_600_000 / 25 / 3600,
    ),
    # r4 alone (another price is another row): 80 x 3600 / 2.5 = 115,200 images per USD
    (
        "aws/p3.2xlarge",
        "on-demand",
        "2.5",
        1,
        1.5,
        1.5,
        1.5,
        0.0,
        80.0,
        2.5,
        115_200.0,
        "A",
        "USD 2.5/h",
        153_600_000 / 80 / 3600,
    ),
    # r3, r1, r2 (r8 is a probe): hours 4, 1, 2: median 2, spread (4 - 1) / 2; samples/s median 50;
    # per USD 30,000, 120,000, 60,000: median 60,000; sources in table order: r3's B first
    (
        "aws/p3.2xlarge",
        "on-demand",
        "3",
        3,
        2.0,
        1.0,
        4.0,
        1.5,
        50.0,
        3.0,
        60_000.0,
        "B; A",
        "USD 3/h",
        153_600_000 / 50 / 3600,
    ),
    # r9: no price, no throughput
    ("gcp/x", "on-demand", "unpriced", 1, 0.5, 0.5, 0.5, 0.0, None, None, None, None, None, None),
]
SUMMARY_READ = ["offering_id", "market", "price_key", "repeats", "train_hours", "train_hours_min", "train_hours_max",
                "train_hours_spread", "samples_per_second", "hourly_usd", "samples_per_usd", "price_source",
                "prices_paid", "imagenet_hours"]  # fmt: skip


def _rows(frame: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """The frame's rows as tuples, a missing value as None."""
    cells = frame[columns].astype(object).where(frame[columns].notna(), None)
    return [tuple(r) for r in cells.itertuples(index=False)]


def _assert_rows(got: list[tuple], expected: list[tuple]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g == pytest.approx(e), (g, e)


def test_golden_summary(tmp_path):
    with report_query(results_dataset(_golden_table(tmp_path, _golden_runs()))) as query:
        summary = query.summary()
    _assert_rows(_rows(summary, SUMMARY_READ), GOLDEN_SUMMARY)
    assert set(summary["workload_label"]) == {"2 epochs, batch 32, fp32"} and set(summary["sample_unit"]) == {"image"}
    # r1-r3: train cost 3 x hours (3, 6, 12): median 6, spread (12 - 3) / 6; billed adds 0.10 a run
    p3 = summary[summary["price_key"] == "3"].iloc[0]
    assert (p3["train_cost_usd"], p3["train_cost_usd_spread"], p3["billed_cost_usd"]) == pytest.approx((6.0, 1.5, 6.1))
    assert p3["price_basis"] == "catalog price" and p3["imagenet_cost_usd"] == pytest.approx(
        153_600_000 / 50 / 3600 * 3
    )


def test_golden_facts(tmp_path):
    with report_query(results_dataset(_golden_table(tmp_path, _golden_runs()))) as query:
        facts, probes, dates = query.facts(), query.probes(), query.catalog_price_dates()
    # nine rows, r8 a probe: eight full runs, r7 the one that did not complete
    assert (facts.total, facts.completed, facts.not_done_total, probes) == (8, 7, 1, 1)
    assert list(facts.not_done["run_id"]) == ["r7"]
    assert _rows(facts.not_done_counts, ["stack", "offering_id", "status", "runs", "billed_cost_usd"]) == [
        ("s1", "aws/p2.xlarge", "failed", 1, pytest.approx(0.2 * 0.3 + 0.1))  # no time: 0.2 h billed
    ]
    # the reference setups (resnet50 is a studies' benchmark), completed runs with a throughput:
    # p2 spot: r5, r6 -> (30 + 20) / 2 = 25 images/s at (0.2 + 0.4) / 2 USD/h, first source S;
    # p3 on-demand: r3, r1, r2, r4 -> (50 + 80) / 2 = 65 images/s at (3 + 3) / 2 USD/h, first source B
    # (r5's data is real, the rest synthetic: two setups for p2)
    measured = ["offering_id", "market", "data", "value", "runs", "hourly_usd", "price_source"]
    _assert_rows(
        _rows(facts.measured, measured),
        [
            ("aws/p2.xlarge", "spot", "real", 30.0, 1, 0.2, "S"),
            ("aws/p2.xlarge", "spot", "synthetic", 20.0, 1, 0.4, "S"),
            ("aws/p3.2xlarge", "on-demand", "synthetic", 65.0, 4, 3.0, "B"),
        ],
    )
    # per offering x market: the data kinds its full runs recorded, each once, sorted
    assert _rows(facts.row_facts, ["offering_id", "market", "data"]) == [
        ("aws/p2.xlarge", "spot", "real; synthetic"),
        ("aws/p3.2xlarge", "on-demand", "synthetic"),
        ("gcp/x", "on-demand", "synthetic"),
    ]
    assert sorted(set(dates)) == ["2026-01-01"]  # r1, r2, r3, r8: launch-time prices from the catalog


def test_golden_numbers_read_as_numbers(tmp_path):
    """A throughput written as text that is a number counts; text that is none, or NaN, is missing."""
    runs = _golden_runs()
    runs["samples_per_second"] = runs["samples_per_second"].map(lambda v: "n/a" if v == 25.0 else repr(v))
    with report_query(results_dataset(_golden_table(tmp_path, runs))) as query:
        summary = query.summary()
    p3 = summary[summary["price_key"] == "3"].iloc[0]
    assert p3["samples_per_second"] == 75.0  # r3's "n/a" is missing: (100 + 50) / 2
    assert math.isnan(summary[summary["price_key"] == "unpriced"].iloc[0]["samples_per_second"])  # "nan"
