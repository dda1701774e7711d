"""Launch a campaign's stacks through the stack backend, a bounded number at a time, the manifest saved
before provisioning and after every attempt. Idempotent per campaign: a `launched` stack is not launched
again; a `launching` one (the orchestrator died mid-`up`) is adopted when its outputs show it deployed,
else `up` runs again (Pulumi converges on the one instance). A capacity failure is retried once in another
zone of the region, set as the stack's `gpubench:zone` (`pulumi config set`, in its stack file) and
recorded as `zone_override`: the stack lives in that zone now.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.campaign.manifest import Manifest
from analysis.interruptible import InterruptiblePool
from analysis.launch_failures import Failure, region_of_zone, retry_zone, up
from analysis.progress import Printer
from infra.config import BenchmarkConfig, ConfigError, parse_config
from infra.launch import region_of, resolve, zone_of
from infra.stacks import load_config
from infra.tags import DEADLINE_OUTPUTS
from infra.workspace import StackBackend, output_value, plain_outputs
from payload.timestamps import iso


@dataclass
class LaunchReport:
    """What `up` did per stack: launched | adopted | already-launched | skipped-failed | failed."""

    actions: dict[str, str] = field(default_factory=dict)
    max_concurrent: int = 0

    @property
    def failed(self) -> list[str]:
        return [n for n, a in self.actions.items() if a == "failed"]


class _Gauge:
    """Counts `up` calls in flight: the concurrency bound, observed."""

    def __init__(self):
        self._lock = threading.Lock()
        self.now = self.peak = 0

    def __enter__(self):
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self._lock:
            self.now -= 1


ZONE_KEY = "gpubench:zone"  # infra/config.py BENCHMARK_KEYS "zone": AWS availability_zone, GCP zone


def stack_facts(name: str, stacks_dir: Path, catalog: Any) -> dict[str, Any]:
    """What the manifest records of a stack before its launch, read through the Pulumi program's own parser
    and catalog lookup, so the price recorded is the one the instance carries; ConfigError or
    FileNotFoundError for a bad stack file."""
    cfg = parse_config(load_config(name, stacks_dir), name)
    if not isinstance(cfg, BenchmarkConfig):
        raise ConfigError("stackType", f"{name} is a results stack; campaigns launch benchmark stacks only")
    launch = resolve(cfg, catalog)
    price = launch.price
    return {
        "offering": launch.offering.id,
        "provider": launch.provider,
        "market": cfg.market,
        "region": region_of(cfg, launch.offering),
        "zone": zone_of(cfg),
        "suite": list(cfg.suite),
        "max_hours": cfg.max_hours,
        "hourly_usd": launch.hourly_usd,
        "price_source": str(price.source) if price is not None else None,
        "price_as_of": str(price.as_of) if price is not None else None,
        "warnings": list(launch.warnings),
    }


def _offering_zones(offering_id: str, catalog: Any) -> tuple[str, ...]:
    try:
        return tuple(catalog.get(offering_id).zones or ())
    except Exception:  # noqa: BLE001 - no zone list just means no catalog-backed retry zones
        return ()


def prepare(manifest: Manifest, names: Sequence[str], stacks_dir: Path, catalog: Any, printer: Printer) -> None:
    """Add new stacks to the manifest (pending, with their facts) and save it: the record before provisioning."""
    for name in names:
        if name in manifest.stacks:
            continue
        try:
            facts = stack_facts(name, stacks_dir, catalog)
        except Exception as exc:  # noqa: BLE001 - a bad stack file fails that stack, not the campaign
            manifest.ensure(name, {})
            failure = Failure("config", str(exc), None).to_dict()
            manifest.update(name, save=False, state="launch-failed", failure=failure)
            printer.stack(name, f"launch failed (config): {exc}")
            continue
        manifest.ensure(name, facts)
        for warning in facts.get("warnings", []):
            printer.stack(name, f"warning: {warning}")
    manifest.save()


@dataclass
class Launcher:
    manifest: Manifest
    backend: StackBackend
    catalog: Any
    printer: Printer
    concurrency: int = 4
    retry_failed: bool = False
    gauge: _Gauge = field(default_factory=_Gauge)
    stop: threading.Event = field(default_factory=threading.Event)  # set on Ctrl-C: no stack starts another `up`

    def run(self, names: Sequence[str]) -> LaunchReport:
        report = LaunchReport()
        # Ctrl-C: stacks not started are cancelled and nobody waits for a `pulumi up` in flight;
        # its stack stays `launching` in the manifest, and the next `up` adopts or retries it.
        with InterruptiblePool(self.concurrency, "campaign-up") as pool:
            self.stop = pool.stop
            futures = {name: pool.submit(self._one, name) for name in names}
            for name, fut in futures.items():
                try:
                    report.actions[name] = fut.result()
                except Exception as exc:  # noqa: BLE001 - nothing lost: record and go on
                    message = f"{type(exc).__name__}: {exc}"
                    self._record_failure(name, Failure("other", message, None), None, None)
                    self.printer.stack(name, f"launch failed (other): {message}")
                    report.actions[name] = "failed"
        report.max_concurrent = self.gauge.peak
        self.manifest.save()
        return report

    def _one(self, name: str) -> str:
        entry = self.manifest.stacks[name]
        state = entry.get("state")
        if state == "launched":
            self.printer.stack(
                name, f"already launched for this campaign at {entry.get('launched_at')}: not launching again"
            )
            return "already-launched"
        if state == "launch-failed" and (not self.retry_failed or entry.get("failure", {}).get("kind") == "config"):
            kind = entry.get("failure", {}).get("kind")
            self.printer.stack(name, f"launch failed earlier ({kind}): not retried; pass --retry-failed to try again")
            return "skipped-failed"
        handle = self.backend.select_stack(name)
        if state == "launching":
            outputs = plain_outputs(handle.outputs())
            if output_value(outputs, DEADLINE_OUTPUTS) is not None:  # deployed
                self._record_launched(name, outputs, entry.get("up_started_at") or iso())
                self.printer.stack(name, "was deploying when the last orchestrator stopped; deployed: adopting it")
                return "adopted"
        zone = entry.get("zone")
        failure = self._attempt(name, handle, zone)
        if failure is None:
            return "launched"
        if failure.retryable:
            failed_zone = zone or failure.zone
            tried = [a.get("zone") for a in entry.get("attempts", []) if a.get("zone")]
            region = entry.get("region") or (region_of_zone(failed_zone) if failed_zone else "")
            next_zone, why = retry_zone(
                failed_zone,
                tried,
                entry.get("provider", ""),
                region,
                _offering_zones(entry.get("offering", ""), self.catalog),
            )
            self.printer.stack(name, why)
            if next_zone is not None and not self.stop.is_set():
                handle.set_config(ZONE_KEY, next_zone)
                self.manifest.update(name, save=False, zone=next_zone, zone_override=next_zone)
                if self._attempt(name, handle, next_zone) is None:
                    return "launched"
        return "failed"

    def _attempt(self, name: str, handle: Any, zone: str | None) -> Failure | None:
        started = iso()
        self.manifest.update(name, state="launching", up_started_at=started)
        with self.gauge:
            outputs, failure = up(handle, self.printer.for_stack(name), f" in {zone}" if zone else "")
        if failure is not None:
            self._record_failure(name, failure, zone, started)
            return failure
        self.manifest.add_attempt(name, {"zone": zone, "started_at": started, "ended_at": iso(), "outcome": "launched"})
        self._record_launched(name, outputs, started)
        return None

    def _record_launched(self, name: str, outputs: dict[str, Any], started: str) -> None:
        deadline = output_value(outputs, DEADLINE_OUTPUTS)
        self.manifest.update(
            name,
            state="launched",
            launched_at=iso(),
            up_started_at=started,
            deadline=deadline,
            outputs=outputs,
            zone=outputs.get("zone") or self.manifest.stacks[name].get("zone"),
            failure=None,
        )
        self.printer.stack(name, f"launched; deadline {deadline or 'unknown'}")

    def _record_failure(self, name: str, failure: Failure, zone: str | None, started: str | None) -> None:
        attempt = {"zone": zone or failure.zone, "started_at": started, "ended_at": iso(), "outcome": "failed"}
        self.manifest.add_attempt(name, {**attempt, "failure": failure.to_dict()})
        self.manifest.update(name, state="launch-failed", failure=failure.to_dict())
