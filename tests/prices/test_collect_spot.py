"""collect prices a new AWS spot run from EC2's spot price history of its own
zone and window, stores the series in the table, and costs it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from prices_fakes import add_spot_history, spot_record, stubbed
from synthetic_results import make_result, result_bytes, result_key

from analysis.collect import collect
from analysis.price.spot import price_run

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


def write_run(root, result):
    path = root / result_key(result)
    path.parent.mkdir(parents=True)
    path.write_bytes(result_bytes(result))


def test_collect_prices_aws_spot_runs_over_their_window(tmp_path):
    # one g4dn.xlarge spot attempt: launch 09:00, 120 s boot, 3600 s training, 60 s tail -> 09:00..10:03
    result = make_result(
        "aws/g4dn.xlarge", "resnet50", market="spot", start=START, spot_hourly_usd=0.30, hourly_usd=0.526
    )
    write_run(tmp_path / "bucket", result)
    zone = result["attempts"][0]["zone"]
    launch, end = START, START + timedelta(seconds=120 + 3600 + 60)
    ec2, stub = stubbed("ec2")
    add_spot_history(
        stub,
        {
            "InstanceTypes": ["g4dn.xlarge"],
            "ProductDescriptions": ["Linux/UNIX"],
            "StartTime": launch,
            "EndTime": end,
            "AvailabilityZone": zone,
        },
        [
            [
                spot_record("g4dn.xlarge", zone, "0.400000", START + timedelta(minutes=33)),
                spot_record("g4dn.xlarge", zone, "0.200000", START - timedelta(hours=2)),
            ],
        ],
    )
    calls = []

    def pricer(res):
        calls.append(res["run_id"])
        return price_run(res, client_factory=lambda region: ec2, now=START + timedelta(days=1))

    with stub:
        summary, rows = collect([str(tmp_path / "bucket")], tmp_path / "report", spot_pricer=pricer)
        stub.assert_no_pending_responses()
    assert calls == [result["run_id"]] and summary.valid == 1
    # 33 min at 0.20, then 30 min at 0.40, over 63 min
    expected_hourly = (33 * 0.20 + 30 * 0.40) / 63
    import pandas as pd

    table = pd.read_parquet(tmp_path / "report" / "results.parquet")
    row = table.iloc[0]
    assert row["hourly_usd"] == pytest.approx(expected_hourly)
    assert row["billed_cost_usd"] == pytest.approx(expected_hourly * 63 / 60)
    assert "EC2 spot price history" in row["price_basis"] and zone in row["price_source"]
    assert row["spot_price_method"] == "aws-spot-history"
    windows = json.loads(row["attempts_json"])
    assert [p for _, p in windows[0]["spot_prices"]] == [0.2, 0.4]

    # a second collect fetches nothing and so asks EC2 nothing (the stub has no responses left)
    summary2, _ = collect([str(tmp_path / "bucket")], tmp_path / "report", spot_pricer=pricer)
    assert summary2.cached == 1 and calls == [result["run_id"]]


def test_on_demand_and_gcp_runs_never_reach_the_ec2_pricer(tmp_path):
    for r in (
        make_result("aws/g4dn.xlarge", "resnet50", start=START),
        make_result("gcp/n1-standard-4+1xt4", "resnet50", market="spot", start=START),
    ):
        write_run(tmp_path / "bucket", r)
    calls = []
    summary, rows = collect(
        [str(tmp_path / "bucket")], tmp_path / "report", spot_pricer=lambda res: calls.append(res) or None
    )
    assert summary.valid == 2 and calls == []
