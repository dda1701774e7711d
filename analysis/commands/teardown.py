"""`gpubench teardown`: destroy benchmark stacks that are done or past their deadline."""

from __future__ import annotations

from pathlib import Path

from analysis.bench.record import BenchRecord, bench_dirs
from analysis.commands import add_command, print_tally
from analysis.output import emit_json, planned_then_run, print_table
from analysis.teardown import teardown
from infra.clouds import RESULTS_STACKS
from infra.projectfiles import expand_stacks, known_stacks
from infra.tags import parse_now

EPILOG = """\
examples:
  gpubench teardown aws-p3-8x gcp-v100-1x-spot
  gpubench teardown --completed --results s3://my-gpubench-results
  gpubench teardown --expired --dry-run
  gpubench teardown --completed --expired --json   # what the scheduled jobs run

With --completed and --expired together a stack is destroyed when either holds.
A bench's cloud probe (as `gpubench status` shows it) is destroyed by name from its
bench workspace. Without --yes the dry run comes first: when it would destroy nothing,
it is the answer (exit 1 if a stack was refused or could not be decided, as with --yes).
The results stacks (aws-results, gcp-results) and buckets are always refused.
Needs the Pulumi CLI: curl -fsSL https://get.pulumi.com | sh
"""


def register(sub) -> None:
    p = add_command(sub, "teardown", run, epilog=EPILOG)
    p.add_argument(
        "stacks",
        nargs="*",
        metavar="STACK",
        help="stack names, e.g. aws-p3-8x, or a bench's cloud probe (default: every stack in the backend that still has resources, filtered by --completed/--expired)",
    )
    p.add_argument(
        "--completed",
        action="store_true",
        help="only stacks whose benchmarks all have a final result (completed or failed) in the results bucket",
    )
    p.add_argument(
        "--expired", action="store_true", help="only stacks whose deadline (stack output `deadline`) has passed"
    )
    p.add_argument(
        "--results",
        action="append",
        metavar="URL",
        help="results bucket URL to read runs from (repeatable; default: the stack's resultsUrl output or gpubench:results)",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be destroyed, destroy nothing")
    p.add_argument("-y", "--yes", action="store_true", help="destroy without asking (scripts, schedules)")
    p.add_argument("--now", metavar="ISO", help="treat this UTC time as now for --expired (testing, replays)")
    p.add_argument(
        "--project-dir",
        metavar="DIR",
        help="the gpubench checkout holding Pulumi.yaml (default: found from this package)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object with every outcome")


def bench_probes(project_dir: str | Path | None) -> dict[str, tuple[BenchRecord, dict]]:
    """Every probe stack the benches recorded -> (the newest record naming it, its entry there); `teardown`
    and `logs` find a bench's probes here, as they live in its workspace, not in the project's stacks/."""
    found = {}
    for directory in bench_dirs(Path(project_dir) if project_dir else None):
        try:
            record = BenchRecord.load(directory)
        except ValueError:  # an unreadable record names no stack; the others still do
            continue
        found.update({name: (record, entry or {}) for name, entry in record.stacks.items()})
    return found


def checked_stacks(names: list[str], project_dir: str | None) -> dict[Path | None, list[str]] | None:
    """Named stacks by the Pulumi project they belong to (None: the project's own), checked before
    Pulumi is needed: a stack file in stacks/ (globs expanded), or a bench's cloud probe.

    Results stacks and bucket URLs pass through, for teardown to refuse with its own reason; a
    checkout whose stacks/ holds no stack file has nothing to check against. A stack whose file is
    gone is still covered by `teardown` with no name (every stack in the backend). None: no name given."""
    if not names:
        return None
    folder = Path(project_dir) / "stacks" if project_dir else None
    known = known_stacks(folder)
    # a cloud probe -> its bench workspace, the Pulumi project it was launched from
    probes = {n: r.path.parent for n, (r, entry) in bench_probes(project_dir).items() if entry.get("kind") == "cloud"}
    groups: dict[Path | None, list[str]] = {}
    for name in names:
        as_given = name in RESULTS_STACKS or "://" in name or name in probes or not known
        where = f"{folder or 'stacks/'} nor among the benches' probes"
        for stack in [name] if as_given else expand_stacks([name], [*known, *probes], where):
            group = groups.setdefault(probes.get(stack) if stack not in known else None, [])
            if stack not in group:
                group.append(stack)
    return groups


def run(args) -> int:
    groups = checked_stacks(args.stacks, args.project_dir)  # before Pulumi is needed: a typo is named as a typo
    project = Path(args.project_dir).resolve() if args.project_dir else None

    def run_teardown(dry_run: bool):
        outcomes = []
        for where, names in (groups or {None: None}).items():
            done = teardown(
                names,
                completed=args.completed,
                expired=args.expired,
                dry_run=dry_run,
                results_urls=args.results,
                now=now,
                work_dir=where or project,
            )
            for o in done if where is not None else []:  # a bench's probe: ended in its record too (for `status`)
                if o.action == "destroyed":
                    BenchRecord.load(where).update(o.stack, teardown={"action": "destroyed", "at": o.ended_at})
            outcomes += done
        return outcomes

    now = parse_now(args.now)
    outcomes = planned_then_run(
        run_teardown,
        acts=lambda o: o.action == "would-destroy",
        describe=lambda o: f"  {o.stack}: {o.reason}",
        question="Destroy these {n} stack(s)? (results in the buckets stay)",
        yes=args.yes,
        dry_run=args.dry_run,
        nothing="nothing to destroy",
    )
    if args.json:
        emit_json(
            {"dry_run": args.dry_run, "outcomes": [o.to_dict() for o in outcomes], "ok": all(o.ok for o in outcomes)}
        )
    else:
        print_table(
            ((o.stack, o.action, o.reason, o.error and o.error.splitlines()[-1]) for o in outcomes),
            ("stack", "outcome", "why", "error"),
        )
        print_tally(outcomes, "no stacks", args.dry_run and "nothing destroyed")
    return 0 if all(o.ok for o in outcomes) else 1
