"""The bench answer: probe reports to the `gpubench bench --json` rows (each extrapolated under its billing
rule), then the picks, the cost/time frontier, the ranking and one sentence.

Ordering is stable: cost as shown, then time to the second, then offering and name, so two costs that read
the same tie; the sentence says what broke a tie and which intervals overlap the pick's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from analysis.bench.extrapolate import estimate_on, probe_periodic
from analysis.bench.plan import check_options
from analysis.bench.probes import ESTIMATED, ProbeReport
from analysis.report.answer import duration, in_unit, time_unit, usd
from payload.money import usd_amount
from payload.steady import Steady
from payload.workloads.conventions import progress_of, whole_job

ROW_FIELDS = (
    "offering name kind market status reason overhead_seconds finish_seconds samples_per_second "
    "samples_per_second_low samples_per_second_high est_hours est_hours_low est_hours_high est_usd est_usd_low "
    "est_usd_high probe_usd basis"
).split()
UNTIMED_FINISH = (
    "excludes the time from the job's end to the machine's release (result upload, shutdown): not timed by this probe"
)


def wall_steady(probe: dict[str, Any]) -> Any:
    """The probe's steady rate per wall second (None without one): a job clock that leaves time out
    (evaluation) runs slower than the wall, which bills; the probe records by how much."""
    if not probe.get("steady"):
        return None
    names = {f.name for f in dataclasses.fields(Steady)}
    steady = Steady(**{k: v for k, v in probe["steady"].items() if k in names})
    ratio = _wall_ratio(probe)
    if ratio == 1.0:
        return steady
    per_wall = {k: getattr(steady, k) for k in ("samples_per_second", "low", "high")}
    per_wall = {k: v / ratio if isinstance(v, (int, float)) else v for k, v in per_wall.items()}
    return dataclasses.replace(steady, **per_wall, warmup_seconds=steady.warmup_seconds * ratio)


def _wall_ratio(probe: dict[str, Any]) -> float:
    """Wall seconds per job-clock second, never below 1 (less is the lines arriving in bursts)."""
    ratio = probe.get("wall_per_job_second")
    return float(ratio) if isinstance(ratio, (int, float)) and ratio > 1.0 else 1.0


def _estimate(report: ProbeReport, work_samples: float | None, work: Any = None) -> tuple[dict[str, Any], str | None]:
    """The estimate's row fields, and a reason when there is none (or it is partial)."""
    cand, probe = report.candidate, report.probe
    # the whole job in the unit the probe counted: the task file's `work`, gaps filled from the job's output
    progress = progress_of(report.result)
    whole = {"value": work_samples, "unit": "samples", "figures": {}}
    whole = whole if progress is None and work is None else whole_job(work, progress)
    work_samples = whole["value"]
    if work_samples is None:
        why = "the task file has no `work:` section, so the whole job cannot be extrapolated"
        return {"work": whole}, whole.get("reason", why)
    overhead = probe.get("overhead_seconds")
    est, why = estimate_on(
        cand,
        overhead_seconds=float(overhead or 0.0),
        finish_seconds=float(report.finish_seconds or 0.0),
        work_samples=float(work_samples),
        steady=wall_steady(probe),
        periodic=probe_periodic(probe, float(work_samples), _wall_ratio(probe)),
    )
    if est is None:
        return {}, why
    note = None if overhead is not None else "overhead not measured (no first-step event): the estimate excludes it"
    fields = {"work": whole, "periodic_seconds": est.periodic_seconds, "basis": dict(est.basis)}
    fields |= est.fields(cand.hourly_usd is not None)
    fields["notes"] = [*est.notes, *([] if report.finish_seconds is not None else [UNTIMED_FINISH])]
    if (ratio := _wall_ratio(probe)) != 1.0:
        left_out = f"the job's own clock left out {1 - 1 / ratio:.1%} of the wall time (evaluation, say)"
        fields["notes"].append(left_out + ": rates are per wall second")
    if cand.hourly_usd is None:
        note = "; ".join(filter(None, [note, f"no hourly price for {cand.offering}: time only"]))
    return fields, note


def candidate_row(
    report: ProbeReport, work_samples: float | None, throughput_only: bool = False, work: Any = None
) -> dict[str, Any]:
    """One `--json` candidate row for a probe report (its rate alone with `throughput_only`)."""
    cand, probe = report.candidate, report.probe
    wall = wall_steady(probe)
    rates = (wall.samples_per_second, wall.low, wall.high) if wall else (None, None, None)
    row = row_of(
        **{f"samples_per_second{s}": v for s, v in zip(("", "_low", "_high"), rates)},
        **{k: getattr(cand, k) for k in ("offering", "kind", "market")},
        **{k: getattr(report, k) for k in ("status", "reason", "finish_seconds", "probe_usd")},
        name=report.stack,
        run=report.run_url,
        **{k: probe.get(k) for k in ("overhead_seconds", "stopped_by")},
    )
    if report.status in ESTIMATED and wall and not throughput_only:
        fields, note = _estimate(report, work_samples, work)
        row.update(fields)
        if note:
            row["reason"] = "; ".join(filter(None, [row["reason"], note]))
    return row


def row_of(**fields: Any) -> dict[str, Any]:
    """A `--json` candidate row: every ROW_FIELDS key, those not given None, `basis` {} unless given."""
    return dict.fromkeys(ROW_FIELDS) | {"basis": {}} | fields


def answer_doc(
    task: str,
    reports: Sequence[ProbeReport],
    unmatched: Sequence[dict[str, Any]],
    *,
    work_samples: float | None,
    deadline_hours: float | None,
    budget_usd: float | None,
    throughput_only: bool = False,
    work: Any = None,
    predicted: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The `gpubench bench --json` document; `predicted`: rows of candidates not probed (`--probe N`)."""
    rows = [candidate_row(r, work_samples, throughput_only, work) for r in reports] + list(predicted)
    # a GPU alternative that matched no offering: named with the reason, never probed
    rows += [row_of(offering=u["ask"], kind="cloud", status="unmatched", reason=u["reason"]) for u in unmatched]
    costs = [r["probe_usd"] for r in rows if r["probe_usd"] is not None]
    return {
        "task": task,
        "work_samples": work_samples,
        "candidates": rows,
        "answer": throughput_answer(rows)
        if throughput_only
        else answer(rows, deadline_hours=deadline_hours, budget_usd=budget_usd),
        "throughput_only": throughput_only,
        "probe_total_usd": round(sum(costs), 6),
    }


USD_TIE = 0.01  # an interval may reach this far past the budget before the answer warns
HOURS_TIE = 1.0 / 3600  # and times in whole seconds
MAX_CLOSE_NAMED = 3
PICK_FIELDS = (
    "offering name kind market est_hours est_hours_low est_hours_high est_usd est_usd_low est_usd_high".split()
)


def answer(rows: list[dict], *, deadline_hours: float | None, budget_usd: float | None) -> dict:
    """The picks, frontier, ranking and sentence for one bench run's candidate rows; ValueError for a limit
    that is no number of hours or dollars above zero (bench() checks its options first, a caller of this may not)."""
    if problems := check_options(deadline_hours=deadline_hours, budget_usd=budget_usd):
        raise ValueError("; ".join(problems) + " (leave it out for no limit)")
    labels = _labels(rows)
    timed = [r for r in rows if finite(r.get("est_hours")) is not None]
    priced = sorted(filter(_priced, timed), key=lambda r: (_cents(r), _seconds(r), *_names(r)))
    unpriced = sorted((r for r in timed if not _priced(r)), key=_by_time)
    picks = {"cheapest": priced[0] if priced else None, "fastest": min(timed, key=_by_time, default=None)}
    if deadline_hours is not None:
        picks["within_deadline"] = next((r for r in priced if _fits_deadline(r, deadline_hours)), None)
    if budget_usd is not None:
        picks["within_budget"] = min((r for r in priced if _fits_budget(r, budget_usd)), key=_by_time, default=None)
    out = {key: _pick(r, labels) for key, r in picks.items()}
    out["frontier"] = [_pick(r, labels) for r in _frontier(priced)]
    out["ranked"] = [_pick(r, labels) for r in priced + unpriced]
    out["unmeasured"] = _unmeasured(rows, "est_hours")
    out["unpriced"] = [
        {"offering": r.get("offering"), "name": r.get("name"), "reason": "no hourly price: time only"} for r in unpriced
    ]
    limits = {"deadline_hours": deadline_hours, "budget_usd": budget_usd}
    out["sentence"] = _sentence(rows, priced, unpriced, picks, labels, limits)
    return out


def throughput_answer(rows: list[dict]) -> dict:
    """`--throughput-only`: the measured rates, fastest first; no whole job, so no cost or time pick."""
    labels = _labels(rows)
    rated = sorted(
        (r for r in rows if finite(r.get("samples_per_second")) is not None),
        key=lambda r: (-r["samples_per_second"], *_names(r)),
    )
    out: dict = {"cheapest": None, "fastest": None, "frontier": [], "unpriced": []}
    out["ranked"] = [_pick(r, labels) | {"samples_per_second": r["samples_per_second"]} for r in rated]
    out["unmeasured"] = _unmeasured(rows, "samples_per_second")
    missing = _unmeasured_text(rows, labels, "samples_per_second")
    if not rated:
        out["sentence"] = "No candidate measured a rate." + missing
        return out
    rates = ", ".join(f"{labels[id(r)]} {r['samples_per_second']:,.1f} samples/s" for r in rated)
    out["sentence"] = f"Throughput only (--throughput-only: no whole-job estimate): {rates}." + missing
    return out


def finite(value) -> float | None:
    """A row's figure; None when absent, not a number or not finite (an unbounded end is read by _bound)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _priced(r: dict) -> bool:
    return finite(r.get("est_usd")) is not None


def _bound(row: dict, key: str) -> float:
    """An interval end; an absent upper bound is unbounded."""
    value = finite(row.get(key))
    return math.inf if value is None else value


def _labels(rows: list[dict]) -> dict[int, str]:
    """Each row as people read it: the offering, '(spot)', the stack name when two would read the same."""
    for i, r in enumerate(rows):
        if not r.get("offering"):
            raise ValueError(f"candidate {i} has no 'offering' (got keys {sorted(r)}); every row names its offering")
    plain = [str(r["offering"]) + (" (spot)" if r.get("market") == "spot" else "") for r in rows]
    return {id(r): text + (f" [{r.get('name')}]" if plain.count(text) > 1 else "") for r, text in zip(rows, plain)}


def _shown(usd_value: float) -> float:
    """A cost as the answer shows it (payload.money.usd_amount): two that read the same tie, below a cent too."""
    return float(usd_amount(usd_value).replace(",", ""))


def _cents(r: dict) -> float:
    return _shown(r["est_usd"])


def _seconds(r: dict) -> int:
    return round(r["est_hours"] * 3600)


def _names(r: dict) -> tuple[str, str]:
    return (str(r["offering"]), str(r.get("name") or ""))


def _by_time(r: dict) -> tuple:
    cost = _cents(r) if _priced(r) else math.inf
    return (_seconds(r), cost, *_names(r))


def _fits_deadline(r: dict, hours: float) -> bool:
    return _seconds(r) <= round(hours * 3600)


def _fits_budget(r: dict, limit: float) -> bool:
    return _cents(r) <= _shown(limit)


def _pick(r: dict | None, labels: dict[int, str]) -> dict | None:
    return None if r is None else {k: r.get(k) for k in PICK_FIELDS} | {"label": labels[id(r)]}


def _frontier(priced: list[dict]) -> list[dict]:
    """Rows no other row beats on both time and cost (as shown), fastest first."""
    front: list[dict] = []
    for r in sorted(priced, key=_by_time):
        if not front or _cents(r) < _cents(front[-1]):
            front.append(r)
        elif (_cents(r), _seconds(r)) == (_cents(front[-1]), _seconds(front[-1])):
            front.append(r)  # the same point twice: neither beats the other
    return front


def _unmeasured(rows: list[dict], field: str) -> list[dict]:
    """The rows without `field`, each with the reason."""
    return [
        {"offering": r.get("offering"), "name": r.get("name"), "reason": _why_unmeasured(r)}
        for r in rows
        if finite(r.get(field)) is None
    ]


def _why_unmeasured(r: dict) -> str:
    status = f" (status: {r['status']})" if r.get("status") else ""
    return str(r.get("reason") or f"no estimate{status}")


def interval(low, high, fmt: Callable[[float], str], unit: str = "") -> str:
    """'2.90-3.60 h'; an absent upper bound reads '2.90 h or more'."""
    return f"{fmt(low)}-{fmt(high)}{unit}" if finite(high) is not None else f"{fmt(low)}{unit} or more"


def _figures(r: dict) -> str:
    """'about 3.21 h (2.90-3.60 h) for USD 4.00 (3.50-4.60)': the estimates and their intervals, in one unit."""
    low, high = _bound(r, "est_hours_low"), _bound(r, "est_hours_high")
    unit = time_unit([r["est_hours"], low] + ([high] if math.isfinite(high) else []))
    hours = interval(low, high, lambda v: in_unit(v, unit), f" {unit}")
    cost = f"{usd(r['est_usd'])} ({interval(_bound(r, 'est_usd_low'), r.get('est_usd_high'), usd_amount)})"
    return f"about {in_unit(r['est_hours'], unit)} {unit} ({hours}) for " + (cost if _priced(r) else "no price")


def _sentence(rows, priced, unpriced, picks, labels, limits) -> str:
    """The answer in plain words, then ties, near ties and what could not be estimated."""
    tail = _unpriced_text(unpriced, labels) + _unmeasured_text(rows, labels)
    if not priced and not unpriced:
        return "No candidate produced an estimate." + tail
    if not priced:
        fast = picks["fastest"]
        text = f"No candidate has a price, so none is ranked by cost; the fastest is {labels[id(fast)]}"
        return f"{text}, {_figures(fast)}.{tail}"
    text = "; ".join(_headline(priced, picks, labels, limits))
    return f"{text}.{_ties_text(priced, priced + unpriced, picks, labels)}{tail}"


def _limits_with_misses(limits: dict) -> list[tuple[str, str, Callable[[dict], bool]]]:
    """(words when met, words when missed, test) for each limit the user gave, none for one not given."""
    given = (
        (limits["deadline_hours"], duration, "finishes within", "does not finish within", _fits_deadline),
        (limits["budget_usd"], usd, "costs at most", "costs more than", _fits_budget),
    )
    return [
        (f"{yes} {show(v)}", f"{no} {show(v)}", lambda r, fits=fits, v=v: fits(r, v))
        for v, show, yes, no, fits in given
        if v is not None
    ]


def _only_one(r: dict, labels, limits) -> list[str]:
    """The only candidate with an estimate: its figures and how it stands against the limits given."""
    checks = _limits_with_misses(limits)
    missed = [no for _, no, ok in checks if not ok(r)]
    if missed:
        return [f"{labels[id(r)]} {' and '.join(missed)}: {_figures(r)}"]
    met = " and ".join(yes for yes, _, _ in checks)
    parts = [f"Run it on {labels[id(r)]}: {_figures(r)}" + (f", and it {met}" if met else "")]
    return parts + _interval_caveats(r, limits["deadline_hours"], limits["budget_usd"])


def _headline(priced, picks, labels, limits) -> list[str]:
    """'Run it on X: ...' for the cheapest that meets every limit given, then the other picks."""
    if len(priced) == 1 and picks["fastest"] is priced[0]:
        return _only_one(priced[0], labels, limits)
    tests = [(words, test) for words, _, test in _limits_with_misses(limits)]
    best = next((r for r in priced if all(ok(r) for _, ok in tests)), None)
    why = " and ".join(text for text, _ in tests)
    cheapest, fastest = picks["cheapest"], picks["fastest"]
    also_fastest = ", and the fastest"
    each_fails = len(tests) > 1 and picks.get("within_deadline") is None and picks.get("within_budget") is None
    if best is None:
        parts = [f"No candidate {', and none '.join(text for text, _ in tests) if each_fails else why}"]
    else:
        role = (
            f"the cheapest that {why}"
            if best is not cheapest
            else "the cheapest" + (f", and it {why}" if tests else "")
        )
        parts = [f"Run it on {labels[id(best)]}: {_figures(best)}, {role}" + (also_fastest if best is fastest else "")]
        parts += _interval_caveats(best, limits["deadline_hours"], limits["budget_usd"])
    named = [best, cheapest]
    if cheapest is not best:
        overall = "overall " if best is not None else ""
        parts.append(
            f"the cheapest {overall}is {labels[id(cheapest)]}, {_figures(cheapest)}"
            + (also_fastest if cheapest is fastest else "")
        )
    if not any(fastest is r for r in named):
        parts.append(f"the fastest is {labels[id(fastest)]}, {_figures(fastest)}")
        named.append(fastest)
    for key, lead, limit in (
        ("within_deadline", "within {} the cheapest is", limits["deadline_hours"]),
        ("within_budget", "for at most {} the fastest is", limits["budget_usd"]),
    ):
        if key not in picks:
            continue
        shown = duration(limit) if key == "within_deadline" else usd(limit)
        r = picks[key]
        if r is None and len(tests) > 1 and not each_fails:
            parts.append(f"none {'finishes within' if key == 'within_deadline' else 'costs at most'} {shown}")
        elif r is not None and not any(r is n for n in named):
            parts.append(f"{lead.format(shown)} {labels[id(r)]}, {_figures(r)}")
            named.append(r)
    return parts


def _interval_caveats(r: dict, deadline: float | None, budget: float | None) -> list[str]:
    """When the pick meets a limit on its estimate but not across its interval."""
    out = []
    if deadline is not None and _bound(r, "est_hours_high") > deadline + HOURS_TIE:
        out.append(f"its interval reaches past the {duration(deadline)} deadline")
    if budget is not None and _bound(r, "est_usd_high") > budget + USD_TIE:
        out.append(f"its interval reaches past the {usd(budget)} budget")
    return out


def _ties_text(priced, timed, picks, labels) -> str:
    """Exact ties (what broke them) and overlapping intervals (a longer probe may reorder)."""
    cheapest, fastest = picks["cheapest"], picks["fastest"]
    tied = [r for r in priced[1:] if _cents(r) == _cents(cheapest)]
    faster = all(_seconds(cheapest) < _seconds(r) for r in tied)
    text = _tie(
        cheapest, tied, labels, "cost", f" at {usd(cheapest['est_usd'])}", faster, "faster", "take the same time"
    )
    reach = _bound(cheapest, "est_usd_high")
    close = [r for r in priced[1:] if _cents(r) != _cents(cheapest) and _bound(r, "est_usd_low") <= reach]
    if close:
        names = ", ".join(labels[id(r)] for r in close[:MAX_CLOSE_NAMED]) + (
            f" and {len(close) - MAX_CLOSE_NAMED} more" if len(close) > MAX_CLOSE_NAMED else ""
        )
        text += (
            f" Too close to call on cost: the cost intervals of {names} overlap the cheapest's; "
            "a longer probe may reorder them."
        )
    already = tied if fastest is cheapest else []  # a full tie is explained once
    timed_ties = [
        r for r in timed if r is not fastest and _seconds(r) == _seconds(fastest) and not any(r is t for t in already)
    ]
    cheaper = all(_by_time(fastest)[1] < _by_time(r)[1] for r in timed_ties)
    return text + _tie(fastest, timed_ties, labels, "time", "", cheaper, "cheaper", "cost the same")


def _tie(lead: dict, tied: list[dict], labels, on: str, at: str, broken: bool, because: str, same: str) -> str:
    """' X ties on cost with Y at USD 4.00; X is named because it is faster.' ('' without a tie)"""
    if not tied:
        return ""
    name, why = labels[id(lead)], f"they also {same}, so the first by name is named."
    why = f"{labels[id(lead)]} is named because it is {because}." if broken else why
    return f" {name} ties on {on} with {', '.join(labels[id(r)] for r in tied)}{at}; {why}"


def _unpriced_text(unpriced, labels) -> str:
    if not unpriced:
        return ""
    names = ", ".join(f"{labels[id(r)]} ({duration(r['est_hours'])})" for r in unpriced)
    return f" No price, so not ranked by cost: {names}."


def _unmeasured_text(rows, labels, field: str = "est_hours") -> str:
    missing = [r for r in rows if finite(r.get(field)) is None]
    if not missing:
        return ""
    return (
        (" Not estimated: " if field == "est_hours" else " Not measured: ")
        + "; ".join(f"{labels[id(r)]} ({_why_unmeasured(r)})" for r in missing)
        + "."
    )
