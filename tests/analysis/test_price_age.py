"""The stale-price warning: the age arithmetic by hand, the option and the
environment variable, and the four commands that print it."""

from __future__ import annotations

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


def test_offers_and_env_variable(capsys, monkeypatch):
    monkeypatch.setenv(price_age.ENV, "1")
    assert main(["offers", "--provider", "aws", "--json"]) == 0
    err = capsys.readouterr().err
    assert "days old" in err and "limit 1 days" in err
    monkeypatch.setenv(price_age.ENV, "0")
    assert main(["offers", "--provider", "aws", "--json"]) == 0
    assert "days old" not in capsys.readouterr().err
