"""A cloud probe: one generated Pulumi stack per candidate in the bench's workspace, launched, read back,
destroyed. Its stack file is the project's stack of that offering (region, project, SSH settings kept) with
the job keys replaced: the task, `probeSeconds`, and `maxHours` covering probe and boot, so the cloud-side
deadline ends the machine even if this process dies.
"""

from __future__ import annotations

import math
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from analysis.bench.probes import Live, ProbeReport, Probes, newest_result, read_back
from analysis.bench.record import BenchRecord
from analysis.launch_failures import up
from infra import clouds
from infra.config import MIN_HOURS, parse_config
from infra.launch import resolve
from infra.stacks import load_config
from infra.tags import DEADLINE_OUTPUTS
from infra.workspace import output_value
from payload.layout import check_stack_name
from payload.timestamps import iso, utcnow
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
