"""GCP Cloud Billing Catalog: paging, SKU matching and machine-type
composition, against a fake endpoint serving the documented SKU shape."""

from __future__ import annotations

import pytest
import requests
import responses
from prices_fakes import FAMILY, GPU_USD, compute_engine_skus, mock_catalog, sku

from infra.catalog.price_errors import NoCredentials, PriceFetchError
from infra.gcp import prices as gcp

URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"


@responses.activate
def test_list_skus_follows_next_page_token():
    skus = compute_engine_skus()
    mock_catalog(responses, skus, per_page=7)
    got = gcp.list_skus(requests.Session())
    assert [s["skuId"] for s in got] == [s["skuId"] for s in skus]
    assert len(responses.calls) == -(-len(skus) // 7) > 3  # every page fetched once, in order


@responses.activate
def test_api_key_goes_in_the_key_parameter(monkeypatch):
    from responses import matchers

    monkeypatch.setenv("GOOGLE_API_KEY", "k-123")
    responses.get(
        URL,
        json={"skus": [sku("Nvidia L4 GPU running in Americas", 0.56004)]},
        match=[matchers.query_param_matcher({"key": "k-123", "currencyCode": "USD", "pageSize": "5000"})],
    )
    assert len(gcp.list_skus(gcp.default_session())) == 1


@responses.activate
def test_http_errors_are_reported_with_the_status():
    responses.get(URL, status=403, json={"error": {"message": "Cloud Billing API has not been used in project"}})
    with pytest.raises(NoCredentials, match="HTTP 403.*Cloud Billing API"):
        gcp.list_skus(requests.Session())
    responses.replace(responses.GET, URL, status=500, body="backend error")
    with pytest.raises(PriceFetchError, match="HTTP 500"):
        gcp.list_skus(requests.Session())


def test_no_google_credentials(no_credentials):
    with pytest.raises(NoCredentials, match="gcloud auth application-default login"):
        gcp.default_session()


def test_unit_price_adds_units_and_nanos():
    assert gcp.unit_price(sku("Nvidia Tesla V100 GPU running in Americas", 2.48)) == (pytest.approx(2.48), "h")
    assert gcp.unit_price(sku("x", 11.06125))[0] == pytest.approx(11.06125)


def test_n1_machine_is_vcpus_times_core_plus_gb_times_ram_on_both_markets():
    out = gcp.GcpPrices("us-central1")
    gcp.machine_prices(compute_engine_skus(), [("n1-standard-8", 8, 30.0)], "us-central1", out)
    core, ram, spot_core, spot_ram = FAMILY["N1 Predefined Instance"]
    row = out.machines["n1-standard-8"]
    assert row["hourly"] == pytest.approx(8 * core + 30 * ram) == pytest.approx(0.379998)
    assert row["spot_hourly"] == pytest.approx(8 * spot_core + 30 * spot_ram)
    assert "8 vCPU x $0.031611 + 30 GB x $0.004237" in row["note"]
    assert out.warnings == []  # the commitment, custom, and Netherlands decoys did not match


def test_gpus_match_exact_models_per_market_and_region():
    out = gcp.GcpPrices("us-central1")
    gcp.gpu_prices(compute_engine_skus(), ["A100", "V100", "L4"], "us-central1", out)
    assert out.gpus["A100"]["hourly"] == GPU_USD["A100"][0]  # not the A100 80GB SKU
    assert out.gpus["V100"] == {**out.gpus["V100"], "hourly": 2.48, "spot_hourly": 0.992}
    assert out.gpus["L4"]["spot_hourly"] == GPU_USD["L4"][1]
    eu = gcp.GcpPrices("europe-west4")
    gcp.gpu_prices(compute_engine_skus(), ["V100"], "europe-west4", eu)
    assert eu.gpus["V100"] == {"hourly": 2.55, "note": eu.gpus["V100"]["note"]}  # no spot SKU there
    assert any("V100 spot in europe-west4" in w for w in eu.warnings)


def test_missing_family_or_gpu_is_a_warning_naming_it():
    out = gcp.GcpPrices("us-central1")
    skus = compute_engine_skus()
    gcp.machine_prices(skus, [("a3-highgpu-8g", 208, 1872.0), ("g2-standard-4", 4, 16.0)], "us-central1", out)
    gcp.gpu_prices(skus, ["H100", "T4"], "us-central1", out)
    assert set(out.machines) == {"g2-standard-4"} and set(out.gpus) == {"T4"}
    text = "\n".join(out.warnings)
    assert "a3-highgpu-8g on-demand" in text and "GPU H100 on-demand" in text


def test_a_sku_in_an_unexpected_unit_is_not_used():
    skus = [
        sku("N1 Predefined Instance Core running in Americas", 0.031611, group="N1Standard"),
        sku("N1 Predefined Instance Ram running in Americas", 0.004237, group="N1Standard", unit="h"),
    ]
    out = gcp.GcpPrices("us-central1")
    gcp.machine_prices(skus, [("n1-standard-4", 4, 15.0)], "us-central1", out)
    assert out.machines == {}
    assert any("priced per 'h', expected 'GiBy.h'" in w for w in out.warnings)
