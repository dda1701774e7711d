"""`gpubench bench --probe N`: probe a few candidates, predict the rest, probe again where in doubt.

Round one probes the most promising candidate (lowest datasheet cost per sample at the prior alpha), then
the most uncertain that could still beat it. The rest are predicted by analysis.predict; before the answer
every prediction whose interval reaches the leader's is probed while the bound stays within --budget.
docs/bench-method.md, section 6.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.bench.answer import ROW_FIELDS, candidate_row, finite, row_of
from analysis.predict import calibration as cal
from analysis.predict.predict import PREDICTED, Measured, _model_doc, fit, gpu_specs, predicted_picks
from analysis.predict.predict import candidate_row as predicted_row
from infra.catalog import load_catalog
from payload.money import USD_SIGN

PRECISION = "mixed"  # the task file does not say its precision; `gpubench predict` assumes the same by default
PREDICTED_FIGURES = ("samples_per_second", "overhead_seconds", "est_hours", "est_usd")
NOT_PREDICTED = "not-predicted"


class Model:
    """The predictor as bench uses it: the catalog's GPU figures, the shipped calibration, its prior."""

    def __init__(self, catalog: Any = None, precision: str = PRECISION, family: str = cal.ANY_FAMILY):
        self.specs = gpu_specs(catalog or load_catalog())
        self.calib = cal.shipped(tuple(sorted(self.specs.items())))
        self.precision, self.family = precision, family
        self.prior, _ = cal.prior_alpha(self.calib.priors, family, precision)

    def place(self, cand: Any) -> tuple[float, float, float] | None:
        """(ln compute, ln bandwidth, ln machine factor) of a candidate; None when the model cannot place it."""
        try:
            compute, bandwidth = cal.figures(self.specs[getattr(cand, "gpu", None)], self.precision)
        except (KeyError, cal.NotPredictable):
            return None
        scale = math.log(cal.machine_factor(cand.gpu_count, self.calib.efficiency))
        return math.log(compute), math.log(bandwidth), scale

    def speed(self, place: tuple[float, float, float]) -> float:
        """ln rate up to a constant, at the prior."""
        return self.prior * place[0] + (1 - self.prior) * place[1] + place[2]


def promise(cand: Any, model: Model, by_rate: bool) -> tuple:
    """Sort key, best first: placed before unplaced, priced before unpriced, then ln cost per sample
    (ln rate alone with `by_rate`)."""
    place = model.place(cand)
    if place is None:
        return (1, 1, 0.0)
    if by_rate:
        return (0, 0, -model.speed(place))
    if cand.hourly_usd is None or cand.hourly_usd <= 0:
        return (0, 1, -model.speed(place))
    return (0, 0, math.log(cand.hourly_usd) - model.speed(place))


def first_probes(candidates: Sequence[Any], n: int, model: Model, by_rate: bool = False) -> list[Any]:
    """The N candidates round one probes: the most promising, then the most uncertain that could still lead."""
    ordered = sorted(candidates, key=lambda c: promise(c, model, by_rate))
    chosen = ordered[:1]
    while len(chosen) < n:
        rest = [c for c in ordered if all(c is not s for s in chosen)]
        chosen.append(_most_uncertain(rest, chosen, model, by_rate))
    return chosen


def _could_lead(cand: Any, lead: Any, model: Model, by_rate: bool) -> bool:
    """Whether the candidate beats the lead at the alpha (0..1) and interval end most in its favour."""
    c, ref = model.place(cand), model.place(lead)
    if c is None or ref is None:
        return True
    gain = max(c[0] - ref[0], c[1] - ref[1]) + c[2] - ref[2] + math.log(model.calib.factor)
    if by_rate:
        return gain >= 0
    if not (cand.hourly_usd and lead.hourly_usd):
        return True  # no price to compare: never ruled out here
    return math.log(cand.hourly_usd / lead.hourly_usd) - gain <= 0


def _most_uncertain(rest: list[Any], chosen: list[Any], model: Model, by_rate: bool) -> Any:
    """The model cannot place it, else the contender furthest in balance from every chosen GPU, else the next
    most promising (rest is in promise order, so ties go to the more promising)."""
    unplaced = [c for c in rest if model.place(c) is None]
    if unplaced:
        return unplaced[0]
    contenders = [c for c in rest if _could_lead(c, chosen[0], model, by_rate)]
    if not contenders:
        return rest[0]
    # balance ln C - ln B: a wrong alpha moves a prediction by (its error) x (two GPUs' difference in balance)
    balances = [p[0] - p[1] for p in map(model.place, chosen) if p is not None]

    def spread(c: Any) -> float:
        place = model.place(c)
        return min((abs(place[0] - place[1] - b) for b in balances), default=0.0)

    return max(contenders, key=spread)  # max keeps the first of equals: the most promising


def predict_rows(
    unprobed: Sequence[Any], measured_rows: Sequence[dict], candidates: dict[str, Any], model: Model, work: Any
) -> tuple[list[dict], Any]:
    """(bench rows for the unprobed candidates, the fit) from the rates measured so far."""
    measured = [
        Measured(cand.gpu, cand.gpu_count, float(rate))
        for row in measured_rows
        if (cand := candidates.get(row["name"])) is not None
        and cand.gpu
        and isinstance(rate := row.get("samples_per_second"), (int, float))
        and rate > 0
    ]
    if not measured:
        why = "not predicted: no probe measured a rate to predict from"
        return [_row(c, {"reason": why}, NOT_PREDICTED) for c in unprobed], None
    model_fit = fit(measured, model.specs, model.calib, model.family, model.precision)
    # the probed candidates' median overhead (launch to first step, plus the finish where timed)
    found = [
        float(r["overhead_seconds"]) + float(r.get("finish_seconds") or 0.0)
        for r in measured_rows
        if isinstance(r.get("overhead_seconds"), (int, float))
    ]
    seconds = statistics.median(found) if found else None
    note = f"overhead {seconds:,.0f} s: the median of the probed candidates'" if seconds is not None else None
    note = note or "excludes boot, image pull and setup: no probe measured them"
    job = {"work_samples": work, "overhead_seconds": seconds or 0.0, "notes": [note]}
    rows = []
    for c in unprobed:
        got = predicted_row(c, measured, model.specs, model_fit, model.precision, job)
        status = PREDICTED if got["basis"] == PREDICTED else NOT_PREDICTED
        rows.append(_row(c, got | {"overhead_seconds": seconds if status == PREDICTED else None}, status))
    return rows, model_fit


def _row(cand: Any, got: dict, status: str) -> dict:
    """A predicted candidate as a bench row: every figure's basis `predicted`; no probe, so no probe cost."""
    figures = {k: got[k] for k in ROW_FIELDS if k in got and k != "basis"}
    basis = dict.fromkeys(PREDICTED_FIGURES, PREDICTED) if status == PREDICTED else {}
    row = row_of(**figures) | {k: getattr(cand, k) for k in ("offering", "name", "kind", "market")}
    return row | {"status": status, "reason": got.get("reason"), "basis": basis, "notes": list(got.get("notes") or [])}


def _metric(rows: Sequence[dict], by_rate: bool) -> tuple[str, int]:
    """(field, sign): what the ranking orders by, sign +1 when less is better."""
    priced = any(finite(r.get("est_usd")) is not None for r in rows)
    return ("samples_per_second", -1) if by_rate else ("est_usd" if priced else "est_hours", 1)


def in_doubt(rows: Sequence[dict], by_rate: bool = False) -> tuple[dict | None, list[dict]]:
    """(the leader, the predicted rows whose interval reaches the leader's, most promising first); rows the
    model could not predict count as in doubt once there is a leader."""
    key, sign = _metric(rows, by_rate)
    ranked = [r for r in rows if finite(r.get(key)) is not None]
    if not ranked:
        return None, []
    lead = min(ranked, key=lambda r: sign * r[key])
    reach = _reach(lead, by_rate, rows)["reach"]
    near = f"{key}_low" if sign > 0 else f"{key}_high"

    def overlaps(r: dict) -> bool:
        end = finite(r.get(near))
        return sign * (r[key] if end is None else end) <= sign * reach

    doubt = sorted((r for r in ranked if r["status"] == PREDICTED and overlaps(r)), key=lambda r: sign * r[key])
    return lead, doubt + [r for r in rows if r["status"] == NOT_PREDICTED]


def _reach(lead: dict, by_rate: bool, rows: Sequence[dict]) -> dict:
    """{"figure", "reach"}: the leader's interval end the others are held against (its worst case)."""
    key, sign = _metric(rows, by_rate)
    far = finite(lead.get(f"{key}_high" if sign > 0 else f"{key}_low"))
    return {"figure": key, "reach": lead[key] if far is None else far}


@dataclass
class Settled:
    """What `--probe N` did: every probe report, the rows of the candidates never probed, each round, and the
    predictions made of the candidates probed after round one."""

    reports: list[Any]
    predicted: list[dict]
    rounds: list[list[str]]  # offerings probed per round
    forecasts: dict[tuple, dict] = field(default_factory=dict)  # (offering, market) -> its row before its probe
    skipped: list[dict] = field(default_factory=list)  # in doubt, but its probe would pass the budget
    fit: Any = None
    model: Model | None = None
    leaders: list[dict] = field(default_factory=list)  # per follow-up round: the leader and how far it reached


def settle(
    candidates: Sequence[Any],
    first: Sequence[Any],
    probe: Callable[[list[Any]], list[Any]],
    model: Model,
    bounds: dict[str, float],
    budget_usd: float | None,
    work_samples: float | None,
    by_rate: bool,
    say: Callable[[str], None],
) -> Settled:
    """Probe `first`, predict the rest, probe what is in doubt within the budget, until nothing is."""
    first = list(first)
    say(f"--probe {len(first)}: probing {', '.join(c.offering for c in first)}; the other candidates are predicted")
    done = Settled(probe(first), [], [[c.offering for c in first]], model=model)
    spent = sum(bounds.get(c.name, 0.0) for c in first)
    while True:
        done.skipped = []  # what is still in doubt after the last round
        measured = [candidate_row(r, work_samples, by_rate) for r in done.reports]
        probed, by_name = {id(r.candidate) for r in done.reports}, {r.stack: r.candidate for r in done.reports}
        unprobed = [c for c in candidates if id(c) not in probed]
        work = None if by_rate else work_samples
        done.predicted, done.fit = predict_rows(unprobed, measured, by_name, model, work)
        rows = measured + done.predicted
        lead, doubt = in_doubt(rows, by_rate)  # no leader (no probe estimated anything): nothing is in doubt
        batch = []
        for row in doubt:
            cand = next(c for c in candidates if c.name == row["name"])
            cost = bounds.get(cand.name, 0.0)
            if budget_usd is not None and spent + cost > budget_usd:
                past = f"would take the probes past --budget {USD_SIGN.format(budget_usd)}"
                why = f"in doubt, but its probe (up to {USD_SIGN.format(cost)}) {past}"
                done.skipped.append({"offering": row["offering"], "name": row["name"], "reason": why})
                continue
            spent += cost
            batch.append(cand)
            done.forecasts[(cand.offering, cand.market)] = row
        if not batch:
            return done
        done.leaders.append({"offering": lead["offering"], "status": lead["status"], **_reach(lead, by_rate, rows)})
        leader = f"the leader {lead['offering']}'s" + (" (itself predicted)" if lead["status"] == PREDICTED else "")
        say(f"in doubt (their intervals reach {leader}): probing {', '.join(c.offering for c in batch)}")
        done.reports += probe(batch)
        done.rounds.append([c.offering for c in batch])


def summary(done: Settled, plan: Any, doc: dict) -> dict[str, Any]:
    """The --json `probing` section: the rounds, what was predicted, the model, and what the probes saved
    against probing every candidate (boots, and the probes' cost bound), with a sentence for each."""
    probed = [r.candidate for r in done.reports]
    predicted = [r["offering"] for r in done.predicted if r["status"] == PREDICTED]
    bound = sum(plan.bounds.get(c.name, 0.0) for c in probed)
    out = {
        "asked": len(done.rounds[0]),
        "candidates": len(plan.candidates),
        "rounds": done.rounds,
        "leaders": done.leaders,
        "probed": [c.offering for c in probed],
        "predicted": predicted,
        "not_predicted": [r["offering"] for r in done.predicted if r["status"] != PREDICTED],
        "in_doubt_not_probed": done.skipped,
        "boots_avoided": len(plan.candidates) - len(probed),
        "probe_bound_usd": bound,
        "all_probe_bound_usd": plan.total_bound_usd,
        "bound_avoided_usd": plan.total_bound_usd - bound,
        "model": _model_doc(done.fit, done.model.family, done.model.precision) if done.fit else None,
    }
    rounds = ", then ".join(str(len(r)) for r in done.rounds)
    out["sentence"] = (
        f"probed {len(probed)} of {len(plan.candidates)} candidates ({rounds}); predicted {len(predicted)}; "
        f"{out['boots_avoided']} boot(s) avoided; the probes could cost at most {USD_SIGN.format(bound)} against "
        f"{USD_SIGN.format(plan.total_bound_usd)} to probe every candidate (they cost "
        f"{USD_SIGN.format(doc['probe_total_usd'])})"
    )
    note = predicted_picks(doc["answer"], set(predicted))
    if done.skipped:
        note += " In doubt but not probed (--budget): " + ", ".join(s["offering"] for s in done.skipped) + "."
    out["note"] = note + (
        f" Probed {len(probed)} of {len(plan.candidates)} candidates; the other figures are predicted "
        "(basis `predicted`)."
        if predicted
        else ""
    )
    return out
