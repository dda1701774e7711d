"""`make demo`: the whole product on this machine, no cloud account needed. A short real suite runs as the
`local/this-machine` offering into a local bucket, is collected and reported beside the studies' published
figures. Each study is also probed in its own configuration as `gpubench bench --local` probes a job and
extrapolated to its whole job (STUDY_PROBES beside the table); a precision this machine cannot run (fp16 on
a CPU) is not probed, and the report says so. The machine's price is an assumed flat rate (price/local.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple, TextIO

from analysis.bench.answer import candidate_row
from analysis.bench.candidates import local_candidate
from analysis.bench.probes import Probes
from analysis.bench.record import new_bench_id
from analysis.bench.runners import Lines, LocalProbe
from analysis.campaign.finish import write_report
from analysis.collect.run import collect_results
from analysis.price.billed import CostError
from analysis.price.local import HOURLY_ENV, Price, resolve_price
from analysis.progress import Printer, Progress
from analysis.reference.studies import study_jobs
from analysis.report.answer import long_duration
from analysis.report.reference import STUDY_PROBES, device, study_work
from infra.catalog import load_catalog
from infra.launch import offering_options
from infra.projectfiles import user_or_shipped
from payload import exitcodes
from payload.config import render_argv
from payload.exitcodes import UsageError
from payload.gpu import nvml_info
from payload.storage import StorageError, open_store
from payload.timestamps import stamp
from payload.workloads.jobvenv import INHERIT_ENV

OFFERING = "local/this-machine"
MARKET = "on-demand"

# Payload lines worth echoing while a benchmark runs (the rest goes to the log).
_ECHO_EVENTS = ("devices", "data_loaded", "epoch_end", "train_end", "run_end")


class Step(NamedTuple):  # one payload run: a benchmark, the payload arguments that keep it short, and why
    benchmark: str
    args: str
    why: str


# Under a minute each on a 2-core CPU, synthetic data, sizes cut with the payload's own parameters (recorded
# in result.json). The BiLSTM run is the reference section's; the studies are probed after these.
SUITE: tuple[Step, ...] = (
    Step(
        "mnist-mlp",
        "--epochs 2 --param samples=12000 --param val_samples=2000",
        "seed 002's Keras MNIST MLP, 2 epochs on 12,000 images",
    ),
    Step(
        "mnist-cnn",
        "--epochs 1 --param samples=6000 --param val_samples=1000",
        "seed 002's Keras MNIST convnet, 1 epoch on 6,000 images",
    ),
    Step(
        "bilstm-sentiment",
        "--epochs 1 --param samples=8192 --param val_samples=1024",
        "seed 000's bidirectional LSTM, 1 epoch on 8,192 synthetic tweets: its rate for the report's reference "
        "section (the first screen compares the probe of the study's own job, below)",
    ),
)

# Seconds, not minutes: for tests and a first smoke check (`--quick`).
QUICK: tuple[Step, ...] = (
    Step(
        "mnist-mlp", "--epochs 1 --param samples=1024 --param val_samples=256 --param warmup_steps=1", "tiny MNIST MLP"
    ),
    Step(
        "bilstm-sentiment",
        "--epochs 1 --param samples=512 --param val_samples=128 --param max_features=2000 --param warmup_steps=1",
        "tiny BiLSTM",
    ),
)

# The most a study probe runs (start-up, data, training), as --probe-minutes bounds bench's; sooner once steady.
STUDY_PROBE_SECONDS = 120
QUICK_PROBE_SECONDS = 30  # --quick (the tests): a rate, not a narrow one
STUDY_PROBES_VERSION = 1  # the layout of the record analysis.report.reference reads


def select(suite: tuple[Step, ...], only: list[str] | None, jobs: tuple = ()) -> tuple[tuple[Step, ...], tuple]:
    """The suite's steps and the study jobs (analysis.reference.studies.StudyJob) that --only names (all without)."""
    if not only:
        return suite, jobs
    known = {s.benchmark for s in suite} | {j.benchmark for j in jobs}
    unknown = [n for n in only if n not in known]
    if unknown:
        raise UsageError(f"--only {', '.join(unknown)}: not in the demo suite ({', '.join(sorted(known))})")
    return tuple(s for s in suite if s.benchmark in only), tuple(j for j in jobs if j.benchmark in only)


def payload_argv(step: Step, results: Path, stack: str, price: Price, today: str) -> list[str]:
    """`python -m payload run` for one step, rendered from the payload's own option table."""
    options = offering_options(load_catalog().get(OFFERING), MARKET, None)
    options.update(hourly_usd=f"{price.hourly_usd:g}", price_source=price.source, price_as_of=today)
    argv = render_argv(
        {"benchmark": step.benchmark, "results": str(results), "stack": stack, **options, "data": "synthetic"}
    )
    return [sys.executable, "-m", "payload", "run", *argv, *step.args.split()]


def run_step(argv: list[str], log_path: Path, echo: Callable[[str], None]) -> int:
    """Run one payload process: everything to log_path, progress lines and the outcome to echo; its exit code."""
    t0 = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        log.write("$ " + " ".join(argv) + "\n")
        # no GPUBENCH_* run option left in the shell changes what the demo runs; TensorFlow's C++ chatter
        # goes to the log only; progress lines come as they happen
        kept = ("GPUBENCH_SPOOL", HOURLY_ENV)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k in kept}
        env = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1", **env}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                text = line.rstrip()
                if text.startswith("[gpubench]"):
                    parts = text.split()
                    event = parts[2] if len(parts) > 2 else ""
                    if event in _ECHO_EVENTS:
                        echo("      " + " ".join(parts[2:]))
                    elif parts[1].endswith(":"):  # the payload's closing "<benchmark>: completed -> URL"
                        echo("      " + " ".join(parts[1:]))
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait(timeout=30)
            raise
        code = proc.wait()
    took = _minutes(time.monotonic() - t0)
    if code == 0:
        echo(f"      done in {took}")
    else:
        echo(f"      FAILED (exit {code}) after {took}; log {log_path}:")
        for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-12:]:  # its last lines
            echo("      | " + line)
    return code


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def collect_step(results_dir: Path, table_dir: Path, echo: Callable[[str], None]) -> int:
    """Collect the local bucket into the table (no spot history: this machine has none); an exit code."""
    try:
        outcome = collect_results([str(results_dir)], table_dir, spot_history="off")
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.REMOTE
    echo(outcome.text().rstrip("\n"))
    for problem in outcome.summary.incomplete:
        print(f"incomplete: {problem}", file=sys.stderr)
    return exitcodes.FAILED if outcome.summary.incomplete else exitcodes.OK


def _finite(value):
    """JSON without NaN or Infinity: an unbounded figure (an interval reaching zero) becomes None."""
    return json.loads(json.dumps(value), parse_constant=lambda _: None)


def probe_study(job, *, gpus: int, price: Price, probes_dir: Path, logs: Path, limit: float, stream: TextIO) -> dict:
    """The record the report reads of one study's own configuration probed here as `bench --local` probes
    (stopped once steady or at `limit` seconds) and extrapolated to the study's whole job; or why not."""
    record = {
        "study": job.study,
        "benchmark": job.benchmark,
        "task": job.task,
        "batch": job.batch,
        "precision": job.payload_precision,
        "data": "synthetic",
        "configuration": f"batch {job.batch}, {job.precision}, synthetic data",
        "device": device(gpus),
        "hourly_usd": price.hourly_usd,
        "price_source": price.source,
        "probed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    why = job.cannot_run(gpus)
    work = study_work(job)
    if why or work is None:
        return {**record, "status": "not-probed", "reason": why or f"no whole job of {job.study} to extrapolate to"}
    report, seconds = _local_probe(job, price, probes_dir, logs, limit, stream)
    row = candidate_row(report, float(work[1]))
    return _finite(
        {
            **record,
            "status": report.status,
            "reason": report.reason,
            "probe_seconds": round(seconds, 1),
            "work": work[0],
            "work_samples": work[1],
            "row": row,
            "log": report.extra.get("log"),
        }
    )


def _local_probe(job, price: Price, probes_dir: Path, logs: Path, limit: float, stream: TextIO):
    """(bench's ProbeReport, seconds) of one local probe; Ctrl-C ends it (in its own session), then is raised."""
    candidate = replace(local_candidate(price.hourly_usd, new_bench_id()), price_source=price.source)
    probe = LocalProbe(
        store=open_store(str(probes_dir)),
        results=str(probes_dir),
        task=user_or_shipped(job.task),
        probe_seconds=limit,
        log_dir=logs,
        # the job sees the demo's TensorFlow: its setup installs nothing, the probe measures the runs' build
        extra_env={INHERIT_ENV: "1"},
    )
    probes = Probes(Printer(stream))
    t0 = time.monotonic()
    try:
        report = probe(candidate, probes)
    except KeyboardInterrupt:
        for live in probes.snapshot():
            live.end()
        raise
    return report, time.monotonic() - t0


def write_study_probes(table_dir: Path, found: list[dict]) -> Path:
    """The study probes beside the results table; one probed before and not now keeps its record (`--only`)."""
    path = table_dir / STUDY_PROBES
    try:
        kept = json.loads(path.read_text(encoding="utf-8")).get("probes") or []
    except (OSError, ValueError, AttributeError):
        kept = []
    now = {(p["study"], p["benchmark"]) for p in found}
    probes = [p for p in kept if isinstance(p, dict) and (p.get("study"), p.get("benchmark")) not in now] + found
    table_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"version": STUDY_PROBES_VERSION, "probes": probes}, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def _said(p: dict) -> str:
    if p["status"] == "not-probed":
        return f"not probed: {p['reason']}"
    row = p.get("row") or {}
    rate, hours = row.get("samples_per_second"), row.get("est_hours")
    if rate is None or hours is None:
        return f"probe {p['status']}: {p.get('reason') or 'no estimate'}"
    return f"probe {p['status']} after {_minutes(p['probe_seconds'])}: {p['work']} here about {long_duration(hours)}"


def _probe_studies(jobs, done: int, begin, echo, *, limit: float, **where) -> list[dict]:
    """Each study's own configuration probed here, numbered after the `done` steps; the GPUs NVML sees decide
    which precisions can run."""
    gpus = int(nvml_info().get("gpus_nvml") or 0) if jobs else 0

    def indent(line: str) -> None:  # a probe's lines under its step, as the payload's are
        echo("      " + line if line.strip() else line)

    found = []
    for i, job in enumerate(jobs, done + 1):
        begin(
            i,
            job.benchmark,
            f"{job.study}'s own configuration (batch {job.batch}, {job.precision}), "
            f"probed for at most {limit:.0f} s and extrapolated to the study's whole job",
        )
        found.append(probe_study(job, gpus=gpus, limit=limit, stream=Lines(indent), **where))
        echo("      " + _said(found[-1]))
    return found


def run_demo(
    results: str = "results",
    out: str = "report",
    hourly_usd: float | None = None,
    quick: bool = False,
    only: list[str] | None = None,
    stream: TextIO | None = None,
    table: str | None = None,
) -> int:
    """The demo end to end; returns the exit code (1 if a benchmark failed, the report is written anyway). Its
    lines go to `stream` (stdout), and on a terminal a bar of the benchmarks done, with the time left, to stderr."""
    started = time.monotonic()
    try:
        price = resolve_price(hourly_usd)
    except CostError as exc:
        raise UsageError(str(exc)) from None
    steps, jobs = select(QUICK if quick else SUITE, only, study_jobs())
    limit = QUICK_PROBE_SECONDS if quick else STUDY_PROBE_SECONDS
    results_dir, out_dir = Path(results).resolve(), Path(out)
    table_dir = Path(out if table is None else table)  # the results table; the report's own folder without one
    stack = load_catalog().get(OFFERING).stack_name(MARKET)  # runs land under runs/<stack>/
    today = datetime.now(timezone.utc).date().isoformat()
    logs = out_dir / "demo-logs" / stamp()
    total = len(steps) + len(jobs)
    with Progress(total, "demo", unit="benchmark") as bar:

        def echo(text: str = "") -> None:
            bar.write(text, file=stream or sys.stdout)

        def begin(i: int, benchmark: str, why: str) -> None:
            bar.set_done(i - 1)
            bar.note(benchmark)
            echo(f"[{i}/{total}] {benchmark}: {why}")

        echo(
            f"gpubench demo: {total} benchmark(s) on this machine as {OFFERING} ({'quick' if quick else 'short'} "
            f"suite, synthetic data)"
        )
        echo(f"  price: USD {price.hourly_usd:g}/h, {price.source}")
        echo(f"  results bucket: {results_dir} (runs/{stack}/<run-id>/)   report: {out_dir.resolve()}")
        failed = []
        for i, step in enumerate(steps, 1):
            begin(i, step.benchmark, step.why)
            if run_step(
                payload_argv(step, results_dir, stack, price, today), logs / f"{i:02d}-{step.benchmark}.log", echo
            ):
                failed.append(step.benchmark)
        probes_dir = (out_dir / "demo-probes").resolve()  # apart from the demo's runs: probes are not full runs
        found = _probe_studies(
            jobs, len(steps), begin, echo, price=price, probes_dir=probes_dir, logs=logs, limit=limit
        )
        failed += [f["benchmark"] for f in found if f["status"] not in ("measured", "not-steady", "not-probed")]
        if found:
            write_study_probes(table_dir, found)
        bar.set_done(total)
        last_steps = {
            "collect": (
                f"{results_dir} -> {table_dir}/results.parquet",
                lambda: collect_step(results_dir, table_dir, echo),
            ),
            "report": (f"{out_dir}/index.html", lambda: write_report(out_dir, table_dir, echo)),
        }
        for name, (what, step) in last_steps.items():
            echo(f"[{name}] {what}")
            code = step()
            if code != 0:
                echo(f"{name} failed (exit {code})")
                return code
        report = (out_dir / "index.html").resolve()
        echo()
        echo(
            f"demo finished in {_minutes(time.monotonic() - started)}"
            + (f"; FAILED: {', '.join(failed)} (logs under {logs})" if failed else "")
        )
        echo(f"Open the report: {report}")
        echo(f"  (file://{report}; runs so far under {results_dir}/runs/{stack}/; `make demo` again adds runs)")
        return 1 if failed else 0
