"""Every probe at once (a thread each), and what is live: on Ctrl-C no new probe starts, the ones in
flight are waited for, and the caller ends what is live.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from analysis.bench.readings import ProbeReport
from analysis.progress import Printer, Progress


@dataclass
class Live:
    """Something a probe started that bills until ended: how to end it and until when it may run."""

    name: str
    end: Callable[[], None]
    deadline: str | None = None  # the cloud-side deadline, when there is one
    what: str = "stack"


class Probes:
    """Shared by every probe of one bench: the stop flag, the live registry, the printer."""

    def __init__(self, printer: Printer, bound_seconds: float | None = None):
        self.printer = printer
        self.bound_seconds = bound_seconds  # the longest a probe may take (boot allowance + probe limit)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.live: dict[str, Live] = {}

    def hold(self, item: Live) -> None:
        with self._lock:
            self.live[item.name] = item

    def release(self, name: str) -> None:
        with self._lock:
            self.live.pop(name, None)

    def snapshot(self) -> list[Live]:
        with self._lock:
            return list(self.live.values())

    def sleep(self, seconds: float) -> bool:
        """Wait up to `seconds`; True when the bench is being stopped."""
        return self.stop.wait(seconds)


ProbeFn = Callable[[Any, Probes], ProbeReport]


def run_all(jobs: Sequence[tuple[Any, ProbeFn]], probes: Probes) -> list[ProbeReport]:
    """Every probe in parallel; reports in the candidates' order. Ctrl-C (KeyboardInterrupt, in this
    thread or raised inside a probe) sets `stop`, waits for the probes to wind down and re-raises."""
    if not jobs:
        return []
    pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="bench-probe")
    futures: list[Future] = [pool.submit(_start, fn, cand, probes) for cand, fn in jobs]
    try:
        with Progress(probes.bound_seconds, "probes (time left at most)", unit="s") as bar:
            _until_done_or_interrupted(futures, bar)
        reports = []
        for (cand, _), fut in zip(jobs, futures):
            try:
                reports.append(fut.result())
            except Exception as exc:  # noqa: BLE001 - one broken probe never hides the others
                why = f"the probe itself failed: {type(exc).__name__}: {exc}"
                reports.append(ProbeReport(cand, cand.name, "failed", why))
        return reports
    except KeyboardInterrupt:
        probes.stop.set()
        for fut in futures:
            fut.cancel()
        _wind_down(pool, probes)
        raise
    finally:
        pool.shutdown(wait=False)


def _start(fn: ProbeFn, cand: Any, probes: Probes) -> ProbeReport:
    if probes.stop.is_set():  # stopped before this probe's thread started: nothing is launched
        return ProbeReport(cand, cand.name, "cancelled", "stopped before it started")
    return fn(cand, probes)


def _until_done_or_interrupted(futures: list[Future], bar: Progress | None = None) -> None:
    """Wait for every probe, moving the bar each second (elapsed against the longest a probe may take,
    so its time left is an upper bound); a KeyboardInterrupt inside one (Ctrl-C in a progress hook,
    say) stops the wait."""
    pending, started = set(futures), time.monotonic()
    while pending:
        done, pending = wait(pending, timeout=1.0, return_when=FIRST_EXCEPTION)
        if any(isinstance(f.exception(), KeyboardInterrupt) for f in done if not f.cancelled()):
            raise KeyboardInterrupt
        if bar is not None:
            bar.set_done(time.monotonic() - started)
            bar.note(f"{len(futures) - len(pending)}/{len(futures)} probes ended")


def _wind_down(pool: ThreadPoolExecutor, probes: Probes) -> None:
    """Let launches in flight finish (their stacks can then be destroyed); a second Ctrl-C stops waiting."""
    busy = probes.snapshot()
    if busy:
        probes.printer(f"Ctrl-C: no new probes; waiting for {len(busy)} in flight to stop ...")
    try:
        pool.shutdown(wait=True)
    except KeyboardInterrupt:
        probes.printer("second Ctrl-C: not waiting for launches in flight")
