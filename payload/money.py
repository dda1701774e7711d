"""Money formatting, defined once for every layer: tags, payload options, tables, reports."""

from __future__ import annotations

import math


def plain_usd(value: float | None, missing: str = "unknown") -> str:
    """A price as a machine-readable value (tag values, payload options): up to 4 decimals, no sign."""
    if value is None:
        return missing
    return f"{value:.4f}".rstrip("0").rstrip(".")


def fmt_usd(value: float | None, digits: int = 4) -> str:
    """A price for people: `$0.526`, `-` when unknown."""
    return "-" if value is None else f"${value:,.{digits}f}".rstrip("0").rstrip(".")


def usd_amount(value: float) -> str:
    """Dollars that never show a real cost as zero: cents from one cent up, two significant digits below."""
    value = float(value)
    if value == 0 or abs(value) >= 0.01:
        return f"{value:,.2f}"
    digits = 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}"


class UsdFormat:
    """A drop-in for a "{:.2f}" format string in tables: `.format(v)` -> usd_amount(v)."""

    def __init__(self, prefix: str = ""):
        self.prefix = prefix

    def format(self, value) -> str:
        return self.prefix + usd_amount(value)


USD = UsdFormat()
USD_SIGN = UsdFormat("$")
