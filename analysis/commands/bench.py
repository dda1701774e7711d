"""`gpubench bench TASK.yaml`: where should my training job run, and what will the whole job cost?
A thin adapter over analysis.bench.run.bench."""

from __future__ import annotations

import sys
from pathlib import Path

from analysis.bench.judge import line
from analysis.bench.run import bench, load_task
from analysis.commands import add_command, options
from analysis.output import USD_SIGN, emit_json, print_table
from analysis.report.answer import duration
from infra.projectfiles import GLOB_CHARS, expand_stacks
from infra.stacks import STACKS_DIR, ssh_stack_names
from payload import exitcodes
from payload.workloads.check import check_metrics

DESCRIPTION = """\
Runs a short PROBE of your real job (a workload spec with `resources:` and `work:`
sections, see docs/bench.md) on every candidate at once, stops each probe as soon
as its throughput is steady (or at the probe limit), tears it down, and
extrapolates the WHOLE job's hours and cost under each offering's billing rule,
counting the billed overhead (boot, image pull, setup) the probe measured.

Candidates: the cheapest cloud offering per GPU alternative in the task file (or
--gpus), this machine with --local, your own boxes with --hosts. Before anything
starts it prints the candidate table and the most the probes can cost, refuses
if that exceeds --budget, and asks (--yes skips). Probes are runs like any other:
they land in the results bucket under runs/<stack>/<run-id>/, marked as probes.

Ctrl-C stops launching, destroys what was launched (asking once more unless
--yes) and says what is left running until its cloud-side deadline (every probe
stack carries one: probe limit + boot allowance). `gpubench status` lists live
probes, `gpubench logs STACK --follow` shows a probe's output.
"""
EPILOG = """\
examples:
  gpubench bench examples/keras-mnist/workload.yaml --results s3://my-results
  gpubench bench task.yaml --gpus T4,L4,A100:8 --spot --budget 5 --deadline 12 --results s3://my-results
  gpubench bench task.yaml --local --probe-minutes 2           # this machine only, results/ as the bucket
  gpubench bench task.yaml --hosts ssh-hetzner-ex51,ssh-lab-box --json > answer.json
  gpubench bench task.yaml --hosts 'ssh-lab-*'                # globs over the SSH stack files
  gpubench bench task.yaml --local --throughput-only          # samples/s alone: no `work:` needed
  gpubench bench task.yaml --check-metrics                     # run the job here ~30 s: can a probe read it?
  gpubench bench task.yaml --gpus T4,L4,A10G,L40S,V100,H100 --probe 2 --budget 10 --results s3://my-results
                                        # probe 2, predict 4, probe whatever stays in doubt

Before the plan is printed every value is checked (the task file, and each option against
a range no real job leaves, e.g. --probe-minutes at most a day), and before anything is
asked, for cloud probes: the Pulumi CLI and its login, the extras, each cloud's credentials
(an identity call) and a write to the results bucket. Everything missing is named at once.

--results defaults to $GPUBENCH_RESULTS (cloud probes need it; --local uses results/).
The bench's workspace (its generated stacks, record and answer page index.html) is
$GPUBENCH_HOME/bench/<bench-id>/ (~/.gpubench without it), or with --project-dir DIR
DIR/.gpubench/bench/<bench-id>/.
Exit codes: 0 an answer; 1 no candidate produced an estimate; 2 bad task, option or
budget refused (nothing started); 3 something cloud probes need is missing (each named,
nothing started); 10 not confirmed; 130 Ctrl-C.
"""


def register(sub) -> None:
    p = add_command(sub, "bench", run, description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("task", metavar="TASK.yaml", help="the task file: a workload spec with resources: and work:")
    p.add_argument("--gpus", metavar="LIST", help="GPU alternatives instead of the task's, e.g. T4,L4,A100:8")
    market = p.add_mutually_exclusive_group()
    market.add_argument("--spot", dest="spot", action="store_true", default=None, help="probe on the spot market")
    market.add_argument("--on-demand", dest="spot", action="store_false", help="probe on-demand (the default)")
    p.add_argument("--budget", dest="budget_usd", type=float, metavar="USD", help="refuse probes that could cost more")
    p.add_argument("--deadline", dest="deadline_hours", type=float, metavar="HOURS", help="the job must end within")
    p.add_argument(
        "--probe-minutes",
        type=float,
        default=10.0,
        metavar="N",
        help="each probe's limit (default 10); a steady job stops after a third of it, or after ten epochs",
    )
    p.add_argument(
        "--probe",
        type=int,
        metavar="N",
        help="probe N candidates (the most promising, the most uncertain), predict the rest, and probe any whose "
        "predicted interval reaches the leader's before answering, within --budget (docs/bench.md)",
    )
    p.add_argument(
        "--throughput-only",
        action="store_true",
        help="measure samples/s alone, no whole-job hours or cost (the task then needs no `work:`)",
    )
    p.add_argument("--local", action="store_true", help="probe on this machine (local/this-machine) only")
    p.add_argument("--hourly-usd", type=float, metavar="USD", help="--local: this machine's price per hour")
    p.add_argument("--hosts", metavar="NAME,...", help="probe on these SSH host stacks (stacks/Pulumi.ssh-*.yaml)")
    p.add_argument("--results", metavar="URL", help="the bucket probes write to (default: $GPUBENCH_RESULTS)")
    p.add_argument(
        "--project-dir",
        type=Path,
        metavar="DIR",
        help="a gpubench checkout: its stacks and Pulumi program, and DIR/.gpubench/bench/ for the workspace "
        "(default: the installed project, the workspace under $GPUBENCH_HOME or ~/.gpubench)",
    )
    p.add_argument("--stacks-dir", type=Path, metavar="DIR", help="where stack files are (default: stacks/)")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask (scripts); Ctrl-C then destroys at once")
    p.add_argument("--json", action="store_true", help="print the answer as JSON on stdout (progress on stderr)")
    p.add_argument(
        "--check-metrics",
        action="store_true",
        help="run the job on this machine for up to 30 s and say which progress convention reads it (nothing else "
        "starts); exit 1 when none does",
    )


def _check(args) -> int:
    """--check-metrics: what a probe would read from the job, found by running it here briefly."""
    task = load_task(args.task)
    print(f"running {task.name} here for up to 30 s to read its progress ...", file=sys.stderr, flush=True)
    doc = check_metrics(task)
    if args.json:
        emit_json(doc)
    elif doc["readable"]:
        work = doc["work"]
        rate = f"{doc['rate_per_second']} {doc['unit']}/s, warm-up included"
        print(f"readable: {doc['convention']} ({doc['readings']} readings in {doc['seconds']} s; {rate})")
        for name, figure in {**doc["progress"], **work.get("figures", {})}.items():
            if isinstance(figure, dict):
                print(f"  {name}: {figure['value']:g} (from {figure['from']})")
        whole = f"{work['value']:,.0f} {work['unit']}" if work.get("value") else work.get("reason")
        print(f"whole job: {whole}")
    else:
        print(f"not readable: {doc['error']}")
        print("last lines of its output:")
        for last in doc.get("last_lines", []):
            print(f"  {last}")
    return exitcodes.OK if doc["readable"] else exitcodes.FAILED


def _hosts(text: str | None, stacks_dir=None) -> list[str]:
    """The SSH host stacks named, globs (e.g. 'ssh-lab-*') expanded over the SSH stack files."""
    names = [h.strip() for h in (text or "").split(",") if h.strip()]
    if not any(GLOB_CHARS & set(n) for n in names):
        return names  # plain names: bench checks them itself, with its own message
    folder = stacks_dir or STACKS_DIR
    return expand_stacks(names, ssh_stack_names(folder), str(folder))


def _print_answer(doc: dict) -> None:
    """The answer as a table: money and times through the one formatter each, so a cost never reads
    $0.00 beside the sentence's USD 0.0034."""

    def num(v, fmt):
        return None if v is None else fmt.format(v)

    rows = (
        (
            r["offering"],
            r["status"],
            num(r.get("samples_per_second"), "{:,.1f}"),
            None if r.get("est_hours") is None else duration(r["est_hours"]),
            num(r.get("est_usd"), USD_SIGN),
            num(r.get("probe_usd"), USD_SIGN),
            r.get("reason"),
        )
        for r in doc["candidates"]
    )
    print_table(rows, ("offering", "status", "samples/s", "est time", "est cost", "probe cost", "note"))
    print(f"\n{doc['answer'].get('sentence')}")
    if doc.get("probing"):
        print(doc["probing"]["sentence"])
    for check in doc.get("prediction_checks") or []:
        print("prediction vs measurement: " + line(check))
    print(f"probes cost {USD_SIGN.format(doc['probe_total_usd'])}; page {doc.get('page')}")


def run(args) -> int:
    if args.check_metrics:
        return _check(args)
    outcome = bench(
        args.task,
        hosts=_hosts(args.hosts, args.stacks_dir),
        work_dir=args.project_dir,
        **options(args, "gpus", "spot", "budget_usd", "deadline_hours", "probe_minutes", "probe", "local", "yes"),
        **options(args, "results", "hourly_usd", "stacks_dir", "throughput_only"),
    )
    if args.json:
        emit_json(outcome.doc)
    elif not outcome.doc.get("cancelled"):
        _print_answer(outcome.doc)
    return outcome.exit_code
