"""The stack config models: each bad value is refused naming the key (gpubench:<key>) and the fix."""

from __future__ import annotations

import pytest

from infra import clouds
from infra.catalog import load_catalog
from infra.config import BenchmarkConfig, ConfigError, ResultsConfig, SweeperConfig, parse_config
from infra.ssh.config import SshStack, parse_ssh_config
from payload.results_location import BUCKET_SCHEMES

BENCHMARK = {"gpubench:offering": "aws/p3.8xlarge", "aws:region": "us-east-1"}
RESULTS = {"gpubench:stackType": "results", "gpubench:provider": "aws"}
SWEEPER = {"gpubench:stackType": "sweeper", "gpubench:provider": "aws"}
SSH = {
    "gpubench:offering": "hetzner/ex51-ssd-gpu",
    "gpubench:host": "gpu-box.example.internal",
    "gpubench:results": "s3://bucket/prefix",
    "gpubench:benchmark": "mnist-mlp",
}


def _refusal(parse, base: dict, key: str, value) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        parse({**base, f"gpubench:{key}": value})
    return err.value


@pytest.mark.parametrize(
    "key, value, fix",
    [
        ("offering", "", "expected a non-empty string"),
        ("market", "reserved", "allowed values: on-demand, spot"),
        ("suite", [], "non-empty list of benchmark names"),
        ("suite", "resnet-50", "did you mean 'resnet50'"),
        ("batchSize", "0", "expected a positive integer, got '0'"),
        ("batchSize", True, "expected a positive integer"),
        ("params", "dropout", "is not key=value; use e.g. {dropout: 0.2}"),
        ("params", {"a,b": 1}, "may not contain ','"),
        ("gpus", "many", "expected a positive integer, got 'many'"),
        ("data", "a\nb", "contains a newline"),
        ("data", "'quoted'", "drop the quotes"),
        ("maxHours", 100, "expected hours in [0.25, 72], got 100"),
        ("results", "stack:", "needs a name, e.g. stack:aws-results"),
        ("results", "S3://bucket", "did you mean 's3://bucket'?"),
        ("results", "file:///srv/results", "neither a bucket URL"),
        ("results", "s3://bucket/a$(reboot)", "may only use letters, digits"),
        ("payloadImage", "Bad Image", "not a container image reference"),
        ("backend", "mxnet", "allowed values: tensorflow, jax, torch"),
        ("allReduce", "ring", "allowed values: nccl, hierarchical, one-device"),
        ("sshPublicKey", "AAAA", "expected an OpenSSH public key line"),
        ("rootVolumeGb", 20, "use 60 or more"),
        ("expectGpu", "maybe", "expected true or false, got 'maybe'"),
        ("allowWideSsh", "perhaps", "expected true or false"),
        ("every", "rate(1 hour)", "unknown key for a benchmark stack"),
    ],
)
def test_benchmark_config_errors(key, value, fix):
    err = _refusal(lambda raw: parse_config(raw, "aws-p3-8x"), BENCHMARK, key, value)
    assert err.key == key and str(err).startswith(f"gpubench:{key}: ") and fix in str(err), str(err)


def test_recurring_config_errors():
    recurring = {**BENCHMARK, "gpubench:stackType": "recurring"}
    err = _refusal(lambda raw: parse_config(raw, "recurring-aws-p3-8x"), recurring, "every", "weekly")
    assert err.key == "every" and str(err).startswith("gpubench:every: ") and "rate(" in str(err)


@pytest.mark.parametrize(
    "key, value, fix",
    [
        ("provider", "azure", "allowed values: aws, gcp"),
        ("bucketName", "", "expected a non-empty string"),
        ("checkpointDays", "0", "expected a positive integer"),
        ("noncurrentDays", "soon", "expected a positive integer, got 'soon'"),
        ("suite", "mnist-mlp", "unknown key for a results stack"),
    ],
)
def test_results_config_errors(key, value, fix):
    err = _refusal(lambda raw: parse_config(raw, "aws-results"), RESULTS, key, value)
    assert err.key == key and str(err).startswith(f"gpubench:{key}: ") and fix in str(err), str(err)


@pytest.mark.parametrize(
    "key, value, fix",
    [
        ("provider", "azure", "allowed values: aws, gcp"),
        ("every", "hourly", "rate("),
        ("regions", [], "expected a comma list of regions"),
        ("dryRun", "perhaps", "expected true or false"),
        ("maxHours", 1, "unknown key for a sweeper stack"),
    ],
)
def test_sweeper_config_errors(key, value, fix):
    err = _refusal(lambda raw: parse_config(raw, "aws-sweeper"), SWEEPER, key, value)
    assert err.key == key and str(err).startswith(f"gpubench:{key}: ") and fix in str(err), str(err)


@pytest.mark.parametrize(
    "key, value, fix",
    [
        ("stackType", "pulumi", "allowed values: ssh"),
        ("host", "box:22", None),
        ("host", "me@box", "put the user in gpubench:user"),
        ("results", "results", "is a bare path"),
        ("results", "gcs://bucket", "did you mean 'gs://bucket'?"),
        ("results", "ftp://x", "never holds cloud credentials"),
        ("port", 0, "expected an integer 1..65535, got 0"),
        ("epochs", "0", "expected an integer >= 1"),
        ("gpus", -1, "expected an integer >= 0, got -1"),
        ("maxHours", 0, "expected hours in (0, 72], got 0"),
        ("remoteDir", "~/my dir", "without spaces"),
        ("hostKeyCheck", "no", "allowed values: accept-new, strict"),
        ("benchmark", [], "non-empty list of benchmark names"),
        ("params", "x", "is not key=value"),
    ],
)
def test_ssh_stack_errors(key, value, fix):
    parse = lambda raw: parse_ssh_config(raw, "ssh-box", load_catalog())  # noqa: E731
    if fix is None:  # a valid value: the table also pins what passes
        assert parse({**SSH, f"gpubench:{key}": value}).host == value
        return
    err = _refusal(parse, SSH, key, value)
    assert err.key == key and str(err).startswith(f"gpubench:{key}: ") and fix in str(err), str(err)


@pytest.mark.parametrize("model", [BenchmarkConfig, ResultsConfig, SweeperConfig, SshStack])
def test_every_key_is_described_and_the_schema_builds(model):
    fields = model.model_fields.values()
    assert all(f.description for f in fields)
    properties = model.model_json_schema(by_alias=True)["properties"]
    assert set(model.config_keys()) <= set(properties)


def test_ssh_overrides_beat_the_stack_file():
    cfg = parse_ssh_config({**SSH, "gpubench:runtime": "venv"}, "ssh-box", load_catalog())
    assert cfg.with_overrides(runtime="docker", remote_python=None).runtime == "docker"
    assert cfg.with_overrides(runtime=None).runtime == "venv"


def test_every_cloud_results_scheme_is_one_the_parser_knows():
    assert {clouds.get(n).RESULTS_SCHEME for n in clouds.NAMES} == {f"{s}://" for s in BUCKET_SCHEMES}
