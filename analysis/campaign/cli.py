"""`gpubench campaign up|status|wait|run|schedule` over analysis.campaign.commands; BACKEND_FACTORY is the
Automation API backend (tests swap it)."""

from __future__ import annotations

import os
import shlex
import sys
from contextlib import closing
from pathlib import Path

from analysis.campaign import commands, schedule
from analysis.campaign.commands import require_results
from analysis.campaign.finish import stack_table, summary_text
from analysis.campaign.manifest import new_campaign_id
from analysis.campaign.schedule import parse_duration
from analysis.commands import add_command, check_results_locations
from analysis.options import RESULTS_ENV
from analysis.output import emit_json, poll_problem
from analysis.progress import Printer, Progress
from analysis.stack_status import TERMINAL, unreachable
from infra.workspace import pulumi_backend
from payload import exitcodes
from payload.exitcodes import UsageError

BACKEND_FACTORY = pulumi_backend
DESCRIPTION = """\
A campaign launches the stacks you select (names or globs over stacks/) through
the Pulumi Automation API, a few at a time, and keeps its record in the results
bucket (campaigns/<id>/manifest.json), so `status` and `wait` work from any
machine with the campaign id.

A stack that fails to launch (quota, no spot capacity, GPU not in the zone) is
recorded with the provider's message and the others go on; capacity errors are
retried once in another zone of the same region, never the zone that failed.
Waste = time billed after a stack's last result was uploaded.
"""
EPILOG = """\
examples:
  gpubench campaign up 'aws-g4dn-*-spot' gcp-t4-1x-spot --results s3://my-results --concurrency 4
  gpubench campaign status 20250106T060000Z --results s3://my-results
  gpubench campaign wait 20250106T060000Z --results s3://my-results --poll 120 --timeout 8h
  gpubench campaign run --schedule schedules/campaign/weekly-spot.yaml

--results defaults to $GPUBENCH_RESULTS. It must be the bucket the stacks write to
(the resultsUrl output of your results stack: `pulumi stack output resultsUrl -s aws-results`).
--out is the campaign's report folder (a person opens its index.html); the
campaign's runs are collected there too.
Exit codes: 0 ok; 1 some stack failed to launch or to tear down; 2 bad arguments;
3 Pulumi CLI missing; 4 the bucket could not be read or written; 5 the campaign's
manifest in the bucket is not one (not JSON, or a wrong shape: the message names the
part); 75 wait timed out (run `wait` again later: it resumes).
"""


def _given_results(args) -> str | None:
    """--results, else $GPUBENCH_RESULTS, checked as --results is (`ftp://...` is a usage error)."""
    if args.results:
        return args.results
    url = os.environ.get(RESULTS_ENV) or None
    if url:
        check_results_locations([url], f"${RESULTS_ENV}")
    return url


def _status_table(statuses) -> str:
    return "\n".join(stack_table([s.to_dict() for s in statuses]))


def _launching(args) -> dict:
    """The options `up` and `run` take from their command lines (--results is required after the stacks)."""
    options = dict(concurrency=args.concurrency, retry_failed=args.retry_failed, work_dir=args.project_dir)
    return dict(results_url=_given_results(args), backend_factory=BACKEND_FACTORY, **options)


def cmd_up(args) -> int:
    manifest, report = commands.up(args.stacks, campaign_id=args.campaign_id, **_launching(args))
    failed = commands.launch_failures(manifest, report)
    if args.json:
        emit_json(
            {
                "campaign_id": manifest.campaign_id,
                "manifest": manifest.url,
                "actions": report.actions,
                "max_concurrent": report.max_concurrent,
                "stacks": manifest.stacks,
            }
        )
    else:
        launched = sum(a in ("launched", "adopted") for a in report.actions.values())
        print(f"campaign {manifest.campaign_id}: {launched} launched, {len(set(failed))} failed to launch; ", end="")
        print(f"manifest {manifest.url}\nnext: {_again(manifest, args, 'campaign', 'status', manifest.campaign_id)}")
    return exitcodes.FAILED if failed else 0


def cmd_status(args) -> int:
    manifest, statuses = commands.status(args.campaign_id, results_url=require_results(_given_results(args)))
    if args.json:
        emit_json({"campaign_id": manifest.campaign_id, "stacks": [s.to_dict() for s in statuses]})
    else:
        print(f"campaign {manifest.campaign_id} ({manifest.url})")
        print(_status_table(statuses))
    error = unreachable([s.stack for s in statuses if s.unreachable])
    if error:
        raise error
    return 0


def _again(manifest, args, *words: str) -> str:
    """A gpubench command to run next, whole: with the campaign's bucket and the project this one was
    given, so it works as printed from any directory and shell (quoted)."""
    more = ["--results", args.results or manifest.data["results"]]
    if getattr(args, "project_dir", None):
        more += ["--project-dir", str(args.project_dir)]
    return shlex.join(["gpubench", *words, *more])


def _wait_result(manifest, outcome, args) -> int:
    as_json = args.json
    if outcome.never_launched:
        up = _again(manifest, args, "campaign", "up", "--campaign-id", manifest.campaign_id, *outcome.never_launched)
        raise UsageError(f"never launched: {', '.join(outcome.never_launched)}; run `{up}` first")
    if not outcome.done:
        if as_json:  # stdout stays JSON: a script reads where each stack stands
            emit_json(
                {"campaign_id": manifest.campaign_id, "done": False, "stacks": [s.to_dict() for s in outcome.statuses]}
            )
        else:
            print(_status_table(outcome.statuses))
        again = _again(manifest, args, "campaign", "wait", manifest.campaign_id)
        print(f"timed out waiting; run `{again}` again later", file=sys.stderr)
        return exitcodes.INTERRUPTED
    if as_json:
        emit_json(outcome.summary)
    else:
        print(summary_text(outcome.summary), end="")
        for key, path in outcome.summary_paths.items():
            print(f"{key}: {path}")
    if outcome.teardown_error:
        raise exitcodes.GpubenchError(outcome.teardown_error)
    return exitcodes.FAILED if outcome.report_error or any(not o.get("ok", True) for o in outcome.teardown) else 0


class ProgressPrinter(Printer):
    """The campaign's lines, with a bar of stacks done and the time left while `wait` polls (on a terminal)."""

    LIVE = frozenset({"pending", "launching", "launched", "running"})

    def __init__(self):
        super().__init__()
        self.bar = Progress(None, "stacks done", unit="stack")
        self.states: dict[str, str] = {}

    def __call__(self, text: str) -> None:
        if self.bar.bar is None:
            super().__call__(text)
        else:
            self.lines.append(text)
            self.bar.write(text)

    def stack(self, name: str, text: str) -> None:
        state = str(text).split(":", 1)[0]
        if state in TERMINAL | self.LIVE:
            self.states[name] = state
            self.bar.set_total(len(self.states))
            self.bar.set_done(sum(s in TERMINAL for s in self.states.values()))
        super().stack(name, text)

    def close(self) -> None:
        self.bar.close()


def _waiting(args) -> dict:
    """The options `wait` and `run` take from their command lines, checked."""
    if poll_problem(args.poll):
        raise ValueError(poll_problem(args.poll))
    timeout = None if args.timeout is None else parse_duration(args.timeout)
    return dict(poll_seconds=args.poll, timeout=timeout, out_dir=args.out, all_runs=args.all_runs)


def cmd_wait(args) -> int:
    options = _waiting(args)
    results_url = require_results(_given_results(args))
    with closing(ProgressPrinter()) as printer:
        manifest, outcome = commands.wait(
            args.campaign_id,
            results_url=results_url,
            work_dir=args.project_dir,
            backend_factory=BACKEND_FACTORY,
            printer=printer,
            **options,
        )
    return _wait_result(manifest, outcome, args)


def cmd_run(args) -> int:
    options = _waiting(args)
    if args.schedule:
        done = commands.run_schedule(args.schedule, work_dir=args.project_dir, backend_factory=BACKEND_FACTORY)
    else:
        with closing(ProgressPrinter()) as printer:
            done = commands.run(args.stacks, printer=printer, **_launching(args), **options)
    code = _wait_result(done.manifest, done.outcome, args)
    return code or (exitcodes.FAILED if done.launch.failed else 0)


def cmd_schedule(args) -> int:
    doc = schedule.describe(args.file, new_campaign_id())
    if args.json:
        emit_json(doc)
    else:
        for k, v in doc.items():
            print(f"{k}: {v}")
    return 0


def _options(p, *groups: str) -> None:
    """The options of a subcommand, by group: stacks (optional with `run`), launch, wait, and the common ones."""
    if "stacks" in groups:
        p.add_argument(
            "stacks",
            nargs="*" if "run" in groups else "+",
            metavar="STACK_OR_GLOB",
            help="stack names or globs over stacks/, e.g. aws-p3-8x 'aws-g4dn-*' 'gcp-*-spot'",
        )
        p.add_argument("--concurrency", type=int, default=4, metavar="N", help="stacks launching at once (default 4)")
        p.add_argument(
            "--retry-failed",
            action="store_true",
            help="launch again stacks whose launch failed earlier in this campaign",
        )
    if "id" in groups:
        p.add_argument("campaign_id", metavar="CAMPAIGN_ID")
    if "up" in groups:
        p.add_argument(
            "--campaign-id", metavar="ID", help="resume or extend this campaign (default: a new UTC timestamp id)"
        )
    if "run" in groups:
        p.add_argument(
            "--schedule", metavar="FILE", help="take stacks and options from a schedule file (schedules/campaign/)"
        )
    if "wait" in groups:
        p.add_argument(
            "--poll",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="seconds between bucket polls (default 60, at least 1)",
        )
        p.add_argument(
            "--timeout",
            metavar="DURATION",
            help="stop waiting after this long, e.g. 90m or 8h (default: until every stack is done or expired)",
        )
        p.add_argument(
            "--out",
            type=Path,
            metavar="DIR",
            help="report directory (default $GPUBENCH_HOME/report/campaigns/<campaign-id>, ~/.gpubench without it)",
        )
        p.add_argument(
            "--all-runs", action="store_true", help="report every run in the bucket, not only this campaign's"
        )
    if "schedule" not in groups:
        p.add_argument(
            "--results",
            metavar="URL",
            help=f"the campaign's bucket: s3://..., gs://..., file:///... (default ${RESULTS_ENV})",
        )
        p.add_argument(
            "--project-dir",
            type=Path,
            metavar="DIR",
            help="gpubench checkout holding Pulumi.yaml and stacks/ (default: this one)",
        )
    p.add_argument("--json", action="store_true", help="machine-readable output")


# subcommand -> (its summary, the function it runs, its option groups for _options)
SUBCOMMANDS = {
    "up": (
        "launch the selected stacks, at most --concurrency at once, and write the manifest (idempotent per "
        "campaign id); one line per stack event: [aws-p3-8x] ...",
        cmd_up,
        ("stacks", "up"),
    ),
    "status": (
        "per stack: launched, running (last event), finished, failed, interrupted, expired, launch-failed; "
        "cost so far and waste",
        cmd_status,
        ("id",),
    ),
    "wait": ("poll until every stack is done, then collect, tear down and report", cmd_wait, ("id", "wait")),
    "run": ("up + wait with a new campaign id (what the schedules call)", cmd_run, ("stacks", "run", "wait")),
    "schedule": ("check a recurring-campaign file; print its systemd OnCalendar=", cmd_schedule, ("schedule",)),
}


def register(sub) -> None:
    top = add_command(sub, "campaign", description=DESCRIPTION, epilog=EPILOG)
    subcommands = top.add_subparsers(dest="campaign_command", required=True, metavar="|".join(SUBCOMMANDS))
    for name, (summary, func, groups) in SUBCOMMANDS.items():
        description = summary[0].upper() + summary[1:] + "." * (summary[-1] != ".")
        p = subcommands.add_parser(name, help=summary, description=description)
        if name == "schedule":
            p.add_argument("file", metavar="FILE")
        _options(p, *groups)
        p.set_defaults(func=func)
