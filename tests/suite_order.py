"""The order the suite's files run in: the longest first.

`make test` runs `--dist loadfile --no-loadscope-reorder`: each worker takes the next whole file,
in collection order, when it is nearly done with its own. A long file taken last would leave the
other worker idle until it ends; started first, the last files taken are short ones and the two
workers end together. Only the order changes: every file still runs whole, on one worker, so its
module-scoped fixtures are built once.
"""

from __future__ import annotations

import fcntl
import json
import resource
import sys
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent

# The files that take longest, longest first (per-file sums of per-test durations of a full-suite run,
# 2026-11-27, 3 workers on 2 cores, another job beside it).
LONGEST_FILES_FIRST = (
    "payload/test_payload_benchmarks.py",
    "e2e/test_demo.py",
    "payload/test_payload_backends.py",
    "payload/test_payload_catsdogs.py",
    "infra_ssh/test_ssh_run.py",
    "cli/test_cli_properties.py",
    "bench/test_bench_e2e.py",
    "campaign/test_campaign_end_to_end.py",
    "payload/test_payload_workloads.py",
    "bench/test_bench_frameworks.py",
    "bench/test_bench_probe_e2e.py",
    "payload/test_payload_probe.py",
    "infra/test_infra_preview.py",
    "payload/test_payload_harness.py",
    "analysis/test_sweep_aws.py",
    "payload/test_payload_cloud.py",
    "payload/test_output_bounds.py",
    "payload/test_payload_hardening.py",
    "infra/test_infra_cloud_init.py",
    "payload/test_payload_overhead.py",
    "analysis/test_report_query.py",
    "bench/test_bench_ctrl_c.py",
    "analysis/test_collect.py",
    "payload/test_job_venv.py",
)


def longest_files_first(items: list) -> None:
    """Sort collected `items` in place: the files of LONGEST_FILES_FIRST first, in that order, then
    the rest as collected; each file's tests stay together and in their order (a stable sort on the file)."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES_FIRST)}

    def file_rank(item) -> int:
        path = Path(item.path)
        return rank.get(path.relative_to(TESTS).as_posix(), len(rank)) if path.is_relative_to(TESTS) else len(rank)

    items.sort(key=file_rank)


def cpu_seconds() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def record_cpu(path: str, nodeid: str, seconds: float) -> None:
    """One JSON line [test id, CPU seconds] appended to `path` (xdist workers share it: a lock per line)."""
    with open(path, "a") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        out.write(json.dumps([nodeid, round(seconds, 2)]) + "\n")


def cpu_by_file(path: str) -> list[tuple[str, float]]:
    """The CPU seconds a GPUBENCH_SUITE_CPU record holds, summed per file, the largest first."""
    per_file: Counter = Counter()
    for line in Path(path).read_text().splitlines():
        nodeid, seconds = json.loads(line)
        per_file[nodeid.split("::")[0]] += seconds
    return per_file.most_common()


if __name__ == "__main__":
    for name, seconds in cpu_by_file(sys.argv[1]):
        print(f"{seconds:8.1f}  {name}")
