"""Which clouds and regions a sweep may be given, checked before prices, credentials or a cloud SDK
are looked for, so a typo is named as a typo. Not in the sweeper function's package
(infra/sweeper_function.py MODULES): it reads the catalog."""

from __future__ import annotations

import re

from infra import clouds
from infra.catalog import load_catalog
from payload.exitcodes import check_choice


def check_cloud(flag: str, value: str) -> str:
    """The cloud `value` names (aws, gcp; any case), else a UsageError naming it with the closest names."""
    return check_choice(flag, value, clouds.NAMES, f"gpubench sweeps {', '.join(clouds.NAMES)}.")


# The form of each cloud's region (and, on GCP, zone) names: a region the catalog does not list
# (say a stack's own aws:region) is still swept when it is spelt like one; anything else is a typo.
_DIRECTIONS = "(north|south|east|west|central|northeast|northwest|southeast|southwest)"
REGION_FORMS = {
    "aws": re.compile(rf"(us|us-gov|eu|ap|sa|ca|me|af|il|mx|cn)-{_DIRECTIONS}-[1-9]"),
    "gcp": re.compile(
        rf"(us|europe|asia|northamerica|southamerica|australia|me|africa)-{_DIRECTIONS}[1-9][0-9]?(-[a-z])?"
    ),
}


def known_regions(provider: str, catalog=None) -> tuple[list[str], list[str]]:
    """(regions, zones) of `provider` in the catalog: where this project launches, hence what a sweep may name."""
    offerings = (catalog or load_catalog()).offerings(provider=provider)
    return sorted({r for o in offerings for r in o.regions}), sorted({z for o in offerings for z in o.zones})


def check_regions(provider: str, regions, catalog=None) -> list[str] | None:
    """The regions (or zones) a sweep was given, else a UsageError naming the first that is neither in
    the catalog for `provider` nor spelt like one of its regions, with the catalog's closest names.
    None stays None (every region)."""
    if not regions:
        return regions
    known, zones = known_regions(provider, catalog)
    form = REGION_FORMS[provider]
    checked = []
    for region in regions:
        if region in known or region in zones or form.fullmatch(region):
            checked.append(region)
            continue
        fix = f"The catalog's {provider} regions are listed by `gpubench offers --provider {provider} --json`."
        checked.append(check_choice("--region", region, [*known, *zones], fix))
    return checked
