"""RunConfig, the payload's run options: errors name the flag or variable and the fix."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from payload.config import OPTIONS, ConfigError, DataSource, given_values, render_env, resolve

BASE = {"benchmark": "mnist-mlp", "results": "/tmp/gpubench-results", "stack": "s"}


@pytest.mark.parametrize(
    "given, env, fragments",
    [
        ({"epochs": "x"}, {}, ["--epochs='x'", "must be a positive integer"]),
        ({}, {"GPUBENCH_STEPS": "0"}, ["GPUBENCH_STEPS='0'", "must be a positive integer"]),
        ({"gpus": "-2"}, {}, ["--gpus='-2'", "must be an integer from 0 to 16"]),
        ({}, {"GPUBENCH_GPUS": "100000"}, ["GPUBENCH_GPUS='100000'", "the most GPUs one machine"]),
        ({"hourly_usd": "nan"}, {}, ["--hourly-usd='nan'", "finite"]),
        ({"watch_interval": "0"}, {}, ["--watch-interval='0'", "must be a positive number"]),
        ({}, {"GPUBENCH_ON_DEMAND_HOURLY_USD": "-1"}, ["GPUBENCH_ON_DEMAND_HOURLY_USD='-1'", ">= 0"]),
        ({"precision": "fp16"}, {}, ["--precision='fp16'", "one of: fp32, mixed"]),
        ({"backend": "mxnet"}, {}, ["--backend='mxnet'", "tensorflow, jax, torch"]),
        ({"no_resume": "maybe"}, {}, ["--no-resume='maybe'", "1/0"]),
        ({"deadline": "soon"}, {}, ["--deadline='soon'", "ISO 8601"]),
        ({"price_as_of": "someday"}, {}, ["--price-as-of='someday'", "e.g. 2025-01-31"]),
        ({"results": "gcs://bucket"}, {}, ["--results='gcs://bucket'", "did you mean 'gs://bucket'?"]),
        ({"stack": "a b"}, {}, ["--stack='a b'"]),
        ({"param": ["novalue"]}, {}, ["--param=['novalue']", "is not key=value"]),
        ({"data": "/nonexistent/dir"}, {}, ["--data='/nonexistent/dir'", "'synthetic', 'download' or an existing"]),
        ({"offering": " "}, {}, ["--offering=' '", "must not be empty"]),
        ({"epochs": "2", "steps": "3"}, {}, ["--epochs and --steps are mutually exclusive"]),
        ({"workload": "w.yaml"}, {}, ["both given", "drop one"]),
        ({"stack": None}, {}, ["--stack (or GPUBENCH_STACK) is required"]),
    ],
)
def test_run_config_errors(given, env, fragments):
    with pytest.raises(ConfigError) as err:
        resolve({**BASE, **given}, env)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


def test_precedence_command_line_then_environment_then_default():
    env = {"GPUBENCH_SEED": "7", "GPUBENCH_EPOCHS": "3", "GPUBENCH_STEPS": ""}
    assert given_values({"epochs": "5"}, env) == {"epochs": ("5", "--epochs"), "seed": ("7", "GPUBENCH_SEED")}
    cfg = resolve({**BASE, "epochs": "5"}, env)
    assert (cfg.epochs, cfg.seed, cfg.steps, cfg.checkpoint_every) == (5, 7, None, 500)


def test_every_option_is_a_field_with_its_default():
    cfg = resolve(BASE, {})
    assert [f.name for f in dataclasses.fields(cfg)] == [o.name for o in OPTIONS]
    assert (cfg.param, cfg.epochs, cfg.precision, cfg.checkpoint_every) == ({}, None, "fp32", 500)
    assert (
        cfg.data == DataSource("download")
        and resolve({**BASE, "benchmark": None, "workload": "w.yaml"}, {}).benchmark == []
    )


def test_rendering_refuses_what_the_payload_would():
    with pytest.raises(ConfigError, match=r"--results \(GPUBENCH_RESULTS\) 's3://My_Bucket'.*lowercase"):
        render_env({"results": "s3://My_Bucket"})
    assert render_env({"epochs": 2, "expect_gpu": True}) == {"GPUBENCH_EPOCHS": "2", "GPUBENCH_EXPECT_GPU": "1"}


def test_the_config_modules_parse_with_python_3_8():
    """The legacy image runs the payload on Python 3.8: the payload's config modules parse with its grammar."""
    root = Path(__file__).resolve().parents[2] / "payload"
    for name in ("config.py", "results_location.py"):
        ast.parse((root / name).read_text(), feature_version=(3, 8))
