"""Probe mode end to end: tiny fake jobs run through the real `python -m payload run --probe-seconds`
into a file:// bucket stop at steady, at the time limit or when they end by themselves; the
monitor's unit behaviour (clocks, thinning, limit); the rolling log tail; the job's frameworks."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from legacy_python import require_python38
from run_files import final_log_tail

from payload import exitcodes
from payload.config import ConfigError, render_env, resolve
from payload.schema import validate_result
from payload.timestamps import parse_iso
from payload.workloads import process
from payload.workloads.imports import ImportWatch, job_frameworks, read_imports
from payload.workloads.metrics import MetricsReader, Progress
from payload.workloads.probe import CHECK_EVERY_SECONDS, MAX_POINTS, MIN_READINGS, ProbeMonitor, overhead_seconds

REPO = Path(__file__).resolve().parents[2]
RATE = 800.0  # the fake job's true steady rate, samples per second
WARMUP = 2.0  # seconds of its linear ramp from 0 to RATE

# Cumulative samples as a function of the job's own clock: a linear warm-up ramp, then exactly RATE/s
# ("steady"), or a rate that doubles every second and never settles ("growing"); one line per 0.1 s.
FAKE_JOB = f"""
import json, os, sys, time
mode, total = sys.argv[1], float(os.environ.get("TOTAL", "120"))
t0 = time.monotonic()
while True:
    t = time.monotonic() - t0
    if mode == "steady":
        samples = {RATE} * t * t / (2 * {WARMUP}) if t < {WARMUP} else {RATE} * ({WARMUP} / 2 + t - {WARMUP})
    else:
        samples = 100 * 2 ** t
    print("GPUBENCH_METRICS " + json.dumps({{"samples": int(samples), "seconds": round(t, 4)}}), flush=True)
    if t >= total:
        break
    time.sleep(0.1)
"""


def fake_spec(tmp_path: Path, run: str, env: dict | None = None, metrics=("json",)) -> Path:
    wd = tmp_path / "job"
    wd.mkdir(exist_ok=True)
    (wd / "fake.py").write_text(FAKE_JOB)
    doc = {"name": "fake", "workdir": "job", "run": run, "metrics": list(metrics), "env": env or {}}
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def payload_run(spec: Path, bucket: Path, *extra: str, timeout: float = 120) -> tuple[int, float]:
    """The real CLI in a child process; (exit code, wall seconds)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "payload", "run", "--workload", str(spec), "--results", bucket.as_uri()]
    argv += ["--stack", "local-probe", "--offering", "local/this-machine", "--hourly-usd", "0.40", *extra]
    t0 = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    return done.returncode, time.monotonic() - t0


def only_result(bucket: Path) -> tuple[dict, Path]:
    (path,) = sorted(bucket.glob("runs/*/*/result.json"))
    return validate_result(json.loads(path.read_text())), path.parent


def events(result: dict, name: str) -> list[dict]:
    return [e for e in result["timeline"] if e["event"] == name]


# --- end to end ------------------------------------------------------------------------------------------


def test_probe_stops_at_steady_with_the_true_rate_and_the_overhead(tmp_path):
    spec = fake_spec(tmp_path, "python3 fake.py steady", env={"TOTAL": "300"})
    code, wall = payload_run(spec, tmp_path / "b", "--probe-seconds", "15", timeout=600)
    result, folder = only_result(tmp_path / "b")
    probe = result["probe"]
    assert code == 0 and result["status"] == "completed" and result["exit_code"] == 0
    assert probe["stopped_by"] == "steady" and probe["limit_seconds"] == 15.0 and probe["target"] == 0.03
    assert probe["floor_seconds"] <= probe["elapsed_seconds"] < 15 and wall < 300  # the floor, not the limit or the end
    assert probe["settled_by"] == "floor" and probe["gaps"] == [] and probe["boundaries"] == []
    steady = probe["steady"]
    assert steady["steady"] and abs(steady["samples_per_second"] - RATE) / RATE < 0.05
    assert steady["low"] <= steady["samples_per_second"] <= steady["high"]
    assert steady["warmup_seconds"] > 0  # the ramp was cut
    assert probe["clock"] == "json" and len(probe["points"]) == probe["readings"] >= MIN_READINGS
    assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(probe["points"], probe["points"][1:]))
    (first,) = events(result, "first_step")
    earliest = min(parse_iso(e["time"]) for e in result["timeline"])
    assert probe["overhead_seconds"] == round(parse_iso(first["time"]) - earliest, 3)
    assert 0 < probe["overhead_seconds"] < probe["elapsed_seconds"]
    assert events(result, "probe_stop")[0]["stopped_by"] == "steady"
    assert result["benchmark"]["workload"]["run_exit_code"] != 0  # the probe's stop signal, not a failure
    assert "GPUBENCH_METRICS" in final_log_tail(folder)
    assert (folder / "events.jsonl").read_text().count('"first_step"') == 1


def test_probe_that_never_steadies_stops_at_the_limit(tmp_path):
    code, wall = payload_run(fake_spec(tmp_path, "python3 fake.py growing"), tmp_path / "b", "--probe-seconds", "4")
    result, _ = only_result(tmp_path / "b")
    probe = result["probe"]
    assert code == 0 and result["status"] == "completed"
    assert probe["stopped_by"] == "time-limit" and 4 <= probe["elapsed_seconds"] < 10 and wall < 60
    assert probe["steady"] is not None and probe["steady"]["steady"] is False
    assert events(result, "probe_stop")[0]["stopped_by"] == "time-limit"


def test_probe_of_a_job_that_ends_first_says_job_ended(tmp_path):
    spec = fake_spec(tmp_path, "python3 fake.py growing", env={"TOTAL": "1.5"})
    code, _ = payload_run(spec, tmp_path / "b", "--probe-seconds", "20")
    result, _ = only_result(tmp_path / "b")
    assert code == 0 and result["status"] == "completed" and result["benchmark"]["workload"]["run_exit_code"] == 0
    assert result["probe"]["stopped_by"] == "job-ended" and result["probe"]["elapsed_seconds"] < 20
    assert not events(result, "probe_stop")


def test_probe_of_a_job_that_reports_no_progress_fails_with_missing_metric(tmp_path):
    code, _ = payload_run(fake_spec(tmp_path, "sleep 60"), tmp_path / "b", "--probe-seconds", "2")
    result, _ = only_result(tmp_path / "b")
    assert code == exitcodes.FAILED and result["status"] == "failed" and result["error"].startswith("missing metric:")
    assert result["probe"]["stopped_by"] == "time-limit" and result["probe"]["overhead_seconds"] is None
    assert result["probe"]["points"] == [] and result["probe"]["steady"] is None


def test_probe_reads_mllog_samples_count_on_the_jobs_clock(tmp_path):
    line = (
        'print(":::MLLOG " + json.dumps({"namespace": "", "time_ms": int(time.time() * 1000), '
        '"event_type": "POINT_IN_TIME", "key": "train_loss", "value": 1.0, '
        '"metadata": {"samples_count": int(samples)}}), flush=True)'
    )
    job = FAKE_JOB.replace(
        'print("GPUBENCH_METRICS " + json.dumps({"samples": int(samples), "seconds": round(t, 4)}), flush=True)', line
    )
    spec = fake_spec(tmp_path, "python3 fake.py steady", metrics=("mllog",))
    (tmp_path / "job" / "fake.py").write_text(job)
    code, wall = payload_run(spec, tmp_path / "b", "--probe-seconds", "20")
    result, _ = only_result(tmp_path / "b")
    probe = result["probe"]
    assert code == 0 and result["status"] == "completed" and probe["clock"] == "mllog"
    assert probe["stopped_by"] == "steady" and abs(probe["steady"]["samples_per_second"] - RATE) / RATE < 0.05


def test_full_run_has_no_probe(tmp_path):
    code, _ = payload_run(fake_spec(tmp_path, "python3 fake.py steady", env={"TOTAL": "0.3"}), tmp_path / "b")
    result, _ = only_result(tmp_path / "b")
    assert code == 0 and result["status"] == "completed"
    assert "probe" not in result and not events(result, "first_step") and not events(result, "probe_stop")


# --- the rolling log tail ---------------------------------------------------------------------------------


def test_log_tail_is_uploaded_while_the_job_runs(tmp_path, monkeypatch):
    from payload.cli import main as payload_main

    monkeypatch.setattr(process, "UPLOAD_EVERY_SECONDS", 0.2)
    release = tmp_path / "release"
    run = (
        "echo 'still warming up'; "
        f"for i in $(seq 300); do [ -e {release} ] && break; sleep 0.1; done; "
        "echo 'GPUBENCH_METRICS {\"samples\": 10}'"
    )
    spec = fake_spec(tmp_path, run)
    bucket = tmp_path / "b"
    argv = ["run", "--workload", str(spec), "--results", str(bucket), "--stack", "local-tail"]
    codes: list[int] = []
    runner = threading.Thread(target=lambda: codes.append(payload_main(argv)))
    runner.start()
    try:
        deadline, tail = time.monotonic() + 20, None
        while time.monotonic() < deadline and tail is None:
            found = sorted(bucket.glob("runs/*/*/log-tail.txt"))
            tail = found[0] if found and found[0].read_text() else None
            time.sleep(0.05)
        assert tail is not None and tail.read_text() == "still warming up\n"
        assert not list(bucket.glob("runs/*/*/result.json"))  # the job is still running
    finally:
        release.touch()
        runner.join(60)
    result, folder = only_result(bucket)
    assert codes == [0] and result["status"] == "completed"
    final = bucket / result["artifacts"]["log_tail"]  # write-once: the final tail is the newest version
    assert final.parent == folder and final.read_text() == 'still warming up\nGPUBENCH_METRICS {"samples": 10}\n'


def test_log_tail_uploads_only_when_changed():
    tail, puts = process.LogTail(maxlen=2), []
    assert not tail.upload_if_changed(puts.append) and puts == []
    for line in ("a", "b", "c"):
        tail.append(line)
    assert tail.upload_if_changed(puts.append) and puts == [b"b\nc\n"]
    assert not tail.upload_if_changed(puts.append) and len(puts) == 1

    def down(data):
        raise OSError("bucket down")

    tail.append("d")
    assert not tail.upload_if_changed(down)  # retried next time
    assert tail.upload_if_changed(puts.append) and puts[-1] == b"c\nd\n" and len(puts) == 2


# --- the monitor ------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_monitor_time_limit_one_clock_and_first_step():
    clock = FakeClock()
    mon = ProbeMonitor(10, clock=clock, wall=lambda: 5000.0)
    mon.start()
    assert not mon.observe(None) and mon.first_step is None
    clock.now += 1.5
    assert mon.observe(Progress(0, 0.0, "json"))  # the first reading, even at 0 samples
    assert mon.first_step == {"samples": 0, "elapsed": 1.5}
    assert not mon.observe(Progress(50, None, None))  # another clock: skipped
    assert not mon.observe(Progress(40, 1.0, "json"))
    assert not mon.observe(Progress(30, 2.0, "json")) and not mon.observe(Progress(50, 1.0, "json"))  # fell, stood
    assert mon.points == [[0.0, 0], [1.0, 40]] and mon.readings == 2
    assert not mon.should_stop()
    clock.now += 8.5
    assert mon.should_stop() and mon.stopped_by == "time-limit" and mon.elapsed_at_stop == 10.0
    assert not mon.observe(Progress(99, 3.0, "json")) and mon.readings == 2  # nothing after the stop
    mon.finish()
    assert mon.stopped_by == "time-limit" and mon.to_dict(2.0)["overhead_seconds"] == 2.0


def test_monitor_mllog_clock_is_relative_to_the_run_start():
    mon = ProbeMonitor(10, clock=FakeClock(), wall=lambda: 5000.0)
    mon.start()
    mon.observe(Progress(0, 4999.0, "mllog"))  # before the run started: not a point
    mon.observe(Progress(10, 5002.5, "mllog"))
    assert mon.points == [[2.5, 10]] and mon.to_dict(None)["clock"] == "mllog"


def test_monitor_thins_points_evenly_and_checks_after_new_points():
    clock, calls = FakeClock(), []

    def estimate(points, target):
        calls.append(len(points))
        return None

    mon = ProbeMonitor(1e9, clock=clock, estimate=estimate)
    mon.start()
    n = 5 * MAX_POINTS
    for i in range(n):
        clock.now += 0.125
        mon.observe(Progress(i * 10, i * 0.125, "json"))
    assert mon.readings == n and MAX_POINTS // 2 <= len(mon.points) <= MAX_POINTS
    gaps = {round(b[0] - a[0], 6) for a, b in zip(mon.points, mon.points[1:])}
    assert len(gaps) == 1  # evenly spaced after thinning
    expected = n * 0.125 / CHECK_EVERY_SECONDS  # one check per CHECK_EVERY_SECONDS of readings, not per reading
    assert max(calls) <= MAX_POINTS and expected - MIN_READINGS <= len(calls) <= expected + 1
    mon.finish()
    assert mon.stopped_by == "job-ended" and len(calls) > 1


def test_monitor_stops_when_the_estimate_is_steady():
    from payload.steady import steady_rate

    clock = FakeClock()
    mon = ProbeMonitor(90, clock=clock, estimate=steady_rate)
    mon.start()
    t = 0.0
    while not mon.should_stop() and t < 90:
        t += 0.25
        clock.now += 0.25
        mon.observe(Progress(100 * t, t, "json"))
    assert mon.stopped_by == "steady" and mon.steady.samples_per_second == pytest.approx(100)
    assert mon.readings >= MIN_READINGS and 30 <= t < 31  # steady from the start: stops at the floor, a third


def test_overhead_needs_a_first_step():
    timeline = [
        {"time": "2026-01-01T00:00:10.000Z", "event": "run_start"},
        {"time": "2026-01-01T00:00:00.500Z", "event": "instance_launch"},
    ]
    assert overhead_seconds(timeline) is None
    timeline.append({"time": "2026-01-01T00:01:00.250Z", "event": "first_step"})
    assert overhead_seconds(timeline) == 59.75


# --- options, progress readings, frameworks ---------------------------------------------------------------


def test_probe_options_cli_env_and_errors():
    base = {"workload": "w.yaml", "results": "/tmp/r", "stack": "s"}
    cfg = resolve(base, environ={})
    assert cfg.probe_seconds is None and cfg.probe_target == 0.03
    cfg = resolve(base, environ={"GPUBENCH_PROBE_SECONDS": "300", "GPUBENCH_PROBE_TARGET": "0.05"})
    assert cfg.probe_seconds == 300.0 and cfg.probe_target == 0.05
    assert resolve({**base, "probe_seconds": "60"}, environ={"GPUBENCH_PROBE_SECONDS": "300"}).probe_seconds == 60
    with pytest.raises(ConfigError, match=r"--probe-seconds='-1': must be a positive number"):
        resolve({**base, "probe_seconds": "-1"}, environ={})
    with pytest.raises(ConfigError, match=r"GPUBENCH_PROBE_TARGET='x'"):
        resolve(base, environ={"GPUBENCH_PROBE_TARGET": "x"})
    assert render_env({"probe_seconds": 600, "probe_target": 0.02}) == {
        "GPUBENCH_PROBE_SECONDS": "600",
        "GPUBENCH_PROBE_TARGET": "0.02",
    }


def test_progress_readings_from_both_conventions():
    reader = MetricsReader()
    assert reader.feed('GPUBENCH_METRICS {"accuracy": 0.5}') is None
    assert reader.feed('GPUBENCH_METRICS {"samples": 640, "seconds": 2.5}') == Progress(640, 2.5, "json")
    assert reader.feed('GPUBENCH_METRICS {"samples": 700}') == Progress(700, None, None)

    def mllog(key, time_ms, value=None, **meta):
        rec = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value}
        return ":::MLLOG " + json.dumps({**rec, "metadata": meta})

    # train_samples not logged yet: the epoch's end alone
    assert reader.feed(mllog("epoch_stop", 1000, epoch_num=1)) == Progress(None, None, None, "epoch")
    assert reader.feed(mllog("train_samples", 1500, 1000)) is None
    reader.feed(mllog("epoch_start", 2000, epoch_num=2))
    assert reader.feed(mllog("epoch_stop", 4000, epoch_num=2)) == Progress(2000, 4.0, "mllog", "epoch")
    assert reader.feed(mllog("train_loss", 4500, 1.2, samples_count=2100)) == Progress(2100, 4.5, "mllog")


def test_job_frameworks_come_from_the_jobs_interpreter(tmp_path):
    found, python = job_frameworks({"PATH": os.path.dirname(sys.executable)})
    assert python is not None and os.path.dirname(python) == os.path.dirname(sys.executable)
    for key, dist in (("torch", "torch"), ("jax", "jax")):
        try:
            want = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            want = None
        assert found.get(key) == want
    fake_torch = tmp_path / "site" / "torch"
    fake_torch.mkdir(parents=True)
    (fake_torch / "__init__.py").write_text("raise SystemExit('imported: the probe must only read files')\n")
    (fake_torch / "version.py").write_text("from typing import Optional\ncuda: Optional[str] = '12.8'\n")
    dist = tmp_path / "site" / "torch-9.8.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.8\n")
    (dist / "top_level.txt").write_text("torch\n")
    env = {"PATH": os.path.dirname(sys.executable), "PYTHONPATH": str(tmp_path / "site")}
    found, _ = job_frameworks(env)
    assert found["torch"] == "9.8" and found["torch_cuda_build"] == "12.8"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert job_frameworks({"PATH": str(empty)}) == ({}, None)
    fake = empty / "python3"
    fake.write_text('#!/bin/sh\necho \'{"torch": "9.9"}\'\n')
    fake.chmod(0o755)
    assert job_frameworks({"PATH": str(empty)}) == ({"torch": "9.9"}, str(fake))


def test_a_python_3_8_job_reports_its_frameworks_versions(tmp_path):
    """The legacy image's 3.8 has no importlib.metadata.packages_distributions: the installed probe and the
    import watch read each distribution's top_level.txt instead, for a module whose distribution has
    another name."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(require_python38())
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "nn.py").write_text("")
    dist = site / "torch_for_tests-9.7.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-for-tests\nVersion: 9.7\n")
    (dist / "top_level.txt").write_text("torch\n")
    env = {"PATH": str(bin_dir), "PYTHONPATH": str(site)}
    found, python = job_frameworks(env)
    assert python == str(bin_dir / "python3") and found.get("torch") == "9.7"
    watch = ImportWatch()
    watched = watch.environment(env)
    subprocess.run([str(bin_dir / "python3"), "-c", "import torch.nn"], env=watched, check=True, timeout=60)
    record = read_imports(watch.record)
    assert record.pythons[0]["python_version"].startswith("3.8.") and record.frameworks == {"torch": "9.7"}


@pytest.mark.parametrize("which", ["3.8", "this"])
def test_a_distribution_without_a_name_gives_no_version(tmp_path, which):
    """A dist-info left without METADATA (an interrupted install) names a framework in top_level.txt but has no
    name: the framework is still reported, with no version, not another distribution's (Python 3.8-3.10 answer
    md.version(None) with the first distribution found) and not a failed probe (3.11+ refuse it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(require_python38() if which == "3.8" else sys.executable)
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "nn.py").write_text("")
    (site / "torch-9.7.dist-info").mkdir()
    (site / "torch-9.7.dist-info" / "top_level.txt").write_text("torch\n")
    other = tmp_path / "first" / "other-1.0.dist-info"  # the first distribution on the path
    other.mkdir(parents=True)
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    env = {"PATH": str(bin_dir), "PYTHONPATH": os.pathsep.join([str(other.parent), str(site)])}
    found, _ = job_frameworks(env, cwd=str(tmp_path))
    assert "torch" in found and found["torch"] is None, found
    watch = ImportWatch()
    job = [str(bin_dir / "python3"), "-c", "import torch.nn"]
    done = subprocess.run(job, env=watch.environment(env), cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout == done.stderr == b""
    assert read_imports(watch.record).frameworks == {"torch": None}


def test_probe_seconds_with_built_in_benchmarks_is_a_warning(monkeypatch, tmp_path):
    import payload.cli as cli

    seen: list[list[str]] = []

    class Recorder:
        def __init__(self, ctx, make_job):
            seen.append(list(ctx.warnings))

        def execute(self):
            return 0

    monkeypatch.setattr(cli, "Run", Recorder)
    given = {"benchmark": "mnist-mlp", "results": str(tmp_path), "stack": "s", "spool": str(tmp_path / "spool")}
    assert cli.run_suite(resolve({**given, "probe_seconds": "60"}, environ={})) == 0
    assert cli.run_suite(resolve(given, environ={})) == 0
    assert any("--probe-seconds applies to workloads only" in w for w in seen[0])
    assert not any("--probe-seconds" in w for w in seen[1])


def test_a_failing_estimate_is_a_warning_and_the_probe_runs_to_its_limit():
    clock = FakeClock()

    def broken(points, target):
        raise ValueError("bad point")

    mon = ProbeMonitor(5, clock=clock, estimate=broken)
    mon.start()
    for i in range(3 * MIN_READINGS):
        clock.now += 0.125
        mon.observe(Progress(i, i * 0.125, "json"))
    assert mon.stopped_by is None and mon.warnings == ["probe: the steady-rate estimate failed (ValueError: bad point)"]
    clock.now += 5
    assert mon.should_stop() and mon.stopped_by == "time-limit"
    mon.finish()
    assert mon.steady is None and len(mon.warnings) == 1


def test_monitor_measures_the_wall_time_the_jobs_clock_leaves_out():
    # the job's clock counts training seconds only: 1 s of it per 1.25 s of wall (evaluation in between)
    clock = FakeClock()
    mon = ProbeMonitor(1000, target=1e-9, clock=clock)  # never steady: every reading is kept
    mon.start()
    for i in range(1, 41):
        clock.now += 1.25
        mon.observe(Progress(100 * i, float(i), "json"))
    mon.finish()
    record = mon.to_dict(None)
    assert record["clock"] == "json" and record["wall_per_job_second"] == pytest.approx(1.25)


def test_monitor_on_the_arrival_clock_has_nothing_to_correct():
    clock = FakeClock()
    mon = ProbeMonitor(1000, target=1e-9, clock=clock)
    mon.start()
    for i in range(1, 21):
        clock.now += 1.0
        mon.observe(Progress(100 * i, None, None))
    mon.finish()
    assert mon.to_dict(None)["clock"] is None and mon.to_dict(None)["wall_per_job_second"] is None
