"""The sweeper stack's monthly bill: one scheduler job firing the function, by hand."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from analysis.price.monthly import sweeper_bill


def test_aws_sweeper_hourly_by_hand():
    bill = sweeper_bill("aws", "rate(1 hour)", seconds=10, memory_gb=0.125)
    assert bill.runs_per_month == 730  # 730 h month, once an hour
    lines = {line.item: line.usd for line in bill.lines}
    assert lines["scheduler"] == pytest.approx(730 * 1.00 / 1e6, abs=1e-15)
    # 730 x 10 s x 0.125 GB = 912.5 GB-s at $0.0000166667, plus 730 requests at $0.20/M
    assert lines["function"] == pytest.approx(912.5 * 0.0000166667 + 730 * 0.20 / 1e6, abs=1e-15)
    assert bill.total_usd == pytest.approx(0.01608436375, abs=1e-14)
    assert bill.total_after_free_tier_usd == 0  # far inside 14 M invocations, 400,000 GB-s, 1 M requests


def test_gcp_sweeper_hourly_by_hand():
    bill = sweeper_bill("gcp", "0 * * * *", seconds=10, memory_gb=0.25, vcpus=0.167)
    lines = {line.item: line.usd for line in bill.lines}
    assert lines["scheduler"] == pytest.approx(0.10)  # per job-month, not per call
    assert lines["function"] == pytest.approx(1825 * 0.0000025 + 1219.1 * 0.000024 + 730 * 0.40 / 1e6, abs=1e-15)
    assert bill.total_usd == pytest.approx(0.1341129, abs=1e-12)
    assert bill.total_after_free_tier_usd == pytest.approx(0, abs=1e-15)  # 3 free jobs, free Cloud Run tier


def test_cli(capsys):
    assert (
        main(
            [
                "cost",
                "--sweeper",
                "aws",
                "--every",
                "rate(1 hour)",
                "--function-seconds",
                "10",
                "--function-memory-gb",
                "0.125",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["provider"] == "aws" and [line["item"] for line in doc["lines"]] == ["scheduler", "function"]
    assert main(["cost", "--sweeper", "aws", "--hours", "2"]) == 2
    assert "--sweeper CLOUD takes --every" in capsys.readouterr().err
    assert main(["cost", "--sweeper", "azure", "--every", "rate(1 hour)"]) == 2
    assert "--sweeper 'azure' is not known" in capsys.readouterr().err  # refused before any pricing
