"""A built-in benchmark as a job of payload.run.Run: devices, data, model, fit with the harness callback
(payload.training), a checkpoint after every epoch or chunk of steps, and resume from the last one.

A checkpoint, in ``runs/<stack>/<run-id>/checkpoints/``: ``model-<steps>.npz`` (model and optimizer variables,
packed and uploaded on a background thread) and ``state.json`` (what the harness needs to continue), each a
new version, the model before the state that points at it.
"""

from __future__ import annotations

import io
import json
import statistics
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from functools import partial

from payload import exitcodes, frameworks, training
from payload.benchmarks import get
from payload.events import mllog
from payload.gpu import GPU_TOTALS, software_facts
from payload.identity import launch_prefix
from payload.layout import version_of, versioned
from payload.run import STATE_NAME, JobReport, Run, find_resumable, fingerprint, hardware
from payload.timestamps import iso

MAX_RATES = 5000  # per-step rates kept in checkpoint state for the spread
# S3 object tags on model files: the results bucket expires them after checkpointDays (infra/aws/component.py).
CHECKPOINT_TAGS = {"gpubench:kind": "checkpoint"}


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


def restore(model, blob: bytes) -> None:
    """Load a checkpoint's archive into a freshly built, compiled model."""
    np = frameworks.numpy()
    with np.load(io.BytesIO(blob)) as f:
        weights = [f[f"w{i}"] for i in range(sum(k.startswith("w") for k in f.files))]
        opt = [f[f"o{i}"] for i in range(sum(k.startswith("o") for k in f.files))]
    model.set_weights(weights)
    model.optimizer.build(model.trainable_variables)
    variables = list(model.optimizer.variables)
    if len(variables) != len(opt):
        raise ValueError(
            f"checkpoint has {len(opt)} optimizer variables, the model's optimizer "
            f"{len(variables)}: parameters changed since the checkpoint?"
        )
    for var, value in zip(variables, opt):
        var.assign(value)


class Checkpointer:
    """Saves model + state to ``<writer.prefix>checkpoints/`` asynchronously, each under new names."""

    def __init__(self, store, writer, timeline=None):
        self.store, self.writer, self.dir = store, writer, writer.prefix + "checkpoints/"
        self.timeline = timeline
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpubench-ckpt")
        self._pending: Future | None = None
        self.errors: list[str] = []

    def save(self, model, state: dict, tag: int, sync: bool = False) -> None:
        """Snapshot now (the model keeps training); pack and upload in the background."""
        t0 = time.perf_counter()
        self.wait()  # at most one upload in flight
        np, optimizer = frameworks.numpy(), model.optimizer  # host copies (milliseconds)
        weights = model.get_weights()
        opt = [np.asarray(v.numpy()) for v in optimizer.variables] if optimizer is not None else []
        snapshot_s = time.perf_counter() - t0
        self._pending = self._pool.submit(self._upload, weights, opt, dict(state), tag, snapshot_s)
        if sync:
            self.wait()

    def _upload(self, weights: list, opt: list, state: dict, tag: int, snapshot_s: float) -> None:
        t0 = time.perf_counter()
        buf = io.BytesIO()
        arrays = {**{f"w{i}": a for i, a in enumerate(weights)}, **{f"o{i}": a for i, a in enumerate(opt)}}
        frameworks.numpy().savez(buf, **arrays)
        blob = buf.getvalue()
        state_key = self.writer.next_key(f"checkpoints/{STATE_NAME}")  # model and state: new names, one version
        key = self.dir + versioned(f"model-{tag:09d}.npz", *version_of(state_key)[1])
        state.update(model_key=key, saved_at=iso())
        ok = self.store.put_bytes(key, blob, "application/octet-stream", tags=CHECKPOINT_TAGS) is not False
        ok = self.store.put_bytes(state_key, json.dumps(state).encode(), "application/json") is not False and ok
        if self.timeline is not None:
            seconds = {
                "snapshot_seconds": round(snapshot_s, 4),
                "pack_upload_seconds": round(time.perf_counter() - t0, 3),
            }
            self.timeline.add("checkpoint", key=key, bytes=len(blob), uploaded=ok, **seconds)

    def wait(self) -> None:
        if self._pending is not None:
            try:
                self._pending.result()
            except Exception as exc:  # noqa: BLE001
                self.errors.append(f"checkpoint upload failed: {exc}")
            self._pending = None

    def close(self) -> None:
        self.wait()
        self._pool.shutdown(wait=True)


class PhaseRun:
    """What a benchmark's own ``train`` gets: params, steps per epoch, the strategy scope (to recompile between
    phases) and ``fit`` with the harness callback."""

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


def fit(bench, model, plan, train_ds, val_ds, params: dict, batches: int, devices, callback) -> dict | None:
    """Keras ``fit`` with the harness `callback`, or the benchmark's own phases (their outcome); `batches`: full
    batches in the training data, the phases' steps per epoch unless the plan sets them."""
    phases = PhaseRun(params, plan.steps_per_epoch or max(1, batches), devices, callback, plan.steps_per_epoch)
    if bench.train is not None:
        return bench.train(model, train_ds, val_ds, phases)
    phases.fit(model, train_ds, val_ds, epochs=plan.epochs, initial_epoch=plan.initial_epoch)
    return None


@dataclass
class Totals:
    """What a run accumulates over its attempts (in its checkpoint state)."""

    rows: list = field(default_factory=list)
    epochs_completed: int = 0
    steps_completed: int = 0
    train_seconds: float = 0.0
    measured: dict = field(default_factory=lambda: {"samples": 0, "seconds": 0.0, "rates": []})
    gpu_hist: dict = field(default_factory=lambda: dict(GPU_TOTALS))


class BuiltinJob:
    """One benchmark of the suite (payload.run.Job)."""

    extra_files: tuple[str, ...] = ()

    def __init__(self, run: Run, name: str):
        cfg = self.cfg = run.cfg
        self.run, self.bench = run, get(name)
        self.name = self.run_name = self.bench.name
        params = self.params = self.bench.run_params(cfg)
        self.fingerprint = fingerprint(cfg.stack, name, params, cfg.precision, cfg.gpus, str(cfg.data), cfg.backend)
        self.devices = None
        self.ckpt: Checkpointer | None = None
        self.resume: dict | None = None  # the checkpoint state this attempt resumes from
        self.global_batch = self.params["batch_size"]
        self.totals = Totals()
        self.attempt_seconds = 0.0  # this attempt's fit time, once it returned
        self.final = {"accuracy": None, "loss": None}
        self.outcome: dict = {}  # of a benchmark's own train(): phase_seconds, final_accuracy
        self.jit_compile = None

    def restore(self) -> dict | None:
        run = self.run
        if self.cfg.no_resume or not self.bench.resumable:
            return None
        # only this launch's runs: the instance may write to no other (payload.identity.launch_prefix)
        find = partial(find_resumable, run.ctx.store, self.cfg.stack, self.fingerprint, launch_prefix(self.cfg.launch))
        state = run.lookup(find, "resume lookup failed, starting fresh")
        if state:
            self.totals = Totals(**{f.name: state[f.name] for f in fields(Totals)})
            run.attempts, run.started_at = state["attempts"], state["started_at"]
            run.timeline.extend(state["timeline"])
        return state

    def _state(self) -> dict:
        run = self.run
        return {
            "fingerprint": self.fingerprint,
            "run_id": run.run_id,
            "stack": self.cfg.stack,
            "benchmark": self.bench.name,
            "params": self.params,
            "complete": False,
            "started_at": run.started_at,
            **asdict(self.totals),
            "attempts": run.attempts,
            "timeline": run.timeline.ordered(),
            "deployment": self.cfg.deadline,
        }

    def begin(self, resume: dict | None) -> None:
        run, self.resume = self.run, resume
        self.ckpt = Checkpointer(run.ctx.store, run.writer, run.timeline)
        mllog("run_start", metadata={"benchmark": self.bench.name, "run_id": run.run_id})
        mllog("submission_benchmark", self.bench.name)

    def execute(self) -> tuple[str, int]:
        cfg, run = self.cfg, self.run
        self.devices = training.setup_devices(cfg.gpus, cfg.expect_gpu, cfg.cpu_replicas, cfg.backend, cfg.all_reduce)
        d = self.devices
        batch = self.global_batch = self.params["batch_size"] * d.replicas
        run.timeline.add(
            "devices", device=d.device, gpus_visible=d.gpus_visible, replicas=d.replicas, global_batch=batch
        )
        mllog("global_batch_size", batch)
        status = self._train()
        return status, exitcodes.INTERRUPTED if status == "interrupted" else exitcodes.OK

    def failure(self, exc: Exception) -> tuple[str, int]:
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, training.NoGpuError):
            return error, exitcodes.NO_GPU
        return error + "\n" + "".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:]
        ), exitcodes.FAILED

    def _train(self) -> str:
        cfg, bench, work, t = self.cfg, self.bench, dict(self.params, seed=self.cfg.seed), self.totals
        frameworks.keras().utils.set_random_seed(cfg.seed)
        t0 = time.perf_counter()
        data = bench.load_data(cfg.data, work, self.global_batch)
        seconds = round(time.perf_counter() - t0, 3)
        self.run.timeline.add("data_loaded", data=data.source, train_samples=data.train_samples, seconds=seconds)
        plan = training.fit_plan(bench.kind, self.params, t.epochs_completed, t.steps_completed, cfg.checkpoint_every)
        train_ds, val_ds = training.make_datasets(data, self.global_batch, cfg.seed, plan.steps_per_epoch)
        with training.precision_policy(cfg.precision):
            with self.devices.strategy.scope():
                model = bench.build_model(work)
                if self.resume:
                    restore(model, self.run.ctx.store.get_bytes(self.resume["model_key"]))
                    done = {"epochs_completed": t.epochs_completed, "steps_completed": t.steps_completed}
                    self.run.timeline.add("resume", checkpoint=self.resume["model_key"], **done)
            if self.run.ctx.watcher.notice.is_set():  # noticed while loading: do not start
                self.run.close_attempt("interrupted")
                return self._interrupt(model)
            return self._fit(model, plan, train_ds, val_ds, data.train_samples // self.global_batch)

    def _fit(self, model, plan, train_ds, val_ds, batches: int) -> str:
        bench, run, t = self.bench, self.run, self.totals
        cb = training.make_callback_class()(
            notice=run.ctx.watcher.notice,
            total_steps=plan.total_steps,
            steps_done=t.steps_completed,
            epoch_offset=len(t.rows),
            on_epoch_done=lambda cb, row: self._epoch_done(cb, row, plan),
            time_last_step=val_ds is None,
        )
        self.jit_compile = bool(getattr(model, "jit_compile", False))  # Keras 3 uses XLA on GPUs by default
        run.sampler.start()
        run.sampler.begin_window()
        run.timeline.add("train_start", **asdict(plan))  # epochs, initial_epoch, steps_per_epoch, total_steps
        t0 = time.perf_counter()
        interrupted = False
        try:
            self.outcome = fit(bench, model, plan, train_ds, val_ds, self.params, batches, self.devices, cb) or {}
        except training.Interrupted:
            interrupted = True
        seconds = time.perf_counter() - t0
        run.sampler.end_window()
        t.steps_completed = cb.steps_done + cb.steps
        self._account(cb)
        run.timeline.add("train_end", seconds=round(seconds, 3), steps=cb.steps, interrupted=interrupted)
        if interrupted:
            self.attempt_seconds = seconds
            run.close_attempt("interrupted")  # before the state is saved
            return self._interrupt(model)
        if cb.rows:
            self.final = {"accuracy": cb.rows[-1]["val_acc"], "loss": cb.rows[-1]["val_loss"]}
        if self.outcome.get("final_accuracy") is not None:  # e.g. accuracy with test-time augmentation
            self.final["accuracy"] = self.outcome["final_accuracy"]
        if bench.kind == "epochs" and t.epochs_completed < self.params["epochs"]:
            raise RuntimeError(f"fit stopped after {t.epochs_completed} of {self.params['epochs']} epochs")
        self.attempt_seconds = seconds
        return "completed"

    def _epoch_done(self, cb, row: dict, plan) -> None:
        """An epoch (or chunk of steps) ended: count it, and checkpoint unless it is the last."""
        t, periodic = self.totals, self.bench.kind == "epochs"
        t.rows.append(row)
        t.steps_completed = cb.steps_done + cb.steps
        t.epochs_completed += periodic
        self.run.timeline.add(
            "epoch_end", epoch=row["epoch"], seconds=row["elapsed"], loss=row["loss"], val_acc=row["val_acc"]
        )
        more = t.epochs_completed < self.params["epochs"] if periodic else t.steps_completed < plan.total_steps
        if more and self.bench.resumable:
            self.ckpt.save(cb.model, self._state(), tag=t.steps_completed)

    def _account(self, cb) -> None:
        """Fold this attempt's step times and GPU samples into the totals."""
        m = self.totals.measured
        warm = min(self.params.get("warmup_steps") or 0, len(cb.step_times) // 2)
        times = cb.step_times[warm:]
        if times:
            m["samples"] += len(times) * self.global_batch
            m["seconds"] += sum(times)
            rates = m["rates"] + [self.global_batch / t for t in times if t > 0]
            m["rates"] = rates[:: max(1, len(rates) // MAX_RATES)]
        m["warmup_steps"] = warm
        self.run.sampler.add_to(self.totals.gpu_hist)

    def end_attempt(self) -> dict:
        t = self.totals
        t.train_seconds += self.attempt_seconds
        return {
            "epochs_completed": t.epochs_completed,
            "steps_completed": t.steps_completed,
            "train_seconds": round(self.attempt_seconds, 3),
        }

    def _interrupt(self, model) -> str:
        if self.bench.resumable:
            self.run.interrupted()
            self.ckpt.save(model, self._state(), tag=self.totals.steps_completed, sync=True)
        else:
            self.run.interrupted(f" ({self.bench.name} restarts from the beginning: its phases cannot resume)")
        return "interrupted"

    def settle(self, status: str) -> dict:
        mllog("run_stop", metadata={"status": status})
        self.ckpt.close()
        return self._state()

    def write_extras(self) -> None:
        """None: a benchmark uploads only the run's own files."""

    def epoch_rows(self) -> list[dict]:
        return self.totals.rows

    def _metrics(self) -> dict:
        t, epochs = self.totals, self.bench.kind == "epochs"
        m = t.measured
        sps = m["samples"] / m["seconds"] if m["seconds"] > 0 else None
        return {
            "train_seconds": round(t.train_seconds, 3),
            "samples_per_second": round(sps, 3) if sps else None,
            "samples_per_second_spread": _spread(m["rates"]),
            "warmup_steps": m.get("warmup_steps"),
            "final_accuracy": self.final["accuracy"] if epochs else None,
            "final_loss": self.final["loss"] if epochs else None,
            **self.run.sampler.summary(t.gpu_hist),
            "epochs_completed": t.epochs_completed if epochs else None,
            "steps_completed": t.steps_completed,
            "samples_trained": t.steps_completed * self.global_batch,
            **({"phase_seconds": self.outcome["phase_seconds"]} if self.outcome.get("phase_seconds") else {}),
        }

    def _benchmark(self) -> dict:
        cfg, d, bench = self.cfg, self.devices, self.bench
        return {
            "name": bench.name,
            "kind": bench.kind,
            "description": bench.description,
            "params": self.params,
            "data": "synthetic" if bench.kind == "throughput" else str(cfg.data),
            "precision": cfg.precision,
            "per_gpu_batch_size": self.params["batch_size"],
            "global_batch_size": self.global_batch,
            "replicas": d.replicas if d else 1,
            "strategy": d.strategy_name if d else "none",
            "all_reduce": d.all_reduce if d else None,
            "jit_compile": self.jit_compile,
            "fingerprint": self.fingerprint,
        }

    def report(self, status: str, nv: dict) -> JobReport:
        d = self.devices
        software = {**software_facts(self.cfg.backend), "nvml_cuda_driver": nv["nvml_cuda_driver"]}
        return JobReport(
            hardware=hardware(nv, d.device, d.gpus_used, d.gpus_visible, d.gpu_details)
            if d
            else hardware(nv, "CPU", 0, None),
            software=software,
            benchmark=self._benchmark(),
            metrics=self._metrics(),
            artifacts=self.run.writer.artifacts(),
            warnings=list(self.ckpt.errors),
        )
