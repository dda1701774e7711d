"""The Pulumi program body: parse the stack config, pick the component by provider and kind, export.

Separate from `__main__.py` so the offline renderer and the tests call the same
function the engine runs.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pulumi

from infra import aws, gcp
from infra.config import BenchmarkConfig, parse_config
from infra.launch import resolve

# (provider, stack type) -> component builder. Add a cloud by adding rows.
COMPONENTS: dict[tuple[str, str], Callable[..., pulumi.ComponentResource]] = {
    ("aws", "benchmark"): aws.AwsBenchmark,
    ("aws", "results"): aws.AwsResults,
    ("gcp", "benchmark"): gcp.GcpBenchmark,
    ("gcp", "results"): gcp.GcpResults,
}


def run(raw_config: Mapping[str, Any], stack: str, catalog: Any) -> pulumi.ComponentResource:
    """Build the stack's resources and export their outputs."""
    cfg = parse_config(raw_config, stack)
    if isinstance(cfg, BenchmarkConfig):
        launch = resolve(cfg, catalog)
        key, subject = (launch.provider, "benchmark"), launch
        for warning in launch.warnings:
            pulumi.log.warn(warning)
    else:
        key, subject = (cfg.provider, "results"), cfg
    try:
        build = COMPONENTS[key]
    except KeyError:
        raise ValueError(f"no component for provider {key[0]!r} ({key[1]} stack); supported: {sorted(COMPONENTS)}") from None
    component = build(stack, subject)
    for name, value in component.outputs.items():
        pulumi.export(name, value)
    return component


def engine_config() -> dict[str, Any]:
    """All config the engine handed this program (`ns:key` -> value string).

    The language host passes it as PULUMI_CONFIG (JSON) or sets it explicitly; take both."""
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
