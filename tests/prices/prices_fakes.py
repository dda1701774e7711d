"""Responses in the providers' real shapes, for botocore's Stubber and for a
fake Cloud Billing Catalog endpoint (mocked with `responses`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import boto3
from botocore.stub import Stubber

from infra.aws.prices import price_list_filters

UTC = timezone.utc


def client(service: str, region: str = "us-east-1"):
    return boto3.client(service, region_name=region, aws_access_key_id="stub", aws_secret_access_key="stub")


def stubbed(service: str, region: str = "us-east-1"):
    c = client(service, region)
    return c, Stubber(c)


# --- AWS Price List (pricing.get_products) ----------------------------------------


def price_list_product(instance_type: str, usd: str, region: str = "us-east-1", sku: str = "SKU1", **attributes) -> str:
    """One PriceList entry: a JSON *string*, as GetProducts returns it."""
    attrs = {
        "instanceType": instance_type,
        "regionCode": region,
        "location": "US East (N. Virginia)",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "licenseModel": "No License required",
        "operation": "RunInstances",
        "usagetype": f"BoxUsage:{instance_type}",
        "servicecode": "AmazonEC2",
        "marketoption": "OnDemand",
        **attributes,
    }
    product = {
        "product": {"productFamily": "Compute Instance", "attributes": attrs, "sku": sku},
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "beginRange": "0",
                            "appliesTo": [],
                            "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                            "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                            "pricePerUnit": {"USD": usd},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": "2025-09-01T00:00:00Z",
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            },
            "Reserved": {
                f"{sku}.4NA7Y494T4": {
                    "priceDimensions": {
                        f"{sku}.4NA7Y494T4.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "beginRange": "0",
                            "appliesTo": [],
                            "rateCode": f"{sku}.4NA7Y494T4.6YS6EN2CT7",
                            "description": "reserved",
                            "pricePerUnit": {"USD": "0.1"},
                        }
                    },
                    "sku": sku,
                    "effectiveDate": "2025-09-01T00:00:00Z",
                    "offerTermCode": "4NA7Y494T4",
                    "termAttributes": {
                        "LeaseContractLength": "1yr",
                        "OfferingClass": "standard",
                        "PurchaseOption": "No Upfront",
                    },
                }
            },
        },
        "version": "20250901000000",
        "publicationDate": "2025-09-01T00:00:00Z",
    }
    return json.dumps(product)


def add_get_products(stubber: Stubber, instance_type: str, pages: list[list[str]], region: str = "us-east-1") -> None:
    """Queue one paginated get_products exchange: each page's PriceList, with
    NextToken linking them; the request's filters are checked exactly."""
    for i, price_list in enumerate(pages):
        expected = {"ServiceCode": "AmazonEC2", "Filters": price_list_filters(instance_type, region)}
        if i:
            expected["NextToken"] = f"{instance_type}-page-{i + 1}"
        response = {"FormatVersion": "aws_v1", "PriceList": price_list}
        if i + 1 < len(pages):
            response["NextToken"] = f"{instance_type}-page-{i + 2}"
        stubber.add_response("get_products", response, expected)


# --- EC2 spot price history -------------------------------------------------------------


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def spot_record(instance_type: str, zone: str, price: str, when: datetime) -> dict:
    return {
        "AvailabilityZone": zone,
        "InstanceType": instance_type,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": price,
        "Timestamp": when,
    }


def add_spot_history(stubber: Stubber, expected: dict, pages: list[list[dict]]) -> None:
    for i, records in enumerate(pages):
        params = dict(expected)
        if i:
            params["NextToken"] = f"spot-page-{i + 1}"
        response = {"SpotPriceHistory": records}
        if i + 1 < len(pages):
            response["NextToken"] = f"spot-page-{i + 2}"
        stubber.add_response("describe_spot_price_history", response, params)


# --- GCP Cloud Billing Catalog -----------------------------------------------------------

AMERICAS = ["us-central1", "us-east1", "us-east4", "us-west1", "us-west2", "northamerica-northeast1"]


def sku(
    description: str,
    usd: float,
    *,
    usage: str = "OnDemand",
    group: str = "GPU",
    unit: str = "h",
    regions: list[str] | None = None,
    sku_id: str | None = None,
) -> dict:
    """One SKU in the Catalog API's documented shape (units as a string, nanos an int)."""
    units = int(usd)
    nanos = round((usd - units) * 1e9)
    sku_id = sku_id or f"{abs(hash((description, usage, tuple(regions or AMERICAS)))) % 10**12:012X}"[:14]
    unit_desc = {"h": "hour", "GiBy.h": "gibibyte hour"}[unit]
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": "Compute",
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": regions or AMERICAS,
        "pricingInfo": [
            {
                "summary": "",
                "pricingExpression": {
                    "usageUnit": unit,
                    "usageUnitDescription": unit_desc,
                    "baseUnit": "s" if unit == "h" else "By.s",
                    "baseUnitDescription": "second",
                    "baseUnitConversionFactor": 3600,
                    "displayQuantity": 1,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos},
                        }
                    ],
                },
                "aggregationInfo": {
                    "aggregationLevel": "ACCOUNT",
                    "aggregationInterval": "DAILY",
                    "aggregationCount": 1,
                },
                "currencyConversionRate": 1,
                "effectiveTime": "2025-09-15T07:00:00.000Z",
            }
        ],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "MULTI_REGIONAL", "regions": regions or AMERICAS},
    }


# The SKUs the GCP tests price from (us-central1), plus decoys that must not match.
N1 = {"core": 0.031611, "ram": 0.004237, "spot_core": 0.00698, "spot_ram": 0.000936}
GPU_USD = {
    "V100": (2.48, 0.992),
    "T4": (0.35, 0.14),
    "P100": (1.46, 0.584),
    "A100": (2.933908, 0.880172),
    "L4": (0.560040, 0.224016),
}
GPU_DESC = {
    "V100": "Nvidia Tesla V100 GPU",
    "T4": "Nvidia Tesla T4 GPU",
    "P100": "Nvidia Tesla P100 GPU",
    "A100": "Nvidia Tesla A100 GPU",
    "L4": "Nvidia L4 GPU",
}
FAMILY = {
    "N1 Predefined Instance": (0.031611, 0.004237, 0.00698, 0.000936),
    "A2 Instance": (0.031611, 0.004237, 0.009483, 0.001271),
    "G2 Instance": (0.024988, 0.002927, 0.009995, 0.001171),
}


def compute_engine_skus() -> list[dict]:
    skus = []
    for stem, (core, ram, spot_core, spot_ram) in FAMILY.items():
        group = "N1Standard" if stem.startswith("N1") else "CPU"
        skus += [
            sku(f"{stem} Core running in Americas", core, group=group),
            sku(f"{stem} Ram running in Americas", ram, group="RAM" if group == "CPU" else group, unit="GiBy.h"),
            sku(f"Spot Preemptible {stem} Core running in Americas", spot_core, usage="Preemptible", group=group),
            sku(
                f"Spot Preemptible {stem} Ram running in Americas",
                spot_ram,
                usage="Preemptible",
                group="RAM" if group == "CPU" else group,
                unit="GiBy.h",
            ),
        ]
    for model, (od, spot) in GPU_USD.items():
        skus += [
            sku(f"{GPU_DESC[model]} running in Americas", od),
            sku(f"{GPU_DESC[model]} attached to Spot Preemptible VMs running in Americas", spot, usage="Preemptible"),
        ]
    skus += [  # decoys
        sku("Commitment v1: N1 Predefined Instance Core running in Americas for 1 Year", 0.019915, usage="Commit1Yr"),
        sku(
            "N1 Predefined Instance Core running in Netherlands", 0.034773, group="N1Standard", regions=["europe-west4"]
        ),
        sku("Nvidia Tesla A100 80GB GPU running in Americas", 3.92828),
        sku("Reserved Nvidia Tesla V100 GPU in Americas", 0.0),
        sku("N1 Custom Instance Core running in Americas", 0.033174, group="CPU"),
        sku("Nvidia Tesla V100 GPU running in Netherlands", 2.55, regions=["europe-west4"]),
    ]
    return skus


def catalog_pages(skus: list[dict], per_page: int) -> list[dict]:
    pages = [skus[i : i + per_page] for i in range(0, len(skus), per_page)]
    out = []
    for i, page in enumerate(pages):
        body = {"skus": page}
        if i + 1 < len(pages):
            body["nextPageToken"] = f"token-{i + 2}"
        out.append(body)
    return out


def mock_catalog(rsps, skus: list[dict], per_page: int = 7) -> None:
    """Register the Catalog API pages on a `responses` mock; each request must
    carry the previous page's nextPageToken (and none on the first)."""
    from responses import matchers

    url = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
    for i, body in enumerate(catalog_pages(skus, per_page)):
        params = {"currencyCode": "USD", "pageSize": "5000"}
        if i:
            params["pageToken"] = f"token-{i + 1}"
        rsps.get(url, json=body, match=[matchers.query_param_matcher(params)])
