"""The one interface through which gpubench reaches a cloud provider.

Each cloud is a package under ``infra/`` (``infra/aws/``, ``infra/gcp/``) that
defines the names below. Its ``__init__`` stays cheap (no cloud SDK, no Pulumi at
import time) so the catalog, ``offers`` and ``plan`` work in the base install;
the heavy parts are imported by the functions that need them. Callers never
branch on a provider's name: they look the provider up here and call it.

Data:
    NAME                 "aws"
    RESULTS_SCHEME       URL scheme of its results bucket ("s3://"); payload.results_location parses it
    CONFIG_KEYS          provider-namespace stack keys the program reads ("region", ...)
    DEFAULT_REGION       region of its results stack and of its shipped price snapshots
    REGION_PATTERN       compiled regex a region name must match
    ZONE_PATTERN         compiled regex a zone name matches
    STACK_TAG, EXPIRES_TAG  the tag/label keys that mark what gpubench launched
    FAILURE_PATTERNS     ((kind, (regex, ...)), ...) for a failed launch's transcript

Functions:
    tags(values)                 project tags/labels in the provider's encoding
    deadline_tag(rfc3339)        the expires-at value as the launcher writes it
    is_launcher_deadline(text)   True only for that exact format
    region_of_zone(zone)
    stack_keys(offering)         provider keys a generated stack file sets
    stack_base(offering)         stack-name stem, e.g. aws-p3-8x
    components()                 {"benchmark": cls, "results": cls, ...} (imports Pulumi)
    preview_mocks()              module with computed(), call() and user_data_of() for the offline preview
    sweep_expired(regions, now, dry_run, **kw) -> list[infra.sweep.Action]
    price_tables(offerings, region, now, clients) -> (tables, source, warnings)
    spot_history()               module with DAYS, client(region), series(...) or None
    account_checks(needs, strict, **clients) -> [{"check", "ok", "detail"}]: what a first real run
                                 of these stacks (infra.stacks.StackNeed) needs of the account
    identity() -> str            one API call showing the credentials are accepted, not only found
                                 (raises the SDK's error when they are not); IDENTITY_FIX says what to run
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES: tuple[str, ...] = ("aws", "gcp")


class UnknownCloud(ValueError):
    """A provider name that has no folder under infra/."""


def get(name: str) -> ModuleType:
    """The provider package for `name`; a clear error for anything else."""
    if name not in NAMES:
        raise UnknownCloud(f"unknown cloud {name!r}; gpubench supports: {', '.join(NAMES)}")
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
