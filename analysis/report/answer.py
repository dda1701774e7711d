"""The answer the report opens with: one sentence per benchmark configuration
naming the cheapest offering, the fastest, the best under a deadline and the
best under a budget, each with its time and cost, and the offerings that
could not be ranked by cost with how to price them.

Times follow one rule everywhere in the report and the terminal summary:
under one hour in minutes, one hour or more in hours; a table column takes
the unit of its longest time, so one column never mixes units.
"""

from __future__ import annotations

import math

from analysis.metrics import add_price_hint
from analysis.output import usd_amount

MINUTES_BELOW_HOURS = 1.0  # a time shorter than this many hours is shown in minutes


def _missing(v) -> bool:
    try:
        return v is None or v != v or (isinstance(v, float) and math.isinf(v))
    except (TypeError, ValueError):
        return False


def _digits(v: float) -> str:
    """Three significant figures from 1 up, two below, never a bare 0 for a real figure."""
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1 or a == 0:
        return f"{v:.2f}"
    return f"{v:.{1 - math.floor(math.log10(a))}f}"


def time_unit(hours) -> str:
    """'min' or 'h' for a time (or the longest time of a column), by the one rule."""
    valid = [h for h in (hours if isinstance(hours, (list, tuple)) else [hours]) if not _missing(h)]
    return "min" if valid and max(valid) < MINUTES_BELOW_HOURS else "h"


def in_unit(hours, unit: str) -> str:
    """A time in a given unit, without the unit ("-" when missing)."""
    if _missing(hours):
        return "-"
    return _digits(float(hours) * 60 if unit == "min" else float(hours))


def duration(hours) -> str:
    """'42.0 min', '3.62 h': the one rule for a single time."""
    if _missing(hours):
        return "-"
    unit = time_unit(hours)
    return f"{in_unit(hours, unit)} {unit}"


def usd(value) -> str:
    return "no price" if _missing(value) else f"USD {usd_amount(value)}"


def offering_name(value) -> str:
    """An offering id as shown; runs started without --offering have none (None or NaN in the table)."""
    return value if isinstance(value, str) else "no offering (run without --offering)"


def _who(r: dict) -> str:
    """'aws/p3.8xlarge (4 GPUs, spot)': the offering as used."""
    extra = []
    g = r.get("gpus_used")
    if not _missing(g) and g is not None and int(g) > 1:
        extra.append(f"{int(g)} GPUs")
    if r.get("market") == "spot":
        extra.append("spot")
    return offering_name(r.get("offering_id")) + (f" ({', '.join(extra)})" if extra else "")


def _pick(r: dict) -> str:
    return f"{_who(r)}, {duration(r['hours'])} for {usd(r.get('cost_usd'))}"


def _same(a: dict, b: dict) -> bool:
    """The same row of the table: offering, market, GPUs used and price paid."""
    keys = ("offering_id", "market", "gpus_used", "prices_paid")
    return a.get("offering_id") is not None and all(a.get(k) == b.get(k) for k in keys)


def configuration(rec: dict) -> str:
    label = rec.get("workload_label")
    return f"{rec['benchmark']} ({label})" if isinstance(label, str) and label else str(rec["benchmark"])


def sentence(rec: dict) -> str:
    """One recommendation (analysis.metrics.recommend) as one sentence, then,
    when some offerings had no price, one more naming them and how to price them."""
    parts = []
    cheap, fast = rec["cheapest"], rec["fastest"]
    parts.append(f"cheapest {_pick(cheap)}" if cheap["offering_id"] else "cheapest: no offering has a price")
    if fast["offering_id"] is None:
        parts.append("fastest: no timed run")
    elif _same(fast, cheap):
        parts.append("it is also the fastest")
    else:
        parts.append(f"fastest {_pick(fast)}")
    if "under_deadline" in rec:
        d, limit = rec["under_deadline"], duration(rec["deadline_hours"])
        if not d["offering_id"]:
            parts.append(f"no priced offering finishes within {limit}")
        elif _same(d, cheap):
            parts.append(f"the cheapest finishes within {limit}")
        else:
            parts.append(f"within {limit} the cheapest is {_pick(d)}")
    if "under_budget" in rec:
        b, limit = rec["under_budget"], usd(rec["budget_usd"])
        if not b["offering_id"]:
            parts.append(f"no priced offering trains it for at most {limit}")
        elif _same(b, fast):
            parts.append(f"the fastest costs at most {limit}")
        else:
            parts.append(f"for at most {limit} the fastest is {_pick(b)}")
    text = f"{configuration(rec)}: " + "; ".join(parts) + "."
    unpriced = rec.get("unpriced") or []
    if unpriced:
        names = ", ".join(f"{_who(u)} ({duration(u['hours'])})" for u in unpriced)
        ids = ", ".join(dict.fromkeys(offering_name(u["offering_id"]) for u in unpriced))
        markets = " or ".join(dict.fromkeys(u["market"] for u in unpriced))
        text += f" Not ranked by cost, no price: {names}. To add a price: {add_price_hint(ids, markets)}."
    return text


def basis_line(opts) -> str:
    """What the costs in the sentences are, and the limits used."""
    what = "billed cost (launch to termination)" if opts.cost_basis == "billed" else "cost to train (training only)"
    return (
        f"Costs are {what}. Deadline {duration(opts.deadline_hours)}, budget {usd(opts.budget_usd)} "
        "(--deadline-hours, --budget-usd)."
    )


def lines(recs: list[dict], opts) -> list[str]:
    """The terminal summary's first lines."""
    return [sentence(r) for r in recs] + [basis_line(opts)]
