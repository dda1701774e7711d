"""`python -m infra preview` offline: JSON fields, text output, cost estimates, and the missing-CLI message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra import preview

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


def test_preview_text_shows_price_deadline_cost_and_warnings():
    proc = _run("preview", "gcp-k80-1x")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
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


def test_preview_all_json_lists_every_stack():
    from infra import stacks as stackfiles

    proc = _run("preview", "--all", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [s["stack"] for s in json.loads(proc.stdout)] == stackfiles.stack_names()


def test_preview_bad_stack_and_bad_config_fail_clearly(tmp_path):
    proc = _run("preview", "aws-nope-1x")
    assert proc.returncode == 2 and "no stack file" in proc.stderr


def test_cost_estimate_from_results_table(catalog):
    pd = pytest.importorskip("pandas")
    from infra import stacks as stackfiles
    from infra.config import parse_config

    cfg = parse_config(
        {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:suite": "mnist-cnn,imdb-bilstm"}, "aws-g4dn-1x"
    )
    table = pd.DataFrame(
        {
            "stack": ["aws-g4dn-1x"] * 3 + ["other"],
            "benchmark": ["mnist-cnn"] * 3 + ["mnist-cnn"],
            "billed_seconds": [1800, 3600, 5400, 99],
        }
    )
    rows = {r["benchmark"]: r for r in preview.estimate_costs(cfg, 2.0, table)}
    assert rows["mnist-cnn"]["usd"] == 2.0 and rows["mnist-cnn"]["source"].startswith("results")
    assert rows["imdb-bilstm"]["usd"] == 12.0 and rows["imdb-bilstm"]["source"].startswith("catalog")


def test_results_table_read_from_report_dir(tmp_path):
    (tmp_path / "results.csv").write_text("stack,benchmark,billed_seconds\naws-g4dn-1x,mnist-cnn,60\n")
    table = preview.load_results_table(tmp_path)
    assert list(table["billed_seconds"]) == [60]
    assert preview.load_results_table(tmp_path / "none") is None


def test_cli_commands_without_pulumi_say_how_to_install(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "infra", "up", "aws-p3-8x"], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 3
    assert "Pulumi CLI is not installed" in proc.stderr and "get.pulumi.com" in proc.stderr
