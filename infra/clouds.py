"""The one interface through which gpubench reaches a cloud provider: callers never branch on a provider's
name, they look it up here. Each cloud is a package `infra/<name>/` whose `__init__` stays cheap (no SDK,
no Pulumi at import: the base install runs the catalog, `offers` and `plan`) and defines:

Data: NAME ("aws"); RESULTS_SCHEME ("s3://", parsed by payload.results_location); CONFIG_KEYS (the
provider-namespace stack keys the program reads); DEFAULT_REGION (of its results stack and price
snapshots); REGION_PATTERN, ZONE_PATTERN (compiled); STACK_TAG, EXPIRES_TAG (the keys marking what
gpubench launched); FAILURE_PATTERNS (((kind, (regex, ...)), ...) for a failed launch's transcript);
IDENTITY_FIX (what to run when the credentials are refused).

Functions: tags(values) and deadline_tag(rfc3339) (the provider's encoding), is_launcher_deadline(text)
(only that exact format), region_of_zone(zone), stack_keys(offering) (provider keys of a generated stack
file), stack_base(offering) (e.g. aws-p3-8x), components() ({"benchmark": cls, ...}; imports Pulumi),
preview_mocks() (computed(), call(), user_data_of()), sweep_expired(regions, now, dry_run, **kw) ->
[infra.sweep.Action], price_tables(offerings, region, now, clients) -> (tables, source, warnings),
spot_history() (DAYS, client(region), series(...), or None), account_checks(needs, strict, **clients)
-> [{"check", "ok", "detail"}] (what a first real run of infra.stacks.StackNeed needs of the account),
identity() -> str (one API call: the credentials are accepted, not only found).
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES: tuple[str, ...] = ("aws", "gcp")


def get(name: str) -> ModuleType:
    """The provider package for `name`; a clear error for anything else."""
    if name not in NAMES:
        raise ValueError(f"unknown cloud {name!r}; gpubench supports: {', '.join(NAMES)}")
    return importlib.import_module(f"infra.{name}")


def is_cloud(name: str | None) -> bool:
    return name in NAMES


def all_clouds() -> list[ModuleType]:
    return [get(n) for n in NAMES]


def of_zone(zone: str) -> ModuleType | None:
    """The provider whose zone names look like `zone` (us-east-1a: aws; us-central1-a: gcp)."""
    for cloud in all_clouds():
        if cloud.ZONE_PATTERN.fullmatch(zone):
            return cloud
    return None


def of_results(url: str) -> ModuleType | None:
    """The provider whose bucket `url` names (s3://: aws; gs://: gcp); None for a local folder."""
    return next((cloud for cloud in all_clouds() if url.startswith(cloud.RESULTS_SCHEME)), None)


def results_stack(name: str) -> str:
    """The stack that holds a cloud's results bucket: never destroyed by teardown."""
    return f"{name}-results"


RESULTS_STACKS = frozenset(results_stack(n) for n in NAMES)
