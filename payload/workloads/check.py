"""`gpubench bench --check-metrics`: run the job here briefly and say whether a probe can read its progress.

`setup` runs as it would, then `run` for at most CHECK_SECONDS, read by the probe's reader
(payload.workloads.metrics), stopped as soon as the answer is clear."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from payload.workloads.conventions import plain, whole_job
from payload.workloads.metrics import MetricsReader
from payload.workloads.process import ShellProcess

CHECK_SECONDS = 30.0
ENOUGH_READINGS = 10
TAIL = 10  # last lines shown when nothing was read


def reading_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that make a job's progress readable as it prints it (the payload sets them too)."""
    env = dict(env)
    env["PYTHONUNBUFFERED"] = "1"  # lines arrive as printed, not at exit
    # Rich (Lightning's default bar) draws on a pipe only when told the output understands a terminal's
    # redraws; else it prints once, at the end (rich.console, "Environment variables"). The job's own wins.
    env.setdefault("TTY_COMPATIBLE", "1")
    return env


def check_metrics(spec: Any) -> dict[str, Any]:
    """Run `spec` (a payload.workloads.spec.WorkloadSpec) here briefly; what its output says, as a dict."""
    spec = spec.with_environment(os.environ)  # a variable named in `env` takes this shell's value, as in a run
    reader = MetricsReader.for_spec(spec)
    env = reading_env({**os.environ, **spec.env})
    tail: list[str] = []
    points: list[tuple[float, float]] = []
    t0 = time.monotonic()

    def line(text: str) -> None:
        tail.append(plain(text)[:300])
        del tail[:-TAIL]
        progress = reader.feed(text)
        if progress is not None and progress.samples is not None:
            points.append((time.monotonic() - t0, progress.samples))

    if spec.setup:
        code = _run(spec.setup, spec.cwd, env, line, None)
        if code != 0:
            return {"readable": False, "error": f"`setup` exited with status {code}", "last_lines": tail}
    t0 = time.monotonic()
    stopped: list[float] = []  # when the reading ended: a job slow to stop is not counted as read

    def done() -> bool:
        if not stopped and (
            time.monotonic() - t0 >= CHECK_SECONDS
            or reader.unreadable() is not None
            or (len(points) >= ENOUGH_READINGS and points[-1][0] - points[0][0] >= 2.0)
        ):
            stopped.append(time.monotonic())
        return bool(stopped)

    _run(spec.run, spec.cwd, env, line, done)
    return _report(reader, points, tail, spec.work, (stopped[0] if stopped else time.monotonic()) - t0)


def _run(script: str, cwd: str, env: dict, on_line, done) -> int:
    proc = ShellProcess(script, cwd, env, on_line)
    try:
        code, _ = proc.wait(threading.Event(), poll=0.1, should_stop=done)
    finally:
        if proc.proc.poll() is None:
            proc.stop()
    return code


def _report(reader: MetricsReader, points, tail: list[str], work, elapsed: float) -> dict[str, Any]:
    out: dict[str, Any] = {"seconds": round(elapsed, 1), "tried": [name for name, _ in reader.tried()]}
    if reader.matched is None or not points:
        out.update(
            readable=False,
            error=reader.unreadable() or reader.missing() or "no progress read",
            expects={name: line for name, line in reader.tried()},
            last_lines=tail,
        )
        return out
    record = reader.progress_record() or {"convention": reader.matched, "unit": "samples"}
    span = points[-1][0] - points[0][0]
    rate = (points[-1][1] - points[0][1]) / span if span > 0 else None
    out.update(
        readable=True,
        convention=reader.matched,
        unit=record.get("unit"),
        readings=len(points),
        rate_per_second=round(rate, 3) if rate is not None else None,  # first to last reading: warm-up included
        progress=record,
        work=whole_job(work, reader.progress_record()),
    )
    return out
