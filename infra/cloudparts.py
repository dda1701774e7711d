"""What the cloud folders (infra/aws/, infra/gcp/) do the same way, written once.

Light (standard library and infra.sweep only): the provider interfaces and the sweep modules
import it, and the sweeper function ships it (infra/sweeper_function.py MODULES).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def imported(module: str, attr: str | None = None) -> Callable[[], Any]:
    """A function that imports `module` when called and returns it (or its `attr`): the interface
    stays light for the base install and the sweeper function, the part it names loads Pulumi,
    a cloud SDK or the catalog only when used."""
    return lambda: getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)


def deferred(module: str, attr: str) -> Callable[..., Any]:
    """`module.attr(...)`, the module imported at the call (see `imported`)."""
    return lambda *args, **kwargs: imported(module, attr)()(*args, **kwargs)


def stack_region(key: str, region_of_zone: Callable[[str], str]) -> Callable[..., str | None]:
    """The interface's `region(provider_config, zone)`: the stack's `key` (`aws:region`), else the zone's."""

    def region(provider_config: Mapping[str, str], zone: str | None) -> str | None:
        return provider_config.get(key) or (region_of_zone(zone) if zone else None)

    return region
