"""`gpubench report` sets what `gpubench bench` predicted beside a later run of the same task on the same
offering: the newest completed run after the prediction, a full run before a probe, the error computed
from the two figures; a run from before the prediction, another task or another market is not used."""

from __future__ import annotations

from datetime import timedelta

import pytest
from synthetic_results import T0, make_result, result_bytes, result_key

from analysis.bench.judge import PREDICTIONS
from analysis.bench.record import BenchRecord, bench_root
from analysis.collect.run import collect_results
from analysis.report.build import write_report
from payload.storage import open_store
from payload.timestamps import iso

pytestmark = pytest.mark.usefixtures("charts_described")

TASK = "workload-fakejob"
OFFERING = "aws/p3.2xlarge"
PREDICTED = {"samples_per_second": 120.0, "samples_per_second_low": 80.0, "samples_per_second_high": 180.0}


def _collect(tmp_path, results):
    src = tmp_path / "results"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(src)], tmp_path / "report", spot_history="off")
    return tmp_path / "report"


def _run(rate, hours_after, *, probe=False, benchmark=TASK, market="on-demand", repeat=0):
    r = make_result(
        OFFERING,
        benchmark,
        samples_per_second=rate,
        hourly_usd=3.06,
        start=T0 + timedelta(hours=hours_after),
        market=market,
        repeat=repeat,
    )
    if probe:
        steady = {"samples_per_second": rate, "low": rate, "high": rate, "rel_halfwidth": 0.0}
        steady |= {"warmup_seconds": 1.0, "windows": 8, "steady": True}
        r["probe"] = {"limit_seconds": 60, "stopped_by": "steady", "overhead_seconds": 90.0, "steady": steady}
        r["probe"]["points"] = [[1.0, rate], [2.0, 2 * rate]]
    return r


@pytest.fixture
def predicted(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_HOME", str(tmp_path / "home"))
    record = BenchRecord.create(bench_root() / "b1", "b1", "/tasks/task.yaml", None)
    record.data[PREDICTIONS] = [
        {"offering": OFFERING, "market": "on-demand", **PREDICTED, "bench_id": "b1", "at": iso(T0), "benchmark": TASK}
    ]
    record.save()
    return record


def test_a_prediction_is_set_beside_the_newest_full_run_after_it(tmp_path, predicted):
    runs = [
        _run(50.0, -2, repeat=1),  # before the prediction: not its measurement
        _run(100.0, 1, repeat=2),  # the full run after it
        _run(90.0, 3, probe=True, repeat=3),  # a newer probe: a full run's rate comes first
        _run(10.0, 2, benchmark="resnet50", repeat=4),  # another task
        _run(20.0, 2, market="spot", repeat=5),  # another market
    ]
    got = write_report(_collect(tmp_path, runs))
    (check,) = got.summary_doc()["prediction_checks"]
    assert check["benchmark"] == TASK and check["offering"] == OFFERING and check["predicted_by"] == "b1"
    assert check["measured"] == 100.0 and check["measured_by"] == f"full run {runs[1]['run_id']}"
    assert check["error_pct"] == pytest.approx(100 * (120.0 - 100.0) / 100.0)
    assert check["within_interval"] is True
    line = f"prediction vs measurement: {TASK} on {OFFERING}: predicted 120.0 samples/s (80.0-180.0), measured 100.0"
    assert line in got.text()
    page = got.html.read_text()
    assert "Predictions against measurements" in page and "measured 100.0, error +20.0 %" in page


def test_a_probe_measures_it_when_no_full_run_did(tmp_path, predicted):
    runs = [_run(300.0, 1, probe=True, repeat=3), _run(100.0, -1, repeat=2)]
    (check,) = write_report(_collect(tmp_path, runs)).summary_doc()["prediction_checks"]
    assert check["measured"] == 300.0 and check["measured_by"].startswith("probe ")
    assert check["within_interval"] is False and check["error_pct"] == pytest.approx(-60.0)


def test_without_a_later_run_or_a_prediction_the_report_has_no_such_section(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_HOME", str(tmp_path / "home"))
    got = write_report(_collect(tmp_path, [_run(100.0, 1)]))
    assert got.summary_doc()["prediction_checks"] == []
    assert "Predictions against measurements" not in got.html.read_text()
