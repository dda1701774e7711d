"""The Pulumi program body (the engine, the offline renderer and the tests run it): parse the stack
config, build the provider's component for its kind, export its outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from infra import clouds
from infra.config import BenchmarkConfig, parse_config
from infra.launch import resolve


def component_for(provider: str, kind: str) -> Callable[..., pulumi.ComponentResource]:
    """The cloud's component for a stack kind ("benchmark" | "recurring" | "results" | "sweeper"); add a cloud under infra/<cloud>/."""
    builders = clouds.get(provider).components()
    if kind not in builders:
        raise ValueError(f"{provider} has no component for {kind} stacks; it has: {', '.join(sorted(builders))}")
    return builders[kind]


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
    build = component_for(*key)
    component = build(stack, subject)
    for name, value in component.outputs.items():
        pulumi.export(name, value)
    return component


def engine_config() -> dict[str, Any]:
    """All config the engine handed this program (`ns:key` -> value string), as PULUMI_CONFIG or set."""
    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
