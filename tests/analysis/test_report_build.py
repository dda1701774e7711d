"""The library calls behind `gpubench collect` and `gpubench report`, called directly with typed
arguments: analysis.collect.run.collect_results and analysis.report.build.write_report."""

from __future__ import annotations

from datetime import date

import pytest
from synthetic_results import make_result, result_bytes, result_key

from analysis.collect.run import collect_results, finished_stacks, teardown_finished
from analysis.report.build import write_report
from infra.catalog import CatalogError
from payload.storage import open_store

# the charts are described, not drawn: these tests are about the page's tables and text (tests/chart_content.py)
pytestmark = pytest.mark.usefixtures("charts_described")


def _bucket(tmp_path, results) -> str:
    src = tmp_path / "results"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    return str(src)


def _runs() -> list[dict]:
    out = []
    for i, (offering, hourly) in enumerate((("aws/p2.xlarge", 0.9), ("aws/p3.2xlarge", 3.06))):
        for rep in range(2):
            out.append(
                make_result(
                    offering,
                    "resnet50",
                    samples_per_second=100.0 * (i + 1),
                    train_seconds=3600.0 / (i + 1),
                    hourly_usd=hourly,
                    repeat=rep * 10 + i,
                )
            )
    return out


@pytest.fixture
def collected(tmp_path):
    results = _runs()
    outcome = collect_results([_bucket(tmp_path, results)], tmp_path / "report", spot_history="off")
    return tmp_path / "report", results, outcome


def test_collect_results_writes_the_table_and_says_what_it_did(collected):
    out, results, outcome = collected
    assert outcome.summary.valid == len(results) and not outcome.summary.incomplete
    assert sorted(r["run_id"] for r in outcome.rows) == sorted(r["run_id"] for r in results)
    assert (out / "results.parquet").exists() and outcome.teardown is None
    text = outcome.text()
    assert text.startswith(f"collected {len(results)} valid runs from 1 location(s)")
    assert f"table: {outcome.summary.table['parquet']}" in text
    assert "teardown" not in outcome.to_dict()


def test_collect_results_refuses_zero_workers(tmp_path):
    with pytest.raises(ValueError, match="--workers must be at least 1, got 0"):
        collect_results([str(tmp_path)], tmp_path / "report", workers=0)


def test_finished_stacks_keeps_a_stack_with_a_run_that_will_resume():
    rows = [
        {"stack": "a", "status": "completed"},
        {"stack": "a", "status": "failed"},
        {"stack": "b", "status": "completed"},
        {"stack": "b", "status": "interrupted"},
    ]
    assert finished_stacks(rows) == ["a"]


def test_teardown_finished_destroys_nothing_for_no_stacks_and_reports_errors(monkeypatch):
    import analysis.teardown as td
    from infra.workspace import PulumiMissing

    assert teardown_finished([], ["file:///x"]).outcomes == []

    def broken(stacks, results_urls=None, **kw):
        raise PulumiMissing("the Pulumi CLI is not installed")

    monkeypatch.setattr(td, "teardown_completed", broken)
    got = teardown_finished(["aws-p2-1x"], ["file:///x"])
    assert got.error.startswith("teardown failed before destroying anything") and got.missing_pulumi
    assert got.to_dict() == {"outcomes": [], "error": got.error}


def test_write_report_writes_the_page_and_the_summary(collected):
    out, results, _ = collected
    got = write_report(out, deadline_hours=0.5, budget_usd=1)
    assert got.html == out / "index.html" and got.html.exists() and (out / "summary.csv").exists()
    assert got.runs == len(results) and not got.empty
    assert got.options.deadline_hours == 0.5 and got.options.budget_usd == 1
    doc = got.summary_doc()
    offerings = {"aws/p2.xlarge", "aws/p3.2xlarge"}
    assert doc["html"] == str(got.html) and doc["runs"] == len(results)
    assert doc["base"] == got.options.base and doc["base"] in offerings  # chosen from the data
    assert {r["offering_id"] for r in doc["summary"]} == offerings
    text = got.text()
    assert "cost to train" in text and "\nprices:\n" in text and text.endswith(f"report: {got.html}\n")


def test_write_report_reprices_at_a_date_and_skips_the_age_warning(collected):
    out, _, _ = collected
    got = write_report(out, as_of=date(2018, 2, 8), base="aws/p2.xlarge", cost_basis="train")
    assert got.as_of == date(2018, 2, 8) and got.summary_doc()["as_of"] == date(2018, 2, 8)
    assert got.options.base == "aws/p2.xlarge" and got.options.cost_basis == "train"
    assert got.price_warning is None


def test_write_report_errors_name_the_problem(tmp_path, collected):
    out, _, _ = collected
    with pytest.raises(ValueError, match="--budget-usd must be a positive number, got 0"):
        write_report(out, budget_usd=0)
    with pytest.raises(CatalogError, match="aws/p3.2xlarge"):
        write_report(out, base="aws/p3.2xlarg")
    with pytest.raises(FileNotFoundError):
        write_report(tmp_path / "nothing")
    with pytest.raises(ValueError, match="--deadline-hours must be a positive number, got -1.0"):
        write_report(out, deadline_hours=-1.0)


def test_write_report_of_only_failed_runs_says_so(tmp_path):
    src = _bucket(tmp_path, [make_result("aws/p2.xlarge", status="failed", hourly_usd=0.9)])
    collect_results([src], tmp_path / "report", spot_history="off")
    got = write_report(str(tmp_path / "report"))
    assert got.empty and got.runs == 1
    # the table is the directory collect wrote (a bucket's table has no results.parquet to name)
    assert got.text().startswith(f"no completed runs in {tmp_path / 'report'} (1 rows)")
    assert f" from {tmp_path / 'report'}. " in got.html.read_text()
