"""``python -m payload run``: one suite, one result per benchmark, nothing lost.

Order of business for a suite:
1. flush the spool (results an earlier run could not upload),
2. who/where/what price: metadata service, catalog or env,
3. start the preemption watcher (+ SIGTERM) once for the suite,
4. per benchmark: resume lookup, devices (``--expect-gpu`` fails here,
   before any data), data, model, fit with the harness callback, then
   ``result.json`` + ``events.jsonl`` + ``epochs.csv`` under
   ``runs/<stack>/<run-id>/``,
5. stop at the first interruption (the next boot resumes), exit code per
   payload.exitcodes.
"""

from __future__ import annotations

import hashlib
import json
import signal
import statistics
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from payload import exitcodes
from payload.benchmarks import get
from payload.checkpoint import Checkpointer, find_completed, find_resumable
from payload.config import RunConfig
from payload.environment import host_facts, software_facts
from payload.events import Timeline, iso, mllog
from payload.gpu import GpuSampler, nvml_info
from payload.identity import Identity, detect_identity, make_run_id
from payload.pricing import offering_facts, price_row, result_offering
from payload.result import RunWriter, new_result
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store
from payload.watcher import PreemptionWatcher

__all__ = ["run", "fingerprint"]

MAX_RATES = 5000  # per-step rates kept in checkpoint state for the spread


@dataclass
class SuiteContext:
    cfg: RunConfig
    boot: float
    identity: Identity
    store: SpoolingStore
    watcher: PreemptionWatcher
    price: dict
    offering: dict
    warnings: list[str] = field(default_factory=list)
    flush_note: dict | None = None
    # The host's events (instance_launch, boot_done, ...) open the billed window
    # of the first benchmark this process runs only: merged into every result,
    # each later benchmark would be billed again from instance launch.
    host_events_claimed: bool = False


def fingerprint(
    stack: str, name: str, params: dict, precision: str, gpus, data: str, backend: str = "tensorflow"
) -> str:
    fields = {"stack": stack, "benchmark": name, "params": params, "precision": precision, "gpus": gpus, "data": data}
    if backend != "tensorflow":  # runs from before --backend existed keep their fingerprint
        fields["backend"] = backend
    blob = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _params_for(cfg: RunConfig, bench) -> dict:
    """Benchmark defaults, then --param, then the first-class flags."""
    params = bench.params({k: v for k, v in cfg.param.items() if k in bench.defaults})
    flags = {"batch_size": cfg.batch_size}
    if bench.kind == "throughput":
        flags["steps"] = cfg.steps
    else:
        flags.update(epochs=cfg.epochs, steps_per_epoch=cfg.steps)
    params.update({k: v for k, v in flags.items() if v is not None and k in params})
    return params


def _spread(rates: list[float]) -> dict | None:
    if len(rates) < 2:
        return None
    q = statistics.quantiles(rates, n=10, method="inclusive")
    return {
        "p10": round(q[0], 3),
        "p50": round(statistics.median(rates), 3),
        "p90": round(q[8], 3),
        "stdev": round(statistics.stdev(rates), 3),
        "n": len(rates),
    }


class PhaseRun:
    """What a benchmark's own ``train`` gets: its params, steps per epoch, the
    strategy scope (to recompile between phases) and ``fit``, which trains
    with the harness callback so timing, epoch rows and stop checks apply."""

    def __init__(self, params: dict, steps_per_epoch: int, devices, callback, fit_steps: int | None):
        self.params, self.steps_per_epoch, self._devices, self._cb = params, steps_per_epoch, devices, callback
        self._fit_steps = fit_steps  # None: one pass over a finite dataset per epoch

    def scope(self):
        return self._devices.strategy.scope()

    def fit(self, model, train_ds, val_ds, *, epochs: int, initial_epoch: int) -> None:
        model.fit(
            train_ds,
            validation_data=val_ds,
            epochs=epochs,
            initial_epoch=initial_epoch,
            steps_per_epoch=self._fit_steps,
            callbacks=[self._cb],
            verbose=0,
            shuffle=False,
        )


class BenchmarkRun:
    """One benchmark of the suite, possibly resuming an interrupted attempt."""

    def __init__(self, ctx: SuiteContext, name: str):
        self.ctx, self.cfg = ctx, ctx.cfg
        self.bench = get(name)
        self.params = _params_for(self.cfg, self.bench)
        self.fp = fingerprint(
            self.cfg.stack,
            name,
            self.params,
            self.cfg.precision,
            self.cfg.gpus,
            str(self.cfg.data),
            self.cfg.backend,
        )
        self.timeline = Timeline(echo=sys.stderr)
        self.warnings = list(ctx.warnings)
        self.state: dict = {}
        self.error: str | None = None
        self.devices = None
        self.sampler = GpuSampler()
        self.global_batch = self.params["batch_size"]
        # accumulated over attempts (restored from checkpoint state)
        self.rows: list[dict] = []
        self.attempts: list[dict] = []
        self.epochs_done = self.steps_done = 0
        self.train_seconds = 0.0
        self.measured = {"samples": 0, "seconds": 0.0, "rates": []}
        self.gpu_hist: dict = {"util_sum": 0.0, "util_n": 0, "mem_peak": None, "power_sum": 0.0, "power_n": 0}
        self.final = {"accuracy": None, "loss": None}
        self.phase_seconds: dict | None = None  # benchmarks with their own train(): seconds per phase
        self.phase_accuracy: float | None = None
        self._train_samples = 0
        self.jit_compile = None
        self.started_at = iso()

    # -- resume ------------------------------------------------------------------
    def _restore(self) -> dict | None:
        if self.cfg.no_resume or not self.bench.resumable:
            return None
        try:
            state = find_resumable(self.ctx.store, self.cfg.stack, self.fp)
        except Exception as exc:  # noqa: BLE001 - bucket down: start fresh, say so
            self.warnings.append(f"resume lookup failed, starting fresh: {exc}")
            return None
        if state:
            self.rows, self.attempts = state["rows"], state["attempts"]
            self.epochs_done, self.steps_done = state["epochs_completed"], state["steps_completed"]
            self.train_seconds = state["train_seconds"]
            self.measured, self.gpu_hist = state["measured"], state["gpu_hist"]
            self.started_at = state["started_at"]
            self.timeline.extend(state["timeline"])
        return state

    def _state(self) -> dict:
        return {
            "fingerprint": self.fp,
            "run_id": self.run_id,
            "stack": self.cfg.stack,
            "benchmark": self.bench.name,
            "params": self.params,
            "complete": False,
            "started_at": self.started_at,
            "epochs_completed": self.epochs_done,
            "steps_completed": self.steps_done,
            "train_seconds": self.train_seconds,
            "rows": self.rows,
            "attempts": self.attempts,
            "measured": self.measured,
            "gpu_hist": self.gpu_hist,
            "timeline": self.timeline.ordered(),
            "deployment": self.cfg.deadline,
        }

    # -- main --------------------------------------------------------------------
    def _already_done(self) -> dict | None:
        if self.cfg.no_resume:
            return None
        try:
            return find_completed(self.ctx.store, self.cfg.stack, self.fp, self.cfg.deadline)
        except Exception as exc:  # noqa: BLE001 - bucket down: run it, say so
            self.warnings.append(f"completed-run lookup failed, running again: {exc}")
            return None

    def execute(self) -> int:
        cfg, ident = self.cfg, self.ctx.identity
        done = self._already_done()
        if done:
            print(
                f"[gpubench] {self.bench.name}: already completed in this deployment (run {done['run_id']}); "
                "not run again on this replacement instance",
                file=sys.stderr,
                flush=True,
            )
            return exitcodes.OK
        resume = self._restore()
        self.run_id = resume["run_id"] if resume else make_run_id(self.ctx.boot, ident.instance_id, self.bench.name)
        self.timeline.attempt = len(self.attempts) + 1
        if not self.ctx.host_events_claimed:
            self.ctx.host_events_claimed = True
            self.warnings += self.timeline.merge_host_events(cfg.host_events)
        self.writer = RunWriter(self.ctx.store, cfg.stack, self.run_id)
        self.ckpt = Checkpointer(self.ctx.store, self.writer.prefix, self.timeline)
        if resume:
            self.ckpt.adopt(resume.get("model_key"))
        attempt = {
            "attempt": self.timeline.attempt,
            "instance_id": ident.instance_id,
            "zone": ident.zone,
            "start": iso(),
            "end": None,
            "status": "interrupted",
        }  # until we know better
        self.attempts.append(attempt)
        self.attempt, self._attempt_closed = attempt, False
        self.timeline.add(
            "run_start", benchmark=self.bench.name, run_id=self.run_id, resumed=bool(resume), fingerprint=self.fp
        )
        if self.ctx.flush_note:
            self.timeline.add("spool_flush", **self.ctx.flush_note)
        mllog("run_start", metadata={"benchmark": self.bench.name, "run_id": self.run_id})
        mllog("submission_benchmark", self.bench.name)
        status, code = "failed", exitcodes.FAILED
        fit_seconds = 0.0
        try:
            from payload import training

            self.devices = training.setup_devices(
                cfg.gpus, cfg.expect_gpu, cfg.cpu_replicas, cfg.backend, cfg.all_reduce
            )
            self.global_batch = self.params["batch_size"] * self.devices.replicas
            self.timeline.add(
                "devices",
                device=self.devices.device,
                gpus_visible=self.devices.gpus_visible,
                replicas=self.devices.replicas,
                global_batch=self.global_batch,
            )
            mllog("global_batch_size", self.global_batch)
            status, fit_seconds = self._train(training, resume)
            code = exitcodes.INTERRUPTED if status == "interrupted" else exitcodes.OK
        except Exception as exc:  # noqa: BLE001 - every failure becomes a failed result
            from payload import training

            self.error = f"{type(exc).__name__}: {exc}"
            code = exitcodes.NO_GPU if isinstance(exc, training.NoGpuError) else exitcodes.FAILED
            if code == exitcodes.FAILED:
                self.error += "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
            self.timeline.add("error", error=str(exc)[:500])
            print(f"[gpubench] {self.bench.name} failed: {exc}", file=sys.stderr, flush=True)
        finally:
            self.sampler.stop()
        self._close_attempt(status, fit_seconds)
        mllog("run_stop", metadata={"status": status})
        return self._finish(status, code)

    def _train(self, training, resume) -> tuple[str, float]:
        import keras

        cfg, bench, work = self.cfg, self.bench, dict(self.params, seed=self.cfg.seed)
        keras.utils.set_random_seed(cfg.seed)
        t0 = time.perf_counter()
        data = bench.load_data(cfg.data, work, self.global_batch)
        self._train_samples = data.train_samples
        self.timeline.add(
            "data_loaded",
            data=data.source,
            train_samples=data.train_samples,
            seconds=round(time.perf_counter() - t0, 3),
        )
        plan = training.fit_plan(bench.kind, self.params, self.epochs_done, self.steps_done, cfg.checkpoint_every)
        train_ds, val_ds = training.make_datasets(data, self.global_batch, cfg.seed, plan.steps_per_epoch)
        with training.precision_policy(cfg.precision):
            with self.devices.strategy.scope():
                model = bench.build_model(work)
                if resume:
                    self._load_checkpoint(model, resume["model_key"])
            if self.ctx.watcher.notice.is_set():  # noticed while loading: do not start
                self._close_attempt("interrupted", 0.0)
                return self._interrupt(model, None), 0.0
            return self._fit(training, model, plan, train_ds, val_ds)

    def _load_checkpoint(self, model, key: str) -> None:
        from payload.checkpoint import restore

        restore(model, self.ctx.store.get_bytes(key))
        self.timeline.add("resume", checkpoint=key, epochs_completed=self.epochs_done, steps_completed=self.steps_done)

    def _fit(self, training, model, plan, train_ds, val_ds) -> tuple[str, float]:
        bench, watcher = self.bench, self.ctx.watcher
        periodic = bench.kind == "epochs"

        def on_epoch_done(cb, row):
            self.rows.append(row)
            self.steps_done = cb.steps_done + cb.steps
            if periodic:
                self.epochs_done += 1
            self.timeline.add(
                "epoch_end", epoch=row["epoch"], seconds=row["elapsed"], loss=row["loss"], val_acc=row["val_acc"]
            )
            # every epoch / chunk except the last one, which ends the run
            more = (self.epochs_done < self.params["epochs"]) if periodic else (self.steps_done < plan.total_steps)
            if more and bench.resumable:
                self.ckpt.save(cb.model, self._state(), tag=self.steps_done)

        self.jit_compile = bool(getattr(model, "jit_compile", False))  # Keras 3 uses XLA on GPUs by default
        cb = training.make_callback_class()(
            notice=watcher.notice,
            total_steps=plan.total_steps,
            steps_done=self.steps_done,
            epoch_offset=len(self.rows),
            on_epoch_done=on_epoch_done,
            time_last_step=val_ds is None,
        )
        self.sampler.start()
        self.sampler.begin_window()
        self.timeline.add(
            "train_start",
            epochs=plan.epochs,
            initial_epoch=plan.initial_epoch,
            steps_per_epoch=plan.steps_per_epoch,
            total_steps=plan.total_steps,
        )
        t0 = time.perf_counter()
        interrupted = False
        try:
            if bench.train is not None:
                steps = plan.steps_per_epoch or max(1, self._train_samples // self.global_batch)
                outcome = bench.train(
                    model, train_ds, val_ds, PhaseRun(self.params, steps, self.devices, cb, plan.steps_per_epoch)
                )
                self.phase_seconds = outcome.get("phase_seconds")
                self.phase_accuracy = outcome.get("final_accuracy")
            else:
                model.fit(
                    train_ds,
                    validation_data=val_ds,
                    epochs=plan.epochs,
                    initial_epoch=plan.initial_epoch,
                    steps_per_epoch=plan.steps_per_epoch,
                    callbacks=[cb],
                    verbose=0,
                    shuffle=False,
                )
        except training.Interrupted:
            interrupted = True
        fit_seconds = time.perf_counter() - t0
        self.sampler.end_window()
        self.steps_done = cb.steps_done + cb.steps
        self._account(cb)
        self.timeline.add("train_end", seconds=round(fit_seconds, 3), steps=cb.steps, interrupted=interrupted)
        if interrupted:
            self._close_attempt("interrupted", fit_seconds)  # before the state is saved
            return self._interrupt(model, cb), fit_seconds
        self.final = {
            "accuracy": cb.rows[-1]["val_acc"] if cb.rows else self.final["accuracy"],
            "loss": cb.rows[-1]["val_loss"] if cb.rows else self.final["loss"],
        }
        if self.phase_accuracy is not None:  # e.g. accuracy with test-time augmentation
            self.final["accuracy"] = self.phase_accuracy
        if bench.kind == "epochs" and self.epochs_done < self.params["epochs"]:
            raise RuntimeError(f"fit stopped after {self.epochs_done} of {self.params['epochs']} epochs")
        return "completed", fit_seconds

    def _account(self, cb) -> None:
        """Fold this attempt's step times and GPU samples into the totals."""
        warm = min(self.params.get("warmup_steps") or 0, len(cb.step_times) // 2)
        times = cb.step_times[warm:]
        if times:
            self.measured["samples"] += len(times) * self.global_batch
            self.measured["seconds"] += sum(times)
            rates = self.measured["rates"] + [self.global_batch / t for t in times if t > 0]
            stride = max(1, len(rates) // MAX_RATES)
            self.measured["rates"] = rates[::stride]
        self.measured["warmup_steps"] = warm
        s, h = self.sampler, self.gpu_hist
        if s.util:
            h["util_sum"] += sum(s.util)
            h["util_n"] += len(s.util)
        if s.power_w:
            h["power_sum"] += sum(s.power_w)
            h["power_n"] += len(s.power_w)
        if s.mem_peak_bytes:
            h["mem_peak"] = max(h["mem_peak"] or 0, s.mem_peak_bytes)

    def _close_attempt(self, status: str, fit_seconds: float) -> None:
        """Record how this attempt ended (once) and add its training time."""
        if self._attempt_closed:
            return
        self._attempt_closed = True
        self.train_seconds += fit_seconds
        self.attempt.update(
            status=status,
            end=iso(),
            epochs_completed=self.epochs_done,
            steps_completed=self.steps_done,
            train_seconds=round(fit_seconds, 3),
        )

    def _interrupt(self, model, cb) -> str:
        reason = self.ctx.watcher.reason or "interruption notice"
        self.timeline.add("interruption_notice", reason=reason)
        self.error = f"interrupted: {reason}"
        if self.bench.resumable:
            self.ckpt.save(model, self._state(), tag=self.steps_done, sync=True)
        else:
            self.error += f" ({self.bench.name} restarts from the beginning: its phases cannot resume)"
        return "interrupted"

    # -- result ------------------------------------------------------------------
    def _metrics(self) -> dict:
        m, h = self.measured, self.gpu_hist
        sps = m["samples"] / m["seconds"] if m["seconds"] > 0 else None
        return {
            "train_seconds": round(self.train_seconds, 3),
            "samples_per_second": round(sps, 3) if sps else None,
            "samples_per_second_spread": _spread(m["rates"]),
            "warmup_steps": m.get("warmup_steps"),
            "final_accuracy": self.final["accuracy"] if self.bench.kind == "epochs" else None,
            "final_loss": self.final["loss"] if self.bench.kind == "epochs" else None,
            "gpu_utilization_mean": round(h["util_sum"] / h["util_n"], 2) if h["util_n"] else None,
            "gpu_memory_peak_gb": round(h["mem_peak"] / 1024**3, 3) if h["mem_peak"] else None,
            "gpu_power_mean_w": round(h["power_sum"] / h["power_n"], 1) if h["power_n"] else None,
            "gpu_samples": h["util_n"] if self.sampler.available or h["util_n"] else None,
            "epochs_completed": self.epochs_done if self.bench.kind == "epochs" else None,
            "steps_completed": self.steps_done,
            "samples_trained": self.steps_done * self.global_batch,
            **({"phase_seconds": self.phase_seconds} if self.phase_seconds else {}),
        }

    def _hardware(self) -> dict:
        nv = nvml_info()
        d = self.devices
        details = d.gpu_details if d else {}
        cc = details.get("compute_capability")
        return {
            "device": d.device if d else "CPU",
            "gpu_model": nv["gpu_model"] or details.get("device_name"),
            "gpu_count": d.gpus_used if d else 0,
            "gpus_visible": d.gpus_visible if d else None,
            "gpu_memory_gb": nv["gpu_memory_gb"],
            "driver_version": nv["driver_version"],
            "compute_capability": nv["compute_capability"] or (f"{cc[0]}.{cc[1]}" if cc else None),
            **host_facts(),
        }, nv

    def _result(self, status: str, code: int) -> dict:
        cfg, ident, d = self.cfg, self.ctx.identity, self.devices
        hardware, nv = self._hardware()
        software = software_facts(cfg.backend)
        software["nvml_cuda_driver"] = nv["nvml_cuda_driver"]
        warnings = list(dict.fromkeys(self.warnings + self.ckpt.errors))
        if hardware["device"] == "CPU" and nv["nvml_error"]:
            warnings.append(f"no GPU metrics: {nv['nvml_error']}")
        offering = result_offering(cfg.offering, cfg.market, ident, self.ctx.offering)
        benchmark = {
            "name": self.bench.name,
            "kind": self.bench.kind,
            "description": self.bench.description,
            "params": self.params,
            "data": "synthetic" if self.bench.kind == "throughput" else str(cfg.data),
            "precision": cfg.precision,
            "per_gpu_batch_size": self.params["batch_size"],
            "global_batch_size": self.global_batch,
            "replicas": d.replicas if d else 1,
            "strategy": d.strategy_name if d else "none",
            "all_reduce": d.all_reduce if d else None,
            "jit_compile": self.jit_compile,
            "fingerprint": self.fp,
        }
        return new_result(
            run_id=self.run_id,
            stack=cfg.stack,
            status=status,
            started_at=self.started_at,
            finished_at=iso(),
            offering=offering,
            price=self.ctx.price,
            hardware=hardware,
            software=software,
            benchmark=benchmark,
            metrics=self._metrics(),
            attempts=self.attempts,
            timeline=self.timeline.ordered(),
            error=self.error,
            warnings=warnings,
            artifacts=self.writer.artifacts(),
            exit_code=code,
        )

    def _finish(self, status: str, code: int) -> int:
        self.ckpt.wait()
        if status == "completed":
            self.ckpt.finish(self._state())
        self.ckpt.close()
        self.timeline.add("upload", files=["epochs.csv", "events.jsonl", "result.json"])
        before = len(self.ctx.store.spooled)
        self.writer.write_all(self._result(status, code), self.timeline, self.rows)
        if len(self.ctx.store.spooled) > before:
            print(
                f"[gpubench] bucket unreachable: {len(self.ctx.store.spooled) - before} file(s) spooled to "
                f"{self.ctx.store.spool.dir}; run `python -m payload flush`",
                file=sys.stderr,
                flush=True,
            )
        print(
            f"[gpubench] {self.bench.name}: {status} -> {self.ctx.store.url_for(self.writer.prefix)}",
            file=sys.stderr,
            flush=True,
        )
        return code


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _install_stop_handlers(watcher: PreemptionWatcher) -> dict:
    """SIGTERM (docker stop, ACPI shutdown) and SIGINT (Ctrl-C) act like a preemption
    notice: checkpoint, write an ``interrupted`` result, exit 75. Returns the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in STOP_SIGNALS:
        name = signal.Signals(sig).name
        old[sig] = signal.signal(sig, lambda signum, frame, name=name: watcher.trigger(f"{name} received"))
    return old


def run(cfg: RunConfig) -> int:
    """Run the suite; return the process exit code (payload.exitcodes)."""
    boot = time.time()
    spool = Spool(cfg.spool)
    flush = spool.flush()
    flush_note = (
        {"delivered": len(flush.delivered), "still_spooled": len(flush.failed)}
        if flush.delivered or flush.failed
        else None
    )
    store = SpoolingStore(open_store(cfg.results), spool)
    identity = detect_identity()
    cfg.market = cfg.market or identity.lifecycle or ("spot" if cfg.stack.endswith("-spot") else "on-demand")
    price, warnings = price_row(
        cfg.offering, cfg.market, cfg.hourly_usd, cfg.price_source, cfg.price_as_of, cfg.on_demand_hourly_usd
    )
    facts, more = offering_facts(cfg.offering, cfg.offering_kind, cfg.instance_type)
    if cfg.probe_seconds and cfg.benchmark:
        more = [*more, "--probe-seconds applies to workloads only: the built-in benchmarks ran in full"]
    watcher = PreemptionWatcher(cfg.watch_interval, cfg.deadline).start()
    old_handlers = _install_stop_handlers(watcher)
    ctx = SuiteContext(cfg, boot, identity, store, watcher, price, facts, warnings + more, flush_note)
    codes = []
    try:
        for name in cfg.benchmark:
            code = BenchmarkRun(ctx, name).execute()
            codes.append(code)
            if code == exitcodes.INTERRUPTED:
                break  # the next boot resumes this one and runs the rest
        if cfg.workload:
            from payload.workloads import WorkloadRun, load_spec

            codes.append(WorkloadRun(ctx, load_spec(cfg.workload)).execute())
    finally:
        watcher.stop()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    if store.stranded:
        where = ", ".join(str(d) for d in spool.used_fallbacks) or "stderr (LOST-FILE markers)"
        print(
            f"[gpubench] {len(store.stranded)} file(s) are in neither the bucket nor the spool {spool.dir}: "
            f"they are in {where}"
            + (
                f"; deliver with `python -m payload flush --spool {spool.used_fallbacks[0]}`"
                if spool.used_fallbacks
                else ""
            )
            + (f"; lost: {', '.join(store.lost)}" if store.lost else ""),
            file=sys.stderr,
            flush=True,
        )
        codes.append(exitcodes.STRANDED)
    if store.spooled and exitcodes.worst(codes) == exitcodes.OK:
        codes.append(exitcodes.SPOOLED)
    return exitcodes.worst(codes)
