"""The report computed by DuckDB queries over the results table equals, row
for row, the report computed from every run loaded into pandas: the metrics
tables, the page's counts and run lists, and the page itself."""

from __future__ import annotations

import random
import re
from datetime import date

import pandas as pd
import pytest
from synthetic_results import T0, demo_like_results, make_result, result_bytes, result_key

from analysis.collect import read_table
from analysis.collecting import collect_results
from analysis.metrics import JOINED, Options, analyse, analyse_summary
from analysis.price import age as price_age
from analysis.price.runs import price_runs
from analysis.report import RunFacts, render_html, split_probes
from analysis.report.build import write_report
from analysis.report.query import report_query
from analysis.report.source import NoResultsTable, results_dataset
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


def _today(table: str, opts: Options, as_of: date | None):
    """The report's figures as computed before the query: every run in pandas."""
    runs = read_table(table)
    if as_of is not None and len(runs):
        runs = price_runs(runs, as_of=as_of)
    dates = None  # the launch-time prices taken from the catalog, as write_report looked them up
    if len(runs) and "price_basis" in runs:
        dates = runs.loc[runs["price_basis"].astype(str).str.contains("catalog", na=False), "price_as_of"].tolist()
    full, probes = split_probes(runs)
    return analyse(full, opts), RunFacts.of(full), probes, dates


def _queried(table: str, opts: Options, as_of: date | None):
    with report_query(results_dataset(table), as_of=as_of) as query:
        summary, facts, probes, dates = query.summary(), query.facts(), query.probes(), query.catalog_price_dates()
    return analyse_summary(summary, opts), facts, probes, dates


def _assert_same_report(table: str, as_of: date | None = None, page: bool = False, **options) -> None:
    """The same tables and facts (all the page is made of); with `page`, the same page too."""
    old_opts, new_opts = Options(**options), Options(**options)
    old, old_facts, old_probes, old_dates = _today(table, old_opts, as_of)
    new, new_facts, new_probes, new_dates = _queried(table, new_opts, as_of)
    assert set(old) == set(new)
    for name in ("summary", "scaling", "breakeven"):
        pd.testing.assert_frame_equal(new[name], old[name], check_exact=True)
    assert new["recommendations"] == old["recommendations"]
    assert (new_facts.total, new_facts.completed, new_probes) == (old_facts.total, old_facts.completed, old_probes)
    expected_not_done = old_facts.not_done[list(new_facts.not_done.columns)].reset_index(drop=True)
    pd.testing.assert_frame_equal(new_facts.not_done, expected_not_done, check_exact=True)
    _assert_same_counts(new_facts.not_done_counts, old_facts.not_done_counts)
    pd.testing.assert_frame_equal(new_facts.measured, old_facts.measured, check_exact=True)
    pd.testing.assert_frame_equal(new_facts.row_facts, old_facts.row_facts, check_exact=True)
    assert (new_dates is None) == (old_dates is None)
    assert sorted(set(new_dates or ())) == sorted(set(old_dates or ()))
    assert price_age.warning(new_dates or (), 30, today=date(2030, 1, 1)) == price_age.warning(
        old_dates or (), 30, today=date(2030, 1, 1)
    )
    assert new_opts.base == old_opts.base
    if not page:
        return
    source = f"{table}/results.parquet"
    html = lambda facts, tables, opts, probes: re.sub(  # noqa: E731 - the page without its timestamp
        r"Generated .*? UTC", "Generated", render_html(facts, tables, opts, source, probes)
    )
    assert html(new_facts, new, new_opts, new_probes) == html(old_facts, old, old_opts, old_probes)


def _assert_same_counts(new: pd.DataFrame, old: pd.DataFrame) -> None:
    """The same groups, run counts and latest starts; billed sums to the cent
    (DuckDB and pandas add the same numbers in another order)."""
    assert list(new.columns) == list(old.columns)
    cents = ["billed_cost_usd"]
    exact = lambda f: f.drop(columns=cents).astype(object).where(f.drop(columns=cents).notna(), None)  # noqa: E731
    pd.testing.assert_frame_equal(exact(new), exact(old), check_exact=True)
    pd.testing.assert_series_equal(
        new["billed_cost_usd"].astype(float), old["billed_cost_usd"].astype(float), atol=0.005
    )


def test_many_runs_that_did_not_complete_are_counted_and_the_latest_listed(table, tmp_path):
    """More incomplete runs than the page lists: counted per stack, offering and
    status, the most recent NOT_DONE_SAMPLE listed, latest first, as pandas picks them."""
    from analysis.report.facts import NOT_DONE_SAMPLE

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
    _assert_same_report(str(many), page=True)
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


def test_queried_report_equals_the_pandas_report(table):
    _assert_same_report(table, page=True)
    assert len(read_table(table)) > 20  # the fixture has something to aggregate


def test_queried_report_equals_under_every_option(table):
    _assert_same_report(table, base="aws/p3.2xlarge", deadline_hours=0.5, budget_usd=1.0, cost_basis="train")


def test_queried_report_equals_when_repriced_at_a_date(table):
    _assert_same_report(table, as_of=date(2018, 2, 8), page=True)


def test_probe_runs_are_set_apart_by_the_query_as_by_pandas(table, tmp_path):
    runs = read_table(table)
    probed = tmp_path / "probed"
    probed.mkdir()
    runs.assign(probe=runs["offering_id"] == "aws/p3.2xlarge").to_parquet(probed / "results.parquet")
    _assert_same_report(str(probed))
    with report_query(results_dataset(str(probed))) as query:
        assert query.probes() == int((runs["offering_id"] == "aws/p3.2xlarge").sum()) > 0


def test_a_table_from_before_workloads_and_probes_is_read_as_pandas_reads_it(table, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    old = read_table(table).drop(columns=["workload", "workload_label", "sample_unit", "probe"])
    old.to_parquet(legacy / "results.parquet")
    _assert_same_report(str(legacy))


def test_write_report_writes_the_same_page_and_summary_as_build_report(table, tmp_path):
    """The command's call end to end, against the pandas pipeline it replaced."""
    from analysis.report import build_report

    outcome = write_report(table)
    runs = read_table(table)
    # write_report leaves a deadline or budget the user did not give out of the answer
    unasked = Options(deadline_hours=None, budget_usd=None)
    path, tables = build_report(runs, tmp_path / "old", unasked, source=outcome.table)
    strip = lambda p: re.sub(r"Generated .*? UTC", "", p.read_text(encoding="utf-8"))  # noqa: E731
    assert strip(outcome.html) == strip(path)
    assert (tmp_path / "old" / "summary.csv").read_text() == (outcome.html.parent / "summary.csv").read_text()
    assert outcome.runs == len(split_probes(runs)[0])
    assert outcome.tables["versus"] == tables["versus"]  # the terminal's comparison with the studies


def test_an_empty_table_gives_the_empty_report(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    rows = read_table(_collect(tmp_path, [make_result(status="failed", repeat=5)]))
    rows.iloc[0:0].to_parquet(empty / "results.parquet")
    _assert_same_report(str(empty))
    _assert_same_report(str(empty), as_of=date(2018, 2, 8))


def test_no_table_names_the_location_and_the_fix(tmp_path):
    with pytest.raises(NoResultsTable, match=r"no results table at .*results\.parquet; run .*collect") as err:
        results_dataset(str(tmp_path / "nowhere"))
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, ValueError)


def test_an_arrow_dataset_and_a_hive_partitioned_one_give_the_same_figures(table, tmp_path):
    """A dataset DuckDB cannot read itself (here in memory, in practice a bucket's)
    is scanned through Arrow; a Hive-partitioned one through DuckDB's reader: the
    same summary, facts and probes as the table file."""
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
    from analysis.price.estimate import measured_runs_of

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
