"""The Pulumi program body (the engine, the offline renderer and the tests run it): parse the stack
config, build the provider's component for its kind, export its outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from infra import clouds
from infra.config import BenchmarkConfig, parse_config
from infra.launch import resolve


def run(raw_config: Mapping[str, Any], stack: str, catalog: Any) -> pulumi.ComponentResource:
    """Build the stack's resources and export their outputs."""
    cfg = parse_config(raw_config, stack)
    if isinstance(cfg, BenchmarkConfig):
        launch = resolve(cfg, catalog)
        key, subject = (launch.provider, cfg.stack_type), launch
        for warning in launch.warnings:
            pulumi.log.warn(warning)
    else:  # results and sweeper stacks name their provider
        key, subject = (cfg.provider, cfg.stack_type), cfg
    builders = clouds.get(key[0]).components()  # the cloud's component for a stack kind
    if key[1] not in builders:
        raise ValueError(f"{key[0]} has no component for {key[1]} stacks; it has: {', '.join(sorted(builders))}")
    component = builders[key[1]](stack, subject)
    for name, value in component.outputs.items():
        pulumi.export(name, value)
    return component


def engine_config() -> dict[str, Any]:
    """All config the engine handed this program (`ns:key` -> value string), as PULUMI_CONFIG or set."""
    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
