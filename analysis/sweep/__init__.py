"""Leak sweeper (teardown layer 4): whatever Pulumi's state says, delete what this project launched whose
expires-at has passed. Only resources with the stack tag and a deadline in the launcher's format at or
before `now` are touched (infra.sweep.classify); the rest are reported `kept` or `left-alone`, with why."""

from __future__ import annotations

from infra import clouds
from infra.sweep import ACTIONS, Action
from infra.sweep_targets import check_cloud, check_regions

__all__ = ["ACTIONS", "Action", "sweeper"]


def sweeper(provider: str):
    """One cloud's sweep, (regions, now, dry_run, **kw) -> list[Action]; the cloud and regions are checked
    against the catalog first, so a mistyped region is named before credentials or an SDK are looked for."""
    name = check_cloud("--provider", provider)
    cloud = clouds.get(name)

    def sweep(regions, now, dry_run=False, **kw):
        return cloud.sweep_expired(check_regions(name, regions), now, dry_run, **kw)

    return sweep
