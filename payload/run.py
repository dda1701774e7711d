"""The run orchestrator: one job from start to uploaded result, the lifecycle every run shares (completed-run
lookup, resume, run id, attempts, any exception a `failed` result, upload through the spool, exit code). What
differs is the `Job` (payload.builtin.BuiltinJob, payload.workloads.job.WorkloadJob).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from payload import exitcodes
from payload.config import RunConfig
from payload.events import Timeline, note
from payload.gpu import GpuSampler, host_facts, nvml_info
from payload.identity import Identity, PreemptionWatcher, make_run_id
from payload.layout import newest_versions, stack_prefix, version_of
from payload.result import RunWriter, new_result
from payload.spool import SpoolingStore
from payload.storage import PermanentStorageError
from payload.timestamps import iso

RESULT_FILES = ("epochs.csv", "events.jsonl", "result.json")  # every run uploads these
STATE_NAME = "state.json"  # a checkpoint's state: runs/<stack>/<run-id>/checkpoints/state[.vN.P].json


@dataclass
class SuiteContext:
    """What the runs of one suite share."""

    cfg: RunConfig
    boot: float
    identity: Identity
    store: SpoolingStore
    watcher: PreemptionWatcher
    price: dict
    warnings: list[str] = field(default_factory=list)
    flush_note: dict | None = None
    # The host's events (instance_launch, ...) open the first run's billed window only, not every run's.
    host_events_claimed: bool = False


def fingerprint(
    stack: str, name: str, params: dict, precision: str, gpus, data: str, backend: str = "tensorflow"
) -> str:
    """Same job, same settings, same stack: the key of resume and completed-run lookups."""
    fields = {"stack": stack, "benchmark": name, "params": params, "precision": precision, "gpus": gpus, "data": data}
    if backend != "tensorflow":  # runs from before --backend existed keep their fingerprint
        fields["backend"] = backend
    blob = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def hardware(nv: dict, device: str, gpu_count: int, gpus_visible: int | None, details: dict | None = None) -> dict:
    """`result["hardware"]`: NVML's facts (`nv`, payload.gpu.nvml_info), else what the framework saw, and the host's."""
    details = details or {}
    cc = details.get("compute_capability")
    return {
        "device": device,
        "gpu_model": nv["gpu_model"] or details.get("device_name"),
        "gpu_count": gpu_count,
        "gpus_visible": gpus_visible,
        "gpu_memory_gb": nv["gpu_memory_gb"],
        "driver_version": nv["driver_version"],
        "compute_capability": nv["compute_capability"] or (f"{cc[0]}.{cc[1]}" if cc else None),
        **host_facts(),
    }


def price_row(cfg: RunConfig) -> tuple[dict, list[str]]:
    """(result["price"], warnings) from the launcher's options (the payload never reads the catalog; prices drift:
    store the one used): `hourly_usd` is always on-demand, `spot_hourly_usd` spot, a missing price null."""
    price = dict.fromkeys(("hourly_usd", "spot_hourly_usd", "source", "as_of", "origin"))
    if cfg.hourly_usd is None:
        what = f"offering {cfg.offering!r}" if cfg.offering else "this run"
        return price, [
            f"price unknown: the launcher gave no price for {what}; "
            "set --hourly-usd/GPUBENCH_HOURLY_USD (the catalog's launchers do)"
        ]
    key = "spot_hourly_usd" if cfg.market == "spot" else "hourly_usd"
    price.update({key: float(cfg.hourly_usd), "source": cfg.price_source, "as_of": cfg.price_as_of, "origin": "env"})
    if cfg.market == "spot" and cfg.on_demand_hourly_usd is not None:
        price["hourly_usd"] = float(cfg.on_demand_hourly_usd)
    return price, []


def result_offering(cfg, identity) -> dict:
    """`result["offering"]`: what the instance says about itself (metadata), else what the launcher gave
    (the provider is the offering id's prefix)."""
    provider = cfg.offering.split("/", 1)[0] if cfg.offering and "/" in cfg.offering else None
    return {
        "id": cfg.offering,
        "provider": identity.provider or provider,
        "kind": cfg.offering_kind,
        "region": identity.region,
        "zone": identity.zone,
        "instance_type": identity.instance_type or cfg.instance_type,
        "instance_id": identity.instance_id,
        "market": cfg.market,
    }


def _states(store, stack: str, run_prefix: str = ""):
    """The newest checkpoint state of every run of `stack` whose id starts with `run_prefix`, broken ones left out."""
    listing = store.list(stack_prefix(stack) + run_prefix)
    keys = [i.key for i in listing if version_of(i.key)[0].endswith(f"/checkpoints/{STATE_NAME}")]
    for key in sorted(newest_versions(keys).values()):
        try:
            state = json.loads(store.get_bytes(key))
        except Exception:  # noqa: BLE001
            continue
        if isinstance(state, dict):
            yield state


def find_resumable(store, stack: str, fingerprint: str, run_prefix: str = "") -> dict | None:
    """Newest incomplete checkpoint state of this fingerprint among the runs whose id starts with `run_prefix`
    (a launch's own: the only ones its instance may write to), or None."""
    states = (s for s in _states(store, stack, run_prefix) if s.get("fingerprint") == fingerprint)
    found = [s for s in states if not s.get("complete") and s.get("model_key") and store.exists(s["model_key"])]
    return max(found, key=lambda s: s.get("saved_at", ""), default=None)


def find_completed(store, stack: str, fingerprint: str, deployment: float | None) -> dict | None:
    """A completed run of this fingerprint in the same deployment (one `pulumi up`, whose deadline every
    instance it boots shares), so a spot replacement does not pay twice; None without a deadline."""
    done = (s for s in _states(store, stack) if s.get("fingerprint") == fingerprint and s.get("complete"))
    return next((s for s in done if s.get("deployment") == deployment), None) if deployment is not None else None


@dataclass
class JobReport:
    """A job's part of result.json; the run adds identity, price, attempts, timeline and warnings."""

    hardware: dict
    software: dict
    benchmark: dict
    metrics: dict
    artifacts: dict
    warnings: list[str] = field(default_factory=list)
    probe: dict | None = None


class Job(Protocol):
    """What a kind of job supplies to `Run`, in the order the run calls it; made by ``make_job(run)``."""

    name: str  # the benchmark name in the result, the timeline and messages
    run_name: str  # the last part of a new run id
    fingerprint: str
    extra_files: tuple[str, ...]  # uploaded before RESULT_FILES

    def restore(self) -> dict | None: ...  # an interrupted attempt's state (its run_id is reused), or None
    def begin(self, resume: dict | None) -> None: ...  # the run id and writer exist
    def execute(self) -> tuple[str, int]: ...  # (status, exit code); sets run.error on a failure
    def failure(self, exc: Exception) -> tuple[str, int]: ...  # (error text, exit code) of what execute raised
    def end_attempt(self) -> dict: ...  # once an attempt: its facts for the attempt record
    def settle(self, status: str) -> dict | None: ...  # checkpoints done; the state a completed run marks
    def write_extras(self) -> None: ...  # upload extra_files
    def report(self, status: str, nv: dict) -> JobReport: ...  # nv: payload.gpu.nvml_info()
    def epoch_rows(self) -> list[dict]: ...


class Run:
    """One job of a suite, possibly resuming an interrupted attempt: ``execute()`` returns its exit code."""

    def __init__(self, ctx: SuiteContext, make_job: Callable[[Run], Job]):
        self.ctx, self.cfg = ctx, ctx.cfg
        self.timeline = Timeline(echo=True)
        self.warnings = list(ctx.warnings)
        self.sampler = GpuSampler()
        self.error: str | None = None
        self.started_at = iso()
        self.attempts: list[dict] = []  # every attempt's record, restored ones first
        self.attempt: dict = {}
        self.run_id = ""
        self.writer: RunWriter | None = None
        self._attempt_closed = False
        self.job = make_job(self)

    def execute(self) -> int:
        find = partial(find_completed, self.ctx.store, self.cfg.stack, self.job.fingerprint, self.cfg.deadline)
        done = None if self.cfg.no_resume else self.lookup(find, "completed-run lookup failed, running again")
        if done:
            note(
                f"{self.job.name}: already completed in this deployment (run {done.get('run_id')}); "
                "not run again on this replacement instance"
            )
            return exitcodes.OK
        self._open(self.job.restore())
        status, code = "failed", exitcodes.FAILED
        try:
            status, code = self.job.execute()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a failed result
            error, code = self.job.failure(exc)
            self.fail(str(exc), error)
        finally:
            self.sampler.stop()
        self.close_attempt(status)
        return self._finish(status, code)

    def fail(self, message: str, error: str | None = None) -> None:
        """The run failed: its error (`message`, unless `error` says more), an `error` event and a line saying so."""
        self.error = error or message
        self.timeline.add("error", error=message[:500])
        note(f"{self.job.name} failed: {message}")

    def interrupted(self, restart: str = "") -> None:
        """A notice or stop signal ended the attempt: the timeline and the error say why (`restart`: what next)."""
        reason = self.ctx.watcher.reason or "interruption notice"
        self.timeline.add("interruption_notice", reason=reason)
        self.error = f"interrupted: {reason}{restart}"

    def lookup(self, find: Callable[[], dict | None], failed: str) -> dict | None:
        """A bucket lookup that never stops the run: a create-only role (GCP) may not list, so nothing is
        found; a bucket that is down is a warning, `failed` saying what the run does instead."""
        try:
            return find()
        except PermanentStorageError:
            return None
        except Exception as exc:  # noqa: BLE001 - bucket down
            self.warnings.append(f"{failed}: {exc}")
            return None

    def _open(self, resume: dict | None) -> None:
        """Run id, host events, writer and this attempt's record; then the job begins."""
        ctx, ident, job = self.ctx, self.ctx.identity, self.job
        new_id = make_run_id(ctx.boot, ident.instance_id, job.run_name, self.cfg.launch)
        self.run_id = resume["run_id"] if resume else new_id
        self.timeline.attempt = len(self.attempts) + 1
        if not ctx.host_events_claimed:
            ctx.host_events_claimed = True
            self.warnings += self.timeline.merge_host_events(self.cfg.host_events)
        # resumed: a new generation of every file, the previous attempt's stay as they were
        writer = partial(RunWriter.resuming, attempts_before=len(self.attempts)) if resume else RunWriter
        self.writer = writer(ctx.store, self.cfg.stack, self.run_id)
        self.attempt = {
            "attempt": self.timeline.attempt,
            "instance_id": ident.instance_id,
            "zone": ident.zone,
            "start": iso(),
            "end": None,
            "status": "interrupted",  # until we know better: a checkpoint saved now says so
        }
        self.attempts.append(self.attempt)
        self.timeline.add(
            "run_start", benchmark=job.name, run_id=self.run_id, resumed=bool(resume), fingerprint=job.fingerprint
        )
        if ctx.flush_note:
            self.timeline.add("spool_flush", **ctx.flush_note)
        job.begin(resume)

    def close_attempt(self, status: str) -> None:
        """Record how this attempt ended, once (a job may close it early, before saving its state)."""
        if self._attempt_closed:
            return
        self._attempt_closed = True
        self.attempt.update(status=status, end=iso(), **self.job.end_attempt())

    def _result(self, status: str, code: int) -> dict:
        nv = nvml_info()
        part = dict(vars(self.job.report(status, nv)))  # hardware, software, benchmark, metrics, artifacts, probe
        warnings = list(dict.fromkeys(self.warnings + part.pop("warnings")))
        if part["hardware"]["device"] == "CPU" and nv["nvml_error"]:
            warnings.append(f"no GPU metrics: {nv['nvml_error']}")
        return new_result(
            run_id=self.run_id,
            stack=self.cfg.stack,
            status=status,
            started_at=self.started_at,
            finished_at=iso(),
            offering=result_offering(self.cfg, self.ctx.identity),
            price=self.ctx.price,
            attempts=self.attempts,
            timeline=self.timeline.ordered(),
            error=self.error,
            warnings=warnings,
            exit_code=code,
            **part,
        )

    def _finish(self, status: str, code: int) -> int:
        store = self.ctx.store
        state = self.job.settle(status)
        if status == "completed" and state is not None:  # nothing resumes it, a spot replacement skips it
            state = {**state, "complete": True, "saved_at": iso(), "model_key": None}
            store.put_bytes(
                self.writer.next_key(f"checkpoints/{STATE_NAME}"), json.dumps(state).encode(), "application/json"
            )
        self.timeline.add("upload", files=[*self.job.extra_files, *RESULT_FILES])
        before = len(store.spooled)
        self.job.write_extras()
        self.writer.write_all(self._result(status, code), self.timeline, self.job.epoch_rows())
        if len(store.spooled) > before:
            spooled = len(store.spooled) - before
            note(f"bucket unreachable: {spooled} file(s) spooled to {store.spool.dir}; run `python -m payload flush`")
        note(f"{self.job.name}: {status} -> {store.url_for(self.writer.prefix)}")
        return code
