"""AWS Price List and spot history through botocore's Stubber, which checks
every request and response against the service models."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prices_fakes import add_get_products, add_spot_history, price_list_product, spot_record, stubbed, t

from infra.aws import prices as aws
from infra.catalog.price_errors import NoCredentials, PriceFetchError


def test_on_demand_paginates_and_parses_the_price_list_strings():
    pricing, stub = stubbed("pricing")
    # p3.2xlarge spans two pages: a RHEL product on page 1, the plain Linux one on page 2.
    add_get_products(
        stub,
        "p3.2xlarge",
        [
            [
                price_list_product(
                    "p3.2xlarge",
                    "3.3200000000",
                    sku="RHEL",
                    operation="RunInstances:0010",
                    licenseModel="No License required",
                )
            ],
            [price_list_product("p3.2xlarge", "3.0600000000", sku="LINUX")],
        ],
    )
    add_get_products(stub, "g5.xlarge", [[price_list_product("g5.xlarge", "1.0060000000")]])
    with stub:
        got = aws.on_demand_prices(pricing, ["p3.2xlarge", "g5.xlarge"], "us-east-1")
        stub.assert_no_pending_responses()
    assert got.prices == {"p3.2xlarge": 3.06, "g5.xlarge": 1.006}
    assert got.warnings == []


def test_a_type_missing_from_the_price_list_is_a_warning_naming_it():
    pricing, stub = stubbed("pricing")
    add_get_products(stub, "p2.xlarge", [[]])
    add_get_products(stub, "g4dn.xlarge", [[price_list_product("g4dn.xlarge", "0.5260000000")]])
    with stub:
        got = aws.on_demand_prices(pricing, ["p2.xlarge", "g4dn.xlarge"], "us-east-1")
    assert got.prices == {"g4dn.xlarge": 0.526}
    assert len(got.warnings) == 1 and "p2.xlarge" in got.warnings[0] and "left out" in got.warnings[0]


def test_ambiguous_products_are_not_guessed():
    pricing, stub = stubbed("pricing")
    add_get_products(
        stub,
        "g5.xlarge",
        [[price_list_product("g5.xlarge", "1.006", sku="A"), price_list_product("g5.xlarge", "1.2", sku="B")]],
    )
    with stub:
        got = aws.on_demand_prices(pricing, ["g5.xlarge"], "us-east-1")
    assert got.prices == {} and "ambiguous" in got.warnings[0] and "1.006" in got.warnings[0]


def test_zero_rate_placeholders_are_ignored():
    pricing, stub = stubbed("pricing")
    add_get_products(
        stub,
        "p4d.24xlarge",
        [
            [
                price_list_product("p4d.24xlarge", "0.0000000000", sku="Z"),
                price_list_product("p4d.24xlarge", "21.9576420000", sku="P"),
            ]
        ],
    )
    with stub:
        assert aws.on_demand_prices(pricing, ["p4d.24xlarge"], "us-east-1").prices == {"p4d.24xlarge": 21.957642}


def test_api_errors_name_the_call():
    pricing, stub = stubbed("pricing")
    stub.add_client_error(
        "get_products",
        service_error_code="AccessDeniedException",
        service_message="not authorized to perform: pricing:GetProducts",
        http_status_code=400,
    )
    with stub, pytest.raises(PriceFetchError, match="pricing.get_products failed.*pricing:GetProducts"):
        aws.on_demand_prices(pricing, ["g5.xlarge"], "us-east-1")


def test_no_credentials_says_how_to_provide_them(no_credentials):
    from infra.aws import CLIENTS

    with pytest.raises(NoCredentials, match="AWS_ACCESS_KEY_ID.*pricing:GetProducts"):
        aws.on_demand_prices(CLIENTS["pricing"]("us-east-1"), ["g5.xlarge"], "us-east-1")


# --- spot history -------------------------------------------------------------------------

START, END = t("2025-09-10T10:00:00"), t("2025-09-10T14:00:00")


def spot_expected(start, itype="p3.2xlarge", zone="us-east-1b", end=END):
    return {
        "InstanceTypes": [itype],
        "ProductDescriptions": ["Linux/UNIX"],
        "StartTime": start,
        "EndTime": end,
        "AvailabilityZone": zone,
    }


def test_spot_history_paginates_and_sorts_oldest_first():
    ec2, stub = stubbed("ec2")
    add_spot_history(
        stub,
        spot_expected(START),
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
        series = aws.spot_price_history(ec2, "p3.2xlarge", "us-east-1b", START, END)
        stub.assert_no_pending_responses()
    assert series == [
        (t("2025-09-10T09:12:00"), 0.9),
        (t("2025-09-10T10:30:00"), 1.2),
        (t("2025-09-10T12:00:00"), 0.6),
        (t("2025-09-10T13:15:00"), 0.75),
    ]


def test_spot_history_looks_further_back_when_the_start_price_is_missing():
    ec2, stub = stubbed("ec2")
    add_spot_history(
        stub, spot_expected(START), [[spot_record("p3.2xlarge", "us-east-1b", "1.2", t("2025-09-10T10:30:00"))]]
    )
    add_spot_history(
        stub,
        spot_expected(START - timedelta(days=1)),
        [
            [
                spot_record("p3.2xlarge", "us-east-1b", "1.2", t("2025-09-10T10:30:00")),
                spot_record("p3.2xlarge", "us-east-1b", "0.9", t("2025-09-09T22:00:00")),
            ]
        ],
    )
    with stub:
        series = aws.spot_price_history(ec2, "p3.2xlarge", "us-east-1b", START, END)
        stub.assert_no_pending_responses()
    assert series[0] == (t("2025-09-09T22:00:00"), 0.9)


def test_zone_ids_use_the_zone_id_field():
    ec2, stub = stubbed("ec2")
    expected = spot_expected(START)
    del expected["AvailabilityZone"]
    expected["AvailabilityZoneId"] = "use1-az4"
    add_spot_history(stub, expected, [[spot_record("p3.2xlarge", "us-east-1b", "0.9", t("2025-09-10T09:00:00"))]])
    with stub:
        assert aws.spot_price_history(ec2, "p3.2xlarge", "use1-az4", START, END)[0][1] == 0.9


def test_current_spot_prices_take_the_median_of_each_zones_latest_price():
    ec2, stub = stubbed("ec2")
    now = t("2025-09-15T12:00:00")
    add_spot_history(
        stub,
        {
            "InstanceTypes": ["g5.xlarge", "p3.2xlarge"],
            "ProductDescriptions": ["Linux/UNIX"],
            "StartTime": now,
            "EndTime": now,
        },
        [
            [
                spot_record("g5.xlarge", "us-east-1a", "0.45", t("2025-09-15T08:00:00")),
                spot_record("g5.xlarge", "us-east-1a", "0.40", t("2025-09-14T08:00:00")),  # superseded
                spot_record("g5.xlarge", "us-east-1b", "0.42", t("2025-09-13T08:00:00")),
            ],
            [
                spot_record("g5.xlarge", "us-east-1c", "0.50", t("2025-09-15T01:00:00")),
                spot_record("p3.2xlarge", "us-east-1b", "0.93", t("2025-09-12T01:00:00")),
            ],
        ],
    )
    with stub:
        got = aws.current_spot_prices(ec2, ["g5.xlarge", "p3.2xlarge"], now)
    assert got["g5.xlarge"] == (0.45, {"us-east-1a": 0.45, "us-east-1b": 0.42, "us-east-1c": 0.5})
    assert got["p3.2xlarge"][0] == 0.93
