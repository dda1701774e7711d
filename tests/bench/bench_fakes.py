"""Test helpers for `gpubench bench`: a tiny fake job of known throughput, task files, and the stand-in cloud
adapted to bench's generated stacks (tests/campaign/campaign_fakecloud.py runs the real payload)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "campaign"))

from campaign_fakecloud import FakeBackend, FakeCloud, FakeCommandError, transcript  # noqa: E402

# Prints its cumulative samples every TICK seconds at RATE samples/s after a slower warm-up,
# until TOTAL samples (then a last line). The probe stops it once the rate is steady.
FAKE_JOB = """\
import json, os, time
rate, total = float(os.environ["RATE"]), float(os.environ["TOTAL"])
tick, warm = float(os.environ.get("TICK", "0.1")), float(os.environ.get("WARMUP", "0.5"))
if os.environ.get("PID_DIR"):  # tests that stop a bench check that this process is gone afterwards
    open(os.path.join(os.environ["PID_DIR"], str(os.getpid())), "w").close()
start = time.monotonic()
samples, last = 0.0, start
while samples < total:
    time.sleep(tick)
    now = time.monotonic()
    speed = rate / 2 if now - start < warm else rate
    samples = min(total, samples + speed * (now - last))
    last = now
    print("GPUBENCH_METRICS " + json.dumps({"samples": int(samples), "seconds": round(now - start, 3)}), flush=True)
"""


REPO = Path(__file__).resolve().parents[2]
# What a stand-in instance can do: no GPU, and the probe stack keeps this from your checked-in stack file.
NO_GPU = {"gpubench:expectGpu": False}


def project(root: Path, stacks: dict[str, dict] | None = None) -> Path:
    """A project dir with the repo's Pulumi.yaml and checked-in stack files (`stacks`: name -> config)."""
    (root / "stacks").mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text((REPO / "Pulumi.yaml").read_text())
    for name, config in (stacks or {}).items():
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    return root


def write_task(
    directory: Path,
    *,
    accelerators=("T4:1",),
    providers=("aws",),
    rate: float = 2000.0,
    total: float = 1e9,
    work_samples: float = 7.2e6,
    extra_env: dict | None = None,
) -> Path:
    """A task file (workload spec + resources + work) running the fake job."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "job.py").write_text(FAKE_JOB)
    doc = {
        "name": "fakejob",
        "workdir": ".",
        "run": "python job.py",
        "env": {"RATE": str(rate), "TOTAL": str(int(total)), **(extra_env or {})},
        "metrics": ["json"],
        "resources": {"accelerators": list(accelerators), "providers": list(providers)},
        "work": {"samples": int(work_samples)},
    }
    path = directory / "task.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class BenchBackend(FakeBackend):
    """The stand-in's backend with `remove_stack` (bench removes each probe stack it destroyed)."""

    def remove_stack(self, name: str) -> None:
        self.cloud.remove(name)


class BenchCloud(FakeCloud):
    """The stand-in cloud over a bench workspace: stack files come from the directory the backend is opened
    on; faults match stack-name prefixes (bench adds its id to each name); the workload spec the instance
    would unpack at /gpubench/workload is the task file itself; `interrupt_up` raises KeyboardInterrupt in
    the `up` of stacks with that prefix (Ctrl-C during a launch)."""

    def __init__(self, scratch: Path, moto_endpoint: str, up_seconds: float = 0.3):
        super().__init__(scratch / "unused", scratch, moto_endpoint, up_seconds)
        self.prefix_faults: dict[str, str] = {}
        self.interrupt_up: str | None = None
        self.removed: list[str] = []

    def backend(self, work_dir: Path) -> FakeBackend:
        self.work_dir = Path(work_dir)
        return BenchBackend(self)

    def remove(self, name: str) -> None:
        """`pulumi stack rm`: refused while the stack holds resources, as Pulumi refuses it."""
        with self._lock:
            st = self.stacks.get(name)
            if st is None:
                raise FakeCommandError(f"error: no stack named '{name}' found")
            if st.resources or st.instance is not None:
                raise FakeCommandError(f"error: '{name}' still has resources; removal rejected")
            del self.stacks[name]
            self.removed.append(name)

    def _up(self, name: str, on_output):
        if self.interrupt_up and name.startswith(self.interrupt_up):
            time.sleep(self.up_seconds)
            raise KeyboardInterrupt
        fault = next((msg for prefix, msg in self.prefix_faults.items() if name.startswith(prefix)), None)
        if fault:
            st = self.state(name)
            self.up_zones[name].append(None)
            time.sleep(self.up_seconds)
            st.resources = 4
            raise FakeCommandError(transcript(name, fault))
        return super()._up(name, on_output)

    def _boot(self, name, env, zone, instance_type):
        env = {**env, "GPUBENCH_WORKLOAD": self.raw_config(name)["gpubench:workload"]}
        return super()._boot(name, env, zone, instance_type)

    def leftovers(self) -> dict[str, int]:
        """Stacks still holding resources or a running instance: empty when nothing is left."""
        return {n: s.resources for n, s in self.stacks.items() if s.resources or s.instance is not None}


def run_bench(env: dict, probe_minutes: float, **kw):
    """(outcome, progress text) of `bench` over an env fixture's stand-in cloud ({"task", "results", "cloud",
    "root"}), confirmed, polling every half second."""
    import io

    from analysis.bench.run import bench

    progress = kw.pop("progress", None) or io.StringIO()
    outcome = bench(
        env["task"],
        probe_minutes=probe_minutes,
        yes=True,
        results=env["results"],
        backend=env["cloud"].backend,
        work_dir=env["root"],
        progress=progress,
        poll_seconds=0.5,
        **kw,
    )
    return outcome, progress.getvalue()
