"""Money formatting, defined once for every layer: tags, payload options, tables, reports."""

from __future__ import annotations

import math
from types import SimpleNamespace


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


# Drop-ins for a "{:.2f}" format string in tables: `.format(v)` -> usd_amount(v).
USD = SimpleNamespace(format=usd_amount)
USD_SIGN = SimpleNamespace(format=lambda value: "$" + usd_amount(value))
