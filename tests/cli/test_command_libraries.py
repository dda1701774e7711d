"""The library calls under `offers`, `plan`, `check` and `python -m payload run`, called directly
with typed arguments (the commands only print what these return)."""

from __future__ import annotations

from datetime import date

import pytest

from analysis.offerings import offering_row, search_offers
from analysis.planning import plan_stack, plan_stacks
from analysis.readiness import bucket_check, extras_checks, readiness_checks
from infra.catalog import load_catalog


def test_search_offers_filters_and_orders_catalog_rows():
    catalog = load_catalog()
    found = search_offers(catalog, gpu="T4:1", sort="price").rows
    assert found and all(r["gpu"] == "T4" and r["gpu_count"] == 1 for r in found)
    priced = [r["hourly_usd"] for r in found if r["hourly_usd"] is not None]
    assert priced == sorted(priced)
    spot = search_offers(catalog, gpu="V100", spot=True, max_price=3).rows
    assert spot and all("spot" in r["markets"] and r["spot_hourly_usd"] <= 3 for r in spot)
    one = catalog.get(found[0]["id"])
    assert offering_row(catalog, one, None) == found[0]


def test_search_offers_hides_retired_offerings_on_the_day_and_refuses_bad_filters():
    catalog = load_catalog()
    day = date(2018, 2, 8)
    retired = [o.id for o in catalog.offerings() if o.is_retired_on(date.today()) and not o.is_retired_on(day)]
    today_ids = {r["id"] for r in search_offers(catalog).rows}
    then_ids = {r["id"] for r in search_offers(catalog, as_of=day).rows}
    assert retired and not set(retired) & today_ids and set(retired) <= then_ids
    with pytest.raises(ValueError, match="MODEL:COUNT"):
        search_offers(catalog, gpu="T4:x")
    with pytest.raises(ValueError, match="--max-price -1"):
        search_offers(catalog, max_price=-1)


def test_plan_stacks_bounds_each_stack_by_its_deadline(tmp_path):
    outcome = plan_stacks(["aws-g4dn-1x", "gcp-t4-1x"], table=str(tmp_path))  # no table: bounds only
    assert [p["stack"] for p in outcome.plans] == ["aws-g4dn-1x", "gcp-t4-1x"]
    for p in outcome.plans:
        assert p["bound_usd"] == pytest.approx(p["hourly_usd"] * p["max_hours"], rel=1e-9)
        assert p["user_data"].startswith("#cloud-config")
    assert outcome.total["bound_usd"] == pytest.approx(sum(p["bound_usd"] for p in outcome.plans), abs=1e-6)
    assert outcome.unpriced == [] and outcome.total["stacks"] == 2
    assert outcome.price_dates == [p["price_as_of"] for p in outcome.plans]
    results = plan_stack("aws-results", load_catalog())
    assert results["kind"] == "results" and results["bound_usd"] == 0.0


def test_readiness_checks_a_bucket_and_names_what_is_missing(tmp_path, monkeypatch):
    import analysis.readiness as readiness

    monkeypatch.setattr(readiness.shutil, "which", lambda name: None)
    checks = {c["check"]: c for c in readiness_checks([tmp_path.as_uri()])}
    assert checks["pulumi CLI"]["ok"] is False and "get.pulumi.com" in checks["pulumi CLI"]["detail"]
    assert checks[f"bucket {tmp_path.as_uri()}"] == {
        "check": f"bucket {tmp_path.as_uri()}",
        "ok": True,
        "detail": "lists runs/",
    }
    assert {c["check"] for c in extras_checks()} == {f"extra [{e}]" for e in readiness.EXTRAS}
    bad = bucket_check("nope://bucket")
    assert bad["ok"] is False and bad["detail"].startswith("does not answer")


def test_payload_preflight_names_the_bad_setting(tmp_path):
    from payload.benchmarks import ParamError
    from payload.cli import check_run
    from payload.config import resolve

    def cfg(**kw):
        return resolve({"benchmark": "mnist-mlp", "results": str(tmp_path), "stack": "s", **kw}, {})

    check_run(cfg(param="hidden=8"))
    with pytest.raises(ParamError, match="'nonsense' is not a parameter of mnist-mlp"):
        check_run(cfg(param="nonsense=1"))
    with pytest.raises(ParamError, match="hidden='big'"):
        check_run(cfg(param="hidden=big"))
