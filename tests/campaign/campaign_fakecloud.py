"""A stand-in for the Pulumi Automation API that behaves like a cloud, for the campaign tests.

`FakeCloud.backend(work_dir)` is a campaign stack backend (and analysis.teardown
workspace). Its stacks' `up`:
- reads the stack file plus config set through `set_config` (what `pulumi up` sees),
- fails with a Pulumi-style transcript carrying the provider's message when a fault
  is planned for that stack and zone (quota, capacity, ...),
- otherwise renders the stack with infra's own offline renderer (infra.render: the
  real Pulumi program under mocks), takes the GPUBENCH_* environment from the
  cloud-init env file it rendered, and starts the REAL payload
  (`python -m payload run`) as a local process with that environment, writing to the
  moto S3 bucket, with its own IMDS stub (tests/servers.MetadataServer) as the
  instance's metadata service, and the host events cloud-init would record;
- returns the program's exports as stack outputs.
`destroy` stops the payload process and the metadata server ("terminates the
instance") and empties the stack. Spot interruptions are injected by setting the
IMDS spot notice when the payload logs a chosen timeline event.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from servers import MetadataServer, closed_port_url

RENDER_LOCK = threading.Lock()  # infra.render sets process-global Pulumi mocks
REPO = Path(__file__).resolve().parents[2]


class FakeCommandError(Exception):
    """Shaped like pulumi.automation.CommandError: the message is the CLI transcript."""


@dataclass
class OutputValue:
    value: Any
    secret: bool = False


@dataclass
class UpdateSummary:
    kind: str
    start_time: datetime
    result: str = "succeeded"


@dataclass
class StackSummary:
    name: str
    resource_count: int


@dataclass
class UpResult:
    outputs: dict[str, OutputValue]
    stdout: str = ""


@dataclass
class Instance:
    proc: subprocess.Popen
    imds: MetadataServer
    log: Path
    started: float
    interrupted_at: float | None = None


@dataclass
class StackState:
    name: str
    config: dict[str, str] = field(default_factory=dict)  # set_config overrides
    outputs: dict[str, Any] = field(default_factory=dict)
    history: list[UpdateSummary] = field(default_factory=list)
    instance: Instance | None = None
    resources: int = 0
    destroyed_at: list[float] = field(default_factory=list)


def transcript(stack: str, message: str) -> str:
    """What `pulumi up` prints when the provider refuses, around the provider's message."""
    return (
        f"code: 255\nstdout: Updating ({stack}):\n  pulumi:pulumi:Stack gpubench-{stack} running\n"
        f"  aws:ec2:Instance instance creating (0s)\n  aws:ec2:Instance instance creating failed error: {message}\n"
        f"Resources:\n    + 4 created\n    1 unchanged\n\nstderr: error: update failed\n"
    )


def user_data_env(user_data: str) -> dict[str, str]:
    """The GPUBENCH_* env file cloud-init writes, parsed from the rendered #cloud-config."""
    from infra.cloud_init import ENV_FILE

    doc = yaml.safe_load(user_data)
    text = next(f["content"] for f in doc["write_files"] if f["path"] == ENV_FILE)
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class FakeCloud:
    def __init__(self, work_dir: Path, scratch: Path, moto_endpoint: str, up_seconds: float = 0.6):
        from infra.catalog import load_catalog

        self.work_dir, self.scratch, self.moto = Path(work_dir), Path(scratch), moto_endpoint
        self.up_seconds = up_seconds
        self.catalog = load_catalog()
        self.stacks: dict[str, StackState] = {}
        self.faults: dict[tuple[str, str | None], str] = {}  # (stack, zone or None=any) -> provider message
        self.interrupt_on: dict[str, str] = {}  # stack -> timeline event that triggers the spot notice
        self.ups: Counter = Counter()
        self.up_zones: dict[str, list[str | None]] = defaultdict(list)
        self.destroys: Counter = Counter()
        self.active = self.peak = 0
        self.lifetimes: list[tuple[str, float, float]] = []  # (stack, instance booted, instance destroyed)
        self._lock = threading.Lock()

    # -- the backend interface ------------------------------------------------------------
    def backend(self, work_dir: Path) -> FakeBackend:
        return FakeBackend(self)

    def state(self, name: str) -> StackState:
        with self._lock:
            return self.stacks.setdefault(name, StackState(name))

    # -- cloud behaviour ------------------------------------------------------------------
    def raw_config(self, name: str) -> dict[str, Any]:
        from infra.stacks import load_config

        return {**load_config(name, self.work_dir / "stacks"), **self.state(name).config}

    def up(self, name: str, on_output) -> UpResult:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.ups[name] += 1
        try:
            return self._up(name, on_output)
        finally:
            with self._lock:
                self.active -= 1

    def _up(self, name: str, on_output) -> UpResult:
        st = self.state(name)
        raw = self.raw_config(name)
        zone = raw.get("gpubench:zone")
        self.up_zones[name].append(zone)
        started = datetime.now(timezone.utc)
        st.history.insert(0, UpdateSummary("update", started))
        (on_output or print)(f"Updating ({name}):\n")
        time.sleep(self.up_seconds)
        fault = self.faults.get((name, zone)) or self.faults.get((name, None))
        if fault:
            st.resources = 4  # a failed up leaves what it created before the instance
            raise FakeCommandError(transcript(name, fault))
        from infra.render import render

        with RENDER_LOCK:
            asyncio.set_event_loop(asyncio.new_event_loop())  # the Pulumi SDK wants one in this worker thread
            rendered = render(name, raw, self.catalog, now=started)
        env = user_data_env(rendered.user_data)
        offering = self.catalog.get(raw["gpubench:offering"])  # as the program reads it
        region = raw.get("aws:region") or offering.regions[0]
        zone = zone or f"{region}a"
        st.instance = self._boot(name, env, zone, offering.instance_type)
        st.outputs = {**rendered.exports, "zone": zone}
        st.resources = len(rendered.resources)
        (on_output or print)(f"    + {len(rendered.resources)} created\nDuration: {self.up_seconds:.0f}s\n")
        return UpResult({k: OutputValue(v) for k, v in st.outputs.items()})

    def _boot(self, name: str, env: dict[str, str], zone: str, instance_type: str) -> Instance:
        """The instance: host events as cloud-init writes them, then the payload with the rendered env."""
        home = self.scratch / name / str(len(self.up_zones[name]))
        home.mkdir(parents=True, exist_ok=True)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        events = home / "host-events.jsonl"
        events.write_text(
            "".join(
                json.dumps({"event": e, "time": now, "source": "host"}) + "\n"
                for e in ("instance_launch", "boot_done", "container_start")
            )
        )
        iid = "i-" + hashlib.sha1(f"{name}{time.time()}".encode()).hexdigest()[:17]
        imds = MetadataServer(instance_id=iid, zone=zone, instance_type=instance_type).start()
        child = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "AWS_"))}
        child.update(env)
        child.update(
            {
                "GPUBENCH_RESULTS": env["GPUBENCH_RESULTS"],  # the moto bucket (the stack's gpubench:results)
                "GPUBENCH_HOST_EVENTS": str(events),
                "GPUBENCH_SPOOL": str(home / "spool"),
                "GPUBENCH_WATCH_INTERVAL": "0.2",
                "GPUBENCH_STORAGE_RETRIES": "3",
                "GPUBENCH_STORAGE_BACKOFF": "0.05",
                "AWS_ENDPOINT_URL": self.moto,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": env.get("AWS_DEFAULT_REGION", "us-east-1"),
                "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.endpoint + "/",
                "GCE_METADATA_HOST": closed_port_url().removeprefix("http://"),
                "TF_CPP_MIN_LOG_LEVEL": "2",
                "CUDA_VISIBLE_DEVICES": "",
                "PYTHONUNBUFFERED": "1",
            }
        )
        log = home / "payload.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "payload", "run"],
            cwd=REPO,
            env=child,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        inst = Instance(proc, imds, log, time.time())
        threading.Thread(target=self._follow, args=(name, inst), daemon=True).start()
        return inst

    def _follow(self, name: str, inst: Instance) -> None:
        """Copy the payload's stderr to its log; raise the spot notice on the planned event."""
        token = self.interrupt_on.get(name)
        with inst.log.open("w") as out:
            for line in inst.proc.stderr:
                out.write(line)
                out.flush()
                if token and f" {token} " in line and inst.interrupted_at is None:
                    inst.interrupted_at = time.time()
                    inst.imds.spot_action = {"action": "terminate", "time": "2030-01-01T00:00:00Z"}

    def destroy(self, name: str, on_output) -> None:
        st = self.state(name)
        with self._lock:
            self.destroys[name] += 1
        inst, st.instance = st.instance, None
        if inst is not None:
            if inst.proc.poll() is None:
                inst.proc.terminate()
                try:
                    inst.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    inst.proc.kill()
                    inst.proc.wait(timeout=10)
            inst.imds.stop()
            with self._lock:
                self.lifetimes.append((name, inst.started, time.time()))
        st.outputs, st.resources = {}, 0
        st.destroyed_at.append(time.time())
        (on_output or print)(f"Destroying ({name}):\n    - deleted\n")

    def running(self) -> list[str]:
        return [n for n, s in self.stacks.items() if s.instance is not None and s.instance.proc.poll() is None]

    def shutdown(self) -> None:
        for name, st in list(self.stacks.items()):
            if st.instance is not None:
                self.destroy(name, lambda _t: None)


class FakeStack:
    def __init__(self, cloud: FakeCloud, name: str):
        self.cloud, self.name = cloud, name

    def up(self, on_output=None, **kw):
        return self.cloud.up(self.name, on_output)

    def destroy(self, on_output=None, **kw):
        return self.cloud.destroy(self.name, on_output)

    def outputs(self):
        return {k: OutputValue(v) for k, v in self.cloud.state(self.name).outputs.items()}

    def history(self, page_size=None, page=None):
        return list(self.cloud.state(self.name).history)[: page_size or None]

    def set_config(self, key: str, value: str) -> None:
        self.cloud.state(self.name).config[key] = value

    def get_config(self, key: str):
        return self.cloud.raw_config(self.name).get(key)


class FakeBackend:
    """What one orchestrator process sees: a fresh handle per select, shared cloud state."""

    def __init__(self, cloud: FakeCloud):
        self.cloud = cloud

    def select_stack(self, name: str) -> FakeStack:
        self.cloud.state(name)  # create_or_select
        return FakeStack(self.cloud, name)

    def list_stacks(self):
        return [StackSummary(n, s.resources) for n, s in self.cloud.stacks.items()]
