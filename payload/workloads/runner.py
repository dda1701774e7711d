"""Runs a workload spec as a benchmark: same timeline, sampling, pricing and files as a built-in one.

The job's `setup` and `run` go to ``bash -c`` in its workdir, in a process
group of their own so the deadline or a preemption notice stops every child.
Its output is streamed to our stderr, read for metrics lines
(payload.workloads.metrics) and its last lines are uploaded as
``log-tail.txt`` beside ``result.json``, every half minute while it runs and
once more at the end (payload.workloads.logtail). A non-zero exit, a stop at
the deadline, an MLPerf ``run_stop`` with status aborted or no metrics at all
make a ``failed`` result whose error carries the log tail.

In probe mode (``--probe-seconds``) the job's progress readings go to a
payload.workloads.probe.ProbeMonitor, and the job is stopped, through the
same process-group stop as a deadline, once its throughput is steady or the
probe's time is up; that stop is the probe's normal end, not a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from payload import exitcodes
from payload.checkpoint import STATE_NAME, find_completed
from payload.environment import host_facts, software_facts
from payload.events import Timeline, iso, mllog
from payload.gpu import GpuSampler, nvml_info
from payload.identity import make_run_id
from payload.pricing import result_offering
from payload.result import RunWriter, new_result
from payload.workloads.jobenv import job_frameworks
from payload.workloads.logtail import LOG_TAIL_LINES, LogTail
from payload.workloads.metrics import MetricsReader
from payload.workloads.probe import DEFAULT_TARGET, ProbeMonitor, overhead_seconds
from payload.workloads.spec import WorkloadSpec

__all__ = ["LOG_TAIL_LINES", "LOG_TAIL_NAME", "WorkloadRun"]

ERROR_TAIL_LINES = 20  # quoted in the result's error
STOP_GRACE_SECONDS = 30.0  # SIGTERM, then SIGKILL


LOG_TAIL_NAME = "log-tail.txt"


class _Job:
    """One shell command in its own process group, its output pumped line by line."""

    def __init__(self, script: str, cwd: str, env: dict, on_line):
        shell = shutil.which("bash") or "/bin/sh"
        self.proc = subprocess.Popen(
            [shell, "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._pump = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._pump.start()

    def _read(self, on_line) -> None:
        for raw in iter(self.proc.stdout.readline, b""):
            on_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        self.proc.stdout.close()

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait(self, notice: threading.Event, poll: float = 0.2, should_stop=None) -> tuple[int, bool]:
        """(exit code, stopped by a notice). `should_stop()` true (a probe done) stops it too, not as a notice."""
        stopped = ended = False
        while self.proc.poll() is None:
            if notice.is_set() and not (stopped or ended):
                stopped = True
                self.stop()
            elif should_stop is not None and not (stopped or ended) and should_stop():
                ended = True
                self.stop()
            time.sleep(poll)
        self._pump.join(timeout=10)
        return self.proc.returncode, stopped


class WorkloadRun:
    """One workload of a suite (the runner's SuiteContext gives store, price, watcher and identity)."""

    def __init__(self, ctx, spec: WorkloadSpec):
        from payload.runner import fingerprint

        self.ctx, self.cfg, self.spec = ctx, ctx.cfg, spec
        self.timeline = Timeline(echo=sys.stderr)
        self.warnings = list(ctx.warnings)
        self.gpus = self.cfg.gpus if self.cfg.gpus is not None else spec.gpus
        self.params = {
            "workload_sha256": spec.sha256,
            "workdir_sha256": spec.workdir_sha256,
            "spec": os.path.basename(spec.path),
            "image": spec.image,
            "gpus": self.gpus,
            "metrics": list(spec.metrics),
        }
        self.fp = fingerprint(self.cfg.stack, spec.benchmark_name, self.params, "workload", self.gpus, "workload")
        self.tail = LogTail(LOG_TAIL_LINES)
        self.reader = MetricsReader(spec.metrics)
        self.probe = (
            ProbeMonitor(self.cfg.probe_seconds, self.cfg.probe_target or DEFAULT_TARGET)
            if self.cfg.probe_seconds
            else None
        )
        self.sampler = GpuSampler()
        self.env: dict | None = None  # the job's environment, once built
        self.error: str | None = None
        self.started_at = iso()
        self.wall = {"setup": 0.0, "run": 0.0}
        self.exit = {"setup": None, "run": None}

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(self.spec.env)
        env.update(
            GPUBENCH_WORKLOAD=self.spec.name,
            GPUBENCH_WORKLOAD_SHA256=self.spec.sha256,
            GPUBENCH_RUN_ID=self.run_id,
            PYTHONUNBUFFERED="1",  # metrics lines arrive as printed, not at exit
            GPUBENCH_PYTHON=sys.executable,
        )
        # The payload's interpreter comes first on PATH: on a venv host, `pip install` in setup goes
        # into the run's venv, not the system Python; in a container it is the image's own Python.
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", os.defpath)
        if self.gpus is not None:
            env["GPUBENCH_GPUS"] = str(self.gpus)
            if self.gpus == 0:
                env["CUDA_VISIBLE_DEVICES"] = ""
            elif "CUDA_VISIBLE_DEVICES" not in os.environ:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(self.gpus))
        return env

    def _line(self, line: str) -> None:
        self.tail.append(line)
        progress = self.reader.feed(line)
        if self.probe is not None and self.probe.observe(progress):
            self.timeline.add("first_step", samples=progress.samples, elapsed=self.probe.first_step["elapsed"])
        print(line, file=sys.stderr, flush=True)

    def _phase(self, name: str, script: str, env: dict) -> tuple[int, bool]:
        self.timeline.add(f"{'setup' if name == 'setup' else 'train'}_start", phase=name)
        t0 = time.perf_counter()
        probe = self.probe if name == "run" else None
        if probe is not None:
            probe.start()
        job = _Job(script, self.spec.cwd, env, self._line)
        code, stopped = job.wait(self.ctx.watcher.notice, should_stop=probe.should_stop if probe else None)
        if probe is not None:
            probe.finish()
            if probe.stopped_early:
                rate = probe.steady.samples_per_second if probe.steady is not None else None
                self.timeline.add("probe_stop", stopped_by=probe.stopped_by, samples_per_second=rate)
        self.wall[name] = time.perf_counter() - t0
        self.exit[name] = code
        self.timeline.add(
            f"{'setup' if name == 'setup' else 'train'}_end",
            phase=name,
            seconds=round(self.wall[name], 3),
            exit_code=code,
            stopped=stopped,
        )
        return code, stopped

    def execute(self) -> int:
        cfg, ident, spec = self.cfg, self.ctx.identity, self.spec
        done = None
        if not cfg.no_resume and cfg.deadline is not None:
            try:
                done = find_completed(self.ctx.store, cfg.stack, self.fp, cfg.deadline)
            except Exception as exc:  # noqa: BLE001 - bucket down: run it, say so
                self.warnings.append(f"completed-run lookup failed, running again: {exc}")
        if done:
            print(f"[gpubench] {spec.benchmark_name}: already completed in this deployment", file=sys.stderr)
            return exitcodes.OK
        self.run_id = make_run_id(self.ctx.boot, ident.instance_id, f"workload-{spec.name}")
        if not self.ctx.host_events_claimed:
            self.ctx.host_events_claimed = True
            self.warnings += self.timeline.merge_host_events(cfg.host_events)
        self.writer = RunWriter(self.ctx.store, cfg.stack, self.run_id)
        self.tail.start_uploads(self._put_tail_now)
        self.attempt = {
            "attempt": 1,
            "instance_id": ident.instance_id,
            "zone": ident.zone,
            "start": iso(),
            "end": None,
            "status": "failed",
        }
        self.timeline.add(
            "run_start", benchmark=spec.benchmark_name, run_id=self.run_id, resumed=False, fingerprint=self.fp
        )
        if self.ctx.flush_note:
            self.timeline.add("spool_flush", **self.ctx.flush_note)
        mllog("submission_benchmark", spec.benchmark_name, metadata={"run_id": self.run_id})
        status, code = "failed", exitcodes.FAILED
        try:
            status, code = self._run()
        except Exception as exc:  # noqa: BLE001 - every failure becomes a failed result
            self.error = f"{type(exc).__name__}: {exc}"
            self.timeline.add("error", error=str(exc)[:500])
        finally:
            self.sampler.stop()
        self.attempt.update(status=status, end=iso(), train_seconds=round(self.wall["run"], 3))
        return self._finish(status, code)

    def _run(self) -> tuple[str, int]:
        if self.cfg.expect_gpu and self.gpus != 0:
            nv = nvml_info()
            if not nv["gpus_nvml"]:
                status, _ = self._fail_with(
                    f"--expect-gpu: no GPU visible ({nv['nvml_error'] or 'NVML lists 0 devices'}); "
                    "check the driver, or run without --expect-gpu (gpubench:expectGpu: false) to benchmark the CPU"
                )
                return status, exitcodes.NO_GPU
        env = self._env()
        self.env = env
        if self.spec.setup:
            code, stopped = self._phase("setup", self.spec.setup, env)
            if stopped or code != 0:
                return self._failed("setup", code, stopped)
        self.sampler.start()
        self.sampler.begin_window()
        code, stopped = self._phase("run", self.spec.run, env)
        self.sampler.end_window()
        probed = self.probe is not None and self.probe.stopped_early and not stopped
        if probed:  # stopped by the probe on purpose: its exit status is the stop signal's
            return self._probe_outcome()
        if stopped or code != 0:
            return self._failed("run", code, stopped)
        if self.reader.run_status not in (None, "success"):
            return self._fail_with(f"the job's MLLOG run_stop says status {self.reader.run_status!r}")
        missing = self.reader.missing()
        if missing:
            return self._fail_with(missing)
        return "completed", exitcodes.OK

    def _probe_outcome(self) -> tuple[str, int]:
        """A probe that stopped the job: completed when the job reported progress, else missing metrics."""
        if self.probe.first_step is None:
            return self._fail_with(
                f"missing metric: the job reported no training samples in the probe's {self.probe.limit_seconds:g} s "
                '(print `GPUBENCH_METRICS {"samples": <cumulative>, "seconds": <so far>}` lines, or MLLOG '
                "train_samples and epoch_stop lines; see docs/workloads.md)"
            )
        return "completed", exitcodes.OK

    def _failed(self, phase: str, code: int, stopped: bool) -> tuple[str, int]:
        if stopped:
            reason = self.ctx.watcher.reason or "stop notice"
            if "deadline" in reason:
                return self._fail_with(f"timeout: `{phase}` was stopped at the run deadline ({reason})")
            self.error = f"interrupted: {reason} (workloads restart from the beginning on the next boot)"
            self.timeline.add("interruption_notice", reason=reason)
            return "interrupted", exitcodes.INTERRUPTED
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        return self._fail_with(f"`{phase}` {how}")

    def _fail_with(self, message: str) -> tuple[str, int]:
        tail = self.tail.lines()[-ERROR_TAIL_LINES:]
        self.error = message + ("\n--- last lines of its output ---\n" + "\n".join(tail) if tail else "")
        self.timeline.add("error", error=message[:500])
        print(f"[gpubench] {self.spec.benchmark_name} failed: {message}", file=sys.stderr, flush=True)
        return "failed", exitcodes.FAILED

    # -- result ------------------------------------------------------------------
    def _result(self, status: str, code: int) -> dict:
        cfg, ident, spec = self.cfg, self.ctx.identity, self.spec
        nv = nvml_info()
        used = nv["gpus_nvml"] if self.gpus is None else min(self.gpus, nv["gpus_nvml"])
        summary = self.reader.summary(self.wall["run"])
        time_source, batch = summary.pop("_time_source"), summary.pop("_batch_size")
        s = self.sampler
        metrics = {
            **summary,
            "gpu_utilization_mean": s.summary()["gpu_utilization_mean"],
            "gpu_memory_peak_gb": s.summary()["gpu_memory_peak_gb"],
            "gpu_power_mean_w": s.summary()["gpu_power_mean_w"],
            "gpu_samples": s.summary()["gpu_samples"],
        }
        if status != "completed":  # measured numbers of a failed job are not a result
            metrics = {k: v for k, v in metrics.items() if k.startswith("gpu_")}
            metrics["train_seconds"] = round(self.wall["run"], 3)
        hardware = {
            "device": "GPU" if used else "CPU",
            "gpu_model": nv["gpu_model"],
            "gpu_count": used,
            "gpus_visible": nv["gpus_nvml"],
            "gpu_memory_gb": nv["gpu_memory_gb"],
            "driver_version": nv["driver_version"],
            "compute_capability": nv["compute_capability"],
            **host_facts(),
        }
        software = self._software(nv)
        probe_warnings = self.probe.warnings if self.probe is not None else []
        warnings = list(dict.fromkeys(self.warnings + self.reader.warnings + probe_warnings))
        if not used and nv["nvml_error"]:
            warnings.append(f"no GPU metrics: {nv['nvml_error']}")
        offering = result_offering(cfg.offering, cfg.market, ident, self.ctx.offering)
        benchmark = {
            "name": spec.benchmark_name,
            "kind": "workload",
            "description": spec.description or f"workload {spec.name} ({os.path.basename(spec.path)})",
            "params": self.params,
            "data": "workload",
            "precision": None,
            "per_gpu_batch_size": None,
            "global_batch_size": batch,
            "replicas": max(used, 1),
            "fingerprint": self.fp,
            "workload": {
                "name": spec.name,
                "sha256": spec.sha256,
                "workdir_sha256": spec.workdir_sha256,
                "image": spec.image,
                "metrics": list(spec.metrics),
                "metrics_found": self.reader.found(),
                "time_source": time_source,
                "setup_seconds": round(self.wall["setup"], 3),
                "run_seconds": round(self.wall["run"], 3),
                "setup_exit_code": self.exit["setup"],
                "run_exit_code": self.exit["run"],
                "log_tail_lines": len(self.tail),
                "reported": self.reader.reported(),
            },
        }
        artifacts = {**self.writer.artifacts(), "log_tail": self.writer.key(LOG_TAIL_NAME)}
        artifacts.pop("checkpoints", None)
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
            metrics=metrics,
            attempts=[self.attempt],
            timeline=self.timeline.ordered(),
            error=self.error,
            warnings=warnings,
            artifacts=artifacts,
            exit_code=code,
            probe=self._probe_record(),
        )

    def _software(self, nv: dict) -> dict:
        """The payload's facts, with the framework versions of the interpreter that ran the job."""
        software = software_facts()
        software["nvml_cuda_driver"] = nv["nvml_cuda_driver"]
        software["image"] = self.cfg.image or software["image"]
        if self.env is not None and self.exit["run"] is not None:
            found, python = job_frameworks(self.env, self.spec.cwd)
            software.update(found)
            software["job_python"] = python
        return software

    def _probe_record(self) -> dict | None:
        if self.probe is None:
            return None
        return self.probe.to_dict(overhead_seconds(self.timeline.ordered()))

    def _put_tail_now(self, data: bytes) -> None:
        """A rolling upload straight to the bucket (not spooled: a stale copy is not worth keeping)."""
        bucket = getattr(self.ctx.store, "store", self.ctx.store)  # the SpoolingStore's own bucket
        bucket.put_bytes(self.writer.key(LOG_TAIL_NAME), data, "text/plain")

    def _finish(self, status: str, code: int) -> int:
        self.timeline.add("upload", files=[LOG_TAIL_NAME, "epochs.csv", "events.jsonl", "result.json"])
        self.tail.stop_uploads()
        self.ctx.store.put_bytes(self.writer.key(LOG_TAIL_NAME), self.tail.text(), "text/plain")
        if status == "completed" and self.cfg.deadline is not None:
            # a spot replacement of the same deployment finds this and does not run the job again
            import json

            state = {"fingerprint": self.fp, "run_id": self.run_id, "complete": True, "deployment": self.cfg.deadline}
            self.ctx.store.put_bytes(
                self.writer.key(f"checkpoints/{STATE_NAME}"), json.dumps(state).encode(), "application/json"
            )
        self.writer.write_all(self._result(status, code), self.timeline, self.reader.epoch_rows())
        print(
            f"[gpubench] {self.spec.benchmark_name}: {status} -> {self.ctx.store.url_for(self.writer.prefix)}",
            file=sys.stderr,
            flush=True,
        )
        return code
