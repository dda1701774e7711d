"""Spot runs priced at what they paid: the time-weighted spot price of their
own zone over their own window (AWS), or the snapshot in force on their date
(GCP). Expected averages are worked out by hand in the comments."""

from __future__ import annotations

import json

import pytest
from prices_fakes import add_spot_history, spot_record, stubbed, t

import infra.catalog
from analysis.price.spot import price_run, spot_price_for_window

NOW = t("2025-09-15T12:00:00")


def history_expected(zone, start, end, itype="p3.2xlarge"):
    return {
        "InstanceTypes": [itype],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": start,
        "EndTime": end,
        "AvailabilityZone": zone,
    }


def test_window_average_over_several_price_changes_matches_the_hand_computation():
    start, end = t("2025-09-10T10:00:00"), t("2025-09-10T14:00:00")
    ec2, stub = stubbed("ec2")
    # Newest first across two pages, as EC2 returns it; 09:12 is the price in force at 10:00.
    add_spot_history(
        stub,
        history_expected("us-east-1b", start, end),
        [
            [
                spot_record("p3.2xlarge", "us-east-1b", "0.750000", t("2025-09-10T13:15:00")),
                spot_record("p3.2xlarge", "us-east-1b", "0.600000", t("2025-09-10T12:00:00")),
            ],
            [
                spot_record("p3.2xlarge", "us-east-1b", "1.200000", t("2025-09-10T10:30:00")),
                spot_record("p3.2xlarge", "us-east-1b", "0.900000", t("2025-09-10T09:12:00")),
            ],
        ],
    )
    with stub:
        got = spot_price_for_window(ec2, "p3.2xlarge", "us-east-1b", start, end, "aws")
        stub.assert_no_pending_responses()
    # 10:00-10:30 at 0.90, 10:30-12:00 at 1.20, 12:00-13:15 at 0.60, 13:15-14:00 at 0.75:
    # (0.5*0.90 + 1.5*1.20 + 1.25*0.60 + 0.75*0.75) / 4 = 3.5625 / 4
    assert got.average_usd == pytest.approx(0.890625)
    assert [p for _, p in got.series] == [0.9, 1.2, 0.6, 0.75]
    assert got.series[0][0] == t("2025-09-10T09:12:00")
    assert "us-east-1b" in got.source and "time-weighted" in got.source
    assert json.loads(json.dumps(got.to_dict()))["series"][1] == ["2025-09-10T10:30:00Z", 1.2]


def aws_spot_result(**overrides):
    """A result.json (the fields pricing reads) of a p3.2xlarge spot run that
    was preempted in us-east-1b and resumed in us-east-1c."""
    result = {
        "run_id": "20250910T095500Z-i-0abc-cifar10",
        "stack": "aws-p3-2x-spot",
        "status": "completed",
        "started_at": "2025-09-10T10:00:00Z",
        "finished_at": "2025-09-10T12:20:30Z",
        "offering": {
            "id": "aws/p3.2xlarge",
            "provider": "aws",
            "kind": "cloud",
            "region": "us-east-1",
            "zone": "us-east-1c",
            "instance_type": "p3.2xlarge",
            "instance_id": "i-0def",
            "market": "spot",
        },
        "price": {
            "hourly_usd": 3.06,
            "spot_hourly_usd": 0.3941,
            "source": "2025-07-01_skypilot-v8-aws",
            "as_of": "2025-07-01",
            "origin": "env",
        },
        "attempts": [
            {
                "attempt": 1,
                "instance_id": "i-0abc",
                "zone": "us-east-1b",
                "start": "2025-09-10T10:00:00Z",
                "end": "2025-09-10T11:00:00Z",
                "status": "interrupted",
            },
            {
                "attempt": 2,
                "instance_id": "i-0def",
                "zone": "us-east-1c",
                "start": "2025-09-10T11:20:00Z",
                "end": "2025-09-10T12:20:00Z",
                "status": "completed",
            },
        ],
        "timeline": [
            {"time": "2025-09-10T09:55:00Z", "event": "instance_launch", "attempt": 1, "source": "host"},
            {"time": "2025-09-10T10:00:00Z", "event": "run_start", "attempt": 1},
            {"time": "2025-09-10T11:20:00Z", "event": "run_start", "attempt": 2},
        ],
    }
    result.update(overrides)
    return result


def test_aws_spot_run_is_priced_per_attempt_in_its_own_zone_and_window():
    ec2, stub = stubbed("ec2")
    # Attempt 1 is billed from its instance launch (09:55), not its payload start.
    add_spot_history(
        stub,
        history_expected("us-east-1b", t("2025-09-10T09:55:00"), t("2025-09-10T11:00:00")),
        [
            [
                spot_record("p3.2xlarge", "us-east-1b", "1.20", t("2025-09-10T10:30:00")),
                spot_record("p3.2xlarge", "us-east-1b", "0.90", t("2025-09-10T09:00:00")),
            ]
        ],
    )
    add_spot_history(
        stub,
        history_expected("us-east-1c", t("2025-09-10T11:20:00"), t("2025-09-10T12:20:00")),
        [[spot_record("p3.2xlarge", "us-east-1c", "0.80", t("2025-09-10T11:00:00"))]],
    )
    regions = []
    with stub:
        priced = price_run(aws_spot_result(), client_factory=lambda r: regions.append(r) or ec2, now=NOW)
        stub.assert_no_pending_responses()
    assert regions == ["us-east-1"]  # one client per region, reused across attempts
    a1, a2 = priced["attempts"]
    # Attempt 1: 35 min at 0.90 + 30 min at 1.20 over 65 min = 67.5 / 65
    assert a1["hourly_usd"] == pytest.approx(67.5 / 65) and a1["seconds"] == 65 * 60
    assert a1["series"] == [["2025-09-10T09:00:00Z", 0.9], ["2025-09-10T10:30:00Z", 1.2]]
    assert a2["hourly_usd"] == pytest.approx(0.80) and a2["zone"] == "us-east-1c"
    # Whole run: (67.5 + 60 * 0.80) / 125 min
    assert priced["hourly_usd"] == pytest.approx(0.924)
    assert priced["method"] == "aws-spot-history" and priced["warnings"] == []
    json.dumps(priced)  # storable as is


def test_aws_spot_without_credentials_falls_back_to_the_recorded_price(no_credentials):
    from infra.aws import CLIENTS

    priced = price_run(aws_spot_result(), client_factory=CLIENTS["ec2"], now=NOW)
    assert priced["method"] == "recorded" and priced["hourly_usd"] == 0.3941
    assert len(priced["warnings"]) == 2 and "no AWS credentials" in priced["warnings"][0]


def test_aws_spot_older_than_the_history_uses_the_catalog_without_calling_ec2():
    ec2, stub = stubbed("ec2")  # no responses queued: any call would fail the test
    result = aws_spot_result(
        price={"hourly_usd": None, "spot_hourly_usd": None, "source": None, "as_of": None, "origin": None}
    )
    with stub:
        priced = price_run(result, client_factory=lambda r: ec2, now=t("2026-03-01T00:00:00"))
    assert priced["method"] == "catalog" and "90 days" in priced["warnings"][0]
    assert priced["hourly_usd"] == 0.3941 and priced["snapshot"] == "2025-07-01_skypilot-v8-aws"


def gcp_spot_result(day: str):
    return {
        "started_at": f"{day}T10:00:00Z",
        "finished_at": f"{day}T11:30:00Z",
        "offering": {
            "id": "gcp/n1-standard-8+1xv100",
            "provider": "gcp",
            "region": "us-central1",
            "zone": "us-central1-a",
            "instance_type": "n1-standard-8",
            "instance_id": "123",
            "market": "spot",
        },
        "price": {"hourly_usd": None, "spot_hourly_usd": 9.99, "source": "stale", "as_of": None, "origin": "env"},
        "attempts": [
            {
                "attempt": 1,
                "instance_id": "123",
                "zone": "us-central1-a",
                "start": f"{day}T10:00:00Z",
                "end": f"{day}T11:30:00Z",
                "status": "completed",
            }
        ],
        "timeline": [],
    }


def test_gcp_spot_run_uses_the_snapshot_in_force_on_its_date(data_dir):
    (data_dir / "prices" / "2025-09-15_gcp-live.toml").write_text(
        'as_of = "2025-09-15"\nsource = "test live"\nregion = "us-central1"\n'
        '[[gcp_machine]]\nname = "n1-standard-8"\nhourly = 0.38\nspot_hourly = 0.08\n'
        '[[gcp_gpu]]\ngpu = "V100"\nhourly = 2.48\nspot_hourly = 0.74\n'
    )
    infra.catalog.load_catalog.cache_clear()
    before = price_run(gcp_spot_result("2025-09-10"), now=NOW)
    after = price_run(gcp_spot_result("2025-09-16"), now=NOW)
    assert before["method"] == after["method"] == "catalog-snapshot"
    assert before["hourly_usd"] == pytest.approx(0.10446 + 1.0885)  # 2025-07-01 SkyPilot snapshot
    assert before["snapshot"] == "2025-07-01_skypilot-v8-gcp"
    assert after["hourly_usd"] == pytest.approx(0.08 + 0.74) and after["snapshot"] == "2025-09-15_gcp-live"
    assert after["attempts"][0]["seconds"] == 5400


def test_on_demand_run_keeps_the_price_recorded_at_launch():
    result = aws_spot_result()
    result["offering"] = {**result["offering"], "market": "on-demand"}
    priced = price_run(result, client_factory=lambda r: pytest.fail("no EC2 call for on-demand"), now=NOW)
    assert priced["method"] == "recorded" and priced["hourly_usd"] == 3.06
    assert [a["hourly_usd"] for a in priced["attempts"]] == [3.06, 3.06]
