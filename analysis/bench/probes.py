"""A probe: its result read back from the bucket like any run's, judged (measured, not steady, failed, ...)
and priced; and every probe at once (a thread each), with what is live: on Ctrl-C no new probe starts, the
ones in flight are waited for, and the caller ends what is live.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from analysis.observe import observe, read_result, run_time
from analysis.price.billed import billed
from analysis.progress import Printer, Progress
from payload.layout import result_key
from payload.workloads.conventions import plain
from payload.workloads.process import TAIL_MARK

# A probe's status in the bench answer; only "measured" and "not-steady" carry an estimate.
ESTIMATED = ("measured", "not-steady")


@dataclass
class ProbeReport:
    """One candidate's probe: where it ran, what came back, what it cost."""

    candidate: Any  # analysis.bench.candidates.Candidate
    stack: str  # its runs land under runs/<stack>/
    status: str  # measured | not-steady | no-rate | failed | interrupted | no-result | launch-failed | cancelled
    reason: str | None = None
    result: dict[str, Any] | None = None
    probe_usd: float | None = None
    run_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    finish_seconds: float | None = None  # measured: the job's end to the machine's release (local probes)

    @property
    def probe(self) -> dict[str, Any]:
        return dict((self.result or {}).get("probe") or {})


def newest_result(store: Any, stack: str, since: datetime | None) -> tuple[str, dict[str, Any]] | None:
    """(run URL, result.json) of the stack's newest run with a result since `since` (clock skew allowed)."""
    obs = observe(store, stack, since)
    if not obs.runs:
        return None
    run = max(obs.runs, key=run_time)
    key = run.result_key or result_key(stack, run.run_id)  # the newest version of its result
    try:
        doc = read_result(store, key)
    except Exception:  # noqa: BLE001 - half-written (the next poll reads it), or larger than any result
        return None
    return (store.url_for(key), doc) if isinstance(doc, dict) else None


MAX_REASON_CHARS = 300
MAX_TAIL_LINES = 20


def _error_parts(result: dict[str, Any]) -> tuple[str, list[str]]:
    """(the failure's first line, the last lines of the job's output, control sequences removed): the
    reason is one line, so a table cell and a sentence stay whole; the tail is printed once, with the
    probe's progress."""
    text = str(result.get("error") or result.get("message") or "the job failed")
    head, _, tail = text.partition(TAIL_MARK)
    first = next((line.strip() for line in head.splitlines() if line.strip()), "the job failed")
    lines = [_clip(shown) for line in tail.splitlines() if (shown := plain(line)).strip()]
    return _clip(first), lines[-MAX_TAIL_LINES:]


def _clip(text: str) -> str:
    """At most MAX_REASON_CHARS, a cut one ending in '...' so it does not read as the whole reason."""
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3].rstrip() + "..."


def verdict_lines(status: str, reason: str | None, result: dict[str, Any] | None) -> list[str]:
    """What a probe says when it ends: its status and reason, then (a failed job) its output's last lines."""
    lines = [f"probe {status}" + (f": {reason}" if reason else "")]
    if status == "failed" and result:
        lines += [f"  | {line}" for line in _error_parts(result)[1]]
    return lines


def judge(result: dict[str, Any] | None) -> tuple[str, str | None]:
    """(status, reason) of a probe from its result.json."""
    if result is None:
        return "no-result", "no probe result reached the bucket"
    probe = result.get("probe") or {}
    steady = probe.get("steady")
    if result.get("status") == "failed" and not steady:
        why, tail = _error_parts(result)
        shown = f"; the last {len(tail)} lines of its output were printed with the probe's progress" if tail else ""
        return "failed", f"the job failed during the probe: {why}{shown}"
    if result.get("status") == "interrupted" and not (steady or {}).get("steady"):
        return "interrupted", "the machine was reclaimed (spot) or stopped before the rate was steady"
    if not probe:
        return "no-rate", "the run has no probe section (the payload did not run in probe mode)"
    if not steady:
        return "no-rate", (
            "too few metrics lines to measure a rate: the job must print its cumulative samples "
            '(GPUBENCH_METRICS {"samples": N} or MLPerf train_samples) while it trains'
        )
    if not steady.get("steady"):
        return "not-steady", (
            f"throughput not steady by the probe limit ({probe.get('stopped_by')}): "
            + (steady.get("unsteady") or f"interval +/-{100 * float(steady.get('rel_halfwidth') or 0):.1f} %")
            + "; the estimate is wide"
        )
    return "measured", None


def read_back(
    candidate: Any, name: str, found: Any, seconds: float, say: Any, missing: str, **more: Any
) -> ProbeReport:
    """A probe's report from what `newest_result` found (`missing`: the reason when nothing came), its verdict
    said and `seconds` priced; `note` adds to the reason, `more` fills the report's other fields."""
    url, result = found or (None, None)
    status, reason = judge(result)
    reason = "; ".join(filter(None, [missing if found is None else reason, more.pop("note", None)])) or None
    for line in verdict_lines(status, reason, result):
        say(line)
    return ProbeReport(candidate, name, status, reason, result, probe_cost(candidate, seconds), run_url=url, **more)


def probe_cost(candidate: Any, seconds: float) -> float | None:
    """USD of `seconds` on the candidate under its offering's rule; None without a price."""
    if candidate.terms is None or candidate.hourly_usd is None:  # no offering rule: no price either
        return None
    _, usage, fees = billed(candidate.terms, seconds, candidate.hourly_usd)
    return usage + fees


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
    thread or raised inside a probe) sets `stop`, lets launches in flight finish (their stacks can then be
    destroyed; a second Ctrl-C stops waiting) and re-raises."""
    if not jobs:
        return []

    def start(fn: ProbeFn, cand: Any) -> ProbeReport:
        if probes.stop.is_set():  # stopped before this probe's thread started: nothing is launched
            return ProbeReport(cand, cand.name, "cancelled", "stopped before it started")
        return fn(cand, probes)

    pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="bench-probe")
    futures: list[Future] = [pool.submit(start, fn, cand) for cand, fn in jobs]
    try:
        # the bar: elapsed against the longest a probe may take, so its time left is an upper bound
        with Progress(probes.bound_seconds, "probes (time left at most)", unit="s") as bar:
            pending, started = set(futures), time.monotonic()
            while pending:
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_EXCEPTION)
                # a KeyboardInterrupt inside a probe (Ctrl-C in a progress hook, say) stops the wait
                if any(isinstance(f.exception(), KeyboardInterrupt) for f in done if not f.cancelled()):
                    raise KeyboardInterrupt
                bar.set_done(time.monotonic() - started)
                bar.note(f"{len(futures) - len(pending)}/{len(futures)} probes ended")
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
        if busy := probes.snapshot():
            probes.printer(f"Ctrl-C: no new probes; waiting for {len(busy)} in flight to stop ...")
        try:
            pool.shutdown(wait=True)
        except KeyboardInterrupt:
            probes.printer("second Ctrl-C: not waiting for launches in flight")
        raise
    finally:
        pool.shutdown(wait=False)
