"""The probe runners, one per kind of candidate: `(candidate, probes) -> ProbeReport`.

Cloud: one generated Pulumi stack per candidate in the bench's workspace, launched, read back, destroyed; its
stack file is the project's stack of that offering with the job keys replaced (the task, `probeSeconds`, and
`maxHours` covering probe and boot, so the cloud-side deadline ends the machine even if this process dies).
This machine: the payload in probe mode in its own session; Ctrl-C reaches the bench only, which signals the
payload's process group, waits longer than its grace, then kills any process still carrying the probe's mark.
SSH hosts: the host's stack with the task as its job.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import yaml

from analysis.bench.probes import Live, ProbeReport, Probes, newest_result, probe_cost, read_back
from analysis.bench.record import BenchRecord
from analysis.launch_failures import up
from infra import clouds
from infra.catalog import load_catalog
from infra.config import MIN_HOURS, parse_config
from infra.launch import offering_options, resolve
from infra.ssh.session import load_stack, run_ssh_stack
from infra.stacks import load_config
from infra.tags import DEADLINE_OUTPUTS
from infra.workspace import output_value
from payload import proctree
from payload.config import render_argv
from payload.layout import check_stack_name
from payload.storage import open_store
from payload.timestamps import iso, parse_iso, utcnow
from payload.workloads.jobvenv import ENVS_ENV, INHERIT_ENV
from payload.workloads.process import DEFAULT_STOP_GRACE_SECONDS, KILL_WAIT_SECONDS, STOP_GRACE_ENV, stop_grace_seconds
from payload.yamlfile import read_yaml

# Job keys of a checked-in stack that a probe replaces (it runs the task, nothing else).
JOB_KEYS = ("suite", "workload", "epochs", "steps", "batchSize", "params", "data", "probeSeconds", "maxHours")
TEARDOWN_SLACK_SECONDS = 600  # on top of probe + boot allowance in maxHours: time to destroy before the deadline
UPLOAD_GRACE_SECONDS = 120  # after the probe limit: the payload writes and uploads its result


def probe_stack_name(candidate: Any, bench_id: str) -> str:
    """The candidate's stack name made unique to this bench (Pulumi stack names are per project)."""
    suffix = "b" + bench_id.rsplit("-", 1)[-1]
    return check_stack_name(f"{candidate.name[: 99 - len(suffix)]}-{suffix}")


def max_hours(probe_seconds: float, boot_allowance_seconds: float) -> float:
    """gpubench:maxHours for a probe: probe + boot allowance + time to tear down, rounded up to 3 minutes."""
    hours = (probe_seconds + boot_allowance_seconds + TEARDOWN_SLACK_SECONDS) / 3600.0
    return max(MIN_HOURS, math.ceil(hours * 20) / 20)


def write_project(bench_dir: Path, project: Path) -> None:
    """The bench workspace's Pulumi.yaml: the project's, with its program and venv reached by relative paths."""
    doc = read_yaml(project / "Pulumi.yaml")
    rel = Path(os.path.relpath(project, bench_dir))
    doc["main"] = str(rel / str(doc.get("main") or "infra/"))
    options = (doc.get("runtime") or {}).get("options") if isinstance(doc.get("runtime"), dict) else None
    if isinstance(options, dict) and options.get("virtualenv"):
        options["virtualenv"] = str(rel / options["virtualenv"])
    doc["stackConfigDir"] = "stacks"
    (bench_dir / "stacks").mkdir(parents=True, exist_ok=True)
    (bench_dir / "Pulumi.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def stack_config(
    candidate: Any, *, task: Path, probe_seconds: float, hours: float, results: str, stacks_dir: Path, catalog: Any
) -> dict[str, Any]:
    """The probe stack's config: the offering's checked-in stack (if any) with the job keys replaced."""
    offering = catalog.get(candidate.offering)
    try:
        base = load_config(offering.stack_name(candidate.market), stacks_dir)
    except (FileNotFoundError, ValueError):
        base = {}
    config = {k: v for k, v in base.items() if k not in {f"gpubench:{j}" for j in JOB_KEYS}}
    config.update(clouds.get(offering.provider).stack_keys(offering))
    if candidate.region:
        config[f"{offering.provider}:region"] = candidate.region
    config.update(
        {
            "gpubench:offering": offering.id,
            "gpubench:market": candidate.market,
            "gpubench:workload": str(Path(task).resolve()),
            "gpubench:probeSeconds": int(math.ceil(probe_seconds)),
            "gpubench:maxHours": hours,
            "gpubench:results": results,
        }
    )
    return config


class CloudProbe:
    """`(candidate, probes) -> ProbeReport` for cloud candidates, through a StackBackend."""

    def __init__(self, *, backend: Any, record: BenchRecord, store: Any, catalog: Any, settings: dict[str, Any]):
        self.backend, self.record, self.store, self.catalog = backend, record, store, catalog
        self.bench_dir = record.path.parent
        self.probe_seconds = float(settings["probe_seconds"])
        self.boot_allowance = float(settings["boot_allowance_seconds"])
        self.poll = float(settings.get("poll_seconds", 10.0))
        self.task, self.results = Path(settings["task"]), settings["results"]
        self.stacks_dir = Path(settings["stacks_dir"])
        self.benchmark = settings["benchmark_name"]
        self.hours = max_hours(self.probe_seconds, self.boot_allowance)

    def prepare(self, candidate: Any, name: str) -> None:
        """Write the stack file and record the probe as pending; raises ConfigError on a bad config."""
        job = dict(task=self.task, probe_seconds=self.probe_seconds, hours=self.hours, results=self.results)
        config = stack_config(candidate, **job, stacks_dir=self.stacks_dir, catalog=self.catalog)
        resolve(parse_config(config, name), self.catalog)  # as `pulumi up` would: a bad config fails before launch
        path = self.bench_dir / "stacks" / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
        fields = {"state": "pending", "region": candidate.region, "max_hours": self.hours}
        self.record.enter(name, candidate, self.benchmark, self.results, **fields)

    def __call__(self, candidate: Any, probes: Probes) -> ProbeReport:
        name = probe_stack_name(candidate, self.record.bench_id)
        say = probes.printer.for_stack(name)
        handle = self.backend.select_stack(name)
        started, t0 = utcnow(), time.monotonic()
        # until `up` reports the stack's own deadline: launch + maxHours, when the cloud ends it at the latest
        latest = iso(started + timedelta(hours=self.hours))
        probes.hold(Live(name, lambda: self._destroy(name, handle, say), f"about {latest}"))
        self.record.update(name, state="launching", up_started_at=iso(started))
        outputs, failure = up(handle, say, f" ({candidate.offering}, {candidate.market})")
        if failure is not None:
            report = self._launch_failed(candidate, name, handle, failure, say)
            probes.release(name)
            return report
        deadline = output_value(outputs, DEADLINE_OUTPUTS)
        probes.hold(Live(name, lambda: self._destroy(name, handle, say), deadline))
        self.record.update(name, state="launched", launched_at=iso(), deadline=deadline, zone=outputs.get("zone"))
        say(f"launched; cloud-side deadline {deadline or 'unknown'}; waiting for the probe result")
        # poll the bucket for the probe's result until it lands, the wait is over, or the bench stops
        give_up, found = time.monotonic() + self.probe_seconds + self.boot_allowance + UPLOAD_GRACE_SECONDS, None
        while found is None and time.monotonic() < give_up:
            found = newest_result(self.store, name, started)
            if found is None and probes.sleep(self.poll):
                break
        if found is None and probes.stop.is_set():
            return ProbeReport(candidate, name, "cancelled", "stopped while probing")
        self._destroy(name, handle, say)
        probes.release(name)
        missing = f"no probe result in the bucket {self.probe_seconds + self.boot_allowance:.0f} s after launch"
        report = read_back(candidate, name, found, time.monotonic() - t0, say, missing)
        self.record.update(name, probe_status=report.status, probe_usd=report.probe_usd, run_url=report.run_url)
        return report

    def _destroy(self, name: str, handle: Any, say: Any) -> None:
        """Destroy the probe's resources, then remove the emptied stack from the backend (`pulumi stack rm`)."""
        say("pulumi destroy")
        handle.destroy(on_output=say)
        teardown = {"action": "destroyed", "at": iso(), "removed": True}
        try:
            self.backend.remove_stack(name)
        except Exception as exc:  # noqa: BLE001 - nothing bills any more; the record says what to run
            teardown["removed"] = False
            say(f"destroyed, but removing the empty stack failed ({exc}); `pulumi stack rm {name}` in {self.bench_dir}")
        self.record.update(name, teardown=teardown)

    def _launch_failed(self, candidate, name, handle, failure, say) -> ProbeReport:
        self.record.update(name, state="launch-failed", failure=failure.to_dict())
        reason = f"{failure.kind}: {failure.message}"
        try:
            self._destroy(name, handle, say)  # a failed `up` may leave a security group or role behind
        except Exception as err:  # noqa: BLE001 - reported, the other probes go on
            reason += f"; destroying what it left failed ({err}): run `gpubench teardown {name}`"
        # no instance came up, so none was billed
        return ProbeReport(candidate, name, "launch-failed", reason, probe_usd=0.0)


# --- this machine ---------------------------------------------------------------------------------------------------

RESULT_SECONDS = 30.0  # after its job has ended: time for the payload to write and upload its result
JOB_END_EVENT = "train_end"  # the run phase's end in the payload's timeline
MARK_ENV = "GPUBENCH_PROBE_MARK"  # in the environment of the payload and of every process its job starts
# this machine's settings, not run options: they pass to the payload (GPUBENCH_* run options do not)
MACHINE_SETTINGS = ("GPUBENCH_SPOOL", "GPUBENCH_CACHE", ENVS_ENV, INHERIT_ENV)


def payload_grace(job_grace: float) -> float:
    """How long the bench waits for a stopped payload: the payload's own grace for its job, its SIGKILL
    wait and the time to write the result. Longer than the payload's, so the payload ends its job first."""
    return job_grace + KILL_WAIT_SECONDS + RESULT_SECONDS


def payload_argv(candidate: Any, *, task: Path, results: str, probe_seconds: float, host_events: Path) -> list[str]:
    """`python -m payload run` for a probe of the task, rendered from the payload's own option table."""
    options = offering_options(load_catalog().get(candidate.offering), candidate.market, None)
    if candidate.hourly_usd is not None:
        options.update(
            hourly_usd=f"{candidate.hourly_usd:g}",
            price_source=candidate.price_source or "set for this machine",
            price_as_of=candidate.price_date or date.today().isoformat(),
        )
    values = {"workload": str(Path(task).resolve()), "results": results, "stack": candidate.name, **options}
    values |= {"probe_seconds": int(max(1, round(probe_seconds))), "host_events": str(host_events)}
    return [sys.executable, "-m", "payload", "run", *render_argv(values)]


def payload_env(mark: str, job_grace: float) -> dict[str, str]:
    """This environment without GPUBENCH_* run options (they would change the probe), with the probe's mark."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k in MACHINE_SETTINGS}
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env | {STOP_GRACE_ENV: f"{job_grace:g}", MARK_ENV: mark}


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    """`sig` to the payload's process group (it leads its own session); the process alone if that is gone."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.send_signal(sig)


def marked(mark: str) -> set[int]:
    """The processes still running with the probe's mark: the payload, its job and all they started."""
    return proctree.pids_with_environ(MARK_ENV, mark)


def end_marked(mark: str, kill_wait: float = KILL_WAIT_SECONDS) -> set[int]:
    """SIGKILL to every process still carrying the mark (what a killed payload left behind); those that
    remain `kill_wait` seconds later (none, unless one cannot be killed)."""
    return proctree.terminate(lambda: marked(mark), 0.0, kill_wait)


def stop_payload(proc: subprocess.Popen, grace: float, mark: str | None = None) -> None:
    """End a probe: SIGTERM to the payload's process group (the payload ends its job's tree and writes an
    interrupted result), SIGKILL after `grace`; then every process still carrying the mark is killed.
    RuntimeError when the listing still shows one of them."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=KILL_WAIT_SECONDS)
    left = end_marked(mark) if mark is not None else set()
    if left:
        raise RuntimeError(f"process(es) {', '.join(str(p) for p in sorted(left))} survived SIGKILL")


def finish_seconds(result: dict | None, exited_at: float) -> float | None:
    """Seconds from the job's end (the run phase's end event) to the payload's exit, or None when not timed."""
    ends = [e for e in (result or {}).get("timeline") or [] if e.get("event") == JOB_END_EVENT and e.get("time")]
    if not ends:
        return None
    return round(max(0.0, exited_at - parse_iso(ends[-1]["time"])), 3)


class LocalProbe:
    """`(candidate, probes) -> ProbeReport` for this machine."""

    def __init__(self, *, store, results: str, task: Path, probe_seconds: float, log_dir: Path, extra_env=None):
        self.store, self.results, self.task = store, results, Path(task)
        self.probe_seconds, self.log_dir = float(probe_seconds), Path(log_dir)
        self.extra_env = dict(extra_env or {})  # machine settings of the caller's own (the demo's)

    def __call__(self, candidate: Any, probes: Probes) -> ProbeReport:
        name = candidate.name
        say = probes.printer.for_stack(name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log, events = self.log_dir / f"{name}.log", self.log_dir / f"{name}.host-events.jsonl"
        argv = payload_argv(
            candidate, task=self.task, results=self.results, probe_seconds=self.probe_seconds, host_events=events
        )
        started, t0 = utcnow(), time.monotonic()
        say(f"probing on this machine (at most {self.probe_seconds:.0f} s of the job); log {log}")
        start = {"event": "process_start", "time": iso(), "source": "host"}  # opens the timeline: overhead counts it
        events.write_text(json.dumps(start) + "\n", encoding="utf-8")
        mark, job_grace = uuid.uuid4().hex, stop_grace_seconds()
        env = {**payload_env(mark, job_grace), **self.extra_env}
        with log.open("w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, text=True, start_new_session=True
            )
            probes.hold(Live(name, lambda: stop_payload(proc, payload_grace(job_grace), mark), what="local run"))
            while proc.poll() is None:
                if probes.sleep(0.2):
                    return ProbeReport(candidate, name, "cancelled", "stopped while probing")
        exited_at = time.time()
        stray = end_marked(mark)  # nothing of the probe outlives it, even a process its payload missed
        probes.release(name)
        found, seconds = newest_result(self.store, name, started), time.monotonic() - t0
        missing = f"the payload exited with {proc.returncode} and wrote no result; see {log}"
        note = f"process(es) {sorted(stray)} of the job survived SIGKILL" if stray else None
        report = read_back(candidate, name, found, seconds, say, missing, note=note, extra={"log": str(log)})
        report.finish_seconds = finish_seconds(report.result, exited_at)
        return report


# --- SSH hosts: the host's stack with the task as its job, the probe limit as a run option; cancelled, the
# remote run is stopped at once (SIGTERM to its process group) and what it wrote uploaded.

# on cancel: time for the remote payload to end its job (its default grace) and write its result before it is killed
STOP_GRACE_SECONDS = payload_grace(DEFAULT_STOP_GRACE_SECONDS)


class Lines:
    """A text stream that hands each complete line to `say` (the bench's printer; the demo's indented echo)."""

    def __init__(self, say: Callable[[str], None]):
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

    def __call__(self, candidate: Any, probes: Probes) -> ProbeReport:
        name = candidate.name
        say = probes.printer.for_stack(name)
        # the host's stack with the task as its job
        cfg = load_stack(name, self.stacks_dir).with_overrides(workload=str(self.task), benchmark=())
        started, t0 = utcnow(), time.monotonic()
        say(f"probing on {cfg.target} (at most {self.probe_seconds:.0f} s of the job)")
        options = {"probe_seconds": str(int(max(1, round(self.probe_seconds))))}
        # once `stop` is set (the bench is cancelled) the remote run is stopped as Ctrl-C stops it
        run = {"progress": Lines(say), "poll": self.poll, "stop_timeout": STOP_GRACE_SECONDS, "stop": probes.stop}
        status, report = run_ssh_stack(cfg, extra_options=options, **run)
        seconds = time.monotonic() - t0
        if probes.stop.is_set():
            why = f"stopped while probing; the run on {cfg.target} was stopped ({status})"
            return ProbeReport(candidate, name, "cancelled", why, probe_usd=probe_cost(candidate, seconds))
        if status not in ("completed", "failed", "interrupted", "stopped-by-user"):
            return ProbeReport(candidate, name, "failed", f"{status}: {report.get('message') or 'no run'}")
        found = newest_result(open_store(cfg.results), name, started)
        return read_back(candidate, name, found, seconds, say, "no probe result reached the bucket")
