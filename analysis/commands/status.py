"""`gpubench status`: every live bench probe: state, age, deadline, cost so far."""

from __future__ import annotations

import shutil
from pathlib import Path

from analysis.bench.record import REFUSED, probe_status, status_table
from analysis.commands import add_command
from analysis.observe import UNREACHABLE
from analysis.output import emit_json
from analysis.stack_status import unreachable
from infra.workspace import pulumi_backend
from payload import exitcodes

EPILOG = """\
examples:
  gpubench status                 # probes still running (not destroyed or ended)
  gpubench status --all --json    # every probe of every bench, as JSON

Reads the bench records ($GPUBENCH_HOME/bench/*/bench.json, ~/.gpubench without it,
and any a checkout kept in its .gpubench/bench/; with --project-dir DIR only
DIR/.gpubench/bench/) and, for launched probes, their runs in the results bucket;
with the Pulumi CLI installed it also shows how many resources each probe stack
still holds. States follow `campaign status`: launching, launched (booting),
running (last event), finished, failed, interrupted, expired (deadline passed),
launch-failed. When a probe's bucket cannot be read its state is unknown: the row says
why and the exit status is 4 (with --json too). A bench record that cannot be read (or a
stack entry in it) is a row of its own, state unknown with the reason, the other benches
are listed, and the exit status is 5.
"""


def register(sub) -> None:
    p = add_command(sub, "status", run, epilog=EPILOG)
    p.add_argument("--all", action="store_true", help="include probes that were destroyed or ended")
    p.add_argument("--project-dir", type=Path, metavar="DIR", help="read the benches under DIR/.gpubench/bench/ only")
    p.add_argument("--json", action="store_true", help="print a JSON list")


def run(args) -> int:
    # resource counts when the Pulumi CLI is installed; without it the bucket still answers
    backend = pulumi_backend if shutil.which("pulumi") else None
    rows = probe_status(args.project_dir, include_ended=args.all, backend=backend)
    if args.json:
        emit_json(rows)
    elif rows:
        print(status_table(rows))
    else:
        print("no live bench probes" + ("" if args.all else " (--all lists ended ones too)"))
    refused = sorted({r["bench_id"] for r in rows if any(p.startswith(REFUSED) for p in r["problems"])})
    errors = [
        unreachable([r["stack"] for r in rows if any(p.startswith(UNREACHABLE) for p in r["problems"])]),
        refused
        and exitcodes.GpubenchError(
            f"the record of bench(es) {', '.join(refused)} could not be read (the rows say why): "
            "the other benches are listed; delete a stale bench's directory",
            exit_code=exitcodes.INVALID,
        ),
    ]
    if errors := [e for e in errors if e]:  # each on a line of its own; the first one's exit code
        raise exitcodes.GpubenchError("\nerror: ".join(map(str, errors)), exit_code=errors[0].exit_code)
    return 0
