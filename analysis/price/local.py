"""This machine's hourly price, for the demo and `gpubench bench --local`: it has no published price, so a flat rate
that is an assumption (DEFAULT_HOURLY_USD), else your figure; recorded with every run, with where it came from."""

from __future__ import annotations

import os
from dataclasses import dataclass

from analysis.price.billed import CostError

HOURLY_ENV = "GPUBENCH_LOCAL_HOURLY_USD"
# An assumed flat rate for a desktop or small VM (power, wear, a share of the hardware), round, not measured:
# change it with --hourly-usd or GPUBENCH_LOCAL_HOURLY_USD to price your machine honestly.
DEFAULT_HOURLY_USD = 0.10


@dataclass(frozen=True)
class Price:
    hourly_usd: float
    source: str


def resolve_price(flag: float | None, environ: dict | None = None) -> Price:
    """--hourly-usd, else GPUBENCH_LOCAL_HOURLY_USD, else the documented default; CostError names a bad one."""
    environ = os.environ if environ is None else environ
    if flag is not None:
        value, source = flag, f"set with --hourly-usd {flag:g} (your figure for this machine)"
    elif environ.get(HOURLY_ENV, "").strip():
        raw = environ[HOURLY_ENV].strip()
        try:
            value = float(raw)
        except ValueError:
            raise CostError(f"{HOURLY_ENV}={raw!r} is not a number (USD per hour, e.g. 0.25)") from None
        source = f"set with {HOURLY_ENV}={raw} (your figure for this machine)"
    else:
        value = DEFAULT_HOURLY_USD
        source = (
            f"assumed: gpubench demo default USD {DEFAULT_HOURLY_USD:.2f}/h for this machine, not a quote "
            f"or a measurement (set --hourly-usd or {HOURLY_ENV})"
        )
    if not value >= 0:
        raise CostError(f"the hourly price must be a number >= 0, got {value}")
    return Price(float(value), source)
