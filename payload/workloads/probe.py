"""Probe mode: run the job only until its throughput is steady, then stop it (docs/workloads.md, "Probe mode";
the rule: docs/bench-method.md, "When the probe stops"). Points use the job's own clock when the first reading
carries one (GPUBENCH_METRICS ``seconds``, MLLOG ``time_ms``), else arrival time, never both."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from payload.steady import find_gaps, steady_rate, without_gaps
from payload.timestamps import parse_iso
from payload.workloads.metrics import Progress

DEFAULT_TARGET = 0.03  # relative half-width of the 95 % interval that counts as steady
MAX_POINTS = 2000  # points kept (and stored in the result); beyond this every other one is dropped
CHECK_EVERY_SECONDS = 0.5  # steady_rate runs at most this often, however fast the job prints
MIN_READINGS = 10  # no verdict on fewer readings: a handful can agree by chance
FLOOR_SHARE = 1 / 3  # a probe runs at least this share of its limit unless it saw the job's structure
# Periods of the job's structure (epochs, evaluation periods, periods between pauses) that stand in for the
# floor. One is enough to outlast a slow first epoch, not to see a cost that comes every few of them (a
# checkpoint every fifth epoch, Keras's stall at the start of some epochs): the floor also guards those.
STRUCTURE_PERIODS = 10
PERIOD_MARGIN = 1.25  # waiting for a second pause: its expected time times this must fit in the limit


class ProbeMonitor:
    """Readings in, a stop decision and the result's ``probe`` record out. Thread-safe: the job's
    output pump calls `observe`, the runner's wait loop calls `should_stop`."""

    def __init__(
        self,
        limit_seconds: float,
        target: float = DEFAULT_TARGET,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        estimate: Callable = steady_rate,
    ):
        self.limit_seconds, self.target = float(limit_seconds), float(target)
        self._clock, self._wall, self._estimate = clock, wall, estimate
        self._lock = threading.Lock()
        self.points: list[list[float]] = []
        self.arrivals: list[float] = []  # when each kept point's line arrived, seconds since start()
        self.readings = 0  # every usable reading, kept or thinned out
        self._stride = 1
        self.stopped_by: str | None = None
        self.steady = None  # the last payload.steady.Steady computed
        self.first_step: dict | None = None  # the first reading: {"samples", "elapsed"}
        self._clock_kind: str | None = "unset"
        self._t0 = self._wall0 = None
        self._last_check = float("-inf")
        self.elapsed_at_stop: float | None = None
        self.warnings: list[str] = []  # for the result: an estimate that failed
        self.boundaries: list[list] = []  # [seconds since start() on arrival, "epoch" | "eval"]
        self._boundary_times: list[tuple[float, str]] = []  # the same on the points' clock
        self.gaps: list = []  # payload.steady.Gap: pauses in the readings, on the points' clock
        self.settled_by: str | None = None  # what let the probe stop: "floor" | "epoch" | "eval" | "pauses"

    def start(self) -> None:
        """The job's timed part starts now: the time limit counts from here."""
        self._t0, self._wall0 = self._clock(), self._wall()

    def _elapsed(self) -> float:
        return self._clock() - self._t0 if self._t0 is not None else 0.0

    def _point_time(self, progress: Progress) -> float | None:
        """Seconds since start() on the probe's one clock, or None for a reading on another clock."""
        if self._clock_kind == "unset":
            self._clock_kind = progress.clock
        if progress.clock != self._clock_kind:
            return None
        if progress.clock == "json":
            return progress.seconds
        if progress.clock == "mllog":
            return progress.seconds - (self._wall0 or 0.0)
        return self._elapsed()

    def observe(self, progress: Progress | None) -> bool:
        """Record one reading; True when it is the job's first (the caller marks `first_step`)."""
        if progress is None:
            return False
        with self._lock:
            if self.stopped_by is not None:
                return False
            first, kept = self._observe(progress)
            if progress.boundary is not None:
                self._boundary(progress.boundary)
            if kept:
                self._check()
            return first

    def _boundary(self, kind: str) -> None:
        """The end of an epoch or an evaluation; at most MAX_POINTS kept, so it cannot grow the result."""
        if len(self.boundaries) >= MAX_POINTS:
            return
        self.boundaries.append([round(self._elapsed(), 3), kind])
        if self.points:
            self._boundary_times.append((self.points[-1][0], kind))

    def _observe(self, progress: Progress) -> tuple[bool, bool]:
        """(the job's first reading, a point kept)."""
        if progress.samples is None:
            return False, False
        first = self.first_step is None
        if first:
            self.first_step = {"samples": progress.samples, "elapsed": round(self._elapsed(), 3)}
        at = self._point_time(progress)
        at = round(at, 3) if at is not None else None  # as kept: two lines in one millisecond are one time
        if (
            at is None
            or at < 0
            or progress.samples < 0
            or (self.points and (at <= self.points[-1][0] or progress.samples < self.points[-1][1]))
        ):
            return first, False
        samples = progress.samples
        self._keep([at, int(samples) if float(samples).is_integer() else samples], self._elapsed())
        return first, True

    def _keep(self, point: list[float], arrived: float) -> None:
        self.readings += 1
        if (self.readings - 1) % self._stride:
            return
        self.points.append(point)
        self.arrivals.append(arrived)
        if len(self.points) > MAX_POINTS:
            self.points, self.arrivals = self.points[::2], self.arrivals[::2]
            self._stride *= 2

    def wall_per_job_second(self) -> float | None:
        """Wall seconds per second of the job's own clock over the steady part: a job's clock may leave out
        time spent elsewhere (`seconds` counting training only), arrival times do not; a whole job's wall time
        is its job-clock time times this. None on the arrival clock or with fewer than two steady points."""
        if self._clock_kind in ("unset", None) or self.steady is None or len(self.points) < 2:
            return None
        cut = self._steady_start()
        first = next((i for i, p in enumerate(self.points) if p[0] >= cut), len(self.points) - 1)
        job_span = self.points[-1][0] - self.points[first][0]
        wall_span = self.arrivals[-1] - self.arrivals[first]
        if job_span <= 0 or wall_span <= 0:
            return None
        return round(wall_span / job_span, 4)

    def _check(self) -> None:
        now = self._clock()
        if self.readings < MIN_READINGS or now - self._last_check < CHECK_EVERY_SECONDS:
            return
        self._last_check = now
        self.steady = self._safe_estimate()
        if self.steady is not None and self.steady.steady and self._settled() and not self._second_pause_due():
            self._stop("steady")

    @property
    def floor_seconds(self) -> float:
        """The least a steady probe runs unless it saw the job's structure: a steady slow first phase
        (compilation, caching) cannot be told from the steady state by its readings, only outlasted."""
        return self.limit_seconds * FLOOR_SHARE

    def _settled(self) -> bool:
        """Past the floor, or STRUCTURE_PERIODS periods of the job's own structure seen with a third of the
        steady window after them."""
        if self._elapsed() >= self.floor_seconds:
            self.settled_by = "floor"
            return True
        latest = self.points[-1][0] - (self.points[-1][0] - self._steady_start()) / 3
        seen = [kind for at, kind in self._boundary_times if at <= latest]
        pauses = sum(1 for g in self.gaps if g.at <= latest) - 1  # whole periods between pauses
        units = {"epoch": seen.count("epoch"), "eval": seen.count("eval") - 1, "pauses": pauses}
        self.settled_by = next((kind for kind, n in units.items() if n >= STRUCTURE_PERIODS), None)
        return self.settled_by is not None

    def _steady_start(self) -> float:
        """Where the steady window starts on the points' clock: after the warm-up and the pauses in it."""
        warmup = float(self.steady.warmup_seconds or 0.0)
        return self.points[0][0] + warmup + self._shift_before(warmup)

    def _shift_before(self, gap_free_seconds: float) -> float:
        """Pause seconds before a time given on the gap-free clock from the first point (to the points' clock)."""
        shift, t0 = 0.0, self.points[0][0]
        for gap in self.gaps:
            if gap.at - shift - t0 >= gap_free_seconds:
                break
            shift += gap.seconds
        return shift

    def _second_pause_due(self) -> bool:
        """One pause seen: will a second come within the limit? Then wait for it to measure the period."""
        if len(self.gaps) != 1 or self.steady.samples_per_second <= 0:
            return False
        gap = self.gaps[0]  # a job counts its samples from 0: the first period is the samples before it
        left = (2 * gap.samples - self.points[-1][1]) / self.steady.samples_per_second + gap.seconds
        return left > 0 and self._elapsed() + left * PERIOD_MARGIN <= self.limit_seconds

    def _safe_estimate(self):
        """The estimate, or None with a warning: a bug here must not stop the job's output pump."""
        try:
            self.gaps = find_gaps(self.points)
            return self._estimate(without_gaps(self.points, self.gaps), self.target)
        except Exception as exc:  # noqa: BLE001 - reported in the result, the probe runs on to its limit
            if not self.warnings:
                self.warnings.append(f"probe: the steady-rate estimate failed ({type(exc).__name__}: {exc})")
            return None

    def _stop(self, reason: str) -> None:
        self.stopped_by = reason
        self.elapsed_at_stop = round(self._elapsed(), 3)

    def should_stop(self) -> bool:
        """Steady already, or the time limit is up: stop the job."""
        with self._lock:
            if self.stopped_by is None and self._t0 is not None and self._elapsed() >= self.limit_seconds:
                self._stop("time-limit")
            return self.stopped_by is not None

    @property
    def stopped_early(self) -> bool:
        return self.stopped_by in ("steady", "time-limit")

    def finish(self) -> None:
        """The job is over: one that ended by itself is `job-ended`; the estimate covers every point kept."""
        with self._lock:
            if self.stopped_by is None:
                self._stop("job-ended")
            if self.points:
                self.steady = self._safe_estimate()

    def to_dict(self, overhead: float | None) -> dict:
        """``result["probe"]``."""
        return {
            "limit_seconds": self.limit_seconds,
            "target": self.target,
            "stopped_by": self.stopped_by,
            "elapsed_seconds": self.elapsed_at_stop,
            "overhead_seconds": overhead,
            "steady": self.steady.to_dict() if self.steady is not None else None,
            "clock": self._clock_kind if self._clock_kind != "unset" else None,
            "wall_per_job_second": self.wall_per_job_second(),
            "readings": self.readings,
            "floor_seconds": round(self.floor_seconds, 3),
            "settled_by": self.settled_by if self.stopped_by == "steady" else None,
            "boundaries": [list(b) for b in self.boundaries],
            "gaps": [g.to_list() for g in self.gaps],
            "points": [list(p) for p in self.points],
        }


def overhead_seconds(timeline: list[dict]) -> float | None:
    """Seconds from the earliest event (instance launch on a cloud, run start locally) to `first_step`."""
    first = next((e for e in timeline if e.get("event") == "first_step"), None)
    if first is None or not timeline:
        return None
    earliest = min(parse_iso(e["time"]) for e in timeline)
    return round(parse_iso(first["time"]) - earliest, 3)
