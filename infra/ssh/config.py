"""Typed parsing of SSH stacks (`stacks/Pulumi.ssh-*.yaml`, read by `python -m infra ssh`, never by
Pulumi): the payload's benchmark option names plus where the box is and how to run there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from infra.catalog import UnknownOffering
from infra.config import (
    MAX_HOURS_LIMIT,
    NAMESPACE,
    PRECISIONS,
    Benchmarks,
    Choice,
    ConfigError,
    Flag,
    Image,
    Params,
    StackConfig,
    Text,
    WorkloadSpec,
    check_gpus,
    checked,
    config_key,
    gpu_count,
    hours,
    int_at_least,
    nonempty_str,
    reject_unknown,
    split_key,
    validated,
)
from infra.launch import launch_price, offering_options
from infra.stacks import SSH_PREFIX
from payload.results_location import URL_SCHEMES, parse_results_location

RUNTIMES = ("docker", "venv")
HOST_KEY_POLICIES = ("accept-new", "strict")
# Offering kinds with no Pulumi program: reached over SSH. `cloud` rows go through `pulumi up`.
SSH_KINDS = ("dedicated", "bare-metal", "marketplace", "onprem", "cloud-vm", "local")
DEFAULT_REMOTE_DIR = "~/.gpubench"
# remoteDir values that are shared or system directories: another user could plant code there first,
# or a run would write into the system. Exact matches, and (SYSTEM_TREES) anything below them too.
SHARED_DIRS = ("/", "/tmp", "/var/tmp", "/dev/shm", "/var", "/home", "/root", "/srv", "/opt", "/mnt", "/media")
SYSTEM_TREES = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev", "/proc", "/sys", "/run")
DEFAULT_PIP_EXTRAS = "payload,tf"


def _host(raw: Any) -> str:
    text = nonempty_str(raw)
    if any(c.isspace() for c in text) or "@" in text or "/" in text:
        raise ValueError(
            f"{text!r} is not a host name or address; put the user in gpubench:user and the port in gpubench:port"
        )
    return text


def _results(raw: Any) -> str:
    """A bucket or file URL (payload.results_location); never a bare path: the host is another machine."""
    text = nonempty_str(raw)
    try:
        parse_results_location(text, schemes=URL_SCHEMES, bucket_rules=False)
    except ValueError as exc:
        raise ValueError(
            f"{exc} (uploads happen from this machine, so the SSH host never holds cloud credentials)"
        ) from None
    return text.rstrip("/")


def _remote_dir(raw: Any) -> str:
    text = nonempty_str(raw)
    if not (text.startswith("/") or text == "~" or text.startswith("~/")):
        raise ValueError(f"{text!r} must be an absolute path or start with ~/ (e.g. ~/.gpubench)")
    if any(c.isspace() or c in "'\"$`\\" for c in text):
        raise ValueError(f"{text!r}: use a path without spaces, quotes or $")
    text = text.rstrip("/") or "/"
    problem = system_dir_problem(text)
    if problem:
        raise ValueError(problem)
    return text


def system_dir_problem(path: str) -> str | None:
    """Why `path` may not be a remote dir (a shared or system directory), or None."""
    fix = f"use a directory of the SSH user's own, e.g. {DEFAULT_REMOTE_DIR} (the default)"
    if ".." in path.split("/"):
        return f"{path!r}: no '..' in the path; {fix}"
    if path in SHARED_DIRS:
        return f"{path!r} is a shared directory where another user could plant code first; {fix}"
    tree = next((t for t in SYSTEM_TREES if path == t or path.startswith(t + "/")), None)
    if tree:
        return f"{path!r} is under the system directory {tree}; {fix}"
    return None


Count = checked(int, int_at_least(1))
LocalPath = checked(str, lambda raw: os.path.expanduser(nonempty_str(raw)))
Gpus = checked(str, gpu_count(0))  # 0: run on the CPU
MaxHours = checked(float, hours(0, MAX_HOURS_LIMIT, True, "the payload stops itself at this deadline"))
# Keys an SSH stack cannot do without, and what to put there (the message when one is missing).
REQUIRED = {
    "offering": "the catalog id of the box, e.g. hetzner/ex51-ssd-gpu or onprem/parkopedia-4x1080ti (see `python -m analysis offerings`)",
    "host": "the box's DNS name or address, e.g. gpu-box.example.internal",
    "results": "the results bucket, e.g. s3://my-results or file:///srv/gpubench-results",
}


class SshStack(StackConfig):
    """One SSH stack; the last fields come from the offering's catalog row. A flag of `python -m infra ssh`
    (with_overrides) beats the stack file, which beats the defaults here."""

    stack_type: Choice(("ssh",)) = config_key("stackType", "ssh (the only kind of SSH stack)", "ssh")
    offering: Text = config_key("offering", REQUIRED["offering"])
    host: checked(str, _host) = config_key("host", REQUIRED["host"])
    results: checked(str, _results) = config_key("results", REQUIRED["results"])
    user: Text | None = config_key("user", "the SSH user (default: your ssh config's)")
    port: checked(int, int_at_least(1, 65535)) = config_key("port", "the SSH port", 22)
    identity_file: LocalPath | None = config_key("identityFile", "private key file on this machine")
    host_key_check: Choice(HOST_KEY_POLICIES) = config_key("hostKeyCheck", "accept-new or strict", "accept-new")
    runtime: Choice(RUNTIMES) = config_key("runtime", "docker, or venv on the host's Python", "docker")
    benchmark: Benchmarks = config_key("benchmark", "built-in benchmarks to run, e.g. [resnet50, vgg16]", ())
    suite: Benchmarks | None = config_key("suite", "the cloud stacks' name for benchmark (set one of them)")
    workload: WorkloadSpec | None = config_key(
        "workload", "your own job: a workload spec file, shipped with its workdir"
    )
    epochs: Count | None = config_key("epochs", "epochs to train (epoch benchmarks)")
    steps: Count | None = config_key("steps", "training steps (throughput benchmarks); not with epochs")
    batch_size: Count | None = config_key("batchSize", "per-GPU batch size")
    precision: Choice(PRECISIONS) = config_key("precision", "fp32, or mixed (Keras mixed_float16)", "fp32")
    gpus: Gpus = config_key("gpus", "'all' or how many GPUs (0: CPU)", "all")
    data: Text = config_key("data", "synthetic, download or a directory on the host", "synthetic")
    params: Params | None = config_key("params", "benchmark parameter overrides, e.g. {samples: 64}")
    expect_gpu: Flag | None = config_key("expectGpu", "fail at once without a GPU (default: the offering has GPUs)")
    max_hours: MaxHours = config_key("maxHours", "the payload stops itself at this deadline (hours)", 6.0)
    payload_image: Image | None = config_key(
        "payloadImage", "unset: the public TensorFlow image runs the uploaded bundle"
    )
    remote_python: Text | None = config_key("remotePython", "runtime venv: an existing interpreter to reuse")
    pip_extras: Text = config_key("pipExtras", "extras the venv runtime installs", DEFAULT_PIP_EXTRAS)
    remote_dir: checked(str, _remote_dir) = config_key("remoteDir", "run directory on the host", DEFAULT_REMOTE_DIR)
    image_generation: str = Field("cuda12", description="the offering's GPU generation (catalog)")
    gpu_count: int = Field(0, description="the offering's GPU count (catalog)")
    gpu_model: str | None = Field(None, description="the offering's GPU model (catalog)")
    offering_options: Mapping[str, Any] = Field(
        default_factory=dict, description="payload options for the offering and its price (infra.launch)"
    )

    @model_validator(mode="after")
    def _benchmarks_or_workload(self) -> SshStack:
        if self.benchmark and self.suite:
            raise ConfigError("suite", "set gpubench:benchmark or gpubench:suite, not both (they are the same list)")
        if self.workload and (self.benchmark or self.suite):
            raise ConfigError(
                "workload",
                "set gpubench:benchmark or gpubench:workload, not both: a run is built-in benchmarks or one workload",
            )
        if not (self.benchmark or self.suite or self.workload):
            raise ConfigError(
                "benchmark",
                "required: which benchmark(s) to run, e.g. mnist-mlp or [resnet50, vgg16] (see `python -m payload list`), "
                "or gpubench:workload: path/to/workload.yaml for your own job",
            )
        if self.epochs and self.steps:
            raise ConfigError("steps", "gpubench:epochs and gpubench:steps are mutually exclusive; set one")
        return self

    @property
    def target(self) -> str:
        """user@host:port for messages."""
        return f"{self.user + '@' if self.user else ''}{self.host}:{self.port}"

    def with_overrides(self, **changes: Any) -> SshStack:
        """The stack with the flags that are set (not None) applied."""
        return self.model_copy(update={k: v for k, v in changes.items() if v is not None})


def _ours(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The `gpubench:` keys; a typo'd namespace gets the cloud stacks' suggestion (infra.config.split_key)."""
    out: dict[str, Any] = {}
    for full, value in raw.items():
        ns, key = split_key(str(full))
        if ns != NAMESPACE:
            raise ConfigError(
                str(full),
                f"SSH stacks only read {NAMESPACE}:* keys; remove {full} (provider keys belong to Pulumi stacks)",
            )
        out[key] = value
    return out


def parse_ssh_config(raw: Mapping[str, Any], stack: str, catalog: Any) -> SshStack:
    """Parse and check an SSH stack against the catalog; ConfigError names the key and the fix."""
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"expected a mapping of keys to values, got {type(raw).__name__}")
    if not stack.startswith(SSH_PREFIX):
        raise ConfigError(
            "stack",
            f"SSH stack names start with {SSH_PREFIX!r} so the Pulumi matrix, preview and campaigns "
            f"skip them; rename stacks/Pulumi.{stack}.yaml to stacks/Pulumi.{SSH_PREFIX}{stack}.yaml",
        )
    ours = _ours(raw)
    reject_unknown(ours, SshStack.config_keys(), "SSH")
    for name, why in REQUIRED.items():
        if ours.get(name) in (None, ""):
            raise ConfigError(name, f"required for an SSH stack: {why}")
    cfg = validated(SshStack, {**{k: v for k, v in ours.items() if v is not None}, "stack": stack})
    offering = _offering(catalog, cfg.offering)
    check_gpus(cfg.gpus, offering, 0)
    price, _ = launch_price(catalog, offering.id, "on-demand", [])
    return cfg.model_copy(
        update={
            "benchmark": cfg.suite or cfg.benchmark,
            "suite": None,
            "expect_gpu": offering.gpu_count > 0 if cfg.expect_gpu is None else cfg.expect_gpu,
            "image_generation": offering.image_generation,
            "gpu_count": offering.gpu_count,
            "gpu_model": offering.gpu_model,
            "offering_options": offering_options(offering, "on-demand", price),
        }
    )


def _offering(catalog: Any, offering_id: str) -> Any:
    try:
        offering = catalog.get(offering_id)
    except UnknownOffering as exc:
        raise ConfigError("offering", str(exc)) from None
    if offering.kind not in SSH_KINDS:
        raise ConfigError(
            "offering",
            f"{offering_id} is a {offering.kind} offering with a Pulumi program: launch it with "
            f"`pulumi up --stack {offering.stack_name('on-demand')}` (or `python -m infra up ...`), not over SSH. "
            f"SSH stacks take {', '.join(SSH_KINDS)} rows, e.g. hetzner/ex51-ssd-gpu",
        )
    return offering
