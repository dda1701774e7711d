"""The stale-price warning: the age arithmetic by hand, the option and the
environment variable, and the four commands that print it."""

from __future__ import annotations

import json
from datetime import date

import pytest

from analysis.cli import main
from analysis.price import age as price_age


def test_age_by_hand():
    today = date(2026, 1, 31)
    # newest of the dates counts: 2025-01-31 is 365 days before 2026-01-31
    assert price_age.warning(["2018-02-08", date(2025, 1, 31)], 365, today) is None
    text = price_age.warning(["2018-02-08", "2025-01-30T10:00:00"], 365, today)
    assert "2025-01-30, 366 days old" in text and "gpubench prices refresh" in text
    assert price_age.warning(["2018-02-08"], 0, today) is None  # 0 turns it off
    assert price_age.warning([None, "", "not a date"], 1, today) is None  # nothing priced from the catalog


def test_limit_option_env_default(monkeypatch):
    monkeypatch.delenv(price_age.ENV, raising=False)
    assert price_age.limit(None) == price_age.DEFAULT_DAYS == 365
    monkeypatch.setenv(price_age.ENV, "30")
    assert price_age.limit(None) == 30
    assert price_age.limit(7) == 7  # the option wins
    monkeypatch.setenv(price_age.ENV, "soon")
    with pytest.raises(ValueError, match="GPUBENCH_MAX_PRICE_AGE_DAYS='soon'"):
        price_age.limit(None)
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--max-price-age"):
            price_age.limit(bad)


def _days_since(d: str) -> int:
    return (date.today() - date.fromisoformat(d)).days


def test_cost_warns_on_an_old_price_and_not_at_as_of(capsys, monkeypatch):
    monkeypatch.delenv(price_age.ENV, raising=False)
    # aws/p2.xlarge's newest price is the SkyPilot v3 snapshot (2023-01-01)
    assert main(["cost", "aws/p2.xlarge", "--hours", "1", "--max-price-age", "30"]) == 0
    err = capsys.readouterr().err
    assert f"from 2023-01-01, {_days_since('2023-01-01')} days old" in err and "gpubench prices refresh" in err
    assert main(["cost", "aws/p2.xlarge", "--hours", "1", "--as-of", "2018-02-08", "--max-price-age", "30"]) == 0
    assert "days old" not in capsys.readouterr().err
    big = str(_days_since("2023-01-01") + 1)
    assert main(["cost", "aws/p2.xlarge", "--hours", "1", "--max-price-age", big]) == 0
    assert "days old" not in capsys.readouterr().err
    assert main(["cost", "aws/p2.xlarge", "--hours", "1", "--max-price-age", "-3"]) == 2
    assert "--max-price-age -3.0" in capsys.readouterr().err


def _offers_json(capsys, *args) -> tuple[list[dict], str]:
    assert main(["offers", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_offers_hide_each_row_priced_before_the_limit_and_say_how_many(capsys, monkeypatch):
    """Staleness is judged per row: a 2018 price never ranks beside this year's unasked."""
    every, err = _offers_json(capsys, "--max-price-age", "0")
    assert "hidden: their price" not in err
    limit = _days_since("2026-07-09") + 1  # the newest shipped snapshots pass, older ones do not
    fresh, err = _offers_json(capsys, "--max-price-age", str(limit))
    old = [r for r in every if (r["price_age_days"] or 0) > limit]
    assert old and any(r["id"] == "vastai/gtx1070ti" for r in old)
    assert {r["id"] for r in fresh} == {r["id"] for r in every} - {r["id"] for r in old}
    assert f"{len(old)} offering(s) hidden: their price is more than {limit} days older" in err
    shown, err = _offers_json(capsys, "--max-price-age", str(limit), "--stale")
    assert len(shown) == len(every) and "hidden: their price" not in err
    # on the spot market the spot price's own date decides
    spot, _ = _offers_json(capsys, "--spot", "--max-price-age", str(limit))
    assert all(r["spot_price_age_days"] is None or r["spot_price_age_days"] <= limit for r in spot)
    # the environment variable sets the same limit; 1 day hides every shipped price
    monkeypatch.setenv(price_age.ENV, "1")
    rows, err = _offers_json(capsys, "--provider", "aws")
    assert all(r["hourly_usd"] is None for r in rows) and "more than 1 days older" in err
    # on-prem boxes are priced by their own amortisation: never hidden as stale
    monkeypatch.setenv(price_age.ENV, "1")
    rows, _ = _offers_json(capsys, "--provider", "onprem")
    assert rows and all(r["price_age_days"] is None for r in rows)
