"""When is a probe's throughput steady, and what is it? (docs/bench-method.md, section 2): MSER-5 warm-up cut,
batch means with a Student-t 95% interval, pauses taken out first. Standard library only and linear in the
points: the payload runs it on the instance after every metrics line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from statistics import NormalDist, median

MSER_BATCH = 5  # observations per batch in MSER-5
MAX_WINDOWS = 30  # more batches add little to a t interval and shrink each batch
CONFIDENCE = 0.95
EXACT_DF_LIMIT = 1000  # above, the Cornish-Fisher expansion is accurate to better than 1e-12
# A drift across the steady window above this share of the target (and significant) is a trend: the
# window is a fraction of the job, so a change that is small across it grows over the whole job.
DRIFT_SHARE = 1 / 3
GAP_FACTOR = 4.0  # an interval this many times its neighbours' typical length is a pause
GAP_NEIGHBOURS = 5  # intervals on each side that say what is typical around one


@dataclass(frozen=True)
class Steady:
    """A probe's steady throughput and how sure we are of it. `warmup_*`: what MSER-5 cut; `windows`: the
    interval's batches; `latest_third`: the rate over the window's last third; `drift`: a fitted line's
    change across the window, over the rate; `unsteady`: why `steady` is False."""

    samples_per_second: float
    low: float
    high: float
    rel_halfwidth: float
    warmup_seconds: float
    windows: int
    steady: bool
    warmup_samples: float | None = None
    latest_third: float | None = None
    drift: float | None = None
    unsteady: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready: a non-finite figure (no progress at all) is None."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def mser5_cut(values: Sequence[float]) -> int:
    """Observations to drop as warm-up (a multiple of 5); the smallest cut within rounding of the minimum wins,
    so a flat series is never cut."""
    k = len(values) // MSER_BATCH
    if k < 2:
        return 0
    batches = [math.fsum(values[j * MSER_BATCH : (j + 1) * MSER_BATCH]) / MSER_BATCH for j in range(k)]
    stats = _mser_statistics(batches, k // 2)
    best = min(stats)
    scale = max(abs(z) for z in batches) or 1.0
    tolerance = best * 1e-9 + (scale * 1e-12) ** 2
    return MSER_BATCH * next(d for d, s in enumerate(stats) if s <= best + tolerance)


def _mser_statistics(batches: list[float], last_cut: int) -> list[float]:
    """MSER statistic for cuts 0..last_cut, by Welford's update from the end (linear, stable)."""
    k = len(batches)
    by_cut: dict[int, float] = {}
    count, mean, sq = 0, 0.0, 0.0
    for d in range(k - 1, -1, -1):
        count += 1
        delta = batches[d] - mean
        mean += delta / count
        sq += delta * (batches[d] - mean)
        if d <= last_cut:
            by_cut[d] = sq / count**2
    return [by_cut[d] for d in range(last_cut + 1)]


def t_quantile(p: float, df: int) -> float:
    """The p quantile of Student's t (no scipy): for df <= 1000 the finite sums of A&S 26.7.3-4 inverted
    by bisection on atan(t / sqrt(df)), above the Cornish-Fisher expansion (A&S 26.7.5)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be a whole number >= 1, got {df!r}")
    if not (isinstance(p, (int, float)) and 0.0 < p < 1.0):
        raise ValueError(f"probability must be strictly between 0 and 1, got {p!r}")
    if p == 0.5:
        return 0.0
    upper = _upper_quantile(max(p, 1.0 - p), df)
    return upper if p > 0.5 else -upper


@lru_cache(maxsize=256)
def _upper_quantile(p: float, df: int) -> float:
    if df > EXACT_DF_LIMIT:
        return _cornish_fisher(NormalDist().inv_cdf(p), df)
    target = 2.0 * p - 1.0  # P(|T| <= t)
    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _abs_t_cdf_at_angle(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df) * math.tan(0.5 * (lo + hi))


def _abs_t_cdf_at_angle(theta: float, df: int) -> float:
    """P(|T| <= sqrt(df) tan(theta)) for integer df (A&S 26.7.3 odd, 26.7.4 even)."""
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for j in range(1, df // 2):  # (1*3*..*(2j-1)) / (2*4*..*2j) cos^{2j}
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    if df == 1:
        return 2.0 * theta / math.pi
    term = math.cos(theta)
    total = term
    for j in range(1, (df - 1) // 2):  # (2*4*..*2j) / (1*3*..*(2j+1)) cos^{2j+1}
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2.0 / math.pi * (theta + s * total)


def _cornish_fisher(x: float, df: int) -> float:
    """t quantile from the normal quantile x: A&S 26.7.5, four terms."""
    g1 = (x**3 + x) / 4
    g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
    g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
    g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
    return x + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def steady_rate(points: Sequence[tuple[float, float]], target: float = 0.03, min_windows: int = 5) -> Steady | None:
    """The steady samples/second of (elapsed, cumulative samples) readings (None with fewer than three): steady
    when the 95% interval's half-width is at most `target` of the rate, on `min_windows` windows."""
    if not (isinstance(target, (int, float)) and math.isfinite(target) and target > 0):
        raise ValueError(f"target relative half-width must be a positive number (e.g. 0.03), got {target!r}")
    if isinstance(min_windows, bool) or not isinstance(min_windows, int) or min_windows < 2:
        raise ValueError(f"min_windows must be a whole number >= 2, got {min_windows!r}")
    times, samples = _checked_points(points)
    if len(times) < 3:
        return None
    cells = len(times) - 1  # equal time cells, one per reading interval, before the warm-up cut
    cut = mser5_cut(_window_rates(times, samples, times[0], times[-1], cells))
    kept = cells - cut
    windows = min(kept, max(min_windows, min(math.isqrt(kept), MAX_WINDOWS)))
    start = times[0] + cut * ((times[-1] - times[0]) / cells)
    window_rates = _window_rates(times, samples, start, times[-1], windows)
    mean = math.fsum(window_rates) / windows  # batch means and their Student-t interval
    var = math.fsum((r - mean) ** 2 for r in window_rates) / (windows - 1)
    half = t_quantile(0.5 + CONFIDENCE / 2, windows - 1) * math.sqrt(var / windows)
    rel = half / mean if mean > 0 else math.inf
    ok = windows >= min_windows and rel <= target
    steady = Steady(mean, max(0.0, mean - half), mean + half, rel, start - times[0], windows, ok)
    third = start + (times[-1] - start) * 2 / 3
    warmup, at_third, end = _interpolate(times, samples, [start, third, times[-1]])
    latest = (end - at_third) / (times[-1] - third)
    return _held(replace(steady, warmup_samples=warmup, latest_third=latest), window_rates, target)


def _held(steady: Steady, window_rates: list[float], target: float) -> Steady:
    """Has the rate held as the window grew? The latest third against the whole (standard error sqrt(2/b) s) and
    a line's slope through the windows' rates (t, b - 2 df), each failing when significant at 95% and material."""
    n, mean = len(window_rates), steady.samples_per_second
    if mean <= 0 or n < 3:
        return replace(steady, drift=None, unsteady=None if steady.steady else _why_wide(steady, target))
    s = math.sqrt(math.fsum((r - mean) ** 2 for r in window_rates) / (n - 1))
    change = steady.latest_third - mean
    moved = abs(change) > target * mean and abs(change) > t_quantile(0.975, n - 1) * math.sqrt(2.0 / n) * s
    x_mean = (n - 1) / 2
    sxx = math.fsum((j - x_mean) ** 2 for j in range(n))
    slope = math.fsum((j - x_mean) * (r - mean) for j, r in enumerate(window_rates)) / sxx
    residual = math.fsum((r - mean - slope * (j - x_mean)) ** 2 for j, r in enumerate(window_rates))
    se = math.sqrt(residual / (n - 2) / sxx)
    drift = slope * n / mean
    trend = abs(drift) > target * DRIFT_SHARE and abs(slope) > t_quantile(0.975, n - 2) * se
    why = _why_wide(steady, target) if not steady.steady else None
    if why is None and moved:
        why = f"the latest third of the steady window ran at {change / mean:+.1%} of the whole's rate"
    if why is None and trend:
        why = f"the rate drifts {drift:+.1%} across the steady window"
    return replace(steady, drift=drift, steady=why is None, unsteady=why)


def _why_wide(steady: Steady, target: float) -> str:
    if not math.isfinite(steady.rel_halfwidth):
        return "no progress in the steady window"
    return (
        f"95% interval +/-{steady.rel_halfwidth:.1%} on {steady.windows} windows (steady needs at most +/-{target:.1%})"
    )


def _checked_points(points: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    times: list[float] = []
    samples: list[float] = []
    for i, point in enumerate(points):
        try:
            t, s = (float(v) for v in point)
        except (TypeError, ValueError):
            raise ValueError(f"point {i} must be a pair (elapsed_seconds, cumulative_samples), got {point!r}") from None
        if not (math.isfinite(t) and math.isfinite(s)) or t < 0 or s < 0:
            raise ValueError(f"point {i} {point!r}: elapsed seconds and samples must be finite and >= 0")
        if times and t <= times[-1]:
            raise ValueError(
                f"point {i} {point!r}: elapsed {t} s is not after the previous point's {times[-1]} s "
                "(give readings in time order, one per time)"
            )
        if samples and s < samples[-1]:
            raise ValueError(
                f"point {i} {point!r}: cumulative samples fell from {samples[-1]} to {s} "
                "(give running totals, not per-step counts)"
            )
        times.append(t)
        samples.append(s)
    return times, samples


def _interpolate(times: list[float], samples: list[float], at: list[float]) -> list[float]:
    """Cumulative samples at the rising times `at`, linear between readings."""
    out: list[float] = []
    j = 0
    for t in at:
        while j < len(times) - 2 and times[j + 1] < t:
            j += 1
        t0, t1 = times[j], times[j + 1]
        frac = min(1.0, max(0.0, (t - t0) / (t1 - t0)))
        out.append(samples[j] + frac * (samples[j + 1] - samples[j]))
    return out


def _window_rates(times: list[float], samples: list[float], start: float, end: float, windows: int) -> list[float]:
    span = (end - start) / windows
    edges = [start + i * span for i in range(windows)] + [end]
    cumulative = _interpolate(times, samples, edges)
    return [(cumulative[i + 1] - cumulative[i]) / span for i in range(windows)]


@dataclass(frozen=True)
class Gap:
    """A pause that began `at` seconds with `samples` done and took `seconds` more than the rate around it."""

    at: float
    samples: float
    seconds: float

    def to_list(self) -> list[float]:
        return [round(self.at, 3), self.samples, round(self.seconds, 3)]


def find_gaps(points: Sequence[tuple[float, float]]) -> list[Gap]:
    """The pauses among the readings: long intervals (`_long`), each worth its length less its samples at the
    rate of its calm neighbours."""
    times, samples = [float(p[0]) for p in points], [float(p[1]) for p in points]  # the probe's, checked on entry
    dts = [b - a for a, b in zip(times, times[1:])]
    dss = [b - a for a, b in zip(samples, samples[1:])]
    shortest = min(dts, default=0.0)
    long = [dt > GAP_FACTOR * shortest and _long(dts, i) for i, dt in enumerate(dts)]  # no median needed when even
    gaps = []
    for i in (i for i, is_long in enumerate(long) if is_long):
        js = _neighbours(len(dts), i)
        calm = [j for j in js if not long[j]]
        rate = math.fsum(dss[j] for j in calm) / math.fsum(dts[j] for j in calm) if calm else 0.0
        extra = dts[i] - (dss[i] / rate if rate > 0 else 0.0)
        if extra > 0:
            gaps.append(Gap(times[i], samples[i], extra))
    return gaps


def without_gaps(points: Sequence[tuple[float, float]], gaps: Sequence[Gap]) -> list[tuple[float, float]]:
    """The readings with each pause's extra time taken out of every later time."""
    out, shift, pending = [], 0.0, list(gaps)
    for t, s in points:
        while pending and pending[0].at < t:
            shift += pending.pop(0).seconds
        out.append((t - shift, s))
    return out


def _long(dts: list[float], i: int) -> bool:
    """Longer than GAP_FACTOR times the median around it (a slow phase is slow around itself too); never
    one of the first two intervals (a first step's compilation is warm-up, not a pause that recurs)."""
    js = _neighbours(len(dts), i)
    return i >= 2 and dts[i] > GAP_FACTOR * median([dts[j] for j in js])


def _neighbours(n: int, i: int) -> list[int]:
    return [j for j in range(max(0, i - GAP_NEIGHBOURS), min(n, i + GAP_NEIGHBOURS + 1)) if j != i]
