"""Leak sweeper (the fourth teardown layer, docs/architecture.md): whatever Pulumi's state says, find what this
project launched whose `expires-at` has passed and delete it. Each cloud's primitives live in its folder (infra/<cloud>/sweep.py).

Only resources carrying the project's expires-at tag/label are looked at; only
those that also carry the stack tag, with a deadline in the launcher's exact
format at or before `now`, are touched (infra.sweep.classify); everything else
is reported as `kept` or `left-alone` with the reason, never modified.
"""

from __future__ import annotations

from infra import clouds
from infra.sweep import ACTIONS, Action
from infra.sweep_targets import check_cloud, check_regions

__all__ = ["ACTIONS", "Action", "sweeper"]


def sweeper(provider: str):
    """The sweep function of one cloud: (regions, now, dry_run, **kw) -> list[Action].

    The cloud and the regions are checked against the catalog first (infra.sweep_targets.check_cloud,
    check_regions): a mistyped region is named with the closest ones before credentials or an
    SDK are looked for, instead of a sweep of a region where nothing could be."""
    name = check_cloud("--provider", provider)
    cloud = clouds.get(name)

    def sweep(regions, now, dry_run=False, **kw):
        return cloud.sweep_expired(check_regions(name, regions), now, dry_run, **kw)

    return sweep
