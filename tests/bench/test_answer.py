"""analysis.bench.answer: picks, frontier, ordering, ties and the sentence that answers."""

from __future__ import annotations

import random

import pytest

from analysis.bench.answer import answer


def row(offering, hours, cost, *, spread=(0.9, 1.1), market="on-demand", name=None, **extra):
    """A candidate row as `bench --json` prints it; the interval is hours/cost x spread."""
    lo, hi = spread
    out = {
        "offering": offering,
        "name": name or offering.replace("/", "-") + ("-spot" if market == "spot" else ""),
        "kind": "cloud",
        "market": market,
        "status": "done",
        "reason": None,
        "est_hours": hours,
        "est_hours_low": hours * lo,
        "est_hours_high": hours * hi,
        "est_usd": cost,
        "est_usd_low": None if cost is None else cost * lo,
        "est_usd_high": None if cost is None else cost * hi,
    }
    return out | extra


# cheap and slow, dear and fast, a middle one, and one the middle one dominates
SLOW = row("aws/g4dn.xlarge", 10.0, 4.0)
FAST = row("gcp/a2-highgpu-1g", 2.0, 16.0)
MIDDLE = row("aws/g5.xlarge", 5.0, 8.0)
DOMINATED = row("aws/p3.2xlarge", 6.0, 9.0)
FAILED = {"offering": "gcp/g2-standard-4", "name": "gcp-g2-1x", "status": "failed", "reason": "quota: 0 L4 GPUs"}
ROWS = [SLOW, FAST, MIDDLE, DOMINATED, FAILED]


def test_cheapest_and_fastest():
    a = answer(ROWS, deadline_hours=None, budget_usd=None)
    assert a["cheapest"]["offering"] == "aws/g4dn.xlarge"
    assert a["fastest"]["offering"] == "gcp/a2-highgpu-1g"
    assert a["cheapest"]["est_usd"] == 4.0 and a["cheapest"]["est_usd_high"] == pytest.approx(4.4)


def test_limit_clauses_only_when_given():
    a = answer(ROWS, deadline_hours=None, budget_usd=None)
    assert "within_deadline" not in a and "within_budget" not in a
    assert "deadline" not in a["sentence"] and "at most" not in a["sentence"]


def test_sentence_answers_with_figures_and_intervals():
    a = answer(ROWS, deadline_hours=None, budget_usd=None)
    s = a["sentence"]
    assert s.startswith("Run it on aws/g4dn.xlarge: about 10.0 h (9.00-11.0 h) for USD 4.00 (3.60-4.40), the cheapest")
    assert "the fastest is gcp/a2-highgpu-1g, about 2.00 h (1.80-2.20 h) for USD 16.00 (14.40-17.60)" in s
    assert "Not estimated: gcp/g2-standard-4 (quota: 0 L4 GPUs)." in s


def test_within_deadline_is_the_cheapest_that_finishes():
    a = answer(ROWS, deadline_hours=6.0, budget_usd=None)
    assert a["within_deadline"]["offering"] == "aws/g5.xlarge"  # 8 USD in 5 h beats 9 USD in 6 h
    s = a["sentence"]
    assert s.startswith(
        "Run it on aws/g5.xlarge: about 5.00 h (4.50-5.50 h) for USD 8.00 (7.20-8.80), the cheapest that finishes within 6.00 h"
    )
    assert "the cheapest overall is aws/g4dn.xlarge" in s


def test_deadline_met_on_the_estimate_but_not_the_interval_is_said():
    a = answer(ROWS, deadline_hours=5.2, budget_usd=None)
    assert a["within_deadline"]["offering"] == "aws/g5.xlarge"
    assert "its interval reaches past the 5.20 h deadline" in a["sentence"]


def test_within_budget_is_the_fastest_that_fits():
    a = answer(ROWS, deadline_hours=None, budget_usd=10.0)
    assert a["within_budget"]["offering"] == "aws/g5.xlarge"  # 5 h beats 6 h (9 USD) and 10 h (4 USD)
    s = a["sentence"]
    assert "the cheapest, and it costs at most USD 10.00" in s
    assert "for at most USD 10.00 the fastest is aws/g5.xlarge, about 5.00 h" in s


def test_both_limits():
    a = answer(ROWS, deadline_hours=7.0, budget_usd=8.5)
    assert a["within_deadline"]["offering"] == "aws/g5.xlarge"
    assert a["within_budget"]["offering"] == "aws/g5.xlarge"
    assert a["sentence"].startswith("Run it on aws/g5.xlarge: about 5.00 h")
    assert "finishes within 7.00 h and costs at most USD 8.50" in a["sentence"]


def test_nothing_within_the_limits():
    a = answer(ROWS, deadline_hours=1.0, budget_usd=None)
    assert a["within_deadline"] is None
    assert a["sentence"].startswith(
        "No candidate finishes within 1.00 h; the cheapest is aws/g4dn.xlarge, about 10.0 h"
    )
    both = answer(ROWS, deadline_hours=1.0, budget_usd=1.0)
    assert both["sentence"].startswith("No candidate finishes within 1.00 h, and none costs at most USD 1.00;")
    one = answer(ROWS, deadline_hours=3.0, budget_usd=5.0)  # each alone is possible, not both
    assert one["sentence"].startswith("No candidate finishes within 3.00 h and costs at most USD 5.00;")
    assert one["within_deadline"]["offering"] == "gcp/a2-highgpu-1g"
    assert one["within_budget"]["offering"] == "aws/g4dn.xlarge"


def test_frontier_excludes_dominated_fastest_first():
    a = answer(ROWS, deadline_hours=None, budget_usd=None)
    assert [f["offering"] for f in a["frontier"]] == ["gcp/a2-highgpu-1g", "aws/g5.xlarge", "aws/g4dn.xlarge"]


def test_ranked_by_cost_then_unpriced_by_time():
    local = row("local/this-machine", 30.0, None, kind="local", name="local")
    a = answer([*ROWS, local], deadline_hours=None, budget_usd=None)
    assert [r["offering"] for r in a["ranked"]] == [
        "aws/g4dn.xlarge",
        "aws/g5.xlarge",
        "aws/p3.2xlarge",
        "gcp/a2-highgpu-1g",
        "local/this-machine",
    ]
    assert a["unpriced"] == [
        {"offering": "local/this-machine", "name": "local", "reason": "no hourly price: time only"}
    ]
    assert "No price, so not ranked by cost: local/this-machine (30.0 h)." in a["sentence"]


def test_unpriced_can_be_the_fastest():
    local = row("local/this-machine", 0.5, None, kind="local", name="local")
    a = answer([SLOW, local], deadline_hours=None, budget_usd=None)
    assert a["fastest"]["offering"] == "local/this-machine"
    assert "the fastest is local/this-machine, about 30.0 min (27.0-33.0 min) for no price" in a["sentence"]


def test_unmeasured_reasons():
    no_reason = {"offering": "aws/g6.xlarge", "name": "aws-g6-1x", "status": "timed-out"}
    a = answer([SLOW, FAILED, no_reason], deadline_hours=None, budget_usd=None)
    assert a["unmeasured"] == [
        {"offering": "gcp/g2-standard-4", "name": "gcp-g2-1x", "reason": "quota: 0 L4 GPUs"},
        {"offering": "aws/g6.xlarge", "name": "aws-g6-1x", "reason": "no estimate (status: timed-out)"},
    ]


def test_nothing_estimated():
    a = answer([FAILED], deadline_hours=None, budget_usd=None)
    assert a["cheapest"] is None and a["fastest"] is None and a["frontier"] == []
    assert a["sentence"] == "No candidate produced an estimate. Not estimated: gcp/g2-standard-4 (quota: 0 L4 GPUs)."
    assert answer([], deadline_hours=None, budget_usd=None)["sentence"] == "No candidate produced an estimate."


def test_no_prices_at_all():
    a = answer([row("local/this-machine", 3.0, None, name="local")], deadline_hours=None, budget_usd=None)
    assert a["cheapest"] is None and a["fastest"]["name"] == "local"
    assert a["sentence"].startswith(
        "No candidate has a price, so none is ranked by cost; the fastest is local/this-machine"
    )


def test_ordering_is_stable_under_input_order():
    rows = [*ROWS, row("aws/g6.xlarge", 10.0, 4.0), row("aws/g5.xlarge", 5.0, 8.0, market="spot")]
    first = answer(rows, deadline_hours=6.0, budget_usd=9.0)
    for seed in range(5):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        again = answer(shuffled, deadline_hours=6.0, budget_usd=9.0)
        assert (
            again["ranked"] == first["ranked"]
            and again["sentence"].split(" Not estimated")[0] == (first["sentence"].split(" Not estimated")[0])
        )


def test_cost_tie_broken_by_time_and_explained():
    quicker = row("gcp/n1-standard-4+1xt4", 8.0, 4.0)
    a = answer([SLOW, quicker], deadline_hours=None, budget_usd=None)
    assert a["cheapest"]["offering"] == "gcp/n1-standard-4+1xt4"
    assert (
        "gcp/n1-standard-4+1xt4 ties on cost with aws/g4dn.xlarge at USD 4.00; "
        "gcp/n1-standard-4+1xt4 is named because it is faster." in a["sentence"]
    )


def test_full_tie_broken_by_name_and_explained():
    twin = row("aws/g6.xlarge", 10.0, 4.0)
    a = answer([twin, SLOW], deadline_hours=None, budget_usd=None)
    assert a["cheapest"]["offering"] == "aws/g4dn.xlarge"
    assert (
        "aws/g4dn.xlarge ties on cost with aws/g6.xlarge at USD 4.00; "
        "they also take the same time, so the first by name is named." in a["sentence"]
    )
    assert "ties on time" not in a["sentence"]  # said once, as a full tie


def test_overlapping_intervals_are_too_close_to_call():
    near = row("aws/g6.xlarge", 9.0, 4.2)  # 3.78..4.62 overlaps 3.60..4.40
    a = answer([SLOW, near, FAST], deadline_hours=None, budget_usd=None)
    assert "Too close to call on cost: the cost intervals of aws/g6.xlarge overlap the cheapest's" in a["sentence"]
    apart = answer([SLOW, FAST], deadline_hours=None, budget_usd=None)
    assert "Too close to call" not in apart["sentence"]


def test_same_offering_twice_is_told_apart_by_name():
    a = answer(
        [row("aws/g5.xlarge", 5.0, 8.0, name="east"), row("aws/g5.xlarge", 5.5, 7.0, name="west")],
        deadline_hours=None,
        budget_usd=None,
    )
    assert a["cheapest"]["label"] == "aws/g5.xlarge [west]"
    assert "Run it on aws/g5.xlarge [west]" in a["sentence"]


def test_spot_is_labelled():
    spot = row("aws/g5.xlarge", 5.0, 3.0, market="spot")
    a = answer([spot, row("aws/g4dn.xlarge", 10.0, 4.0)], deadline_hours=None, budget_usd=None)
    assert a["sentence"].startswith("Run it on aws/g5.xlarge (spot): ")
    assert "and the fastest" in a["sentence"]


def test_one_candidate_is_neither_the_cheapest_nor_the_fastest_in_words():
    one = row("aws/g5.xlarge", 5.0, 3.0, market="spot")
    a = answer([one, FAILED], deadline_hours=None, budget_usd=None)
    assert a["sentence"].startswith("Run it on aws/g5.xlarge (spot): about 5.00 h (4.50-5.50 h) for USD 3.00")
    assert "cheapest" not in a["sentence"] and "fastest" not in a["sentence"]
    assert "within" not in a["sentence"] and "at most" not in a["sentence"]  # no limit was given
    assert "Not estimated: gcp/g2-standard-4 (quota: 0 L4 GPUs)" in a["sentence"]
    assert a["cheapest"]["offering"] == a["fastest"]["offering"] == "aws/g5.xlarge"  # the picks stay for --json


@pytest.mark.parametrize(
    "deadline,budget,says",
    [
        (
            6.0,
            None,
            "Run it on aws/g5.xlarge: about 5.00 h (4.50-5.50 h) for USD 3.00 (2.70-3.30), and it finishes within 6.00 h.",
        ),
        (
            None,
            10.0,
            "Run it on aws/g5.xlarge: about 5.00 h (4.50-5.50 h) for USD 3.00 (2.70-3.30), and it costs at most USD 10.00.",
        ),
        (4.0, None, "aws/g5.xlarge does not finish within 4.00 h: about 5.00 h"),
        (4.0, 2.0, "aws/g5.xlarge does not finish within 4.00 h and costs more than USD 2.00: about 5.00 h"),
        (None, 2.0, "aws/g5.xlarge costs more than USD 2.00: about 5.00 h"),
    ],
)
def test_one_candidate_against_the_limits_given(deadline, budget, says):
    a = answer([row("aws/g5.xlarge", 5.0, 3.0)], deadline_hours=deadline, budget_usd=budget)
    assert a["sentence"].startswith(says)
    assert "cheapest" not in a["sentence"] and "fastest" not in a["sentence"]
    if deadline is None:
        assert "finish" not in a["sentence"] and "deadline" not in a["sentence"]
    if budget is None:
        assert "costs" not in a["sentence"] and "budget" not in a["sentence"]


def test_unbounded_upper_interval():
    r = row("aws/g5.xlarge", 5.0, 3.0) | {"est_hours_high": None, "est_usd_high": None}
    a = answer([r], deadline_hours=None, budget_usd=None)
    assert "about 5.00 h (4.50 h or more) for USD 3.00 (2.70 or more)" in a["sentence"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"deadline_hours": 0}, "--deadline 0: give hours > 0"),
        ({"deadline_hours": -1}, "--deadline -1: give hours > 0"),
        ({"deadline_hours": float("nan")}, "--deadline nan: give hours > 0"),
        ({"budget_usd": -1}, "--budget -1: give US dollars > 0"),
        ({"budget_usd": float("inf")}, "--budget inf: give US dollars > 0"),
    ],
)
def test_bad_limits_are_refused_not_answered(kwargs, message):
    """A library caller's limit is checked here too: never 'does not finish within -3,600 s'."""
    limits = {"deadline_hours": None, "budget_usd": None} | kwargs
    with pytest.raises(ValueError, match=message):
        answer(ROWS, **limits)


def test_row_without_offering():
    with pytest.raises(ValueError, match="candidate 1 has no 'offering'"):
        answer([SLOW, {"name": "x"}], deadline_hours=None, budget_usd=None)


def test_a_cost_tie_to_the_cent_is_broken_by_time_not_by_a_fraction_of_a_cent():
    # 4.001 and 4.004 both read USD 4.00: the faster one wins, though a tenth of a cent dearer
    slower = row("aws/g4dn.xlarge", 10.0, 4.001)
    faster = row("aws/g6.xlarge", 9.0, 4.004)
    a = answer([slower, faster], deadline_hours=None, budget_usd=None)
    assert a["cheapest"]["offering"] == "aws/g6.xlarge"
    assert "aws/g6.xlarge is named because it is faster." in a["sentence"]
    assert [f["offering"] for f in a["frontier"]] == ["aws/g6.xlarge"]


def test_fastest_tie_broken_by_cost():
    dear = row("aws/p4d.24xlarge", 2.0, 30.0)
    a = answer([dear, FAST], deadline_hours=None, budget_usd=None)
    assert a["fastest"]["offering"] == "gcp/a2-highgpu-1g"
    assert (
        "gcp/a2-highgpu-1g ties on time with aws/p4d.24xlarge; gcp/a2-highgpu-1g is named because it is cheaper."
        in (a["sentence"])
    )
