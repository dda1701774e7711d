"""The demo's first screen compares whole jobs: each study's figure here comes from a probe of that
study's own configuration (its task file: model, input shape, batch, precision), extrapolated to the
study's whole job by bench's code; work that still differs is named in the same sentence; a precision
this machine cannot run (fp16 on a CPU) is said and compared with nothing. The probe is faked here."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis import demo
from analysis.bench.candidates import local_candidate
from analysis.bench.probes import ProbeReport
from analysis.price.billed import billed
from analysis.reference.studies import reference_figures, study_jobs
from analysis.report.answer import digits, long_duration, versus_lines
from analysis.report.reference import NotCompared, Versus, read_study_probes, study_work, versus, versus_plot

# A probe's record as the payload writes it (result.json `probe`): a steady rate, its interval and warm-up.
STEADY = {
    "samples_per_second": 400.0,
    "low": 390.0,
    "high": 410.0,
    "rel_halfwidth": 0.025,
    "warmup_seconds": 6.0,
    "windows": 8,
    "steady": True,
    "warmup_samples": 1600.0,
}
OVERHEAD, FINISH, PROBED_FOR = 20.0, 1.5, 75.0


def job(benchmark: str):
    return next(j for j in study_jobs() if j.benchmark == benchmark)


@pytest.fixture
def probed(monkeypatch, tmp_path):
    """probe_study with the local probe faked (no payload, no TensorFlow); the jobs it was asked for."""
    asked = []

    def fake(j, price, probes_dir, logs, limit, stream):
        asked.append((j, limit))
        cand = local_candidate(price.hourly_usd, "test")
        result = {"status": "completed", "probe": {"steady": STEADY, "overhead_seconds": OVERHEAD}}
        return ProbeReport(cand, cand.name, "measured", None, result, finish_seconds=FINISH), PROBED_FOR

    monkeypatch.setattr(demo, "_local_probe", fake)

    def run(benchmark: str, gpus: int = 0) -> dict:
        kw = dict(probes_dir=tmp_path / "p", logs=tmp_path / "l", limit=90, stream=None)
        return demo.probe_study(job(benchmark), gpus=gpus, price=demo.resolve_price(0.1), **kw)

    run.asked = asked
    return run


def test_the_first_screen_sets_the_studys_whole_job_here_beside_its_published_one(probed):
    record = probed("bilstm-sentiment")
    assert record["status"] == "measured" and record["batch"] == 32 and record["precision"] == "fp32"
    (v,) = versus(pd.DataFrame(), None, (record,))
    did, full = versus_lines(v)
    # bench's extrapolation by hand: overhead, finish and warm-up as measured, the rest at the steady rate
    words, samples = study_work(job("bilstm-sentiment"))
    seconds = OVERHEAD + FINISH + STEADY["warmup_seconds"] + (samples - STEADY["warmup_samples"]) / 400.0
    assert v.here_hours == pytest.approx(seconds / 3600)
    terms = local_candidate(0.1, "test").terms  # billed under this machine's terms, as bench bills it
    assert v.here_usd == pytest.approx(sum(billed(terms, seconds, 0.1)[1:]))
    assert did.startswith("bilstm-sentiment: a 1.25 min probe of seed 000's own configuration (batch 32, fp32, ")
    assert "ran at 400 tweets/s on this machine (CPU)" in did
    assert full.startswith(f"{words[0].upper()}{words[1:]}: here about {long_duration(seconds / 3600)} (")
    seed000 = [f for f in reference_figures() if f.study == "seed 000"]
    took = f"{min(f.train_hours for f in seed000):.2f}–{max(f.train_hours for f in seed000):.2f} h"
    assert f"the studies' GPUs took {took}" in full
    # the work that still differs is in the same sentence as the comparison, and no ratio is drawn
    assert "extrapolated as gpubench bench does, on work that still differs (" in full
    assert "the study does not print its batch size; synthetic 40-token tweets here" in full
    assert "times as fast" not in did + full


def test_a_precision_this_machine_cannot_run_is_said_and_compared_with_nothing(probed):
    record = probed("resnet50", gpus=0)
    assert probed.asked == []  # nothing was started for it
    assert record["status"] == "not-probed" and "fp16" in record["reason"]
    found = versus(pd.DataFrame(), None, (record,))
    assert found == [NotCompared("resnet50", "seed 004", record["reason"])]
    line, rest = versus_lines(found[0])
    assert line.startswith("resnet50: not compared with seed 004: the study trained in fp16") and rest == ""
    assert versus_plot(found) is None  # nothing to draw


def test_a_probe_that_did_the_studys_work_gets_a_ratio(probed):
    record = probed("resnet50", gpus=1)  # a GPU runs fp16 as mixed precision, at the study's batch 64
    (v,) = versus(pd.DataFrame(), None, (record,))
    assert isinstance(v, Versus) and v.differs == () and {f.batch_size for f in v.refs} == {64}
    did, full = versus_lines(v)
    slow, fast = min(f.value for f in v.refs), max(f.value for f in v.refs)
    assert did.endswith(f", {digits(slow / 400)}–{digits(fast / 400)} times as fast.")
    assert "still differs" not in full and "ran at 400 images/s on this machine (1 GPU)" in did


def test_a_study_probe_takes_the_place_of_the_short_runs_comparison(probed):
    record = probed("bilstm-sentiment")
    m = pd.DataFrame(
        [
            {
                "benchmark": "bilstm-sentiment",
                "offering_id": "local/this-machine",
                "market": "on-demand",
                "gpus_used": 0,
                "per_gpu_batch_size": 32,
                "precision": "fp32",
                "data": "synthetic",
                "value": 250.0,
                "runs": 1,
                "hourly_usd": 0.1,
                "price_source": "x",
                "device": "CPU",
            }
        ]
    )
    assert [v.rate for v in versus(m, None, ())] == [250.0]  # no probe: the short run, its differences named
    (v,) = versus(m, None, (record,))
    assert v.rate == 400.0 and v.probe is not None


def test_the_record_beside_the_table_keeps_studies_not_probed_this_time(probed, tmp_path):
    first = [probed("bilstm-sentiment"), probed("resnet50")]
    demo.write_study_probes(tmp_path, first)
    again = dict(probed("bilstm-sentiment"), probe_seconds=12.0)
    demo.write_study_probes(tmp_path, [again])  # `--only bilstm-sentiment`
    kept = read_study_probes(tmp_path)
    assert [(p["benchmark"], p.get("probe_seconds")) for p in kept] == [("resnet50", None), ("bilstm-sentiment", 12.0)]
    assert read_study_probes(tmp_path / "nowhere") == ()
    (tmp_path / "study-probes.json").write_text("{not json", encoding="utf-8")
    assert read_study_probes(tmp_path) == ()  # a damaged record compares nothing, and the report still renders


def test_an_unbounded_interval_is_recorded_as_json_and_read_back(probed, monkeypatch):
    monkeypatch.setitem(STEADY, "low", 0.0)  # the interval reaches zero: no upper bound on time
    record = probed("bilstm-sentiment")
    json.loads(json.dumps(record, allow_nan=False))
    (v,) = versus(pd.DataFrame(), None, (record,))
    assert "to no upper bound" in versus_lines(v)[1]


@pytest.mark.parametrize("j", study_jobs(), ids=lambda j: j.benchmark)
def test_each_probed_task_file_runs_the_configuration_the_studies_data_names(j):
    from infra.projectfiles import user_or_shipped
    from payload.workloads.spec import load_spec

    spec = load_spec(user_or_shipped(j.task))
    assert int(spec.env["BATCH_SIZE"]) == j.batch
    assert ("--precision mixed" in spec.run) == (j.payload_precision == "mixed")
    assert j.benchmark in spec.run and "synthetic" in (spec.env.get("DATA", "synthetic"))
    if j.study == "seed 000":  # the study's own job: 4 epochs of 90 % of the tweets
        assert spec.work.total_samples() == study_work(j)[1]


def test_the_report_reads_the_record_beside_its_table_and_answers_from_it(probed, tmp_path):
    """write_report (what the demo and `gpubench report` call) finds the study probes beside the table;
    the page and the terminal say the probe's whole job where the short run's rate said other work."""
    import html

    from chart_content import charts_described
    from synthetic_results import local_only_results, result_bytes, result_key

    from analysis.collect.run import collect_results
    from analysis.report.build import write_report
    from payload.storage import open_store

    store = open_store(str(tmp_path / "results"))
    for r in local_only_results():
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(tmp_path / "results")], tmp_path / "table", spot_history="off")
    demo.write_study_probes(tmp_path / "table", [probed("bilstm-sentiment"), probed("resnet50")])
    with charts_described():
        outcome = write_report(tmp_path / "report", table=tmp_path / "table")
    page = html.unescape((tmp_path / "report" / "index.html").read_text(encoding="utf-8"))
    for text in (page, outcome.text()):
        assert "bilstm-sentiment: a 1.25 min probe of seed 000's own configuration (batch 32, fp32" in text
        assert "resnet50: not compared with seed 004: the study trained in fp16" in text
        assert "bilstm-sentiment: this machine (CPU)" not in text  # the short run's comparison gave way


def test_a_failed_probes_reason_reaches_the_page_as_one_printable_line(probed):
    record = dict(
        probed("bilstm-sentiment"), status="failed", row={}, reason="the job failed: \x1b[31mboom\x1b[0m\nTrace"
    )
    (found,) = versus(pd.DataFrame(), None, (record,))
    line, _ = versus_lines(found)
    assert line.startswith("bilstm-sentiment: not compared with seed 000: the probe of seed 000's configuration gave")
    assert "boom" in line and all(ch.isprintable() for ch in line)
