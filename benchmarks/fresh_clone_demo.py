"""Time a newcomer's first run: a fresh clone to a finished demo report (`make demo`).

`python benchmarks/fresh_clone_demo.py [--repo PATH] [--keep] [--json]` clones the repository
(default: this checkout's committed HEAD) into a temporary directory, runs `make demo` there
and times each phase from the Makefile's and the demo's own lines: clone, set-up (a new .venv
with gpubench[demo]), the demo's benchmarks, collect and report. It also records the CPU
seconds the whole run used and the load average before and after, since on a shared machine
the wall time says as much about the neighbours as about gpubench. pip's own configuration
applies: set PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR to install from a local wheelhouse (a warm
cache with no network).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (phase that starts, the start of the line that marks it), in order
MARKS = (
    ("setup", "[setup] creating"),
    ("demo", "gpubench demo:"),
    ("collect", "[collect]"),
    ("report", "[report]"),
    ("done", "demo finished"),
)


def load() -> float:
    return os.getloadavg()[0]


def run_make(clone: Path, echo: bool) -> tuple[int, dict[str, float]]:
    """`make demo` in the clone; seconds since its start at which each phase began."""
    marks: dict[str, float] = {}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["make", "demo", "PIP_FLAGS=--progress-bar off"],
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.monotonic() - t0
        for phase, start in MARKS:
            if phase not in marks and line.startswith(start):
                marks[phase] = now
        if echo:
            print(f"{now:7.1f}s | {line}", end="", file=sys.stderr)
    return proc.wait(), {**marks, "end": time.monotonic() - t0}


def phases(clone_s: float, marks: dict[str, float]) -> dict[str, float]:
    """Wall seconds of each phase (clone, setup, benchmarks, collect, report) and in all."""
    order = [name for name, _ in MARKS if name in marks] + ["end"]
    out = {"clone": clone_s}
    for a, b in zip(order, order[1:]):
        out[{"demo": "benchmarks"}.get(a, a)] = marks[b] - marks[a]
    out.pop("done", None)
    out["total"] = clone_s + marks["end"]
    return {k: round(v, 1) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", default=str(ROOT), help="repository to clone (default: this checkout)")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its .venv, results/, report/)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="do not echo make's output (stderr)")
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="gpubench-fresh-"))
    clone = base / "gpubench"
    before = load()
    t0 = time.monotonic()
    subprocess.run(["git", "clone", "--quiet", args.repo, str(clone)], check=True)
    clone_s = time.monotonic() - t0
    code, marks = run_make(clone, not args.quiet)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "exit_code": code,
        "seconds": phases(clone_s, marks),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "load_before": round(before, 2),
        "load_after": round(load(), 2),
        "cores": os.cpu_count(),
        "pip_env": {k: v for k, v in os.environ.items() if k.startswith("PIP_") and k != "PIP_CERT"},
        "report": str(clone / "report" / "index.html") if args.keep else None,
    }
    if not args.keep:
        subprocess.run(["rm", "-rf", str(base)], check=False)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        s = figures["seconds"]
        print(
            f"make demo from a fresh clone: exit {code}, {s['total']:.0f} s in all "
            + ", ".join(f"{k} {v:.0f} s" for k, v in s.items() if k != "total")
        )
        print(
            f"CPU {figures['cpu_seconds']:.0f} s on {figures['cores']} cores; "
            f"load average {figures['load_before']} before, {figures['load_after']} after"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
