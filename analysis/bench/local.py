"""A local probe (`--local`): the payload runs the task on this machine in probe mode, as `demo` runs its suite.

Results go to the bench's results location (a directory by default) under
`runs/<stack>/<run-id>/` like any run; the payload's output goes to a log in the
bench workspace and its `[gpubench]` lines to the progress stream. The machine is
priced as the candidate says (an assumed flat rate unless you give yours).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from analysis.bench.probes import Live, Probes
from analysis.bench.readings import ProbeReport, judge, newest_result, probe_cost
from analysis.campaign.manifest import utcnow

STOP_GRACE_SECONDS = 30  # on Ctrl-C: time for the payload to write its result before it is killed


def payload_argv(candidate: Any, *, task: Path, results: str, probe_seconds: float) -> list[str]:
    """`python -m payload run` for a probe of the task, rendered from the payload's own option table."""
    from infra.catalog import load_catalog
    from infra.launch import offering_options
    from payload.config import render_argv

    options = offering_options(load_catalog().get(candidate.offering), candidate.market, None)
    if candidate.hourly_usd is not None:
        options.update(
            hourly_usd=f"{candidate.hourly_usd:g}",
            price_source=candidate.price_source or "set for this machine",
            price_as_of=candidate.price_date or date.today().isoformat(),
        )
    values = {"workload": str(Path(task).resolve()), "results": results, "stack": candidate.name, **options}
    values["probe_seconds"] = int(max(1, round(probe_seconds)))
    return [sys.executable, "-m", "payload", "run", *render_argv(values)]


def payload_env() -> dict[str, str]:
    """This environment without GPUBENCH_* run options left in the shell (they would change the probe)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k == "GPUBENCH_SPOOL"}
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()  # SIGTERM: the payload writes an interrupted result
        try:
            proc.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class LocalProbe:
    """`(candidate, probes) -> ProbeReport` for this machine."""

    def __init__(self, *, store: Any, results: str, task: Path, probe_seconds: float, log_dir: Path):
        self.store, self.results, self.task = store, results, Path(task)
        self.probe_seconds, self.log_dir = float(probe_seconds), Path(log_dir)

    def __call__(self, candidate: Any, probes: Probes) -> ProbeReport:
        name = candidate.name
        say = probes.printer.for_stack(name)
        if probes.stop.is_set():
            return ProbeReport(candidate, name, "cancelled", "stopped before it started")
        argv = payload_argv(candidate, task=self.task, results=self.results, probe_seconds=self.probe_seconds)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        started, t0 = utcnow(), time.monotonic()
        say(f"probing on this machine (at most {self.probe_seconds:.0f} s of the job); log {log}")
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=payload_env(), text=True)
            probes.hold(Live(name, lambda: _stop(proc), what="local run"))
            while proc.poll() is None:
                if probes.sleep(0.2):
                    return ProbeReport(candidate, name, "cancelled", "stopped while probing")
        probes.release(name)
        seconds = time.monotonic() - t0
        found = newest_result(self.store, name, started)
        url, result = found if found else (None, None)
        status, reason = judge(result)
        if found is None:
            reason = f"the payload exited with {proc.returncode} and wrote no result; see {log}"
        usd, billed = probe_cost(candidate, seconds)
        say(f"probe {status}" + (f": {reason}" if reason else ""))
        return ProbeReport(candidate, name, status, reason, result, usd, billed, None, url, {"log": str(log)})
