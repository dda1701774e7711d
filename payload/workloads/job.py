"""A workload spec as a job of payload.run.Run: `setup` and `run` in the workdir, in the task's own virtual
environment (jobvenv), contained (process), read for metrics, its tail uploaded as ``log-tail.txt``; in probe
mode stopped once steady. No checkpoints: an interrupted job starts again on the next boot."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time

from payload import exitcodes
from payload.events import mllog, note
from payload.gpu import FRAMEWORKS, nvml_info, software_facts
from payload.run import JobReport, Run, fingerprint, hardware
from payload.workloads.check import reading_env
from payload.workloads.imports import ImportWatch, job_frameworks, read_imports
from payload.workloads.jobvenv import JobVenv, JobVenvError
from payload.workloads.metrics import MetricsReader
from payload.workloads.probe import DEFAULT_TARGET, ProbeMonitor, overhead_seconds
from payload.workloads.process import LOG_TAIL_LINES, MAX_LINE_BYTES, TAIL_MARK, LogTail, ShellProcess
from payload.workloads.spec import WorkloadSpec

ERROR_TAIL_LINES = 20  # quoted in the result's error
LOG_TAIL_NAME = "log-tail.txt"


class WorkloadJob:
    """The user's job of a suite (payload.run.Job): setup, then run, read for metrics."""

    extra_files = (LOG_TAIL_NAME,)

    def __init__(self, run: Run, spec: WorkloadSpec):
        self.run, self.cfg, self.spec = run, run.cfg, spec
        self.name, self.run_name = spec.benchmark_name, f"workload-{spec.name}"
        self.gpus = self.cfg.gpus if self.cfg.gpus is not None else spec.gpus
        self.params = {
            "workload_sha256": spec.sha256,
            "workdir_sha256": spec.workdir_sha256,
            "spec": os.path.basename(spec.path),
            "gpus": self.gpus,
            "metrics": list(spec.metrics),
        }
        self.fingerprint = fingerprint(
            self.cfg.stack, spec.benchmark_name, self.params, "workload", self.gpus, "workload"
        )
        self.tail = LogTail(LOG_TAIL_LINES)
        self.tail_key: str | None = None  # the final log tail's key, once written
        self.reader = MetricsReader.for_spec(spec)
        self.output_warnings: list[str] = []  # what the output's reader had to cut or could not read
        probe = self.cfg.probe_seconds
        self.probe = ProbeMonitor(probe, self.cfg.probe_target or DEFAULT_TARGET) if probe else None
        self.env: dict | None = None  # the job's environment, once built
        self.venv: JobVenv | None = None  # the job's own virtual environment (none inside an image)
        self.imports: ImportWatch | None = None  # what the job's `run` imports, once it starts
        self.wall = {"setup": 0.0, "run": 0.0}
        self.exit = {"setup": None, "run": None}

    def restore(self) -> None:
        """Nothing to resume: a workload starts from the beginning on every boot."""

    def begin(self, resume: dict | None) -> None:
        self.tail.start_uploads(self._put_tail_now)
        mllog("submission_benchmark", self.spec.benchmark_name, metadata={"run_id": self.run.run_id})

    def _env(self) -> dict:
        """The job's variables (docs/workloads.md): the environment's, the spec's `env`, gpubench's own, and
        its Python: the task's virtual environment first on PATH, or inside an image the image's (the payload's)."""
        own = {"GPUBENCH_WORKLOAD": self.spec.name, "GPUBENCH_WORKLOAD_SHA256": self.spec.sha256}
        # unbuffered lines, progress bars drawn on the pipe
        env = reading_env({**os.environ, **self.spec.env, **own, "GPUBENCH_RUN_ID": self.run.run_id})
        if self.venv is not None:
            env = self.venv.environment(env)
        else:  # in a container: the image's Python, which is the payload's (the container is thrown away)
            env["GPUBENCH_PYTHON"] = sys.executable
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
            self.run.timeline.add("first_step", samples=progress.samples, elapsed=self.probe.first_step["elapsed"])
        print(line, file=sys.stderr, flush=True)

    def _phase(self, name: str, script: str, env: dict) -> tuple[int, bool]:
        timeline, event = self.run.timeline, "setup" if name == "setup" else "train"
        timeline.add(f"{event}_start", phase=name)
        t0 = time.perf_counter()
        probe = self.probe if name == "run" else None
        if probe is not None:
            probe.start()
        proc = ShellProcess(script, self.spec.cwd, env, self._line)
        code, stopped = proc.wait(self.run.ctx.watcher.notice, should_stop=self._probe_done if probe else None)
        if proc.lines_cut:
            self.output_warnings.append(
                f"`{name}`: {proc.lines_cut} output lines longer than {MAX_LINE_BYTES} bytes were cut there"
            )
        if proc.reader_error is not None:
            self.reader_failed = f"{type(proc.reader_error).__name__}: {str(proc.reader_error)[:300]}"
        if probe is not None:
            probe.finish()
            if probe.stopped_early:
                rate = probe.steady.samples_per_second if probe.steady is not None else None
                timeline.add("probe_stop", proc.ended_at, stopped_by=probe.stopped_by, samples_per_second=rate)
        self.wall[name] = proc.ended_clock - t0  # the shell's exit: not the cleanup after it
        self.exit[name] = code
        timeline.add(
            f"{event}_end",
            proc.ended_at,
            phase=name,
            seconds=round(self.wall[name], 3),
            exit_code=code,
            stopped=stopped,
        )
        return code, stopped

    reader_failed: str | None = None  # the reader of the job's output broke: the job was stopped

    def _probe_done(self) -> bool:
        """The probe is over: steady, at its limit, or it is clear no convention reads the job's progress."""
        return self.probe.should_stop() or self.reader.unreadable() is not None

    def execute(self) -> tuple[str, int]:
        if self.cfg.expect_gpu and self.gpus != 0:
            nv = nvml_info()
            if not nv["gpus_nvml"]:
                status, _ = self._fail_with(
                    f"--expect-gpu: no GPU visible ({nv['nvml_error'] or 'NVML lists 0 devices'}); "
                    "check the driver, or run without --expect-gpu (gpubench:expectGpu: false) to benchmark the CPU"
                )
                return status, exitcodes.NO_GPU
        # the task's virtual environment; none in a container (the image is the job's environment)
        self.venv = None if self._image() else JobVenv.for_task(self.spec.setup or "", self.spec.env)
        # the environment's lock is held while it is made and while setup installs into it
        with self.venv.locked() if self.venv is not None else contextlib.nullcontext():
            if self.venv is not None:
                try:
                    made = self.venv.prepare()
                except JobVenvError as exc:
                    return self._fail_with(str(exc))
                self.run.timeline.add("job_environment", path=str(self.venv.path), created=made)
                note(f"the job's environment: {self.venv.path}" + (" (new)" if made else ""))
            env = self.env = self._env()
            if self.spec.setup:
                code, stopped = self._phase("setup", self.spec.setup, env)
                if stopped or code != 0:
                    return self._failed("setup", code, stopped)
            if self.reader_failed:
                return self._fail_with(f"reading the output of `setup` failed ({self.reader_failed}); it was stopped")
        self.imports = ImportWatch()
        self.run.sampler.start()
        self.run.sampler.begin_window()
        code, stopped = self._phase("run", self.spec.run, self.imports.environment(env))
        self.run.sampler.end_window()
        if self.reader_failed:
            return self._fail_with(f"reading the job's output failed ({self.reader_failed}); the job was stopped")
        unreadable = self.reader.unreadable() if self.probe is not None else None
        if unreadable:
            return self._fail_with(f"missing metric: {unreadable}")
        if self.probe is not None and self.probe.stopped_early and not stopped:
            # stopped by the probe on purpose (its exit status is the stop signal's): completed if it reported progress
            if self.probe.first_step is None:
                return self._fail_with(
                    f"missing metric: the job reported no progress in the probe's {self.probe.limit_seconds:g} s; "
                    f"tried {self.reader.tried_text()} (see docs/workloads.md)"
                )
            return "completed", exitcodes.OK
        if stopped or code != 0:
            return self._failed("run", code, stopped)
        if self.reader.run_status not in (None, "success"):
            return self._fail_with(f"the job's MLLOG run_stop says status {self.reader.run_status!r}")
        missing = self.reader.missing()
        if missing:
            return self._fail_with(missing)
        return "completed", exitcodes.OK

    def failure(self, exc: Exception) -> tuple[str, int]:
        return f"{type(exc).__name__}: {exc}", exitcodes.FAILED

    def _failed(self, phase: str, code: int, stopped: bool) -> tuple[str, int]:
        reason = self.run.ctx.watcher.reason or ""
        if stopped and "deadline" in reason:
            return self._fail_with(f"timeout: `{phase}` was stopped at the run deadline ({reason})")
        if stopped:
            self.run.interrupted(" (workloads restart from the beginning on the next boot)")
            return "interrupted", exitcodes.INTERRUPTED
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        return self._fail_with(f"`{phase}` {how}")

    def _fail_with(self, message: str) -> tuple[str, int]:
        tail = self.tail.lines()[-ERROR_TAIL_LINES:]
        self.run.fail(message, message + (TAIL_MARK + "\n".join(tail) if tail else ""))
        return "failed", exitcodes.FAILED

    def end_attempt(self) -> dict:
        return {"train_seconds": round(self.wall["run"], 3)}

    def settle(self, status: str) -> dict | None:
        """A completed run in a deployment leaves a marker: a spot replacement does not run the job again."""
        if self.cfg.deadline is not None:
            return {"fingerprint": self.fingerprint, "run_id": self.run.run_id, "deployment": self.cfg.deadline}
        return None

    def write_extras(self) -> None:
        self.tail.stop_uploads()
        self.tail_key = self.run.writer.next_key(LOG_TAIL_NAME)  # the final tail: the newest version
        self.run.ctx.store.put_bytes(self.tail_key, self.tail.text(), "text/plain")

    def _put_tail_now(self, data: bytes) -> None:
        """A rolling upload straight to the bucket (not spooled: a stale copy is not worth keeping),
        each under a new name (log-tail.txt, log-tail.v0.1.txt, ...): readers take the newest."""
        self.run.ctx.store.store.put_bytes(self.run.writer.next_key(LOG_TAIL_NAME), data, "text/plain")

    def epoch_rows(self) -> list[dict]:
        return self.reader.epoch_rows()

    def report(self, status: str, nv: dict) -> JobReport:
        used = nv["gpus_nvml"] if self.gpus is None else min(self.gpus, nv["gpus_nvml"])
        summary = self.reader.summary(self.wall["run"])
        time_source, batch = summary.pop("_time_source"), summary.pop("_batch_size")
        metrics = {**summary, **self.run.sampler.summary()}
        if status != "completed":  # measured numbers of a failed job are not a result
            metrics = {k: v for k, v in metrics.items() if k.startswith("gpu_")}
            metrics["train_seconds"] = round(self.wall["run"], 3)
        artifacts = {k: v for k, v in self.run.writer.artifacts().items() if k != "checkpoints"}
        artifacts["log_tail"] = self.tail_key or self.run.writer.key(LOG_TAIL_NAME)
        return JobReport(
            hardware=hardware(nv, "GPU" if used else "CPU", used, nv["gpus_nvml"]),
            software=self._software(nv),
            benchmark=self._benchmark(used, batch, time_source),
            metrics=metrics,
            artifacts=artifacts,
            warnings=[*self.output_warnings, *self.reader.warnings.all(), *(self.probe.warnings if self.probe else [])],
            probe=self.probe.to_dict(overhead_seconds(self.run.timeline.ordered())) if self.probe is not None else None,
        )

    def _benchmark(self, used: int, batch, time_source) -> dict:
        spec = self.spec
        return {
            "name": spec.benchmark_name,
            "kind": "workload",
            "description": spec.description or f"workload {spec.name} ({os.path.basename(spec.path)})",
            "params": self.params,
            "data": "workload",
            "precision": None,
            "per_gpu_batch_size": None,
            "global_batch_size": batch,
            "replicas": max(used, 1),
            "fingerprint": self.fingerprint,
            "workload": {
                "name": spec.name,
                "sha256": spec.sha256,
                "workdir_sha256": spec.workdir_sha256,
                "image": self._image(),
                "spec_image": spec.image,
                "env": dict(spec.env),
                "env_from_environment": list(spec.env_from_environment),
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

    def _image(self) -> str | None:
        """The container the job ran in (null on this machine), never the image the spec would have used."""
        return self.cfg.image or os.environ.get("GPUBENCH_IMAGE") or None

    def _software(self, nv: dict) -> dict:
        """The payload's facts, with the frameworks the job ran: those its Python processes imported,
        else (no Python process seen) those installed for the interpreter on its PATH."""
        software = {**software_facts(), "nvml_cuda_driver": nv["nvml_cuda_driver"], "image": self._image()}
        if self.env is None or self.exit["run"] is None:
            return software
        installed, python = job_frameworks(self.env, self.spec.cwd)
        seen = read_imports(self.imports.record) if self.imports is not None else None
        if seen is not None and seen.pythons:
            software.update(dict.fromkeys(FRAMEWORKS), **seen.frameworks)
            software["torch_cuda_build"] = installed.get("torch_cuda_build") if "torch" in seen.frameworks else None
            first = seen.pythons[0]
            software.update(job_python=first["python"], job_python_version=first["python_version"])
            software["frameworks_from"] = "imported"
        else:
            software.update(installed)
            software["job_python"] = python
            software["frameworks_from"] = "installed" if python else None
        if self.imports is not None:
            shutil.rmtree(self.imports.folder, ignore_errors=True)
        return software
