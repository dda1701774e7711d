"""Which probe runs each candidate (cloud, local, SSH), set up before anything starts.

Cloud probes share one stack backend over the bench's workspace; their stack
files are written and checked here, so a candidate whose config would not parse
is reported (`launch-failed`, kind `config`) without being launched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis.bench.cloud import CloudProbe, probe_stack_name, write_project
from analysis.bench.local import LocalProbe
from analysis.bench.probes import ProbeFn
from analysis.bench.readings import ProbeReport
from analysis.bench.record import BenchRecord
from analysis.bench.ssh import SshProbe
from analysis.progress import Printer
from infra.catalog import load_catalog
from infra.workspace import project_dir, pulumi_backend
from payload.storage import open_store
from payload.timestamps import iso


def _project(work_dir: Path) -> Path:
    return work_dir if (work_dir / "Pulumi.yaml").is_file() else project_dir()


def _cloud(record: BenchRecord, settings: dict[str, Any], backend: Callable[[Path], Any] | None) -> Any:
    bench_dir = record.path.parent
    write_project(bench_dir, _project(Path(settings["work_dir"])))
    return CloudProbe(
        backend=(backend or pulumi_backend)(bench_dir),
        record=record,
        store=open_store(settings["results"]),
        catalog=load_catalog(),
        settings=settings,
    )


def _local(record: BenchRecord, settings: dict[str, Any], backend: Any) -> Any:
    return LocalProbe(
        store=open_store(settings["results"]),
        results=settings["results"],
        task=settings["task"],
        probe_seconds=settings["probe_seconds"],
        log_dir=record.path.parent / "logs",
    )


def _ssh(record: BenchRecord, settings: dict[str, Any], backend: Any) -> Any:
    return SshProbe(
        task=settings["task"],
        probe_seconds=settings["probe_seconds"],
        stacks_dir=settings["stacks_dir"],
        poll_seconds=min(2.0, float(settings["poll_seconds"])),
    )


RUNNERS = {"cloud": _cloud, "local": _local, "ssh": _ssh}  # (record, settings, backend) -> probe runner


def make_jobs(
    candidates: Sequence[Any],
    record: BenchRecord,
    settings: dict[str, Any],
    backend: Callable[[Path], Any] | None,
    printer: Printer,
) -> tuple[list[tuple[Any, ProbeFn]], list[ProbeReport]]:
    """(candidate, probe) pairs to run, and reports for candidates refused before launch."""
    runners = {kind: RUNNERS[kind](record, settings, backend) for kind in {c.kind for c in candidates}}
    jobs: list[tuple[Any, ProbeFn]] = []
    early: list[ProbeReport] = []
    for cand in candidates:
        runner = runners[cand.kind]
        if cand.kind == "cloud":
            name = probe_stack_name(cand, record.bench_id)
            try:
                runner.prepare(cand, name)
            except (ValueError, FileNotFoundError) as exc:  # ConfigError, CatalogError: this candidate only
                printer.stack(name, f"not launched (config): {exc}")
                record.update(name, kind="cloud", offering=cand.offering, state="launch-failed")
                early.append(ProbeReport(cand, name, "launch-failed", f"config: {exc}", probe_usd=0.0))
                continue
        else:
            # a process on this machine or a host: started as soon as it is launched
            started = {"state": "launched", "up_started_at": iso(), "launched_at": iso()}
            record.enter(cand.name, cand, settings["benchmark_name"], settings["results"], **started)
        jobs.append((cand, runner))
    return jobs, early
