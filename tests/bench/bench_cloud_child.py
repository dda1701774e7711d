"""A bench through the stand-in cloud in its own process, for tests that stop it with SIGINT (Ctrl-C).

    python bench_cloud_child.py SCRATCH RESULTS_URL GPUS

Progress goes to stderr; when bench returns, one JSON line on stdout says what the stand-in holds:
the exit code, stacks with resources or a running instance, every stack not removed, ups, destroys
and removals. The moto endpoint and credentials come from the environment (AWS_ENDPOINT_URL, ...).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from bench_fakes import NO_GPU, BenchCloud, project, write_task  # noqa: E402

from analysis.bench.run import bench  # noqa: E402

STACKS = {"aws-g4dn-1x": NO_GPU, "aws-g6-1x": NO_GPU, "aws-g5-1x": NO_GPU}


def main(scratch: Path, results: str, gpus: str) -> int:
    cloud = BenchCloud(scratch / "cloud", os.environ["AWS_ENDPOINT_URL"])
    env = {"PID_DIR": str(scratch / "pids"), "TICK": "100"}  # quiet for 100 s: still probing at the SIGINT
    (scratch / "pids").mkdir(parents=True, exist_ok=True)
    task = write_task(scratch / "task", accelerators=tuple(gpus.split(",")), extra_env=env)
    try:
        outcome = bench(
            task,
            probe_minutes=5,
            yes=True,
            results=results,
            backend=cloud.backend,
            work_dir=project(scratch / "project", STACKS),
            progress=sys.stderr,
            poll_seconds=0.5,
        )
        state = {
            "exit": outcome.exit_code,
            "left": cloud.leftovers(),
            "running": cloud.running(),
            "stacks": sorted(cloud.stacks),
            "ups": sorted(cloud.ups),
            "destroys": sorted(cloud.destroys),
            "removed": sorted(cloud.removed),
        }
        print(json.dumps(state), flush=True)
    finally:
        cloud.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
