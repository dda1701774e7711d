"""`bench --probe N` without a cloud: which candidates round one probes, the predictions of the rest, the
follow-up probes of whatever the predictions leave in doubt (within --budget), and predictions set beside
later measurements. Probes are stood in for by a function returning the reports a probe would."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from analysis.bench import judge
from analysis.bench.answer import answer_doc
from analysis.bench.candidates import cloud_candidates
from analysis.bench.plan import make_plan
from analysis.bench.probes import ProbeReport
from analysis.bench.record import BenchRecord
from analysis.bench.settle import NOT_PREDICTED, Model, first_probes, in_doubt, settle, summary
from analysis.predict.calibration import figures, machine_factor
from analysis.predict.predict import PREDICTED

SIX = "T4,L4,A10G,L40S,H100,T4:4"  # six AWS candidates; the catalog has no bandwidth for A10G
WORK = 5e9


@pytest.fixture(scope="module")
def model():
    return Model()


@pytest.fixture(scope="module")
def six():
    task = SimpleNamespace(resources=SimpleNamespace(accelerators=(), providers=("aws",)), path="t.yaml")
    found, _ = cloud_candidates(task, gpus=SIX, spot=False)
    assert len(found) == 6
    return found


def report(cand, rate, status="measured"):
    steady = {"samples_per_second": rate, "low": rate * 0.98, "high": rate * 1.02, "rel_halfwidth": 0.02}
    steady |= {"warmup_seconds": 1.0, "windows": 8, "steady": True}
    probe = {"limit_seconds": 60, "stopped_by": "steady", "overhead_seconds": 120.0, "steady": steady}
    result = {"status": "completed", "probe": probe} if status == "measured" else {"status": "failed"}
    return ProbeReport(cand, cand.name, status, None if status == "measured" else "exit 1", result, 0.01)


def prober(rates, log):
    """A probe round: each candidate's rate from `rates` (GPU -> samples/s); `log` keeps each round's names."""

    def probe(chosen):
        log.append([c.offering for c in chosen])
        return [report(c, rates[c.gpu] * c.gpu_count) if c.gpu in rates else report(c, 0, "failed") for c in chosen]

    return probe


def cost_per_sample(cand, model):
    """hourly / rate at the prior, from the datasheet figures: what 'most promising' ranks by."""
    compute, bandwidth = figures(model.specs[cand.gpu], model.precision)
    rate = (
        compute**model.prior * bandwidth ** (1 - model.prior) * machine_factor(cand.gpu_count, model.calib.efficiency)
    )
    return cand.hourly_usd / rate


def test_round_one_takes_the_most_promising_then_the_one_the_model_cannot_place(six, model):
    placed = [c for c in six if model.place(c) is not None]
    best = min(placed, key=lambda c: cost_per_sample(c, model))
    first = first_probes(six, 2, model)
    assert first[0] is best
    assert model.place(first[1]) is None and first[1].gpu == "A10G"  # no bandwidth figure: most uncertain
    third = first_probes(six, 3, model)[2]
    assert model.place(third) is not None and third is not best
    assert len({id(c) for c in first_probes(six, 6, model)}) == 6  # every candidate, each once


def test_the_third_pick_is_a_contender_furthest_in_balance_from_the_first(six, model):
    first = first_probes(six, 2, model)[0]
    balance = {
        c.name: math.log(figures(model.specs[c.gpu], "mixed")[0] / figures(model.specs[c.gpu], "mixed")[1])
        for c in six
        if model.place(c) is not None
    }
    third = first_probes(six, 3, model)[2]
    # no other unprobed GPU that could still lead lies further from the first in compute-to-bandwidth balance
    others = [c for c in six if model.place(c) is not None and c is not first]
    spreads = {c.name: abs(balance[c.name] - balance[first.name]) for c in others}
    assert spreads[third.name] == max(spreads[n] for n in spreads if n in _contenders(six, first, model))


def _contenders(six, first, model):
    from analysis.bench.settle import _could_lead

    return {c.name for c in six if c is not first and _could_lead(c, first, model, False)}


def run_settle(six, model, rates, budget=None, n=2):
    log = []
    plan = make_plan(six, probe_minutes=10)
    done = settle(
        six,
        first_probes(six, n, model),
        prober(rates, log),
        model=model,
        bounds=plan.bounds,
        budget_usd=budget,
        work_samples=WORK,
        by_rate=False,
        say=lambda text: None,
    )
    return done, log, plan


def test_whatever_the_predictions_leave_in_doubt_is_probed_before_the_answer(six, model):
    rates = {g: 2000.0 for g in ("T4", "L4", "A10G", "L40S", "H100")}  # one rate everywhere: datasheets mislead
    done, log, plan = run_settle(six, model, rates)
    assert len(log[0]) == 2 and len(log) >= 2  # two first, then the ones in doubt
    assert done.rounds == log
    for probed, leader in zip(log[1:], done.leaders):
        for offering in probed:
            forecast = next(v for (o, _), v in done.forecasts.items() if o == offering)
            assert forecast["status"] == PREDICTED and forecast["est_usd_low"] <= leader["reach"]
    # at the answer nothing predicted reaches the leader's interval
    rows = answer_doc(
        "t", done.reports, [], work_samples=WORK, deadline_hours=None, budget_usd=None, predicted=done.predicted
    )["candidates"]
    lead, doubt = in_doubt(rows)
    assert lead["status"] == "measured" and doubt == []
    predicted = [r for r in rows if r["status"] == PREDICTED]
    assert predicted and all(r["probe_usd"] is None and set(r["basis"].values()) == {PREDICTED} for r in predicted)
    assert all(r["est_usd_low"] > lead["est_usd_high"] for r in predicted)
    assert len(done.reports) + len(predicted) == 6


def test_the_budget_caps_the_follow_ups_and_names_what_stayed_in_doubt(six, model):
    rates = {g: 2000.0 for g in ("T4", "L4", "A10G", "L40S", "H100")}
    free, _, plan = run_settle(six, model, rates)
    follow = [o for r in free.rounds[1:] for o in r]
    assert follow, "the unbudgeted run probed something in doubt"
    first = sum(plan.bounds[c.name] for c in first_probes(six, 2, model))
    cheapest_follow = min(plan.bounds[c.name] for c in six if c.offering in follow)
    capped, log, _ = run_settle(six, model, rates, budget=first + cheapest_follow * 0.5)
    assert log == capped.rounds[:1]  # nothing fits after round one
    assert {s["offering"] for s in capped.skipped} >= {follow[0]}
    assert all("--budget" in s["reason"] for s in capped.skipped)
    doc = answer_doc(
        "t", capped.reports, [], work_samples=WORK, deadline_hours=None, budget_usd=None, predicted=capped.predicted
    )
    said = summary(capped, plan, doc)
    assert said["in_doubt_not_probed"] == capped.skipped and "In doubt but not probed (--budget)" in said["note"]
    assert said["boots_avoided"] == 4 and said["bound_avoided_usd"] == pytest.approx(plan.total_bound_usd - first)


def test_without_a_measured_rate_nothing_is_predicted_and_nothing_more_is_probed(six, model):
    done, log, _ = run_settle(six, model, rates={})
    assert len(log) == 1
    assert done.predicted and all(r["status"] == NOT_PREDICTED for r in done.predicted)
    assert all("no probe measured a rate" in r["reason"] for r in done.predicted)


def test_predictions_are_recorded_and_set_beside_a_later_measurement(tmp_path, six, model):
    rates = {g: 2000.0 for g in ("T4", "L4", "A10G", "L40S", "H100")}
    done, _, _ = run_settle(six, model, rates)
    rows = answer_doc(
        "t", done.reports, [], work_samples=WORK, deadline_hours=None, budget_usd=None, predicted=done.predicted
    )["candidates"]
    old = BenchRecord.create(tmp_path / "b1", "b1", "/tasks/t.yaml", None)
    old.data[judge.PREDICTIONS] = judge.recorded(rows, "b1", done.fit.alpha, "2026-01-01T00:00:00Z")
    old.save()
    other = BenchRecord.create(tmp_path / "b0", "b0", "/tasks/other.yaml", None)  # another task: ignored
    other.data[judge.PREDICTIONS] = [dict(p, samples_per_second=1.0) for p in old.data[judge.PREDICTIONS]]
    other.save()
    predicted = {r["offering"]: r for r in rows if r["status"] == PREDICTED}
    offering, p = next(iter(predicted.items()))
    measured = {"offering": offering, "market": p["market"], "status": "measured", "samples_per_second": 2000.0}
    forecasts = judge.earlier("/tasks/t.yaml", [tmp_path / "b0", tmp_path / "b1"], "b2")
    (check,) = judge.checks([measured], forecasts)
    assert check["predicted"] == p["samples_per_second"] and check["measured"] == 2000.0
    assert check["error_pct"] == pytest.approx(100 * (p["samples_per_second"] - 2000.0) / 2000.0)
    assert check["within_interval"] == (p["samples_per_second_low"] <= 2000.0 <= p["samples_per_second_high"])
    text = judge.line(check)
    assert text.startswith(f"{offering}: predicted {p['samples_per_second']:,.1f} samples/s")
    assert f"measured 2,000.0, error {check['error_pct']:+.1f} %" in text and "bench b1" in text
    assert judge.checks([measured], judge.earlier("/tasks/t.yaml", [tmp_path / "b1"], "b1")) == []  # not itself


def test_with_throughput_only_doubt_is_judged_on_the_rates(six):
    def row(name, status, rate, low, high):
        return {"offering": name, "name": name, "status": status, "samples_per_second": rate} | {
            "samples_per_second_low": low,
            "samples_per_second_high": high,
        }

    lead = row("a", "measured", 1000.0, 990.0, 1010.0)
    reaching = row("b", "predicted", 800.0, 600.0, 995.0)  # its high reaches the leader's low
    short = row("c", "predicted", 600.0, 400.0, 850.0)  # below the leader's low (900)
    faster = row("d", "predicted", 1100.0, 900.0, 1500.0)  # predicted faster than the measured leader
    got_lead, doubt = in_doubt([lead, reaching, short, faster], by_rate=True)
    assert got_lead is faster and [r["name"] for r in doubt] == ["d", "b"]  # the predicted leader first


def test_the_confirmation_names_round_one_and_the_most_follow_ups_can_add(six, model):
    from analysis.bench.run import spend_lines, subplan

    plan = make_plan(six, probe_minutes=10)
    upfront = subplan(plan, first_probes(six, 2, model))
    first, more = spend_lines(plan, upfront, None)
    assert "for 2 probe(s) of 6 candidates" in first
    assert f"${plan.total_bound_usd - upfront.total_bound_usd:,.2f} more" in more
    _, capped = spend_lines(plan, upfront, upfront.total_bound_usd + 0.1)
    assert "$0.10 more" in capped and "(within --budget)" in capped
    assert spend_lines(plan, plan, None) == [f"at most ${plan.total_bound_usd:,.2f} for 6 probe(s)"]
    every = subplan(plan, first_probes(six, 6, model))
    assert spend_lines(plan, every, None) == [f"at most ${every.total_bound_usd:,.2f} for 6 probe(s)"]


def test_the_command_takes_probe_and_refuses_a_bad_count_before_anything_starts(tmp_path, capsys):
    from bench_fakes import write_task

    from analysis.cli import main
    from payload import exitcodes

    task = write_task(tmp_path / "task", accelerators=("T4:1", "L4:1"))
    code = main(["bench", str(task), "--probe", "3", "--yes", "--project-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "--probe 3: there are only 2 candidate(s); give --probe 2 or fewer" in err
    assert not (tmp_path / ".gpubench").exists()


def test_the_terminal_answer_says_what_was_predicted_and_saved(six, model, capsys):
    from analysis.commands.bench import _print_answer

    done, _, plan = run_settle(six, model, {g: 2000.0 for g in ("T4", "L4", "A10G", "L40S", "H100")})
    doc = answer_doc(
        "t", done.reports, [], work_samples=WORK, deadline_hours=None, budget_usd=None, predicted=done.predicted
    )
    doc["probing"] = summary(done, plan, doc)
    doc["prediction_checks"] = judge.checks(
        doc["candidates"], {k: v | {"bench_id": "b"} for k, v in done.forecasts.items()}
    )
    _print_answer(doc | {"page": "index.html"})
    out = capsys.readouterr().out
    predicted = [r["offering"] for r in doc["candidates"] if r["status"] == PREDICTED]
    assert predicted and all(any(o in ln and "predicted" in ln for ln in out.splitlines()) for o in predicted)
    assert f"{doc['probing']['boots_avoided']} boot(s) avoided" in out
    assert out.count("prediction vs measurement: ") == len(done.forecasts) > 0
