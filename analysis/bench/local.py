"""A local probe (`--local`): the payload runs the task on this machine in probe mode, as `demo` runs its suite.

Results go to the bench's results location (a directory by default) under
`runs/<stack>/<run-id>/` like any run; the payload's output goes to a log in the
bench workspace and its `[gpubench]` lines to the progress stream. The machine is
priced as the candidate says (an assumed flat rate unless you give yours).

The payload runs in its own session (process group): Ctrl-C at the terminal
reaches the bench only, and the bench ends the probe by signalling the whole
group (the payload and the job it started), after asking once more. The probe
measures what a full run on this machine is billed for beyond the training:
the payload's own start (a `process_start` host event written just before the
process is started opens its timeline, so the overhead counts it) and the time
from the job's end to the process's exit (result files, upload).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from analysis.bench.probes import Live, Probes
from analysis.bench.readings import ProbeReport, judge, last_lines, newest_result, probe_cost
from analysis.campaign.manifest import utcnow
from payload.events import iso as iso_ms
from payload.events import parse_iso

STOP_GRACE_SECONDS = 30  # on Ctrl-C: time for the payload to write its result before it is killed
JOB_END_EVENT = "train_end"  # the run phase's end in the payload's timeline


def payload_argv(
    candidate: Any, *, task: Path, results: str, probe_seconds: float, host_events: Path | None = None
) -> list[str]:
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
    if host_events is not None:
        values["host_events"] = str(host_events)
    return [sys.executable, "-m", "payload", "run", *render_argv(values)]


def payload_env() -> dict[str, str]:
    """This environment without GPUBENCH_* run options left in the shell (they would change the probe)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k == "GPUBENCH_SPOOL"}
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def write_process_start(path: Path) -> None:
    """The host event that opens the probe's timeline: now, just before the payload process starts."""
    event = {"event": "process_start", "time": iso_ms(), "source": "host"}
    path.write_text(json.dumps(event) + "\n", encoding="utf-8")


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    """`sig` to the payload's process group (it leads its own session); the process alone if that is gone."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.send_signal(sig)


def stop_payload(proc: subprocess.Popen, grace: float = STOP_GRACE_SECONDS) -> None:
    """End a probe: SIGTERM to its process group (the payload writes an interrupted result), KILL after `grace`."""
    if proc.poll() is not None:
        return
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=10)


def finish_seconds(result: dict | None, exited_at: float) -> float | None:
    """Seconds from the job's end (the run phase's end event) to the payload's exit, or None when not timed."""
    ends = [e for e in (result or {}).get("timeline") or [] if e.get("event") == JOB_END_EVENT and e.get("time")]
    if not ends:
        return None
    return round(max(0.0, exited_at - parse_iso(ends[-1]["time"])), 3)


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
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log, events = self.log_dir / f"{name}.log", self.log_dir / f"{name}.host-events.jsonl"
        argv = payload_argv(
            candidate, task=self.task, results=self.results, probe_seconds=self.probe_seconds, host_events=events
        )
        started, t0 = utcnow(), time.monotonic()
        say(f"probing on this machine (at most {self.probe_seconds:.0f} s of the job); log {log}")
        write_process_start(events)
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=payload_env(), text=True, start_new_session=True
            )
            probes.hold(Live(name, lambda: stop_payload(proc), what="local run"))
            while proc.poll() is None:
                if probes.sleep(0.2):
                    return ProbeReport(candidate, name, "cancelled", "stopped while probing")
        exited_at = time.time()
        probes.release(name)
        seconds = time.monotonic() - t0
        found = newest_result(self.store, name, started)
        url, result = found if found else (None, None)
        status, reason = judge(result)
        if found is None:
            reason = f"the payload exited with {proc.returncode} and wrote no result; see {log}"
        usd, billed = probe_cost(candidate, seconds)
        say(f"probe {status}" + (f": {reason}" if reason else ""))
        for line in last_lines(result) if status == "failed" else []:
            say(f"  | {line}")
        finish = finish_seconds(result, exited_at)
        extra = {"log": str(log)}
        return ProbeReport(candidate, name, status, reason, result, usd, billed, None, url, extra, finish)
