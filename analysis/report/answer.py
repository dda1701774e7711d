"""The answer the report opens with (a sentence per configuration: cheapest, fastest, best under a deadline or
budget, and how to price what could not be ranked), and the words for times and missing values. Times follow one
rule in the report and the terminal: under a minute in seconds, under an hour in minutes, else hours; a column takes
the unit of its longest time."""

from __future__ import annotations

import math
import re

from analysis.output import usd_amount

MINUTES_BELOW_HOURS = 1.0  # a time shorter than this many hours is shown in minutes
SECONDS_BELOW_HOURS = 1 / 60  # ... and shorter than this, in seconds
PER_HOUR = {"s": 3600.0, "min": 60.0, "h": 1.0}


def missing(v) -> bool:
    try:
        return v is None or v != v or (isinstance(v, float) and math.isinf(v))
    except (TypeError, ValueError):
        return False


def present(value) -> str | None:
    """A text value, or None for anything that is no value (None, NaN, pandas' NA, "", "None", "nan")."""
    text = "" if value is None else str(value).strip()
    return None if text in ("", "None", "nan", "NaN", "<NA>") else text


def digits(v: float) -> str:
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
    """'s', 'min' or 'h' for a time (or the longest time of a column), by the one rule."""
    valid = [h for h in (hours if isinstance(hours, (list, tuple)) else [hours]) if not missing(h)]
    if not valid or max(valid) >= MINUTES_BELOW_HOURS:
        return "h"
    return "s" if max(valid) < SECONDS_BELOW_HOURS else "min"


def in_unit(hours, unit: str) -> str:
    """A time in a given unit, without the unit ("-" when missing)."""
    if missing(hours):
        return "-"
    return digits(float(hours) * PER_HOUR[unit])


def duration(hours) -> str:
    """'42.0 min', '3.62 h': the one rule for a single time."""
    if missing(hours):
        return "-"
    unit = time_unit(hours)
    return f"{in_unit(hours, unit)} {unit}"


def usd(value) -> str:
    return "no price" if missing(value) else f"USD {usd_amount(value)}"


def offering_name(value) -> str:
    """An offering id as shown; runs started without --offering have none (None or NaN in the table)."""
    return value if isinstance(value, str) else "no offering (run without --offering)"


def _who(r: dict) -> str:
    """'aws/p3.8xlarge (4 GPUs, spot)': the offering as used."""
    extra = []
    g = r.get("gpus_used")
    if not missing(g) and int(g) > 1:
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


_LONG_PART = re.compile(r"[0-9a-f]{16,}|\[|\{")  # a hash or a list: detail, not a name
HEADING_CHARS = 60  # a heading's label stops before this length; the full one is a click away


def benchmark_name(bench: str) -> str:
    """'pytorch-resnet @fc2f2ed1' for an own workload ('workload:pytorch-resnet@fc2f2ed1e736'), else the name."""
    name = str(bench).removeprefix("workload:")
    if "@" in name:
        head, digest = name.rsplit("@", 1)
        return f"{head} @{digest[:8]}"
    return name


def _top_level_parts(label: str) -> list[str]:
    """A label split at ", " outside brackets: "metrics ['json', 'mllog']" stays one part."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(label):
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0 and label.startswith(", ", i):
            parts.append(label[start:i])
            start = i + 2
    return [*parts, label[start:]]


def short_label(label) -> str:
    """A label without hashes and lists, cut at a part boundary before HEADING_CHARS ("" for none)."""
    if not isinstance(label, str):
        return ""
    parts, length = [], 0
    for part in (p.strip() for p in _top_level_parts(label)):
        if not part or _LONG_PART.search(part):
            continue
        if parts and length + len(part) + 2 > HEADING_CHARS:
            parts.append("...")
            break
        parts.append(part)
        length += len(part) + 2
    return ", ".join(parts)


def configuration(rec: dict) -> str:
    """A configuration's short heading: benchmark by name (own workloads by name and short hash) and short label."""
    label = short_label(rec.get("workload_label"))
    name = benchmark_name(rec["benchmark"])
    return f"{name} ({label})" if label else name


def configuration_details(rec: dict) -> str:
    """Everything the short heading leaves out: full benchmark name, full label, workload key."""
    parts = [f"benchmark {rec['benchmark']}"]
    if isinstance(rec.get("workload_label"), str) and rec["workload_label"]:
        parts.append(f"parameters: {rec['workload_label']}")
    if isinstance(rec.get("workload"), str) and rec["workload"]:
        parts.append(f"workload key {rec['workload']}")
    return "; ".join(parts)


def add_price_hint(offering_id: str, market: str) -> str:
    """How to give an unpriced offering a price: the two places a price comes from."""
    return (
        f"add a dated {market} price with its source for {offering_id} to infra/catalog/data/prices/ "
        "(see `python -m analysis prices --help`), or record the price paid at launch "
        "(GPUBENCH_HOURLY_USD / GPUBENCH_SPOT_HOURLY_USD), then re-run collect"
    )


def _cheapest(cheap: dict) -> str:
    return f"cheapest {_pick(cheap)}" if cheap["offering_id"] else "cheapest: no offering has a price"


UNPRICED = "Not ranked by cost, no price: "  # opens the sentence on offerings without a price


def sentence(rec: dict, offerings: int | None = None) -> str:
    """One recommendation (analysis.metrics.recommend) as a sentence, and one naming the unpriced offerings.
    `offerings`: the configuration's rows; with one, there is nothing to call cheapest or fastest."""
    cheap, fast = rec["cheapest"], rec["fastest"]
    if offerings == 1:
        one = fast["offering_id"] is not None
        parts = [f"{_pick(fast)} (the one offering measured)" if one else _cheapest(cheap)]
    elif fast["offering_id"] is None:
        parts = [_cheapest(cheap), "fastest: no timed run"]
    else:
        parts = [_cheapest(cheap), "it is also the fastest" if _same(fast, cheap) else f"fastest {_pick(fast)}"]
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
        text += f" {UNPRICED}{names}. To add a price: {add_price_hint(ids, markets)}."
    return text


def basis_line(opts) -> str:
    """What the costs in the sentences are, and the limits the user gave (none named otherwise)."""
    what = "billed cost (launch to termination)" if opts.cost_basis == "billed" else "cost to train (training only)"
    limits = [
        f"{name} {shown}"
        for name, value, shown in (
            ("deadline", opts.deadline_hours, duration(opts.deadline_hours)),
            ("budget", opts.budget_usd, usd(opts.budget_usd)),
        )
        if value is not None
    ]
    return f"Costs are {what}." + (f" Limits as given: {', '.join(limits)}." if limits else "")


RANKED = 5  # offerings a ranking names; the rest are in the tables below it


def ranking(rows, cost_column: str) -> str:
    """'Ranked by cost: 1. A, 26.0 min for USD 0.40; 2. ...' ("" with fewer than two priced rows)."""
    priced = rows[rows[cost_column].notna() & rows["train_hours"].notna()]
    if len(priced) < 2:
        return ""
    ordered = priced.sort_values([cost_column, "train_hours", "offering_id"]).to_dict("records")
    named = [
        f"{i}. {_who(r)}, {duration(r['train_hours'])} for {usd(r[cost_column])}"
        for i, r in enumerate(ordered[:RANKED], 1)
    ]
    more = len(ordered) - RANKED
    return "Ranked by cost: " + "; ".join(named) + (f"; and {more} more in the table below." if more > 0 else ".")


def long_duration(hours) -> str:
    """duration(), and days or years past three days ("850 days", "2.3 years"): for extrapolations."""
    if missing(hours) or hours < 72:
        return duration(hours)
    days = float(hours) / 24
    return f"{digits(days / 365.25)} years" if days >= 730 else f"{digits(days)} days"


def _span(lo: float, hi: float, fmt) -> str:
    """'1.06-4.10 h' style ranges; one value when both ends read the same."""
    a, b = fmt(lo), fmt(hi)
    return a if a == b else f"{a}\u2013{b}"


def _times(lo: float, hi: float) -> str:
    """A range of times in one unit when both ends share one, else each in its own."""
    unit = time_unit(hi) if hi < 72 else None
    if unit is None:
        a, b = long_duration(lo), long_duration(hi)
        return a if a == b else f"{a} to {b}"
    return _span(lo, hi, lambda h: in_unit(h, unit)) + f" {unit}"


def short_source(words: str) -> str:
    """The first clause of a price source ("assumed", "given at launch"): the full one is in the price notes."""
    head = re.split(r" \(|: |; |, ", words, maxsplit=1)[0]
    return head if len(head) <= 40 else head[:37] + "..."


def versus_lines(v) -> tuple[str, str]:
    """Two sentences for a reference.Versus: this machine beside the studies' GPUs, and the study's full training
    here and there; a reference.NotCompared is one."""
    if not hasattr(v, "refs"):
        return f"{v.benchmark}: not compared with {v.study}: {v.reason}.", ""
    unit = v.unit.removesuffix("/s")
    slow = min(v.refs, key=lambda f: f.value)
    fast = max(v.refs, key=lambda f: f.value)
    theirs = f"{_span(slow.value, fast.value, digits)} {unit}/s ({slow.gpus} to {fast.gpus})"
    ratio = f"{_span(slow.value / v.rate, fast.value / v.rate, digits)} times as fast"
    if v.probe:  # a probe of the study's configuration: the whole jobs compare, differences in that sentence
        did = (
            f"{v.benchmark}: a {duration(v.probe.seconds / 3600)} probe of {v.refs[0].study}'s own configuration "
            f"({v.probe.configuration}) ran at {digits(v.rate)} {unit}/s on this machine ({v.device})"
            + ("." if v.differs else f"; the studies' GPUs {theirs}, {ratio}.")
        )
        here = f"here about {long_duration(v.here_hours)}{_interval(v.probe)}"
    elif v.differs:  # other work than the study's: said in the same sentence, and no ratio drawn
        did = (
            f"{v.benchmark}: this machine ({v.device}) {digits(v.rate)} {unit}/s on other work than the studies' "
            f"({'; '.join(v.differs)}), so not set against their {theirs}."
        )
        here = f"here about {long_duration(v.here_hours)} at that rate, on that other work"
    else:
        did = (
            f"{v.benchmark}: this machine ({v.device}) {digits(v.rate)} {unit}/s; the studies' GPUs {theirs}, {ratio}."
        )
        here = f"here about {long_duration(v.here_hours)}"
    if v.here_usd is not None:
        here += f" for {usd(v.here_usd)} (USD {v.hourly.hourly_usd:.2f}/h, {short_source(v.hourly.source)})"
    hours = [h for _, h, _ in v.there]
    costs = [c for _, _, c in v.there if c is not None]
    if v.there_published:
        there = f"the studies' GPUs took {_times(min(hours), max(hours))}"
    else:
        there = f"on the studies' GPUs about {_times(min(hours), max(hours))} (from their published {unit}/s)"
    there += f" for USD {_span(min(costs), max(costs), usd_amount)}" if costs else ", no cost published"
    if v.probe:
        here += ", extrapolated as gpubench bench does"
        if v.differs:
            here += f", on work that still differs ({'; '.join(v.differs)})"
    return did, f"{v.work[0].upper()}{v.work[1:]}: {here}; {there}."


def _interval(probe) -> str:
    """' (3.3-3.6 h)' around a probe's whole-job estimate; says so when it has no upper bound or was not steady."""
    low, high = probe.hours_low, probe.hours_high
    if missing(low):
        return ""
    span = f"{long_duration(low)} to no upper bound" if missing(high) else _times(float(low), float(high))
    return f" ({span}{'' if probe.steady else ', the rate not steady by the probe limit'})"


# Sample counts a cost is quoted per, smallest first, with their words.
SAMPLE_SCALES = ((1_000, "1,000"), (1_000_000, "million"), (1_000_000_000, "billion"))


def per_samples_scale(usd_per_sample: list[float]) -> tuple[int, str]:
    """The smallest sample count (1,000, a million, ...) at which the cheapest cost reads a cent or more."""
    valid = [v for v in usd_per_sample if not missing(v) and v > 0]
    for count, words in SAMPLE_SCALES:
        if not valid or min(valid) * count >= 0.01:
            return count, words
    return SAMPLE_SCALES[-1]
