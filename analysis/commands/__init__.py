"""One module per `gpubench` subcommand, each a thin adapter over one library function (nothing else
imports them: an import-linter contract), and COMMANDS, the table of their names and summaries that
answers `gpubench --help` without importing any of them. A command is a row here and a module whose
`register(sub)` adds its parser with `add_command`, its `func` returning an exit code.
"""

from __future__ import annotations

import argparse
from collections import Counter

from infra.ssh import SUMMARY as SSH_SUMMARY
from payload.exitcodes import UsageError
from payload.results_location import ResultsLocationError, parse_results_location

# name -> its one-line summary, in the order `gpubench --help` lists them (None: an alias it does not list)
COMMANDS: dict[str, str | None] = {
    "bench": "probe your training job on candidate offerings in parallel and estimate the whole job's hours and cost",
    "campaign": "launch a benchmark campaign across many stacks, follow it, collect, tear down and report",
    "check": "check the Pulumi CLI, credentials, extras and buckets for what you want to do (read-only)",
    "collect": "collect run results from buckets into the results table",
    "completion": "print the shell completion script (bash, zsh or fish): commands, options, stack names",
    "cost": "price a duration on one offering under its billing rule, or a recurring run by the month",
    "demo": "run a short suite on this machine (local/this-machine), collect it and write the report",
    "logs": "print the newest run's log tail (runs/<stack>/<run-id>/log-tail.txt) from the bucket; --follow polls it",
    "offers": "find offerings by GPU, count, market, region and price (catalog data, no cloud call)",
    "offerings": None,  # the old name of `offers --retired`
    "payload": "run, list or flush benchmarks here (the same as `python -m payload`)",
    "plan": "show what each stack launches and the most it can cost (offline; user-data with -v)",
    "predict": "predict throughput, whole-job time and cost on GPUs you did not measure, from rates you did",
    "preview": "render stacks' resources offline (names or globs; needs the infra extra, no CLI)",
    "prices": "refresh prices from the AWS Price List / GCP Cloud Billing Catalog APIs; list price snapshots",
    "report": "write DIR/index.html (self-contained, plots embedded) and print a summary",
    "ssh": SSH_SUMMARY,  # the one copy: infra.ssh.cli shows it under `python -m infra` too
    "stacks": "list (--list), check (--check) or regenerate stacks/ from the catalog",
    "status": "list live bench probes (state, age, cloud-side deadline, cost so far) from their records and the bucket",
    "sweep": "terminate instances tagged by gpubench whose expires-at has passed (leak sweeper)",
    "teardown": "destroy benchmark stacks (named, --completed, --expired) through Pulumi; never the results stacks",
    "up": "launch a stack: show its plan and cost bound, confirm, then `pulumi up`",
    "destroy": "delete a stack's resources (never the results): confirm, then `pulumi destroy`",
    "refresh": "sync a stack's Pulumi state with the cloud (`pulumi refresh`)",
}
# The module whose register(sub) adds a command, when it is not analysis.commands.<its name>.
MODULES = {
    "offerings": "analysis.commands.offers",
    "destroy": "analysis.commands.up",
    "refresh": "analysis.commands.up",
    "campaign": "analysis.campaign.cli",
    "ssh": "infra.ssh.cli",  # `python -m infra ssh` registers the same parser
}


def module_of(name: str) -> str:
    return MODULES.get(name, f"analysis.commands.{name}")


def add_command(sub, name: str, func=None, description: str | None = None, epilog: str | None = None, **kw):
    """The parser of command `name` running `func`, its summary from COMMANDS; the description defaults to it."""
    summary = COMMANDS[name]
    if summary is not None:  # argparse lists a parser given any help=, even None
        kw["help"] = summary
    p = sub.add_parser(
        name,
        description=description or f"{summary}.",
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kw,
    )
    if func is not None:
        p.set_defaults(func=func)
    return p


def options(args, *names: str) -> dict:
    """The parsed options `names`, as keyword arguments of the library function a command calls."""
    return {name: getattr(args, name) for name in names}


def print_tally(outcomes, nothing: str, dry_run: str | None) -> None:
    """One line after a table of outcomes: `1 destroyed, 2 kept` (else `nothing`), and what a dry run left alone."""
    counts = Counter(o.action for o in outcomes)
    summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or nothing
    print(f"\n{summary}{f' (dry run: {dry_run})' if dry_run else ''}")


def check_results_locations(sources: list[str], given_by: str) -> None:
    """An empty or unknown results location (`ftp://...`) is a usage error before anything is opened
    (it would otherwise read as a bucket that cannot be reached)."""
    for value in sources:
        if not value.strip():
            raise UsageError(
                f"{given_by} {value!r} is empty: give s3://bucket[/prefix], gs://bucket[/prefix], "
                "file:///dir or a directory"
            )
        try:
            parse_results_location(value, bucket_rules=False)  # a bucket's own name is the store's to refuse
        except ResultsLocationError as exc:
            raise UsageError(f"{given_by}: {exc}") from None
