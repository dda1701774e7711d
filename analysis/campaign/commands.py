"""The campaign operations as functions (the CLI formats them). Everything that matters is in the bucket's
manifest, so each call may run on another machine or after a restart."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from analysis.campaign import finish, schedule
from analysis.campaign.launcher import Launcher, LaunchReport, prepare
from analysis.campaign.manifest import Manifest, check_id, new_campaign_id
from analysis.observe import observe
from analysis.options import RESULTS_ENV
from analysis.progress import Printer
from analysis.stack_status import StackStatus, status_of
from infra import workspace
from infra.catalog import load_catalog
from infra.clouds import RESULTS_STACKS
from infra.projectfiles import expand_stacks
from infra.stacks import stack_names
from infra.workspace import BackendFactory, pulumi_backend
from payload import storage
from payload.exitcodes import UsageError
from payload.timestamps import iso, utcnow
from payload.userdirs import user_dir


def campaign_report_dir(campaign_id: str, project_dir: Path | None = None) -> Path:
    """A campaign's default report folder: `<state home>/report/campaigns/<id>`, or under `--project-dir`."""
    return Path(project_dir or user_dir("state")) / "report" / "campaigns" / campaign_id


def select(patterns: Sequence[str], stacks_dir: Path) -> list[str]:
    """The catalog's cloud stacks in `stacks_dir` that the names and globs select, in the order first matched;
    every pattern must select one (results stacks hold the buckets; SSH stacks run through `python -m infra ssh`)."""
    if not patterns:
        raise UsageError("name at least one stack or glob, e.g. `aws-p3-*` or `gcp-*-spot`")
    results = [p for p in patterns if p in RESULTS_STACKS]
    if results:
        raise UsageError(
            f"{results[0]!r} is a results stack (it holds the bucket); campaigns launch benchmark stacks only"
        )
    cloud = load_catalog().cloud_stacks()
    return expand_stacks(patterns, [n for n in stack_names(stacks_dir) if n in cloud], str(stacks_dir))


def require_results(results_url: str | None) -> str:
    """The campaign's bucket, or a ValueError saying how to name it (called after the stacks are checked,
    so a mistyped stack is named as such, not as a missing --results)."""
    if not results_url:
        raise ValueError(
            f"--results is required (or set {RESULTS_ENV}): the bucket the stacks write to, e.g. "
            "s3://my-gpubench-results; `pulumi stack output resultsUrl -s aws-results` prints it"
        )
    return results_url


def project_dir(work_dir: Path | None) -> Path:
    """`--project-dir` when given, else the project's files (the checkout, or a packaged install's copy)."""
    return Path(work_dir) if work_dir else workspace.project_dir()


def up(
    patterns: Sequence[str],
    *,
    results_url: str | None,
    campaign_id: str | None = None,
    concurrency: int = 4,
    retry_failed: bool = False,
    work_dir: Path | None = None,
    backend_factory: BackendFactory = pulumi_backend,
    printer: Printer | None = None,
) -> tuple[Manifest, LaunchReport]:
    printer = printer or Printer()
    root = project_dir(work_dir)
    names = select(patterns, root / "stacks")  # first: a typo is named before anything else is needed
    results_url = require_results(results_url)
    if concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, got {concurrency}")
    backend = backend_factory(root)  # before writing anything: a missing CLI stops here
    store = storage.open_store(results_url)
    manifest = Manifest.open_or_create(store, check_id(campaign_id or new_campaign_id()), results_url)
    manifest.data.setdefault("selections", []).append(
        {"at": iso(), "patterns": list(patterns), "concurrency": concurrency}
    )
    printer(
        f"campaign {manifest.campaign_id}: {len(names)} stack(s), at most {concurrency} launching at once; "
        f"manifest {manifest.url}"
    )
    catalog = load_catalog()
    prepare(manifest, names, root / "stacks", catalog, printer)
    report = Launcher(manifest, backend, catalog, printer, concurrency, retry_failed).run(names)
    return manifest, report


def status(campaign_id: str, *, results_url: str) -> tuple[Manifest, list[StackStatus]]:
    stores = functools.cache(storage.open_store)  # one per URL: the campaign's, and any a stack's resultsUrl names
    manifest = Manifest.require(stores(results_url), campaign_id)
    return manifest, statuses_of(manifest, stores)


def statuses_of(manifest: Manifest, stores: Callable[[str], Any]) -> list[StackStatus]:
    def look(name, since):
        url = (manifest.stacks[name].get("outputs") or {}).get("resultsUrl") or manifest.data["results"]
        return observe(stores(url), name, since)

    now = utcnow()
    return [status_of(name, entry, look, now) for name, entry in manifest.stacks.items()]


@dataclass
class WaitOutcome:
    done: bool  # every stack terminal
    statuses: list[StackStatus]
    never_launched: list[str] = field(default_factory=list)
    collect: dict[str, Any] | None = None
    teardown: list[dict[str, Any]] = field(default_factory=list)
    teardown_error: str | None = None
    report_code: int | None = None
    report_error: str | None = None
    summary_paths: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] | None = None


def poll(
    manifest: Manifest, stores: Callable[[str], Any], printer: Printer, poll_seconds: float, timeout: float | None
) -> tuple[bool, list[StackStatus], list[str]]:
    """Poll the bucket until every stack is terminal; print each stack's changes as they happen."""
    began = time.monotonic()
    seen: dict[str, tuple] = {}
    while True:
        statuses, changed = statuses_of(manifest, stores), False
        for s in statuses:
            if seen.get(s.stack) != (s.state, s.last_event):
                seen[s.stack] = (s.state, s.last_event)
                printer.stack(s.stack, f"{s.state}: {s.detail}")
            entry = manifest.stacks[s.stack]  # the run ids seen, remembered in the manifest
            known = sorted(set(entry.get("run_ids") or []) | set(s.run_ids))
            if known != sorted(entry.get("run_ids") or []):
                entry["run_ids"], changed = known, True
        if changed:
            manifest.save()
        pending = [s.stack for s in statuses if s.state == "pending"]
        if pending:
            return False, statuses, pending
        if all(s.terminal for s in statuses):
            return True, statuses, []
        if timeout is not None and time.monotonic() - began >= timeout:
            return False, statuses, []
        time.sleep(poll_seconds)


def wait(
    campaign_id: str,
    *,
    results_url: str,
    poll_seconds: float = 60.0,
    timeout: float | None = None,
    out_dir: Path | str | None = None,
    all_runs: bool = False,
    work_dir: Path | None = None,
    backend_factory: BackendFactory = pulumi_backend,
    printer: Printer | None = None,
) -> tuple[Manifest, WaitOutcome]:
    printer = printer or Printer()
    stores = functools.cache(storage.open_store)
    manifest = Manifest.require(stores(results_url), campaign_id)
    root = project_dir(work_dir)
    done, statuses, never = poll(manifest, stores, printer, poll_seconds, timeout)
    outcome = WaitOutcome(done, statuses, never)
    if not done:
        return manifest, outcome
    out = Path(out_dir or campaign_report_dir(campaign_id, work_dir))  # never inside an installed package
    run_ids = {r for s in statuses for r in s.run_ids}
    urls = sorted(
        {results_url} | {(e.get("outputs") or {}).get("resultsUrl") or results_url for e in manifest.stacks.values()}
    )
    printer(f"campaign {campaign_id}: every stack is done; collecting into {out}")
    outcome.collect = finish.collect_campaign(urls, out, run_ids, all_runs)
    printer(f"campaign {campaign_id}: tearing down {len(statuses)} stack(s)")
    outcome.teardown, outcome.teardown_error = finish.teardown_stacks(
        manifest, statuses, backend_factory, root, urls, printer
    )
    try:
        outcome.report_code = finish.write_report(out)
    except Exception as exc:  # noqa: BLE001 - the summary below is still written
        outcome.report_error = f"{type(exc).__name__}: {exc}"
    outcome.statuses = statuses_of(manifest, stores)
    outcome.summary = finish.summary_doc(
        manifest,
        outcome.statuses,
        {
            "collect": outcome.collect,
            "teardown": outcome.teardown,
            "teardown_error": outcome.teardown_error,
            "report_dir": str(out),
            "report_error": outcome.report_error,
        },
    )
    outcome.summary_paths = finish.write_summary(manifest, out, outcome.summary)
    return manifest, outcome


def launch_failures(manifest: Manifest, report: LaunchReport) -> list[str]:
    """Stacks that failed to launch: in this call, or earlier in the campaign (and not retried)."""
    earlier = [n for n, e in manifest.stacks.items() if e.get("state") == "launch-failed" and n not in report.failed]
    return report.failed + earlier


class CampaignRun(NamedTuple):  # `run`: the launch and the wait of one new campaign
    manifest: Manifest
    launch: LaunchReport
    outcome: WaitOutcome


def run(
    patterns: Sequence[str],
    *,
    poll_seconds: float = 60.0,
    timeout: float | None = None,
    out_dir: Path | str | None = None,
    all_runs: bool = False,
    **launch: Any,
) -> CampaignRun:
    """up + wait with a new campaign id: what the schedules call; `launch`: the keyword arguments of `up`."""
    if not patterns:
        raise ValueError("name stacks or globs, or pass --schedule FILE")
    campaign_id = new_campaign_id()  # `up` checks the stacks, then the bucket, before anything is launched
    _, report = up(patterns, campaign_id=campaign_id, **launch)
    shared = {k: v for k, v in launch.items() if k not in ("concurrency", "retry_failed")}
    waiting = dict(poll_seconds=poll_seconds, timeout=timeout, out_dir=out_dir, all_runs=all_runs)
    manifest, outcome = wait(campaign_id, **waiting, **shared)
    return CampaignRun(manifest, report, outcome)


def run_schedule(path: str | Path, **where: Any) -> CampaignRun:
    """`run` with the stacks and options of a schedule file (schedules/campaign/); `where`: work_dir,
    backend_factory and printer as `run` takes them."""
    s = schedule.load(path)
    options = dict(concurrency=s.concurrency, retry_failed=s.retry_failed, poll_seconds=s.poll, timeout=s.timeout)
    return run(s.stacks, results_url=s.results, out_dir=s.out, **options, **where)
