"""`python -m analysis prices refresh` end to end against stubbed APIs, into a
copy of the catalog data: the snapshot it writes loads in the catalog, and
`cost` and `offerings` price with it."""

from __future__ import annotations

import json
import tomllib

import pytest
import responses
from catalog_days import keep_snapshots_until
from prices_fakes import (
    GPU_USD,
    add_get_products,
    add_spot_history,
    compute_engine_skus,
    mock_catalog,
    price_list_product,
    spot_record,
    stubbed,
    t,
)

import infra.catalog
from analysis.cli import build_parser, main
from analysis.price.refresh import Clients

NOW = t("2025-09-15T12:00:00")
SHIPPED = infra.catalog.DATA_DIR
# Today's AWS prices in the fake Price List: p3.8xlarge up 10 %, p5 unchanged, P2 gone.
AWS_USD = {
    "g3.4xlarge": "1.14",
    "g3.8xlarge": "2.28",
    "g3.16xlarge": "4.56",
    "p3.2xlarge": "3.06",
    "p3.8xlarge": "13.464",
    "p3.16xlarge": "24.48",
    "g4dn.xlarge": "0.526",
    "g4dn.2xlarge": "0.752",
    "g4dn.12xlarge": "3.912",
    "g5.xlarge": "1.006",
    "g5.2xlarge": "1.212",
    "g5.12xlarge": "5.672",
    "g5.48xlarge": "16.288",
    "g6.xlarge": "0.8450",
    "g6.12xlarge": "4.6016",
    "g6.48xlarge": "13.3504",
    "p4d.24xlarge": "21.957642",
    "p5.48xlarge": "55.04",
}


@pytest.fixture
def data_dir(data_dir):
    """The catalog data as it was on NOW, the day these refreshes play on."""
    keep_snapshots_until(data_dir, NOW.date())
    return data_dir


def aws_clients():
    """Stubbed pricing + EC2 clients answering for every AWS offering in the catalog."""
    pricing, p_stub = stubbed("pricing")
    for o in infra.catalog.load_catalog().offerings(provider="aws"):
        itype = o.instance_type
        add_get_products(p_stub, itype, [[price_list_product(itype, AWS_USD[itype])]] if itype in AWS_USD else [[]])
    ec2, e_stub = stubbed("ec2")
    priced = [
        o.instance_type for o in infra.catalog.load_catalog().offerings(provider="aws") if o.instance_type in AWS_USD
    ]
    add_spot_history(
        e_stub,
        {"InstanceTypes": priced, "ProductDescriptions": ["Linux/UNIX"], "StartTime": NOW, "EndTime": NOW},
        [
            [
                spot_record("p3.8xlarge", "us-east-1a", "1.40", t("2025-09-15T02:00:00")),
                spot_record("p3.8xlarge", "us-east-1b", "1.50", t("2025-09-14T02:00:00")),
            ],
            [
                spot_record("p3.8xlarge", "us-east-1c", "1.62", t("2025-09-13T02:00:00")),
                spot_record("g5.xlarge", "us-east-1a", "0.44", t("2025-09-15T03:00:00")),
            ],
        ],
    )
    return Clients(pricing=lambda region: pricing, ec2=lambda region: ec2), (p_stub, e_stub)


def refresh(capsys, *argv, clients=None):
    """`gpubench prices refresh` with stand-in clients, through the entry point's error boundary."""
    from payload.entrypoint import guarded

    args = build_parser().parse_args(["prices", "refresh", *argv])
    code = guarded(lambda: args.func(args, clients=clients, now=NOW), prog="gpubench prices")
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def shipped_listing():
    return sorted((p.name, p.stat().st_mtime_ns) for p in (SHIPPED / "prices").iterdir())


def test_aws_refresh_writes_a_dated_snapshot_that_cost_and_offerings_use(data_dir, capsys):
    before = shipped_listing()
    clients, stubs = aws_clients()
    with stubs[0], stubs[1]:
        code, out, err = refresh(capsys, "--provider", "aws", clients=clients)
        for s in stubs:
            s.assert_no_pending_responses()
    assert code == 0, err
    path = data_dir / "prices" / "2025-09-15_aws-live.toml"
    raw = tomllib.loads(path.read_text())
    assert str(raw["as_of"]) == "2025-09-15" and raw["region"] == "us-east-1"
    assert "AWS Price List API" in raw["source"] and "fetched 2025-09-15T12:00:00Z" in raw["source"]
    # The diff: old -> new with the percentage and the snapshot it replaces.
    line = next(ln for ln in out.splitlines() if ln.startswith("aws/p3.8xlarge") and "on-demand" in ln)
    assert "$12.24" in line and "$13.464" in line and "+10.0%" in line and "2025-07-01_skypilot-v8-aws" in line
    assert "aws/p5.48xlarge  on-demand" not in out  # unchanged rows are counted, not listed
    assert "changed" in out and "unchanged" in out
    # A type the Price List no longer has: a warning naming it, the others written.
    for itype in ("p2.xlarge", "p2.8xlarge", "p2.16xlarge"):
        assert f"warning: aws {itype} in us-east-1: no on-demand price" in err
    assert len(raw["price"]) == len(AWS_USD)
    # The catalog, `cost` and `offerings --live` now price from it.
    quote = infra.catalog.load_catalog().price("aws/g5.xlarge", market="spot")
    assert (quote.hourly_usd, quote.snapshot) == (0.44, "2025-09-15_aws-live")
    cost = run_json(capsys, "cost", "aws/p3.8xlarge", "--hours", "2", "--json")
    assert cost["hourly_usd"] == 13.464 and cost["cost_usd"] == pytest.approx(26.928)
    assert cost["snapshot"] == "2025-09-15_aws-live" and cost["as_of"] == "2025-09-15"
    # The test's snapshot is dated 2025-09-15: older than the default --max-price-age of 365 days today.
    live_args = ("offerings", "--live", "--provider", "aws", "--max-price-age", "0", "--json")
    live = {r["id"]: r for r in run_json(capsys, *live_args)}
    assert live["aws/p3.8xlarge"]["spot_hourly_usd"] == 1.5  # median of 1.40, 1.50, 1.62
    assert live["aws/p3.8xlarge"]["snapshot"] == live["aws/p3.8xlarge"]["spot_snapshot"] == "2025-09-15_aws-live"
    assert live["aws/g4dn.xlarge"]["spot_hourly_usd"] is None  # no spot price in the refreshed snapshot
    assert "aws/p2.xlarge" not in live
    assert main(["offerings", "--live", "--stale"]) == 0
    assert "2025-09-15_aws-live" in capsys.readouterr().out
    # Old dates still price from the studies' snapshots.
    assert (
        run_json(capsys, "cost", "aws/p3.8xlarge", "--hours", "1", "--as-of", "2018-07-01", "--json")["hourly_usd"]
        == 12.24
    )
    assert shipped_listing() == before


@responses.activate
def test_gcp_refresh_composes_machine_plus_gpus(data_dir, capsys):
    mock_catalog(responses, compute_engine_skus(), per_page=9)
    import requests

    clients = Clients(gcp_session=requests.Session)
    code, out, err = refresh(capsys, "--provider", "gcp", "--json", clients=clients)
    assert code == 0, err
    report = json.loads(out)
    (res,) = report["results"]
    assert res["snapshot"] == "2025-09-15_gcp-live" and res["written"]
    assert any("a3-highgpu-8g" in w for w in res["warnings"]) and any("GPU H100" in w for w in res["warnings"])
    raw = tomllib.loads((data_dir / "prices" / "2025-09-15_gcp-live.toml").read_text())
    assert {r["name"] for r in raw["gcp_machine"]} >= {
        "n1-standard-1",
        "n1-standard-64",
        "a2-highgpu-8g",
        "g2-standard-96",
    }
    assert {r["gpu"] for r in raw["gcp_gpu"]} == set(GPU_USD)
    cost = run_json(capsys, "cost", "gcp/n1-standard-8+1xv100", "--hours", "1", "--market", "spot", "--json")
    assert cost["hourly_usd"] == pytest.approx(8 * 0.00698 + 30 * 0.000936 + 0.992)
    assert {c["name"] for c in cost["components"]} == {"machine:n1-standard-8", "gpu:V100"}
    assert {c["source"] for c in cost["components"]} == {cost["price_source"]} != ""
    change = {(c["offering"], c["market"]): c for c in res["changes"]}[("gcp/n1-standard-64+8xv100", "on-demand")]
    assert change["old_usd"] == pytest.approx(3.03998 + 8 * 2.48)
    assert change["new_usd"] == pytest.approx(64 * 0.031611 + 240 * 0.004237 + 8 * 2.48)
    assert change["old_snapshot"] == "2025-07-01_skypilot-v8-gcp" and change["status"] == "changed"


def test_no_credentials_exits_3_keeps_the_shipped_snapshots_and_says_how(data_dir, capsys, no_credentials):
    before = sorted(p.name for p in (data_dir / "prices").iterdir())
    code, out, err = refresh(capsys)
    assert code == 3
    assert "no AWS credentials found" in err and "aws configure" in err
    assert "no Google credentials found" in err and "gcloud auth application-default login" in err
    assert err.count("The shipped snapshots are kept.") == 2
    assert sorted(p.name for p in (data_dir / "prices").iterdir()) == before


def test_dry_run_validates_and_diffs_but_writes_nothing(data_dir, capsys):
    before = sorted(p.name for p in (data_dir / "prices").iterdir())
    clients, stubs = aws_clients()
    with stubs[0], stubs[1]:
        code, out, _ = refresh(capsys, "--provider", "aws", "--dry-run", clients=clients)
    assert code == 0 and "would write (dry run)" in out and "+10.0%" in out
    assert sorted(p.name for p in (data_dir / "prices").iterdir()) == before


def test_out_dir_snapshot_is_used_through_gpubench_prices_dir(data_dir, capsys, tmp_path, monkeypatch):
    out_dir = tmp_path / "my-prices"
    clients, stubs = aws_clients()
    with stubs[0], stubs[1]:
        code, _, _ = refresh(capsys, "--provider", "aws", "--out", str(out_dir), clients=clients)
    assert code == 0 and (out_dir / "2025-09-15_aws-live.toml").exists()
    assert not (data_dir / "prices" / "2025-09-15_aws-live.toml").exists()
    assert infra.catalog.load_catalog().price("aws/g6.xlarge").hourly_usd == 0.8048  # not loaded yet
    monkeypatch.setenv("GPUBENCH_PRICES_DIR", str(out_dir))
    assert infra.catalog.load_catalog().price("aws/g6.xlarge").hourly_usd == 0.845
    listed = {r["snapshot"]: r for r in run_json(capsys, "prices", "list", "--json")}
    assert listed["2025-09-15_aws-live"]["live"] and not listed["2025-07-01_skypilot-v8-aws"]["live"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--region", "eu-west-1"], "not the catalog's aws region (us-east-1)"),
        (["--provider", "gcp", "--region", "us-east-1"], "is not a gcp (e.g. us-central1) region name"),
        (["--region", "mars-1"], "'mars-1' is not a aws (e.g. us-east-1) or gcp"),
    ],
)
def test_bad_regions_exit_2(data_dir, capsys, argv, message):
    code, _, err = refresh(capsys, *argv)
    assert code == 2 and message in err


def test_offerings_live_without_a_refreshed_snapshot_says_how_to_make_one(data_dir, capsys):
    assert main(["offers", "--live"]) == 3  # a missing piece: a refreshed snapshot
    assert "gpubench prices refresh" in capsys.readouterr().err


def test_a_snapshot_that_does_not_load_is_not_written(data_dir, tmp_path):
    from analysis.price import refresh
    from infra.catalog.price_errors import SnapshotInvalid

    cat = infra.catalog.load_catalog()
    bad = refresh.render_snapshot(
        as_of=NOW.date(),
        source="test",
        region="us-east-1",
        fetched_at=NOW,
        header=[],
        tables={"price": {"aws/p3.8xlarge": {"hourly": -1.0}}},
    )
    with pytest.raises(SnapshotInvalid, match="negative price"):
        refresh.write_snapshot(bad, "2025-09-15_aws-live", tmp_path, cat, ["aws/p3.8xlarge"])
    stray = refresh.render_snapshot(
        as_of=NOW.date(),
        source="test",
        region="us-east-1",
        fetched_at=NOW,
        header=[],
        tables={"price": {"aws/p9.huge": {"hourly": 1.0}}},
    )
    with pytest.raises(SnapshotInvalid, match="aws/p9.huge"):
        refresh.write_snapshot(stray, "2025-09-15_aws-live", tmp_path, cat, ["aws/p3.8xlarge"])
    assert list(tmp_path.glob("*.toml")) == []


def test_an_api_error_exits_4_and_writes_nothing(data_dir, capsys):
    pricing, stub = stubbed("pricing")
    stub.add_client_error(
        "get_products",
        service_error_code="AccessDeniedException",
        service_message="User is not authorized to perform: pricing:GetProducts",
    )
    before = sorted(p.name for p in (data_dir / "prices").iterdir())
    with stub:
        code, _, err = refresh(capsys, "--provider", "aws", clients=Clients(pricing=lambda region: pricing))
    assert code == 4 and "pricing.get_products failed" in err and "pricing:GetProducts" in err
    assert sorted(p.name for p in (data_dir / "prices").iterdir()) == before


@responses.activate
def test_another_region_goes_to_out_with_the_region_in_the_name(data_dir, capsys, tmp_path):
    import requests

    eu = compute_engine_skus()
    for s in eu:  # the same SKUs, sold in europe-west4 only
        s["serviceRegions"] = ["europe-west4"]
    mock_catalog(responses, eu, per_page=50)
    code, out, err = refresh(
        capsys,
        "--provider",
        "gcp",
        "--region",
        "europe-west4",
        "--out",
        str(tmp_path / "eu"),
        clients=Clients(gcp_session=requests.Session),
    )
    assert code == 0, err
    raw = tomllib.loads((tmp_path / "eu" / "2025-09-15_gcp-live-europe-west4.toml").read_text())
    assert raw["region"] == "europe-west4" and "europe-west4" in raw["source"]


def test_refresh_prices_refuses_a_bad_region_before_fetching_anything():
    """The library function the `prices refresh` command calls: a region that is not the
    provider's, or not the catalog's own without --out, is named before any client is built."""
    from analysis.price.refresh import refresh_prices

    class NoClients:
        def __getattr__(self, name):
            raise AssertionError(f"fetched {name} although the region was refused")

    with pytest.raises(ValueError, match="'us-central1' is not a aws"):
        refresh_prices("aws", ["us-central1"], clients=NoClients())
    with pytest.raises(ValueError, match="not the catalog's aws region .*--out DIR"):
        refresh_prices("aws", ["eu-west-1"], clients=NoClients())
