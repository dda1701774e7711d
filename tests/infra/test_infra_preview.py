"""`python -m infra preview` offline: JSON fields, text output, cost estimates (infra's from plain
figures, analysis's from the results table), and the missing-CLI message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers import require_module

from analysis import planning as estimate
from infra.catalog.estimate import MeasuredRuns
from infra.catalog.estimate import estimate_costs as infra_estimate_costs

REPO = Path(__file__).resolve().parents[2]


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "infra", *args], cwd=REPO, capture_output=True, text=True, env=env)


def test_preview_json_single_stack():
    proc = _run("preview", "aws-p3-8x-spot", "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert {"stack", "offering", "market", "hourly_usd", "deadline_hours", "user_data", "resources", "warnings"} <= set(
        s
    )
    assert (s["stack"], s["offering"], s["market"]) == ("aws-p3-8x-spot", "aws/p3.8xlarge", "spot")
    assert s["hourly_usd"] > 0 and s["deadline_hours"] == 6
    assert s["user_data"].startswith("#cloud-config")
    types = {r["type"] for r in s["resources"]}
    assert {"aws:ec2/instance:Instance", "aws:scheduler/schedule:Schedule"} <= types
    assert all({"type", "name", "inputs"} <= set(r) for r in s["resources"])
    assert any("retired GPU" in w for w in s["warnings"])


@pytest.fixture
def preview_in_process(rendered, monkeypatch, capsys):
    """`preview` in this process over the session's renders of every stack (rendering them again in a
    child costs ~8 CPU-s for --all); the CLI's own wiring is run in children by the other tests."""
    from infra import preview
    from infra.cli import main

    real_render = preview.render
    monkeypatch.setattr(
        preview, "render", lambda name, raw, catalog: rendered.get(name) or real_render(name, raw, catalog)
    )

    def run(*argv: str) -> str:
        assert main(["preview", *argv]) == 0
        return capsys.readouterr().out

    return run


def test_preview_text_shows_price_deadline_cost_and_warnings(preview_in_process):
    out = preview_in_process("gcp-k80-1x")
    for fragment in (
        "== gcp-k80-1x",
        "price      $",
        "deadline   6 h",
        "cost       ",
        "gcp:compute/instance:Instance",
        "warning    legacy image",
        "warning    retired GPU",
        "user-data",
        "#cloud-config",
    ):
        assert fragment in out, fragment


def test_preview_all_json_lists_every_stack(preview_in_process):
    from infra import stacks as stackfiles

    out = preview_in_process("--all", "--json")
    assert [s["stack"] for s in json.loads(out)] == stackfiles.stack_names()


def test_preview_all_takes_no_stack_name():
    proc = _run("preview", "--all", "aws-p3-8x-spot", "--json")
    assert proc.returncode == 2 and "exactly one of STACK or --all" in proc.stderr


def test_preview_bad_stack_and_bad_config_fail_clearly(tmp_path):
    proc = _run("preview", "aws-nope-1x")
    assert proc.returncode == 2 and "no stack file" in proc.stderr


def test_cost_estimate_from_results_table(catalog, tmp_path):
    pd = require_module("pandas")
    from infra import stacks as stackfiles
    from infra.config import parse_config

    cfg = parse_config(
        {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:suite": "mnist-cnn,imdb-bilstm"}, "aws-g4dn-1x"
    )
    require_module("deltalake")
    pd.DataFrame(
        {
            "stack": ["aws-g4dn-1x"] * 3 + ["other"],
            "benchmark": ["mnist-cnn"] * 3 + ["mnist-cnn"],
            "billed_hours": [0.5, 1.0, 1.5, 99 / 3600],
        }
    ).to_parquet(tmp_path / "results.parquet")
    rows = {r["benchmark"]: r for r in infra_estimate_costs(cfg, 2.0, estimate.measured_runs_of(tmp_path))}
    assert rows["mnist-cnn"]["usd"] == 2.0 and rows["mnist-cnn"]["source"].startswith("measured")
    assert rows["imdb-bilstm"]["usd"] == 12.0 and rows["imdb-bilstm"]["source"].startswith("bound")


def test_cli_commands_without_pulumi_say_how_to_install(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "infra", "up", "aws-p3-8x"], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 3
    assert "Pulumi CLI is not installed" in proc.stderr and "get.pulumi.com" in proc.stderr
    assert "`pulumi login`" in proc.stderr and "`python -m infra stacks --check`" in proc.stderr


def test_preview_uses_a_collected_runs_billed_time(tmp_path, catalog):
    """A run collected the real way (store -> collect -> results.parquet):
    two attempts, 120 s boot + 300 s training + 5 s, then 120 + 300 + 60 s,
    billed per second (60 s minimum, both past it): 425 + 480 = 905 s. At the
    preview's price p the estimate is 905 / 3600 x p, and the source says so."""
    require_module("pandas")
    from synthetic_results import make_result, result_bytes, result_key

    from analysis.cli import main
    from infra import stacks as stackfiles
    from infra.config import parse_config
    from payload.storage import open_store

    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    r = make_result("aws/g4dn.xlarge", "mnist-cnn", train_seconds=600, attempts=2, hourly_usd=0.526)
    store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    results = estimate.measured_runs_of(out)
    assert results.where == str(out / "results.parquet")
    cfg = parse_config(
        {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:suite": "mnist-cnn,imdb-bilstm"}, "aws-g4dn-1x"
    )
    rows = {e["benchmark"]: e for e in infra_estimate_costs(cfg, 2.0, results)}
    assert rows["mnist-cnn"]["seconds"] == pytest.approx(905)
    assert rows["mnist-cnn"]["usd"] == pytest.approx(round(905 / 3600 * 2.0, 4))
    assert "1 collected run(s) in" in rows["mnist-cnn"]["source"] and "results.parquet" in rows["mnist-cnn"]["source"]
    assert rows["imdb-bilstm"]["source"].startswith("bound") and rows["imdb-bilstm"]["usd"] == cfg.max_hours * 2.0
    # the file itself may be named; a missing table says where it looked
    assert estimate.measured_runs_of(out / "results.parquet").seconds == results.seconds
    missing = infra_estimate_costs(cfg, 2.0, estimate.measured_runs_of(tmp_path / "none"))
    assert "no results table at" in missing[0]["source"]


def test_plan_estimates_from_measurements(tmp_path, capsys):
    """`gpubench plan` beside its bound: resnet50's one collected run, 120 s
    boot + 1000 s + 60 s = 1180 s billed, x the stack's price."""
    require_module("pandas")
    from synthetic_results import make_result, result_bytes, result_key

    from analysis.cli import main
    from payload.storage import open_store

    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    r = make_result("aws/g4dn.xlarge", "resnet50", train_seconds=1000, hourly_usd=0.526)
    store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["plan", "aws-g4dn-1x", "--table", str(out), "--json"]) == 0
    stack = json.loads(capsys.readouterr().out)["stacks"][0]
    est = {e["benchmark"]: e for e in stack["estimated_cost"]}
    assert est["resnet50"]["seconds"] == pytest.approx(1180)
    assert est["resnet50"]["usd"] == pytest.approx(round(1180 / 3600 * stack["hourly_usd"], 4))
    assert est["resnet50"]["source"].startswith("measured")
    others = [e for b, e in est.items() if b != "resnet50"]
    assert others and all(e["source"].startswith("bound") for e in others)


def _g4dn_config(suite: str):
    from infra import stacks as stackfiles
    from infra.config import parse_config

    return parse_config({**stackfiles.load_config("aws-g4dn-1x"), "gpubench:suite": suite}, "aws-g4dn-1x")


def test_infra_estimates_from_plain_figures_without_a_table():
    """Infra's estimate needs no pandas nor table: the median of the billed
    seconds it is given (1800, 3600, 5400 -> 3600 s) x the price, else the bound."""
    cfg = _g4dn_config("mnist-cnn,imdb-bilstm")
    measured = MeasuredRuns({("aws-g4dn-1x", "mnist-cnn"): [1800.0, 3600.0, 5400.0]}, where="there.csv")
    rows = {r["benchmark"]: r for r in infra_estimate_costs(cfg, 2.0, measured)}
    assert rows["mnist-cnn"]["seconds"] == 3600.0 and rows["mnist-cnn"]["usd"] == 2.0
    assert (
        rows["mnist-cnn"]["source"] == "measured: median billed time of 3 collected run(s) in there.csv x hourly price"
    )
    assert rows["imdb-bilstm"]["usd"] == round(cfg.max_hours * 2.0, 4)
    assert "no completed run of this stack and benchmark in there.csv" in rows["imdb-bilstm"]["source"]
    bounds = infra_estimate_costs(cfg, 2.0)
    assert all(r["source"].startswith("bound") and r["runs"] == 0 for r in bounds)
    assert all("no collected runs given" in r["source"] for r in bounds)


def test_infra_preview_does_not_read_results_tables(tmp_path):
    """Collected runs are analysis's: `python -m infra preview --table` says
    which command estimates from them instead of silently showing the bound."""
    proc = _run("preview", "aws-g4dn-1x", "--table", str(tmp_path))
    assert proc.returncode == 2
    assert "does not read results tables" in proc.stderr
    assert f"gpubench preview aws-g4dn-1x --table {tmp_path}" in proc.stderr


def test_gpubench_preview_estimates_from_collected_runs(tmp_path, capsys):
    """`gpubench preview --results`: analysis reads the table and infra's
    preview shows the measured estimate (120 s boot + 1000 s + 60 s = 1180 s)."""
    require_module("pandas")
    require_module("pulumi")
    from synthetic_results import make_result, result_bytes, result_key

    from analysis.cli import main
    from payload.storage import open_store

    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    r = make_result("aws/g4dn.xlarge", "resnet50", train_seconds=1000, hourly_usd=0.526)
    store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["preview", "aws-g4dn-1x", "--table", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    est = {e["benchmark"]: e for e in s["estimated_cost"]}
    assert est["resnet50"]["seconds"] == pytest.approx(1180)
    assert est["resnet50"]["usd"] == pytest.approx(round(1180 / 3600 * s["hourly_usd"], 4))
    assert est["resnet50"]["source"].startswith("measured") and "results.parquet" in est["resnet50"]["source"]
