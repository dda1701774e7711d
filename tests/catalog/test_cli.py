"""`python -m analysis offerings` and `cost`: JSON shapes, filters and errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.cli import main

OFFERING_KEYS = {
    "id",
    "provider",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gb",
    "compute_capability",
    "vcpus",
    "memory_gb",
    "hourly_usd",
    "spot_hourly_usd",
    "billing",
    "as_of",
    "source",
    "retired",
}
COST_KEYS = {"offering", "market", "as_of", "hourly_usd", "billed_hours", "cost_usd", "billing"}


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_offerings_json_has_the_documented_keys(capsys):
    rows = run_json(capsys, "offerings", "--stale", "--json")  # every offering: retired and stale ones too
    assert len(rows) > 50
    for row in rows:
        assert OFFERING_KEYS <= row.keys()
    by_id = {r["id"]: r for r in rows}
    assert by_id["gcp/n1-standard-4+1xk80"]["retired"] == "2024-05-01"
    assert by_id["aws/p3.8xlarge"]["compute_capability"] == "7.0"


def test_offerings_filters_and_as_of(capsys):
    rows = run_json(capsys, "offerings", "--provider", "aws", "--gpu", "v100", "--as-of", "2018-07-01", "--json")
    assert {r["id"] for r in rows} == {"aws/p3.2xlarge", "aws/p3.8xlarge", "aws/p3.16xlarge"}
    assert {r["id"]: r["hourly_usd"] for r in rows}["aws/p3.8xlarge"] == 12.24
    assert all(r["as_of"] == "2018-06-01" for r in rows)


def test_offerings_unknown_provider_lists_the_choices(capsys):
    assert main(["offerings", "--provider", "azure"]) == 2
    err = capsys.readouterr().err
    assert "--provider 'azure' is not known" in err and "aws" in err and "gcp" in err


def test_cost_json(capsys):
    out = run_json(capsys, "cost", "aws/p3.8xlarge", "--hours", "2", "--as-of", "2018-07-01", "--json")
    assert COST_KEYS <= out.keys()
    assert out["cost_usd"] == pytest.approx(24.48) and out["billed_hours"] == 2


def test_cost_gcp_json_shows_components(capsys):
    out = run_json(capsys, "cost", "gcp/n1-standard-64+8xv100", "--hours", "1", "--as-of", "2018-07-01", "--json")
    assert out["hourly_usd"] == pytest.approx(22.88)
    assert [c["name"] for c in out["components"]] == ["machine:n1-standard-64", "gpu:V100 x8"]


def test_cost_onprem_days_per_month(capsys):
    out = run_json(capsys, "cost", "onprem/parkopedia-4x1080ti", "--hours", "240", "--json")
    assert out["cost_usd"] == pytest.approx(264.6667, rel=1e-4)  # one month at 10 days, seed 004


@pytest.mark.parametrize(
    "argv, message",
    [
        (["cost", "p3.8xlarge", "--hours", "1"], "Did you mean: aws/p3.8xlarge"),
        (["cost", "aws/p3.8xlarge", "--hours", "-1"], "--hours must be a positive, finite number"),
        (["cost", "aws/p3.8xlarge", "--hours", "0"], "--hours must be a positive, finite number"),
        (["cost", "hetzner/ex51-ssd-gpu", "--hours", "1", "--market", "spot"], "no spot market"),
        (["cost", "aws/p3.8xlarge", "--hours", "1", "--as-of", "2010-01-01"], "first snapshot pricing it is"),
        (["cost", "gcp/n1-standard-4+1xk80", "--hours", "1", "--as-of", "2025-01-01"], "retired on 2024-05-01"),
    ],
)
def test_cost_errors_exit_2_with_a_clear_message(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_retired_offering_without_as_of_warns_and_prices(capsys):
    assert main(["cost", "gcp/n1-standard-4+1xk80", "--hours", "1"]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "retired on 2024-05-01" in captured.err
    assert "cost:" in captured.out


def test_bad_as_of_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["cost", "aws/p3.8xlarge", "--hours", "1", "--as-of", "yesterday"])
    assert exit_.value.code == 2
    assert "use YYYY-MM-DD" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "analysis", "--help"], capture_output=True, text=True, check=True)
    assert "offerings" in proc.stdout and "gcp/<machine-type>+<n>x<gpu>" in proc.stdout


@pytest.mark.parametrize(
    "value, text",
    [(0, "0.00"), (3.3, "3.30"), (1234.567, "1,234.57"), (0.0123, "0.01"), (0.00083, "0.00083"), (0.004, "0.0040")],
)
def test_usd_amount_never_shows_a_real_cost_as_zero(value, text):
    from analysis.output import USD_SIGN, usd_amount

    assert usd_amount(value) == text
    assert USD_SIGN.format(value) == "$" + text


def test_offerings_as_of_a_date_before_a_billing_rule_lists_it_as_unbilled(capsys):
    """Seed 002's date: vast.ai's billing rule starts in 2018; the listing
    still works and says why that offering has no terms then."""
    assert main(["offerings", "--as-of", "2017-11-28", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    vast = next(r for i, r in rows.items() if i.startswith("vastai/"))
    assert vast["billing"].startswith("none on 2017-11-28") and vast["hourly_usd"] is None
    assert rows["gcp/n1-standard-1+1xk80"]["hourly_usd"] == pytest.approx(0.4975)  # seed 002's K80
