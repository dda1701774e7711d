"""Run `python -m analysis demo --quick` (the driver behind `make demo`) in a
directory of its own, as a fresh clone would, and keep what it printed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from servers import closed_port_url
from user_state import USER_STATE_VARIABLES


@dataclass
class DemoRun:
    root: Path
    results: Path
    report: Path
    stdout: str
    returncode: int
    seconds: float


def run_demo(root: Path, *extra: str) -> DemoRun:
    """`python -m analysis demo --quick` with results and report under root, cwd = root."""
    closed = closed_port_url()
    # no leaked gpubench settings, but the suite's per-user places stay (tests/conftest.py): the demo's job
    # environments and state go to the test's folders, never the home directory
    kept = {*USER_STATE_VARIABLES, "GPUBENCH_HOME"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k in kept}
    env.update(
        TF_CPP_MIN_LOG_LEVEL="2",
        AWS_EC2_METADATA_SERVICE_ENDPOINT=closed + "/",
        GCE_METADATA_HOST=closed[len("http://") :],
        GPUBENCH_SPOOL=str(root / "spool"),
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", "demo", "--quick", *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return DemoRun(
        root, root / "results", root / "report", proc.stdout + proc.stderr, proc.returncode, time.monotonic() - t0
    )
