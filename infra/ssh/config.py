"""Typed parsing of SSH stacks (`stacks/Pulumi.ssh-*.yaml`).

SSH stacks share `stacks/` and the `gpubench` namespace with the Pulumi stacks
but are never given to `pulumi up`: `python -m infra ssh STACK` reads them. The
benchmark keys reuse the payload's option names (benchmark, epochs, steps,
batchSize, precision, gpus, data, params); the rest say where the box is and
how to run there. Every error names the key, the bad value and the fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

# Value parsers shared with cloud stacks: one spelling of each rule and message.
from infra.config import (
    MAX_HOURS_LIMIT,
    NAMESPACE,
    PRECISIONS,
    ConfigError,
    _bool,
    _choice,
    _image,
    _params,
    _str,
    _workload,
    reject_unknown,
    split_key,
)
from infra.config import _suite as _benchmarks
from infra.stacks import SSH_PREFIX

RUNTIMES = ("docker", "venv")
HOST_KEY_POLICIES = ("accept-new", "strict")
RESULT_SCHEMES = ("s3://", "gs://", "file://")
# Offering kinds with no Pulumi program: reached over SSH. `cloud` rows go through `pulumi up`.
SSH_KINDS = ("dedicated", "bare-metal", "marketplace", "onprem", "cloud-vm", "local")
DEFAULT_REMOTE_DIR = "~/.gpubench"
DEFAULT_PIP_EXTRAS = "payload,tf"


# --- value parsers: (key, raw) -> typed value, or ConfigError naming the key.


def _int_in(lo: int, hi: int | None = None) -> Callable[[str, Any], int]:
    def parse(key: str, raw: Any) -> int:
        try:
            value = int(str(raw).strip()) if not isinstance(raw, bool) else None
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise ConfigError(key, f"expected an integer {bound}, got {raw!r}")
        return value

    return parse


def _max_hours(key: str, raw: Any) -> float:
    try:
        value = float(str(raw).strip()) if not isinstance(raw, bool) else -1.0
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_HOURS_LIMIT:
        raise ConfigError(
            key, f"expected hours in (0, {MAX_HOURS_LIMIT:g}], got {raw!r}: the payload stops itself at this deadline"
        )
    return value


def _gpus(key: str, raw: Any) -> str:
    text = str(raw).strip().lower()
    return "all" if text == "all" else str(_int_in(0)(key, raw))


def _host(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if any(c.isspace() for c in text) or "@" in text or "/" in text:
        raise ConfigError(
            key, f"{text!r} is not a host name or address; put the user in gpubench:user and the port in gpubench:port"
        )
    return text


def _path(key: str, raw: Any) -> str:
    return os.path.expanduser(_str(key, raw))


def _results(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if not text.startswith(RESULT_SCHEMES) or len(text.split("://", 1)[1].strip("/")) == 0:
        raise ConfigError(
            key,
            f"{text!r} is not a bucket URL; allowed: s3://bucket[/prefix], gs://bucket[/prefix], file:///abs/dir "
            "(uploads happen from this machine, so the SSH host never holds cloud credentials)",
        )
    return text.rstrip("/")


def _remote_dir(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if not (text.startswith("/") or text == "~" or text.startswith("~/")):
        raise ConfigError(key, f"{text!r} must be an absolute path or start with ~/ (e.g. ~/.gpubench)")
    if any(c.isspace() or c in "'\"$`\\" for c in text):
        raise ConfigError(key, f"{text!r}: use a path without spaces, quotes or $")
    return text.rstrip("/") or "/"


# key -> (parser, default). A None default means optional and absent.
KEYS: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "stackType": (_choice(("ssh",)), "ssh"),
    "offering": (_str, None),
    "host": (_host, None),
    "user": (_str, None),
    "port": (_int_in(1, 65535), 22),
    "identityFile": (_path, None),
    "hostKeyCheck": (_choice(HOST_KEY_POLICIES), "accept-new"),
    "results": (_results, None),
    "runtime": (_choice(RUNTIMES), "docker"),
    "benchmark": (_benchmarks, None),
    "suite": (_benchmarks, None),  # the cloud stacks' name for the same list
    "workload": (_workload, None),  # your own job: a workload spec file, shipped with its workdir
    "epochs": (_int_in(1), None),
    "steps": (_int_in(1), None),
    "batchSize": (_int_in(1), None),
    "precision": (_choice(PRECISIONS), "fp32"),
    "gpus": (_gpus, "all"),
    "data": (_str, "synthetic"),
    "params": (_params, None),
    "expectGpu": (_bool, None),  # default: the offering has GPUs
    "maxHours": (_max_hours, 6.0),
    "payloadImage": (_image, None),  # unset: the public TensorFlow image runs the uploaded bundle
    "remotePython": (_str, None),
    "pipExtras": (_str, DEFAULT_PIP_EXTRAS),
    "remoteDir": (_remote_dir, DEFAULT_REMOTE_DIR),
}
REQUIRED = {
    "offering": "the catalog id of the box, e.g. hetzner/ex51-ssd-gpu or onprem/parkopedia-4x1080ti (see `python -m analysis offerings`)",
    "host": "the box's DNS name or address, e.g. gpu-box.example.internal",
    "results": "the results bucket, e.g. s3://my-results or file:///srv/gpubench-results",
}


@dataclass(frozen=True)
class SshStack:
    """One SSH stack: where the box is, how to run, what to benchmark."""

    stack: str
    offering: str
    host: str
    results: str
    benchmark: tuple[str, ...]
    workload: str | None = None  # absolute local path of a workload spec (shipped with its workdir)
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    host_key_check: str = "accept-new"
    runtime: str = "docker"
    epochs: int | None = None
    steps: int | None = None
    batch_size: int | None = None
    precision: str = "fp32"
    gpus: str = "all"
    data: str = "synthetic"
    params: str | None = None
    expect_gpu: bool = True
    max_hours: float = 6.0
    payload_image: str | None = None
    remote_python: str | None = None
    pip_extras: str = DEFAULT_PIP_EXTRAS
    remote_dir: str = DEFAULT_REMOTE_DIR
    image_generation: str = "cuda12"
    gpu_count: int = 0
    gpu_model: str | None = None
    # payload options for the offering and its catalog price (infra.launch.offering_options)
    offering_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        """user@host:port for messages."""
        return f"{self.user + '@' if self.user else ''}{self.host}:{self.port}"

    def with_overrides(self, **changes: Any) -> SshStack:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


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


def is_ssh_config(raw: Mapping[str, Any]) -> bool:
    """True for a config mapping that describes an SSH stack (it names a host)."""
    return any(str(k).rpartition(":")[2] == "host" for k in raw)


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
    reject_unknown(ours, KEYS, "SSH")
    for key, why in REQUIRED.items():
        if ours.get(key) in (None, ""):
            raise ConfigError(key, f"required for an SSH stack: {why}")
    values: dict[str, Any] = {}
    for key, (parse, default) in KEYS.items():
        if ours.get(key) is not None:
            values[_snake(key)] = parse(key, ours[key])
        elif default is not None:
            values[_snake(key)] = default
    values.pop("stack_type", None)
    if "benchmark" in values and "suite" in values:
        raise ConfigError("suite", "set gpubench:benchmark or gpubench:suite, not both (they are the same list)")
    values["benchmark"] = values.pop("suite", None) or values.get("benchmark")
    if values.get("workload") and values["benchmark"]:
        raise ConfigError(
            "workload",
            "set gpubench:benchmark or gpubench:workload, not both: a run is built-in benchmarks or one workload",
        )
    if not values["benchmark"] and not values.get("workload"):
        raise ConfigError(
            "benchmark",
            "required: which benchmark(s) to run, e.g. mnist-mlp or [resnet50, vgg16] (see `python -m payload list`), "
            "or gpubench:workload: path/to/workload.yaml for your own job",
        )
    values["benchmark"] = values["benchmark"] or ()
    if values.get("epochs") and values.get("steps"):
        raise ConfigError("steps", "gpubench:epochs and gpubench:steps are mutually exclusive; set one")
    offering = _offering(catalog, values["offering"])
    if values.get("expect_gpu") is None:
        values["expect_gpu"] = offering.gpu_count > 0
    if values["gpus"] != "all" and int(values["gpus"]) > offering.gpu_count:
        raise ConfigError(
            "gpus",
            f"{values['gpus']} GPUs requested but {offering.id} has {offering.gpu_count}; use 'all' or 0..{offering.gpu_count}",
        )
    gpu = getattr(offering, "gpu", None)
    from infra.launch import launch_price, offering_options

    price, _ = launch_price(catalog, offering.id, "on-demand", [])
    return SshStack(
        stack=stack,
        image_generation=offering.image_generation,
        gpu_count=offering.gpu_count,
        gpu_model=getattr(gpu, "model", None),
        offering_options=offering_options(offering, "on-demand", price),
        **values,
    )


def _offering(catalog: Any, offering_id: str) -> Any:
    from infra.catalog import UnknownOffering

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
