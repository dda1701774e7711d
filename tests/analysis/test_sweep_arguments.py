"""`sweep --region` and `cost --sweeper` name a mistyped value (with the closest known ones) before any
credentials, SDK or price table is looked for: the values are checked against the catalog first."""

from __future__ import annotations

import os

import pytest

from analysis.cli import main
from infra import clouds
from infra.sweep_targets import check_cloud, check_regions, known_regions
from payload import exitcodes
from payload.exitcodes import UsageError


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """No cloud settings and nothing on PATH: reaching a tool shows up as a credentials error."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "CLOUDSDK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def _typo(name: str) -> str:
    """`name` with two neighbouring letters swapped (us-east-1 -> us-eats-1 style)."""
    i = next(
        i for i in range(len(name) - 1, 0, -1) if name[i].isalpha() and name[i - 1].isalpha() and name[i] != name[i - 1]
    )
    return name[: i - 1] + name[i] + name[i - 1] + name[i + 1 :]


def _error(argv, capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.mark.parametrize("provider", clouds.NAMES)
def test_a_mistyped_region_is_named_with_the_closest_before_credentials(provider, no_credentials, capsys):
    region = known_regions(provider)[0][0]
    typo = _typo(region)
    code, err = _error(["sweep", "--provider", provider, "--region", typo, "--dry-run"], capsys)
    assert code == exitcodes.USAGE
    assert f"--region {typo!r} is not known" in err and region in err
    assert "credentials" not in err.lower()


def test_a_known_region_passes_the_check_and_reaches_the_credentials(no_credentials, capsys):
    region = known_regions("aws")[0][0]
    code, err = _error(["sweep", "--provider", "aws", "--region", region, "--dry-run"], capsys)
    assert code == exitcodes.MISSING and "no AWS credentials" in err and "is not known" not in err


def test_regions_and_zones_of_the_catalog_are_accepted_and_others_refused():
    regions, zones = known_regions("gcp")
    assert check_regions("gcp", [regions[0], zones[0]]) == [regions[0], zones[0]]
    assert check_regions("gcp", None) is None
    aws_only = sorted(set(known_regions("aws")[0]) - set(regions) - set(zones))
    with pytest.raises(UsageError, match=aws_only[0]):
        check_regions("gcp", [aws_only[0]])


def test_a_mistyped_sweeper_cloud_is_named_before_prices(no_credentials, capsys):
    code, err = _error(["cost", "--sweeper", "awz", "--every", "rate(1 hour)"], capsys)
    assert code == exitcodes.USAGE
    assert "--sweeper 'awz' is not known" in err and "aws" in err
    assert "service prices" not in err


def test_the_sweeper_cloud_is_taken_in_any_case(no_credentials, capsys):
    assert main(["cost", "--sweeper", "GCP", "--every", "rate(1 hour)", "--json"]) == exitcodes.OK
    assert '"provider": "gcp"' in capsys.readouterr().out
    assert check_cloud("--sweeper", "Aws") == "aws"
