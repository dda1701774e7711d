"""An SSH probe (`--hosts NAME,...`): the host's stack with the task as its job and the probe limit as a run
option; its result is read back from the stack's bucket. Cancelled, the remote run is stopped at once
(SIGTERM to its process group) and what it wrote uploaded.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from analysis.bench.local import payload_grace
from analysis.bench.probes import Probes
from analysis.bench.readings import ProbeReport, newest_result, probe_cost, read_back
from infra.ssh.session import load_stack, run_ssh_stack
from payload.storage import open_store
from payload.timestamps import utcnow
from payload.workloads.process import DEFAULT_STOP_GRACE_SECONDS

# on cancel: time for the remote payload to end its job (its default grace) and write its result before it is killed
STOP_GRACE_SECONDS = payload_grace(DEFAULT_STOP_GRACE_SECONDS)


class _Lines:
    """A text stream that hands each complete line to the bench's printer, prefixed with the host."""

    def __init__(self, say):
        self.say, self.buf = say, ""

    def write(self, text: str) -> int:
        self.buf += text
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            self.say(line)
        return len(text)

    def flush(self) -> None:
        pass


class SshProbe:
    """`(candidate, probes) -> ProbeReport` for SSH host stacks."""

    def __init__(self, *, task: Path, probe_seconds: float, stacks_dir: Path | None, poll_seconds: float = 2.0):
        self.task, self.probe_seconds = Path(task).resolve(), float(probe_seconds)
        self.stacks_dir, self.poll = stacks_dir, poll_seconds

    def config(self, name: str) -> Any:
        """The host's stack with the task as its job (raises ConfigError / FileNotFoundError)."""
        return load_stack(name, self.stacks_dir).with_overrides(workload=str(self.task), benchmark=())

    def __call__(self, candidate: Any, probes: Probes) -> ProbeReport:
        name = candidate.name
        say = probes.printer.for_stack(name)
        if probes.stop.is_set():
            return ProbeReport(candidate, name, "cancelled", "stopped before it started")
        cfg = self.config(name)
        started, t0 = utcnow(), time.monotonic()
        say(f"probing on {cfg.target} (at most {self.probe_seconds:.0f} s of the job)")
        options = {"probe_seconds": str(int(max(1, round(self.probe_seconds))))}
        # once `stop` is set (the bench is cancelled) the remote run is stopped as Ctrl-C stops it
        status, report = run_ssh_stack(
            cfg,
            extra_options=options,
            progress=_Lines(say),
            poll=self.poll,
            stop_timeout=STOP_GRACE_SECONDS,
            stop=probes.stop,
        )
        seconds = time.monotonic() - t0
        if probes.stop.is_set():
            usd, billed = probe_cost(candidate, seconds)
            why = f"stopped while probing; the run on {cfg.target} was stopped ({status})"
            return ProbeReport(candidate, name, "cancelled", why, probe_usd=usd, billed_seconds=billed)
        if status not in ("completed", "failed", "interrupted", "stopped-by-user"):
            return ProbeReport(candidate, name, "failed", f"{status}: {report.get('message') or 'no run'}")
        found = newest_result(open_store(cfg.results), name, started)
        return read_back(candidate, name, found, seconds, say, "no probe result reached the bucket")
