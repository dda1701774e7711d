"""Terminal and JSON output shared by the analysis commands."""
from __future__ import annotations

import argparse
import math
import json
import sys
from datetime import date
from typing import Any, Iterable, Sequence


def parse_date(text: str) -> date:
    """argparse type for --as-of: YYYY-MM-DD, with an error that shows the form."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; use YYYY-MM-DD, e.g. 2018-02-08") from None


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def fmt_usd(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"${value:,.{digits}f}".rstrip("0").rstrip(".")


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(line.rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


def usd_amount(value: float) -> str:
    """Dollars at a precision that never shows a real cost as zero: cents from
    one cent up, two significant digits below (a 30 s CPU run costs $0.00083)."""
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
