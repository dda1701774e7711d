"""`gpubench bench`: every check, the plan and the budget before anything launches; the probes; the answer.

Ctrl-C (or SIGTERM, SIGHUP) stops launching, ends what was launched (asking once more unless `yes`) and says
what is left running until its cloud-side deadline.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from analysis.bench import judge
from analysis.bench.answer import answer_doc
from analysis.bench.candidates import cloud_candidates, local_candidate, ssh_candidates
from analysis.bench.extrapolate import work_samples
from analysis.bench.page import write_page
from analysis.bench.plan import (
    check_budget,
    check_options,
    check_probe_count,
    check_ready,
    check_request,
    make_plan,
)
from analysis.bench.probes import ProbeReport, Probes, run_all
from analysis.bench.record import BenchRecord, bench_dirs, bench_root, new_bench_id
from analysis.bench.runners import CloudProbe, LocalProbe, SshProbe, probe_stack_name, write_project
from analysis.bench.settle import Model, first_probes, settle, summary
from analysis.bench.signals import StopSignal, stop_signals_as_interrupt
from analysis.options import RESULTS_ENV
from analysis.progress import Printer
from infra.catalog import load_catalog
from infra.projectfiles import user_or_shipped
from infra.workspace import ProjectNotFound, project_dir, pulumi_backend
from payload import exitcodes
from payload.exitcodes import Declined, UsageError
from payload.money import USD_SIGN
from payload.results_location import ALL_SCHEMES, BUCKET_SCHEMES, ResultsLocationError, parse_results_location
from payload.storage import open_store
from payload.timestamps import iso
from payload.workloads.spec import WorkloadSpecError, load_spec

LOCAL_RESULTS = "results"  # this machine's default bucket, as `gpubench demo` uses
PROCESS_START_SECONDS = 120.0  # local and SSH probes: interpreter start, the task's setup


class BenchError(UsageError):
    """The bench cannot run as asked; the message names the value and the fix (nothing was started)."""


@dataclass
class BenchOutcome:
    """What `bench` did: the --json document, the page, and what (if anything) is still running."""

    doc: dict[str, Any]
    exit_code: int
    page: Path | None = None
    workspace: Path | None = None
    left: list[dict[str, Any]] = field(default_factory=list)


def ask_terminal(what: Sequence[str], question: str, default: bool) -> bool:
    """Show `what`, ask `question`; with no terminal to ask on, the default answer (said so)."""
    for line in what:
        print(line, file=sys.stderr)
    if not sys.stdin.isatty():
        print(f"{question} (no terminal to ask on: {'yes' if default else 'no'})", file=sys.stderr, flush=True)
        return default
    print(f"{question} [{'Y/n' if default else 'y/N'}] ", end="", file=sys.stderr, flush=True)
    reply = sys.stdin.readline().strip().lower()
    return default if not reply else reply in ("y", "yes")


def load_task(task_path: str | Path) -> Any:
    try:
        return load_spec(user_or_shipped(task_path).resolve())
    except WorkloadSpecError as exc:
        raise BenchError(str(exc)) from None


def results_for(kind_set: set[str], results: str | None) -> str | None:
    """Where cloud probes write (required), or this machine's (default results/); SSH hosts use their stack's."""
    url = results or os.environ.get(RESULTS_ENV)
    if "cloud" in kind_set and not url:
        raise BenchError(
            f"--results is required for cloud probes (or set {RESULTS_ENV}): the bucket the probe stacks write to, "
            "e.g. s3://my-gpubench-results; `pulumi stack output resultsUrl -s aws-results` prints it"
        )
    if url:
        try:
            # a cloud instance writes to a bucket: a directory on this machine is out of its reach
            parse_results_location(url, schemes=BUCKET_SCHEMES if "cloud" in kind_set else ALL_SCHEMES)
        except ResultsLocationError as exc:
            raise BenchError(f"--results {url}: {exc}") from None
    url = url or (LOCAL_RESULTS if "local" in kind_set else None)
    # a local directory is recorded absolute, so `gpubench logs` finds it from anywhere
    return str(Path(url).expanduser().resolve()) if url and "://" not in url else url


def _runner(kind: str, record: BenchRecord, settings: dict[str, Any], backend: Callable[[Path], Any] | None) -> Any:
    """The probe runner of one kind; cloud probes share a stack backend over the bench's workspace."""
    task, url, seconds = settings["task"], settings["results"], settings["probe_seconds"]
    if kind == "local":
        logs = record.path.parent / "logs"
        return LocalProbe(store=open_store(url), results=url, task=task, probe_seconds=seconds, log_dir=logs)
    if kind == "ssh":
        poll = min(2.0, float(settings["poll_seconds"]))
        return SshProbe(task=task, probe_seconds=seconds, stacks_dir=settings["stacks_dir"], poll_seconds=poll)
    bench_dir, work_dir = record.path.parent, Path(settings["work_dir"])
    write_project(bench_dir, work_dir if (work_dir / "Pulumi.yaml").is_file() else project_dir())
    store, backend = open_store(url), (backend or pulumi_backend)(bench_dir)
    return CloudProbe(backend=backend, record=record, store=store, catalog=load_catalog(), settings=settings)


def make_jobs(candidates, record: BenchRecord, settings: dict, backend, printer) -> tuple[list, list[ProbeReport]]:
    """(candidate, probe) pairs to run, and reports for cloud candidates whose stack config would not parse
    (`launch-failed`, kind `config`: never launched)."""
    runners = {kind: _runner(kind, record, settings, backend) for kind in {c.kind for c in candidates}}
    jobs, early = [], []
    for cand in candidates:
        if cand.kind == "cloud":
            name = probe_stack_name(cand, record.bench_id)
            try:
                runners["cloud"].prepare(cand, name)
            except (ValueError, FileNotFoundError) as exc:  # ConfigError, CatalogError: this candidate only
                printer.stack(name, f"not launched (config): {exc}")
                record.update(name, kind="cloud", offering=cand.offering, state="launch-failed")
                early.append(ProbeReport(cand, name, "launch-failed", f"config: {exc}", probe_usd=0.0))
                continue
        else:  # a process on this machine or a host: started as soon as it is launched
            started = {"state": "launched", "up_started_at": iso(), "launched_at": iso()}
            record.enter(cand.name, cand, settings["benchmark_name"], settings["results"], **started)
        jobs.append((cand, runners[cand.kind]))
    return jobs, early


def bench(
    task_path: str | Path,
    *,
    gpus: str | None = None,
    spot: bool | None = None,
    budget_usd: float | None = None,
    deadline_hours: float | None = None,
    probe_minutes: float = 10.0,
    probe: int | None = None,
    local: bool = False,
    hosts: Sequence[str] = (),
    yes: bool = False,
    results: str | None = None,
    backend: Callable[[Path], Any] | None = None,
    confirm: Callable[..., bool] = ask_terminal,
    progress: TextIO | None = None,
    work_dir: Path | None = None,
    hourly_usd: float | None = None,
    stacks_dir: Path | None = None,
    poll_seconds: float = 10.0,
    throughput_only: bool = False,
    launch_checks: Callable[..., list[dict]] | None = None,
) -> BenchOutcome:
    """Probe the task on every candidate in parallel (with `probe`, on that many, the rest predicted and
    whatever stays in doubt probed before the answer) and answer where to run the whole job. `backend`: a
    StackBackend factory (default Pulumi's, whose CLI and login are then checked); `confirm(what, question,
    default) -> bool` asks the user; `launch_checks` replaces analysis.readiness.launch_checks."""
    printer = Printer(progress or sys.stderr)
    ask = {"gpus": gpus, "spot": spot, "local": local, "hosts": hosts, "hourly_usd": hourly_usd}
    limits = {"deadline_hours": deadline_hours, "budget_usd": budget_usd}
    task = checked_task(task_path, ask, limits, probe_minutes, probe, throughput_only)
    history = bench_dirs(work_dir)  # earlier benches: their predictions are judged on this one's measurements
    workspaces = bench_root(work_dir)  # --project-dir DIR: DIR/.gpubench/bench, else the state home's
    try:  # the project the probes build on (its Pulumi.yaml and stack files), else the current directory
        work_dir = Path(work_dir) if work_dir else project_dir()
    except ProjectNotFound:
        work_dir = Path.cwd()
    stacks_dir = Path(stacks_dir) if stacks_dir else work_dir / "stacks"
    bench_id = new_bench_id()
    candidates, unmatched = checked_candidates(task, ask, stacks_dir, bench_id, probe, printer)
    # cloud probes get the plan's default boot allowance; this machine and SSH hosts only start a process
    boot = {} if any(c.kind == "cloud" for c in candidates) else {"boot_allowance_seconds": PROCESS_START_SECONDS}
    try:
        plan = make_plan(candidates, probe_minutes=probe_minutes, **boot)
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    model = None if probe is None else Model()
    first = None if probe is None else first_probes(candidates, probe, model, by_rate=throughput_only)
    printer(plan.table())
    upfront = plan if first is None else subplan(plan, first)
    check_budget(upfront, budget_usd)  # raises BudgetExceeded before anything launches
    url = results_for({c.kind for c in candidates}, results)
    check_ready(candidates, url, bench_id, pulumi=backend is None, cwd=work_dir, checks=launch_checks)
    if not yes and not confirm(spend_lines(plan, upfront, budget_usd), "Start the probes?", False):
        raise Declined("not confirmed; nothing was started (pass --yes where no one can answer)")
    record = BenchRecord.create(workspaces / bench_id, bench_id, str(task.path), url)
    settings = dict(task=task.path, results=url, probe_seconds=plan.probe_seconds, poll_seconds=poll_seconds)
    settings |= dict(boot_allowance_seconds=plan.boot_allowance_seconds, stacks_dir=stacks_dir, work_dir=work_dir)
    settings["benchmark_name"] = task.benchmark_name
    probes = Probes(printer, bound_seconds=plan.probe_seconds + plan.boot_allowance_seconds)

    def probe_round(chosen: list[Any]) -> list[Any]:
        jobs, early = make_jobs(chosen, record, settings, backend, printer)
        printer(f"bench {bench_id}: {len(jobs)} probe(s) starting; workspace {record.path.parent}")
        return early + run_all(jobs, probes)

    with stop_signals_as_interrupt():  # SIGTERM and SIGHUP end the probes as Ctrl-C does
        try:
            settled = None
            if first is None:
                reports = probe_round(list(candidates))
            else:
                samples = None if throughput_only else work_samples(task)
                how = (model, plan.bounds, budget_usd, samples, throughput_only, printer)
                settled = settle(candidates, first, probe_round, *how)
                reports = settled.reports
        except KeyboardInterrupt as exc:
            unattended = yes or isinstance(exc, StopSignal)  # a signal, not a person: no one to ask
            return cancelled(task, candidates, probes, unattended, confirm, record)
    return finish(task, reports, unmatched, limits, throughput_only, record, printer, settled, plan, history)


def checked_task(task_path, ask: dict, limits: dict, probe_minutes, probe, throughput_only) -> Any:
    """The task file, once every option value and the task are checked (BenchError naming every problem)."""
    problems = check_options(probe_minutes=probe_minutes, hourly_usd=ask["hourly_usd"], **limits)
    task = load_task(task_path)
    problems += check_request(
        task, throughput_only=throughput_only, deadline_hours=limits["deadline_hours"], probe=probe, **ask
    )
    if problems:
        raise BenchError("; ".join(problems) if len(problems) == 1 else "\n  " + "\n  ".join(problems))
    return task


def checked_candidates(task, ask: dict, stacks_dir, bench_id, probe, printer) -> tuple[list[Any], list[dict]]:
    """This machine and/or SSH hosts when asked, else the clouds' (and the alternatives that matched none)."""
    candidates, unmatched = [], []
    if ask["local"]:
        candidates.append(local_candidate(ask["hourly_usd"], bench_id))
    if ask["hosts"]:
        candidates += ssh_candidates(list(ask["hosts"]), stacks_dir)
    if not (ask["local"] or ask["hosts"]):
        candidates, unmatched = cloud_candidates(task, gpus=ask["gpus"], spot=ask["spot"])
    for item in unmatched:
        printer(f"{item['ask']}: not probed: {item['reason']}")
    if not candidates:
        raise BenchError("no candidate to probe: " + ("; ".join(u["reason"] for u in unmatched) or "none matched"))
    if problem := check_probe_count(probe, len(candidates)):
        raise BenchError(problem)
    return candidates, unmatched


def subplan(plan: Any, chosen: Sequence[Any]) -> Any:
    """The plan of round one's probes alone: what --budget is checked against before anything starts."""
    return make_plan(chosen, probe_minutes=plan.probe_seconds / 60, boot_allowance_seconds=plan.boot_allowance_seconds)


def spend_lines(plan: Any, upfront: Any, budget_usd: float | None) -> list[str]:
    """What the confirmation shows: the most round one costs and, with --probe, the most the rest may add."""
    first = f"at most {USD_SIGN.format(upfront.total_bound_usd)} for {len(upfront.candidates)} probe(s)"
    if len(upfront.candidates) == len(plan.candidates):  # every candidate in round one: nothing left to add
        return [first]
    more = plan.total_bound_usd - upfront.total_bound_usd
    if budget_usd is not None:
        more = max(0.0, min(more, budget_usd - upfront.total_bound_usd))
    return [
        f"{first} of {len(plan.candidates)} candidates (the rest predicted)",
        f"and up to {USD_SIGN.format(more)} more for candidates still in doubt after them"
        + (" (within --budget)" if budget_usd is not None else ""),
    ]


def finish(task, reports, unmatched, limits, by_rate, record: BenchRecord, printer, settled, plan, history):
    """The answer, earlier predictions judged (with --probe, this bench's recorded), the page; FAILED when no
    candidate has an estimate."""
    samples, predicted = None if by_rate else work_samples(task), settled.predicted if settled else ()
    how = dict(work_samples=samples, throughput_only=by_rate, predicted=predicted, work=getattr(task, "work", None))
    doc = answer_doc(str(task.path), reports, unmatched, **how, **limits)
    doc["bench_id"] = record.bench_id
    for r in reports:
        if r.candidate.kind != "cloud":  # cloud probes record their destroy themselves
            record.update(r.stack, teardown={"action": "ended", "at": iso()}, probe_status=r.status)
    forecasts = judge.earlier(str(doc["task"]), history, record.bench_id)
    if settled is not None:
        doc["probing"] = summary(settled, plan, doc)
        printer(doc["probing"]["sentence"])
        doc["answer"]["sentence"] += doc["probing"]["note"]
        forecasts |= {k: v | {"bench_id": record.bench_id} for k, v in settled.forecasts.items()}
        alpha = settled.fit.alpha if settled.fit is not None else None
        record.data[judge.PREDICTIONS] = judge.recorded(
            doc["candidates"], record.bench_id, alpha, iso(), getattr(task, "benchmark_name", None)
        )
    doc["prediction_checks"] = record.data["prediction_checks"] = judge.checks(doc["candidates"], forecasts)
    for check in doc["prediction_checks"]:
        printer("prediction vs measurement: " + judge.line(check))
    page = write_page(doc, record.path.parent)
    doc["page"] = str(page)
    record.data["answer"] = doc["answer"].get("sentence")
    record.save()
    printer(f"answer: {doc['answer'].get('sentence')}")
    printer(f"page: {page}")
    answered = "samples_per_second" if by_rate else "est_hours"
    estimated = any(r.get(answered) is not None for r in doc["candidates"])
    return BenchOutcome(doc, exitcodes.OK if estimated else exitcodes.FAILED, page, record.path.parent)


def cancelled(task, candidates, probes: Probes, yes: bool, confirm, record: BenchRecord) -> BenchOutcome:
    """Ctrl-C: end what was started (asking once more unless `yes`), say what is left and until when."""
    say = probes.printer
    live = probes.snapshot()
    try:
        lines = [f"  {item.name} ({item.what}; deadline {item.deadline or 'none'})" for item in live]
        if live and (yes or confirm(["still running:", *lines], "Destroy them now?", True)):
            for item in live:
                try:
                    item.end()
                    probes.release(item.name)
                except Exception as exc:  # noqa: BLE001 - named below as left behind
                    say(f"[{item.name}] could not end it: {exc}")
    except KeyboardInterrupt:
        say("Ctrl-C again: leaving the rest as it is")
    left = [{"name": i.name, "what": i.what, "deadline": i.deadline} for i in probes.snapshot()]
    for item in left:
        until = f"until its cloud-side deadline {item['deadline']}" if item["deadline"] else "until it ends itself"
        end_it = f"end it now with `gpubench teardown {item['name']}`"
        say(f"left running: {item['name']} ({item['what']}) {until}; {end_it}")
    if not left:
        say("cancelled; nothing left running")
    record.data["cancelled"] = True
    record.save()
    rows = [{"offering": c.offering, "name": c.name, "kind": c.kind, "status": "cancelled"} for c in candidates]
    doc = {"task": str(task.path), "bench_id": record.bench_id, "cancelled": True, "candidates": rows, "left": left}
    return BenchOutcome(doc, exitcodes.CANCELLED, None, record.path.parent, left)
