"""Stack config parsing: good values become typed fields, bad keys and values name the key and the fix."""

import pytest

from infra.config import BenchmarkConfig, ConfigError, ResultsConfig, parse_config

BASE = {"gpubench:offering": "aws/p3.8xlarge", "aws:region": "us-east-1"}


def test_defaults_and_types():
    cfg = parse_config(
        {
            **BASE,
            "gpubench:maxHours": "2.5",
            "gpubench:suite": "mnist-mlp,resnet50",
            "gpubench:epochs": 3,
            "gpubench:params": {"dropout": 0.2},
        },
        "aws-p3-8x",
    )
    assert isinstance(cfg, BenchmarkConfig)
    assert (cfg.max_hours, cfg.suite, cfg.epochs, cfg.market, cfg.params) == (
        2.5,
        ("mnist-mlp", "resnet50"),
        3,
        "on-demand",
        "dropout=0.2",
    )
    assert cfg.provider_config == {"aws:region": "us-east-1"}


def test_results_stack():
    cfg = parse_config(
        {"gpubench:stackType": "results", "gpubench:provider": "gcp", "gcp:region": "europe-west4"}, "gcp-results"
    )
    assert isinstance(cfg, ResultsConfig) and cfg.provider == "gcp" and cfg.checkpoint_days == 30


@pytest.mark.parametrize(
    "extra, key, fragment",
    [
        ({"gpubench:maxHour": "2"}, "maxHour", "Did you mean gpubench:maxHours"),
        ({"gpubench:market": "spt"}, "market", "allowed values: on-demand, spot"),
        ({"gpubench:maxHours": "0"}, "maxHours", "[0.25, 72]"),
        ({"gpubench:maxHours": "lots"}, "maxHours", "expected hours"),
        ({"gpubench:sshCidr": "0.0.0.0/0"}, "sshCidr", "whole internet"),
        ({"gpubench:sshCidr": "::/0"}, "sshCidr", "whole internet"),
        ({"gpubench:sshCidr": "home"}, "sshCidr", "not a CIDR"),
        ({"gpubench:precision": "fp64"}, "precision", "allowed values: fp32, mixed"),
        ({"gpubench:epochs": "-1"}, "epochs", "positive integer"),
        ({"gpubench:epochs": 2, "gpubench:steps": 5}, "steps", "mutually exclusive"),
        ({"gpubench:results": "ftp://x"}, "results", "neither a bucket URL"),
        ({"gpubench:results": "s3://"}, "results", "names no bucket"),
        ({"gpubench:maxHours": "0.01"}, "maxHours", "expected hours in [0.25, 72]"),
        ({"gpubench:suite": "Bad Name"}, "suite", "unknown benchmark 'Bad Name'"),
        ({"gpubench:suite": "resnet-50"}, "suite", "did you mean 'resnet50'"),
        ({"gpubench:rootVolumeGb": 20}, "rootVolumeGb", "60 or more"),
        ({"gpubench:stackType": "other"}, "stackType", "allowed values: benchmark, recurring, results, sweeper"),
    ],
)
def test_bad_values_name_key_and_fix(extra, key, fragment):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, **extra}, "s")
    assert err.value.key == key
    assert f"gpubench:{key}" in str(err.value) and fragment in str(err.value)


def test_missing_offering_and_provider():
    with pytest.raises(ConfigError, match="gpubench:offering: required"):
        parse_config({"aws:region": "us-east-1"}, "s")
    with pytest.raises(ConfigError, match="gpubench:provider: required.*aws, gcp"):
        parse_config({"gpubench:stackType": "results"}, "aws-results")


def test_checks_against_the_catalog(catalog):
    from infra.launch import resolve

    with pytest.raises(ConfigError, match="gpubench:gpus: 9 GPUs requested but aws/p3.8xlarge has 4"):
        resolve(parse_config({**BASE, "gpubench:gpus": 9}, "s"), catalog)
    with pytest.raises(ConfigError, match="gpubench:results.*s3://"):
        resolve(parse_config({**BASE, "gpubench:results": "gs://bucket"}, "s"), catalog)


def test_unknown_offering_names_closest(catalog):
    from infra.catalog import CatalogError
    from infra.launch import resolve

    with pytest.raises(CatalogError) as err:
        resolve(parse_config({**BASE, "gpubench:offering": "aws/p3.8xlarg"}, "s"), catalog)
    assert "aws/p3.8xlarge" in str(err.value)


@pytest.mark.parametrize(
    "extra, key, fragment",
    [
        ({"gpubnech:suite": "resnet50"}, "gpubnech:suite", "Did you mean gpubench:suite?"),
        ({"GPUBench:suite": "resnet50"}, "GPUBench:suite", "Did you mean gpubench:suite?"),
        ({"gpubench-suite": "resnet50"}, "gpubench-suite", "Did you mean gpubench:suite?"),
        ({"gpubench_maxHours": 2}, "gpubench_maxHours", "Did you mean gpubench:maxHours?"),
        ({"aws:regoin": "us-east-1"}, "aws:regoin", "Did you mean aws:region?"),
        ({"gcp:zonee": "us-central1-a"}, "gcp:zonee", "Did you mean gcp:zone?"),
        ({"gpubench:results": "s3://My_Results"}, "results", "lowercase"),
        ({"gpubench:results": "s3://ab"}, "results", "3 to 63"),
        ({"gpubench:results": "gs://google-results"}, "results", "google"),
        ({"gpubench:sshCidr": "10.0.0.0/8"}, "sshCidr", "wider than /16"),
        ({"gpubench:sshCidr": "2001:db8::/32"}, "sshCidr", "wider than /48"),
        ({"gpubench:payloadImage": "GHCR.io/Me/Payload:latest"}, "payloadImage", "not a container image reference"),
        ({"gpubench:payloadImage": "ghcr.io/me/payload:$(reboot)"}, "payloadImage", "not a container image"),
        ({"gpubench:payloadImage": "repo:tag:tag"}, "payloadImage", "not a container image"),
    ],
)
def test_typos_and_unsafe_values_are_refused_with_a_suggestion(extra, key, fragment):
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, **extra}, "s")
    assert err.value.key == key and fragment in str(err.value), str(err.value)


def test_a_bad_payload_image_is_told_to_build_its_own_not_pointed_at_an_image_nobody_published():
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "gpubench:payloadImage": "Not An Image"}, "s")
    assert "payload/Dockerfile" in str(err.value) and "ghcr.io/gpubench" not in str(err.value), str(err.value)


def test_wide_ssh_only_when_allowed_and_valid_images_pass():
    cfg = parse_config({**BASE, "gpubench:sshCidr": "10.0.0.0/8", "gpubench:allowWideSsh": True}, "s")
    assert cfg.ssh_cidr == "10.0.0.0/8" and cfg.allow_wide_ssh
    for ref in ("ghcr.io/gpubench/payload:cuda12", "localhost:5000/p", "ubuntu", "a/b@sha256:" + "0" * 64):
        assert parse_config({**BASE, "gpubench:payloadImage": ref}, "s").payload_image == ref
    assert parse_config({**BASE, "pulumi:template": "x", "kubernetes:context": "y"}, "s")  # other tools' keys


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ({"gpubench:zone": "us-west-2a"}, "outside the stack's region us-east-1"),
        ({"gpubench:zone": "us-central1-a"}, "is not a aws zone name"),
    ],
)
def test_a_zone_outside_the_region_is_refused(extra, fragment):
    from infra.catalog import load_catalog
    from infra.config import check_against_offering

    cfg = parse_config({**BASE, **extra}, "s")
    offering = load_catalog().get("aws/p3.8xlarge")
    with pytest.raises(ConfigError) as err:
        check_against_offering(cfg, offering, "aws")
    assert err.value.key == "zone" and fragment in str(err.value)
