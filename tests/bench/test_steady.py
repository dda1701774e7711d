"""payload.steady: MSER-5, the Student-t quantile and the steady rate of a probe."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from payload.steady import Steady, find_gaps, mser5_cut, steady_rate, t_quantile, without_gaps

# --- Student-t quantile: published table values (4 decimals) --------------------------


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.7062),
        (0.975, 2, 4.3027),
        (0.975, 4, 2.7764),
        (0.975, 10, 2.2281),
        (0.975, 30, 2.0423),
        (0.95, 5, 2.0150),
        (0.995, 2, 9.9248),
        (0.995, 20, 2.8453),
        (0.9995, 3, 12.9240),
        (0.975, 120, 1.9799),
    ],
)
def test_t_quantile_matches_tables(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=5e-5)


def test_t_quantile_large_df_tends_to_normal():
    assert t_quantile(0.975, 1_000_000) == pytest.approx(1.959964, abs=1e-5)
    assert t_quantile(0.975, 10**9) == pytest.approx(1.9599640, abs=1e-7)


def test_t_quantile_continuous_across_the_method_switch():
    # df 1000 is the exact sum, 1001 the Cornish-Fisher expansion; tables give 1.96234 at 1000
    at, above = t_quantile(0.975, 1000), t_quantile(0.975, 1001)
    assert at == pytest.approx(1.962339, abs=1e-6)
    assert 0 < at - above < 1e-5


def test_t_quantile_symmetric_and_zero_at_median():
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4), abs=1e-12)
    assert t_quantile(0.5, 7) == 0.0


@pytest.mark.parametrize(("p", "df"), [(0.0, 3), (1.0, 3), (1.5, 3), (0.9, 0), (0.9, 2.5), (0.9, True)])
def test_t_quantile_rejects_bad_arguments(p, df):
    with pytest.raises(ValueError, match="probability|degrees of freedom"):
        t_quantile(p, df)


# --- MSER-5 ---------------------------------------------------------------------------


def test_mser5_keeps_a_flat_series():
    assert mser5_cut([3.3] * 100) == 0
    assert mser5_cut([0.1 * 3] * 37) == 0


def test_mser5_cuts_a_warmup_of_whole_batches():
    values = [1.0] * 15 + [10.0] * 85
    assert mser5_cut(values) == 15


def test_mser5_never_cuts_more_than_half_the_batches():
    values = [1.0] * 80 + [10.0] * 20
    assert mser5_cut(values) <= 50


def test_mser5_too_short_to_judge():
    assert mser5_cut([1.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0]) == 0
    assert mser5_cut([]) == 0


def test_mser5_statistic_by_hand():
    # batches of 5 means: 0, 6, 6, 6  (d=0: mean 4.5, SS 27 / 16 = 1.6875; d=1: 0 / 9 = 0)
    values = [0.0] * 5 + [6.0] * 15
    assert mser5_cut(values) == 5


# --- steady rate ----------------------------------------------------------------------


def _cumulative(intervals: list[tuple[float, float]], start: tuple[float, float] = (0.0, 0.0)):
    """(elapsed, cumulative samples) from (seconds, samples) per interval."""
    t, s = start
    points = [(t, s)]
    for dt, ds in intervals:
        t += dt
        s += ds
        points.append((t, s))
    return points


def test_constant_rate_has_zero_width():
    result = steady_rate(_cumulative([(2.0, 500.0)] * 40))
    assert result.samples_per_second == pytest.approx(250.0)
    assert result.rel_halfwidth == pytest.approx(0.0, abs=1e-12)
    assert result.low == pytest.approx(250.0) and result.high == pytest.approx(250.0)
    assert result.warmup_seconds == 0.0
    assert result.steady and result.windows >= 5


def test_warmup_is_cut_and_the_rate_is_the_steady_one():
    # 20 slow one-second intervals at 10/s, then 80 at 100/s
    points = _cumulative([(1.0, 10.0)] * 20 + [(1.0, 100.0)] * 80)
    result = steady_rate(points)
    assert result.warmup_seconds == pytest.approx(20.0)
    assert result.samples_per_second == pytest.approx(100.0)
    assert result.steady
    # the naive whole-run average would have been (200 + 8000) / 100 s
    assert result.samples_per_second > (200 + 8000) / 100
    assert result.warmup_samples == pytest.approx(200.0)  # 20 s at 10/s: what the job did before it was steady


def test_warmup_samples_count_the_first_reading_and_are_zero_cut_when_flat():
    flat = steady_rate(_cumulative([(2.0, 500.0)] * 40, start=(3.0, 700.0)))
    assert flat.warmup_seconds == 0.0 and flat.warmup_samples == pytest.approx(700.0)
    assert Steady(**flat.to_dict()) == flat


def test_rate_is_weighted_by_time_not_by_reading():
    # readings every 10 samples: 5 intervals of 1 s (10/s) and 5 of 0.1 s (100/s) alternating, no warm-up.
    # Time-weighted: 100 samples in 5.5 s = 18.18/s; the mean of ratios would say 55/s.
    intervals = [(1.0, 10.0), (0.1, 10.0)] * 25
    result = steady_rate(_cumulative(intervals))
    total_t = sum(dt for dt, _ in intervals)
    total_s = sum(ds for _, ds in intervals)
    # whatever MSER-5 cut, the kept span's rate is samples/seconds, far from the 55 of a mean of ratios
    assert result.samples_per_second == pytest.approx(total_s / total_t, rel=0.1)


def test_steady_period_rate_is_exactly_samples_over_seconds():
    rng = random.Random(7)
    intervals = [(rng.uniform(0.5, 2.0), rng.uniform(80, 120)) for _ in range(60)]
    points = _cumulative(intervals, start=(5.0, 1000.0))
    result = steady_rate(points)
    start = points[0][0] + result.warmup_seconds
    # cumulative samples at the cut, linear between readings
    before = max(p for p in points if p[0] <= start)
    after = min(p for p in points if p[0] >= start)
    frac = 0.0 if after[0] == before[0] else (start - before[0]) / (after[0] - before[0])
    at_cut = before[1] + frac * (after[1] - before[1])
    expected = (points[-1][1] - at_cut) / (points[-1][0] - start)
    assert result.samples_per_second == pytest.approx(expected, rel=1e-9)
    assert result.warmup_samples == pytest.approx(at_cut, rel=1e-12)


def test_noisy_rate_interval_covers_the_truth_in_most_trials():
    truth, covered, trials = 200.0, 0, 200
    for seed in range(trials):
        rng = random.Random(seed)
        intervals = []
        for _ in range(100):
            dt = rng.uniform(0.8, 1.2)
            intervals.append((dt, dt * rng.gauss(truth, 20.0)))
        result = steady_rate(_cumulative(intervals))
        covered += result.low <= truth <= result.high
    assert covered / trials >= 0.88  # nominal 95%; MSER may drop a noisy head


def test_noisy_rate_not_steady_under_a_tight_target():
    rng = random.Random(3)
    intervals = [(1.0, rng.gauss(100.0, 30.0)) for _ in range(30)]
    intervals = [(dt, max(ds, 0.0)) for dt, ds in intervals]
    loose = steady_rate(_cumulative(intervals), target=0.5)
    tight = steady_rate(_cumulative(intervals), target=0.001)
    assert loose.steady and not tight.steady
    assert tight.rel_halfwidth > 0.001


def test_too_few_windows_is_not_steady():
    result = steady_rate(_cumulative([(1.0, 10.0)] * 4), min_windows=5)
    assert result.windows == 4 and not result.steady


@pytest.mark.parametrize("points", [[], [(0.0, 0.0)], [(0.0, 0.0), (1.0, 5.0)]])
def test_too_few_points_says_nothing(points):
    assert steady_rate(points) is None


def test_no_progress_is_never_steady_and_serialises():
    result = steady_rate([(0.0, 10.0), (1.0, 10.0), (2.0, 10.0), (3.0, 10.0)])
    assert result.samples_per_second == 0.0 and not result.steady
    as_dict = result.to_dict()
    assert as_dict["rel_halfwidth"] is None
    json.dumps(as_dict, allow_nan=False)


def test_to_dict_round_trips():
    result = steady_rate(_cumulative([(1.0, 10.0)] * 10))
    assert Steady(**result.to_dict()) == result


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([(0.0, 0.0), (2.0, 5.0), (1.0, 9.0)], "not after the previous"),
        ([(0.0, 0.0), (1.0, 5.0), (1.0, 9.0)], "not after the previous"),
        ([(0.0, 0.0), (1.0, 5.0), (2.0, 3.0)], "cumulative samples fell"),
        ([(-1.0, 0.0), (1.0, 5.0), (2.0, 9.0)], ">= 0"),
        ([(0.0, -5.0), (1.0, 5.0), (2.0, 9.0)], ">= 0"),
        ([(0.0, 0.0), (math.nan, 5.0), (2.0, 9.0)], "finite"),
        ([(0.0, 0.0), (1.0,), (2.0, 9.0)], "must be a pair"),
        ([(0.0, 0.0), "ab", (2.0, 9.0)], "must be a pair"),
    ],
)
def test_bad_points_are_a_clear_error(points, message):
    with pytest.raises(ValueError, match=message):
        steady_rate(points)


@pytest.mark.parametrize(("kwargs", "message"), [({"target": 0}, "target"), ({"min_windows": 1}, "min_windows")])
def test_bad_settings_are_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        steady_rate([(0, 0), (1, 1), (2, 2)], **kwargs)


def test_linear_in_the_number_of_points():
    import time

    points = _cumulative([(0.1, 10.0 + (i % 7)) for i in range(20_000)])
    began = time.perf_counter()
    result = steady_rate(points)
    assert result is not None and time.perf_counter() - began < 2.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.01, 100.0), st.floats(0.0, 1e6)),
        min_size=2,
        max_size=120,
    ),
    st.floats(0.0, 1e4),
)
def test_rate_lies_within_the_readings_and_the_interval_holds_it(intervals, start):
    points = _cumulative(intervals, start=(start, 0.0))
    result = steady_rate(points)
    rates = [ds / dt for dt, ds in intervals]
    assert min(rates) * (1 - 1e-9) <= result.samples_per_second <= max(rates) * (1 + 1e-9)
    assert 0 <= result.low <= result.samples_per_second * (1 + 1e-12) <= result.high * (1 + 1e-12)
    span = points[-1][0] - points[0][0]
    assert 0 <= result.warmup_seconds <= span / 2 + 1e-9 * span
    assert 2 <= result.windows <= len(intervals)


# --- held as the window grew ------------------------------------------------------------


def test_a_gentle_trend_is_narrow_but_not_steady():
    # the rate climbs from 100 to 110/s over 400 quarter-seconds: batch means give a narrow interval,
    # the slope through them does not vanish
    points, s = [(0.0, 0.0)], 0.0
    for i in range(1, 401):
        s += 0.25 * 100 * (1 + 0.1 * i / 400)
        points.append((0.25 * i, s))
    result = steady_rate(points)
    assert result.rel_halfwidth < 0.03 and not result.steady
    assert "drifts" in result.unsteady and result.drift > 0.01


def test_a_late_change_fails_the_latest_third():
    # 60 s at 100/s, then 20 s at 130/s: the last third of the window runs faster than the whole
    result = steady_rate(_cumulative([(0.25, 25.0)] * 240 + [(0.25, 32.5)] * 80), target=0.2)
    assert result.rel_halfwidth < 0.2 and not result.steady
    assert result.latest_third > 1.1 * result.samples_per_second and result.unsteady


# --- pauses -----------------------------------------------------------------------------


def test_pauses_are_found_and_taken_out_by_hand():
    # readings every second at 100/s; after 20 s and after 40 s of training the job pauses 5 s
    intervals = [(1.0, 100.0)] * 20 + [(6.0, 100.0)] + [(1.0, 100.0)] * 19 + [(6.0, 100.0)] + [(1.0, 100.0)] * 19
    points = _cumulative(intervals)
    gaps = find_gaps(points)
    assert [(g.at, g.samples, g.seconds) for g in gaps] == [(20.0, 2000.0, 5.0), (45.0, 4000.0, 5.0)]
    gap_free = without_gaps(points, gaps)
    assert gap_free[-1] == (60.0, 6000.0) and gap_free[21] == (21.0, 2100.0)
    assert steady_rate(gap_free).samples_per_second == pytest.approx(100.0)
    assert steady_rate(points).samples_per_second < 95  # with the pauses in, the rate is not the job's


def test_a_slow_phase_of_many_readings_is_not_a_pause():
    # a reading every 100 samples: 20 at 25/s (4 s each), then 60 at 100/s; a noisy but pause-free run
    assert find_gaps(_cumulative([(4.0, 100.0)] * 20 + [(1.0, 100.0)] * 60)) == []
    # the second step compiles for 20 s: the job's start, charged once as warm-up, not a recurring pause
    assert find_gaps(_cumulative([(1.0, 100.0), (21.0, 100.0)] + [(1.0, 100.0)] * 60)) == []
    rng = random.Random(7)
    assert find_gaps(_cumulative([(rng.uniform(0.8, 1.2), 100.0) for _ in range(200)])) == []
