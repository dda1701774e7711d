"""`make demo`'s driver end to end: real payload runs as local/this-machine
into results/, collected and reported beside the studies' published figures;
a second run adds runs instead of failing; a wrong price setting is a clear error."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest
from demo_helpers import run_demo


def _results(root):
    return sorted((root / "results" / "runs").glob("*/*/result.json"))


def test_demo_runs_collects_and_reports_with_the_assumed_price(demo_first):
    out = demo_first.stdout
    # progress as it goes, the report's path at the end
    assert "[1/4] mnist-mlp" in out and "[2/4] bilstm-sentiment" in out
    # then each study's own configuration, probed (seed 000) or said to be beyond this CPU (seed 004's fp16)
    assert "[3/4] bilstm-sentiment: seed 000's own configuration (batch 32, fp32), probed for at most" in out
    assert "[4/4] resnet50: seed 004's own configuration (batch 64, fp16)" in out
    assert "not probed: the study trained in fp16" in out
    assert "[collect]" in out and "[report]" in out
    last = out.strip().splitlines()
    assert any(line.startswith("Open the report: ") for line in last[-3:]), last[-3:]
    path = next(line for line in last if line.startswith("Open the report: ")).split(": ", 1)[1]
    assert path == str((demo_first.report / "index.html").resolve())

    results = _results(demo_first.root)
    assert len(results) == 2
    for p in results:
        r = json.loads(p.read_text())
        assert p.parts[-3] == "local-this-machine"  # runs/<catalog stack name>/<run-id>/
        assert r["status"] == "completed" and r["offering"]["id"] == "local/this-machine"
        assert r["price"]["hourly_usd"] == pytest.approx(0.10)
        assert r["price"]["source"].startswith("assumed: gpubench demo default")
        assert r["benchmark"]["data"] == "synthetic"

    page = (demo_first.report / "index.html").read_text(encoding="utf-8")
    assert "Assumed price." in page and "not a quote" in page
    assert "Reference: published measurements" in page
    # this machine beside the studies' K80 / P100 / V100 figures, with source and date
    for text in (
        "AWS p2.xlarge (1 x Tesla K80)",
        "GCE n1-standard-4 + Tesla P100",
        "AWS p3.2xlarge (1 x Tesla V100)",
        "rare-technologies.com/machine-learning-benchmarks-hardware-providers-gpu-part-2/",
        "2018-02-08",
        "derived: 4 epochs x 1,420,764 training tweets",
        "Extrapolated, not measured",
    ):
        assert text in page, text
    assert re.search(r"published &divide; local/this-machine", page)


def test_the_first_screen_compares_a_probe_of_the_studys_own_job(demo_first):
    """The probe ran bench's way (the payload in probe mode on the study's task file, its result kept apart
    from the demo's runs) and its whole-job estimate, recorded beside the table, is what the answer says."""
    (record,) = [
        p
        for p in json.loads((demo_first.root / "table" / "study-probes.json").read_text())["probes"]
        if p["benchmark"] == "bilstm-sentiment"
    ]
    assert record["status"] in ("measured", "not-steady"), record
    assert record["task"] == "examples/studies/seed000-bilstm-sentiment.yaml" and record["batch"] == 32
    row = record["row"]
    assert row["basis"]["est_hours"] == "extrapolated" and row["est_hours"] > 0
    (probe_result,) = (demo_first.report / "demo-probes" / "runs").glob("local-*/*/result.json")
    assert json.loads(probe_result.read_text())["probe"]["steady"]["samples_per_second"] > 0
    from analysis.report.answer import long_duration

    page = html.unescape((demo_first.report / "index.html").read_text(encoding="utf-8"))
    assert "probe of seed 000's own configuration (batch 32, fp32, synthetic data)" in page
    assert f"Seed 000's full training (5,683,056 tweets): here about {long_duration(row['est_hours'])} (" in page
    assert "extrapolated as gpubench bench does, on work that still differs (" in page
    assert "resnet50: not compared with seed 004: the study trained in fp16" in page


def test_second_demo_adds_runs_and_reports_them_all(demo_first, tmp_path):
    root = tmp_path / "clone"  # a copy: the browser test reads the shared report meanwhile
    shutil.copytree(demo_first.root, root)
    before = _results(root)
    again = run_demo(root, "--only", "mnist-mlp", "--hourly-usd", "0.25")
    assert again.returncode == 0, again.stdout[-4000:]
    after = _results(root)
    assert set(before) < set(after) and len(after) == len(before) + 1
    assert "collected 3 valid runs" in again.stdout
    import pandas as pd

    table = pd.read_parquet(root / "table" / "results.parquet")
    assert len(table) == 3
    assert sorted(table["hourly_usd"].round(2)) == [0.10, 0.10, 0.25]
    summary = pd.read_csv(root / "report" / "summary.csv")
    mlp = summary[summary["benchmark"] == "mnist-mlp"].sort_values("hourly_usd")
    # same configuration at two prices: two rows, each at the price it paid, never one at 0.175
    assert mlp["workload"].nunique() == 1
    assert mlp["hourly_usd"].round(2).tolist() == [0.10, 0.25] and mlp["repeats"].tolist() == [1, 1]


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--only", "vgg16"), "not in the demo suite"),
        (("--hourly-usd", "-1"), "must be a number >= 0"),
    ],
)
def test_demo_setting_errors_are_clear(tmp_path, extra, message):
    run = run_demo(tmp_path, *extra)
    assert run.returncode == 2 and message in run.stdout, run.stdout
    assert not (tmp_path / "results").exists()


def test_price_comes_from_flag_then_env_then_default():
    from analysis.price.local import DEFAULT_HOURLY_USD, CostError, resolve_price

    assert resolve_price(0.3, {"GPUBENCH_LOCAL_HOURLY_USD": "0.5"}).hourly_usd == 0.3
    env = resolve_price(None, {"GPUBENCH_LOCAL_HOURLY_USD": "0.5"})
    assert env.hourly_usd == 0.5 and "GPUBENCH_LOCAL_HOURLY_USD=0.5" in env.source
    default = resolve_price(None, {})
    assert default.hourly_usd == DEFAULT_HOURLY_USD and "assumed" in default.source
    with pytest.raises(CostError, match="GPUBENCH_LOCAL_HOURLY_USD='cheap' is not a number"):
        resolve_price(None, {"GPUBENCH_LOCAL_HOURLY_USD": "cheap"})
