"""A cloud stack's gpubench:workload: checked at parse time (errors name the key), and the
instance's payload environment names the spec where the code bundle unpacks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.catalog import load_catalog
from infra.config import CLOUD_WORKLOAD_SPEC, ConfigError, parse_config
from infra.launch import payload_env, resolve

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "pytorch-resnet" / "workload.yaml"


def test_cloud_stack_runs_the_workload_instead_of_the_suite():
    cfg = parse_config({"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(SPEC)}, "aws-g4dn-1x")
    assert cfg.workload == str(SPEC) and cfg.suite == ()
    env = payload_env(resolve(cfg, load_catalog()), "s3://bucket/prefix", "2030-01-01T00:00:00Z")
    assert env["GPUBENCH_WORKLOAD"] == CLOUD_WORKLOAD_SPEC and "GPUBENCH_BENCHMARK" not in env
    plain = parse_config({"gpubench:offering": "aws/g4dn.xlarge"}, "aws-g4dn-1x")
    env = payload_env(resolve(plain, load_catalog()), "s3://bucket/prefix", "2030-01-01T00:00:00Z")
    assert "GPUBENCH_WORKLOAD" not in env and env["GPUBENCH_BENCHMARK"]


def test_cloud_workload_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match="gpubench:suite.*not both"):
        parse_config(
            {"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(SPEC), "gpubench:suite": ["mnist-mlp"]},
            "aws-g4dn-1x",
        )
    with pytest.raises(ConfigError, match="gpubench:workload: workload spec .*no such file"):
        parse_config({"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(tmp_path / "x.yaml")}, "s")


def test_the_specs_image_runs_the_workload_and_the_tensorflow_image_otherwise(tmp_path):
    from infra.images import public_image

    cfg = parse_config({"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(SPEC)}, "aws-g4dn-1x")
    launch = resolve(cfg, load_catalog())
    assert launch.image == "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime" == launch.public.image
    assert launch.public.extra == "payload" and not launch.public.framework
    bare = tmp_path / "workload.yaml"
    bare.write_text("name: bare\nrun: python train.py\nmetrics: [json]\n")
    cfg = parse_config({"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(bare)}, "aws-g4dn-1x")
    assert resolve(cfg, load_catalog()).image == public_image("cuda13").image
    builtin = parse_config({"gpubench:offering": "aws/g4dn.xlarge"}, "aws-g4dn-1x")
    assert resolve(builtin, load_catalog()).image == public_image("cuda13").image


def test_a_prebuilt_payload_image_cannot_fetch_a_workload():
    with pytest.raises(ConfigError, match="gpubench:payloadImage.*code bundle"):
        parse_config(
            {
                "gpubench:offering": "aws/g4dn.xlarge",
                "gpubench:workload": str(SPEC),
                "gpubench:payloadImage": "registry.example/gpubench:{generation}",
            },
            "aws-g4dn-1x",
        )
