"""SSH stack parsing: typed values, errors naming the key and the allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.catalog import load_catalog
from infra.config import ConfigError
from infra.ssh.config import parse_ssh_config

# The example SSH stacks, checked in beside the generated cloud stacks.
EXAMPLES = [Path(__file__).resolve().parents[2] / "stacks"]
BASE = {
    "gpubench:offering": "hetzner/ex51-ssd-gpu",
    "gpubench:host": "gpu-box.example.internal",
    "gpubench:results": "s3://bucket/prefix",
    "gpubench:benchmark": "mnist-mlp",
}


def parse(**keys):
    raw = {**BASE, **{f"gpubench:{k}": v for k, v in keys.items()}}
    return parse_ssh_config({k: v for k, v in raw.items() if v is not None}, "ssh-test", load_catalog())


def test_defaults_and_types():
    cfg = parse(port="2222", epochs="3", benchmark="mnist-mlp, mnist-cnn", params={"samples": 64}, identityFile="~/k")
    assert (cfg.port, cfg.epochs, cfg.benchmark) == (2222, 3, ("mnist-mlp", "mnist-cnn"))
    assert (
        cfg.runtime == "docker" and cfg.expect_gpu is True and cfg.gpu_count == 1 and cfg.image_generation == "cuda12"
    )
    assert cfg.params == "samples=64" and not cfg.identity_file.startswith("~")
    assert cfg.remote_dir == "~/.gpubench" and cfg.host_key_check == "accept-new"
    assert parse(suite=["resnet50"], benchmark=None).benchmark == ("resnet50",)


def test_onprem_and_paperspace_rows_are_ssh_offerings():
    assert parse(offering="onprem/parkopedia-4x1080ti").gpu_count == 4
    assert parse(offering="paperspace/v100").offering == "paperspace/v100"


@pytest.mark.parametrize(
    "keys, key, fragment",
    [
        ({"offering": "aws/p3.8xlarge"}, "offering", "pulumi up --stack aws-p3-8x"),
        ({"offering": "hetzner/ex51"}, "offering", "hetzner/ex51-ssd-gpu"),
        ({"host": None}, "host", "required"),
        ({"host": "root@box"}, "host", "gpubench:user"),
        ({"results": None}, "results", "required"),
        ({"results": "http://x"}, "results", "s3://"),
        ({"runtime": "podman"}, "runtime", "allowed values: docker, venv"),
        ({"precision": "fp16"}, "precision", "allowed values: fp32, mixed"),
        ({"port": 70000}, "port", "1..65535"),
        ({"benchmark": "mnist-mpl"}, "benchmark", "did you mean 'mnist-mlp'"),
        ({"suite": ["mnist-cnn"]}, "suite", "not both"),
        ({"epochs": 2, "steps": 10}, "steps", "mutually exclusive"),
        ({"gpus": 3}, "gpus", "has 1"),
        ({"expectGpu": "maybe"}, "expectGpu", "true or false"),
        ({"remoteDir": "relative/dir"}, "remoteDir", "absolute"),
        ({"hostKeyCheck": "off"}, "hostKeyCheck", "accept-new, strict"),
        ({"hostname": "x"}, "hostname", "Did you mean gpubench:host?"),
        ({"remotePyhton": "python3"}, "remotePyhton", "Did you mean gpubench:remotePython?"),
        ({"payloadImage": "Bad Image:latest"}, "payloadImage", "not a container image reference"),
        ({"payloadImage": "img:$(reboot)"}, "payloadImage", "not a container image reference"),
    ],
)
def test_bad_values_name_the_key_and_the_fix(keys, key, fragment):
    with pytest.raises(ConfigError) as err:
        parse(**keys)
    assert err.value.key == key and fragment in str(err.value)


def test_ssh_stack_names_need_the_prefix():
    with pytest.raises(ConfigError, match="rename stacks/Pulumi.box.yaml to stacks/Pulumi.ssh-box.yaml"):
        parse_ssh_config(BASE, "box", load_catalog())


@pytest.mark.parametrize(
    "full, fragment",
    [
        ("gpubnech:host", "Did you mean gpubench:host?"),
        ("GPUBench:host", "Did you mean gpubench:host?"),
        ("gpubench-epochs", "Did you mean gpubench:epochs?"),
        ("gpubench_maxHours", "Did you mean gpubench:maxHours?"),
    ],
)
def test_typod_namespaces_get_the_cloud_stacks_suggestion(full, fragment):
    """The same rule and message as cloud stacks (infra.config.split_key): a misspelt namespace is
    not silently a default, and the fix names the key meant."""
    from infra.config import parse_config

    with pytest.raises(ConfigError) as err:
        parse_ssh_config({**BASE, full: "2"}, "ssh-test", load_catalog())
    assert err.value.key == full and fragment in str(err.value)
    with pytest.raises(ConfigError) as cloud:
        parse_config({"gpubench:offering": "aws/p3.2xlarge", full: "2"}, "aws-p3-2x")
    assert str(cloud.value) == str(err.value)


def test_provider_keys_are_refused():
    with pytest.raises(ConfigError, match="aws:region"):
        parse_ssh_config({**BASE, "aws:region": "us-east-1"}, "ssh-test", load_catalog())


def test_example_stacks_parse():
    files = sorted(f for d in EXAMPLES for f in d.glob("Pulumi.ssh-*.yaml"))
    assert {f.name for f in files} >= {"Pulumi.ssh-hetzner-ex51.yaml", "Pulumi.ssh-onprem-parkopedia.yaml"}
    for f in files:
        doc = yaml.safe_load(f.read_text())
        cfg = parse_ssh_config(doc["config"], f.name[len("Pulumi.") : -len(".yaml")], load_catalog())
        assert cfg.host == "gpu-box.example.internal" and "EDIT BEFORE USE" in f.read_text()
