"""The probe plan: the most each probe can cost under its offering's billing rule (bounds computed by hand
here), the total, the table printed before anything starts, and the budget check."""

from __future__ import annotations

import math
from datetime import date

import pytest

from analysis.bench.candidates import Candidate, cloud_candidates, local_candidate
from analysis.bench.plan import BudgetExceeded, check_budget, make_plan
from infra.catalog import BillingTerms
from payload.workloads.spec import parse_spec

PER_SECOND = BillingTerms("aws", date(2017, 10, 2), "metered", "test", increment_seconds=1, minimum_seconds=60)
PER_HOUR = BillingTerms("aws", date(2006, 8, 25), "metered", "test", increment_seconds=3600, minimum_seconds=3600)
PER_MINUTE_10_MIN = BillingTerms("gcp", date(2013, 12, 2), "metered", "test", increment_seconds=60, minimum_seconds=600)
MONTHLY_FEE = BillingTerms(
    "paperspace", date(2017, 1, 1), "metered", "test", increment_seconds=0.001, monthly_fee_usd=5.0
)
PRORATED = BillingTerms("hetzner-monthly", date(2017, 1, 1), "monthly", "test")


def candidate(name: str, terms: BillingTerms | None, hourly: float | None, offering="aws/g4dn.xlarge", **kw):
    fields = dict(
        kind="cloud",
        name=name,
        offering=offering,
        provider=offering.split("/")[0],
        region="us-east-1",
        market="on-demand",
        gpu="T4",
        gpu_count=1,
        hourly_usd=hourly,
        price_source="test",
        price_date="2025-07-01",
        terms=terms,
    )
    fields.update(kw)
    return Candidate(**fields)


# (terms, offering, $/h, probe minutes, boot seconds, the bound worked out by hand)
BOUNDS = [
    # 10 min + 10 min = 1200 s, billed per second: a third of an hour
    (PER_SECOND, "aws/g4dn.xlarge", 0.60, 10, 600, 0.60 / 3),
    # the same 1200 s under hourly billing: one whole hour
    (PER_HOUR, "aws/g4dn.xlarge", 0.60, 10, 600, 0.60),
    # 50 min + 20 min = 4200 s: two started hours
    (PER_HOUR, "aws/g4dn.xlarge", 0.60, 50, 1200, 1.20),
    # 30 s, no boot: the 60 s minimum
    (PER_SECOND, "aws/g4dn.xlarge", 0.60, 0.5, 0, 0.60 / 60),
    # 3 min, no boot, per minute with a 10 min minimum: 10 minutes
    (PER_MINUTE_10_MIN, "gcp/n1-standard-4+1xt4", 0.54, 3, 0, 0.54 / 6),
    # 12.5 min + 0: rounded up to 13 whole minutes
    (PER_MINUTE_10_MIN, "gcp/n1-standard-4+1xt4", 0.54, 12.5, 0, 0.54 * 13 / 60),
    # per millisecond plus a $5/month fee prorated over 730 h: 1200 s = 1/3 h
    (MONTHLY_FEE, "paperspace/v100", 0.51, 10, 600, 0.51 / 3 + 5.0 / 730 / 3),
    # monthly rent prorated: the hours used
    (PRORATED, "hetzner/ex51-ssd-gpu", 0.22, 15, 300, 0.22 / 3),
]


@pytest.mark.parametrize("terms, offering, hourly, minutes, boot, expected", BOUNDS)
def test_each_bound_is_the_probe_billed_under_its_rule(terms, offering, hourly, minutes, boot, expected):
    plan = make_plan([candidate("c", terms, hourly, offering)], probe_minutes=minutes, boot_allowance_seconds=boot)
    assert plan.bounds == {"c": pytest.approx(expected)} and plan.total_bound_usd == pytest.approx(expected)
    assert plan.probe_seconds == minutes * 60 and plan.boot_allowance_seconds == boot


def test_total_table_and_unpriced_candidates():
    rows = [
        candidate("aws-g4dn-1x", PER_SECOND, 0.60),
        candidate("old-aws", PER_HOUR, 0.90, gpu="V100", gpu_count=4),
        candidate("ssh-box", None, None, kind="ssh", offering="hetzner/ex51-ssd-gpu"),
    ]
    plan = make_plan(rows, probe_minutes=10)  # default allowance: 600 s, so 1200 s each
    assert plan.bounds == {"aws-g4dn-1x": pytest.approx(0.20), "old-aws": pytest.approx(0.90)}
    assert plan.total_bound_usd == pytest.approx(1.10) and plan.unpriced == ["ssh-box"]
    text = plan.table()
    lines = text.splitlines()
    assert lines[0].split() == [
        "#",
        "candidate",
        "offering",
        "market",
        "gpus",
        "$/h",
        "billing",
        "price",
        "as",
        "of",
        "probe",
        "at",
        "most",
    ]
    assert "aws-g4dn-1x" in lines[2] and "$0.20" in lines[2] and "1x T4" in lines[2] and "per second" in lines[2]
    assert "old-aws" in lines[3] and "$0.90" in lines[3] and "4x V100" in lines[3] and "per hour" in lines[3]
    assert "ssh-box" in lines[4] and "unpriced" in lines[4]
    assert "at most 10 min after up to 10 min of boot" in text and "cost at most $1.10" in text
    assert "Not in that total (no price in the catalog): ssh-box." in text


def test_budget_check_names_the_bound_the_budget_and_the_fix():
    plan = make_plan(
        [candidate("cheap", PER_SECOND, 0.60), candidate("dear", PER_HOUR, 3.00)],
        probe_minutes=5,
        boot_allowance_seconds=0,
    )
    # 300 s: $0.05 per second-billed, $3.00 for the started hour
    assert plan.total_bound_usd == pytest.approx(3.05)
    check_budget(plan, None)
    check_budget(plan, 3.05)
    with pytest.raises(BudgetExceeded) as exc:
        check_budget(plan, 2.0)
    message = str(exc.value)
    assert "up to $3.05" in message and "--budget $2.00" in message
    assert "raise --budget" in message and "--probe-minutes" in message and "dear, up to $3.00" in message


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="--probe-minutes 0"):
        make_plan([candidate("c", PER_SECOND, 1.0)], probe_minutes=0)
    with pytest.raises(ValueError, match="--probe-minutes nan"):
        make_plan([candidate("c", PER_SECOND, 1.0)], probe_minutes=float("nan"))
    with pytest.raises(ValueError, match="boot allowance -1"):
        make_plan([candidate("c", PER_SECOND, 1.0)], probe_minutes=1, boot_allowance_seconds=-1)
    with pytest.raises(ValueError, match=r"--budget -1: give US dollars > 0"):
        check_budget(make_plan([candidate("c", PER_SECOND, 1.0)], probe_minutes=1), -1)
    with pytest.raises(ValueError, match="share the stack name c"):
        make_plan([candidate("c", PER_SECOND, 1.0), candidate("c", PER_HOUR, 1.0)], probe_minutes=1)


def test_a_plan_from_real_candidates_notes_retired_offerings(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_LOCAL_HOURLY_USD", "0.36")
    spec = parse_spec({"name": "j", "run": "x", "resources": {"accelerators": ["T4", "V100"]}}, tmp_path / "t.yaml")
    found, _ = cloud_candidates(spec)
    plan = make_plan([*found, local_candidate()], probe_minutes=10, boot_allowance_seconds=0)
    assert plan.bounds["local"] == pytest.approx(0.36 / 6)  # per second, no minimum: 10 minutes
    for c in found:  # 600 s rounded up to the rule's increment, at least its minimum
        billed = max(c.terms.minimum_seconds, math.ceil(600 / c.terms.increment_seconds) * c.terms.increment_seconds)
        assert c.terms.kind == "metered" and plan.bounds[c.name] == pytest.approx(c.hourly_usd * billed / 3600)
    passed_over = [n for c in found for n in c.notes if n.startswith("retired")]
    text = plan.table()
    assert all(note in text for note in passed_over) and ("never probed" in text) == bool(passed_over)
