"""Workload specs: the user's own training job, described in a small YAML file.

The fields follow SkyPilot's task YAML (``name``, ``workdir``, ``setup``,
``run``, ``envs`` -> ``env``) so a SkyPilot user recognises them, plus the two
things gpubench needs to benchmark a job: the container ``image`` the docker
runtimes start it in, and which ``metrics`` lines to read from its output
(docs/workloads.md)::

    name: pytorch-resnet
    image: pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime
    workdir: .
    setup: pip install -r requirements.txt
    run: python train.py --epochs 2
    env: {BATCH_SIZE: "64"}
    gpus: 1
    metrics: [json, mllog]

The content hash (sha256 of the normalised spec plus a digest of every file
in the workdir) names the workload in results, so two different jobs never
share a row of the report and an edited script starts a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FIELDS",
    "METRIC_FORMATS",
    "WorkloadSpec",
    "WorkloadSpecError",
    "load_spec",
    "parse_spec",
    "workdir_digest",
    "workdir_files",
]

METRIC_FORMATS = ("json", "mllog")
FIELDS = {
    "name": "a short name for the workload: letters, digits, '.', '_' or '-' (e.g. pytorch-resnet)",
    "description": "one line saying what the job trains",
    "image": "the container image the docker runtimes start the job in, e.g. pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime",
    "workdir": "a directory shipped with the run (relative to the spec file); the job runs inside it",
    "setup": "shell commands run once before the job (pip install ...); not timed as training",
    "run": "shell commands that train; timed, GPU-sampled, and read for metrics lines",
    "env": "environment variables for setup and run, a mapping of NAME: value",
    "gpus": "GPUs the job uses (an integer >= 0; default: all visible)",
    "metrics": f"which metrics lines the job prints: one or more of {', '.join(METRIC_FORMATS)}",
}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Never part of the shipped workdir nor of its digest: caches and VCS metadata.
SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv"}
SKIP_SUFFIXES = (".pyc", ".pyo")
MAX_WORKDIR_BYTES = 200 * 1024**2  # shipped with every run: large data belongs in a bucket


class WorkloadSpecError(ValueError):
    """A bad workload spec; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    run: str
    path: str  # the spec file (absolute)
    description: str = ""
    image: str | None = None
    workdir: str | None = None  # absolute directory, or None: the spec's own directory is the cwd
    setup: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpus: int | None = None
    metrics: tuple[str, ...] = METRIC_FORMATS
    workdir_sha256: str | None = None
    sha256: str = ""

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]

    @property
    def benchmark_name(self) -> str:
        """The name results and the report use: the hash keeps edited jobs apart."""
        return f"workload:{self.name}@{self.short_hash}"

    @property
    def cwd(self) -> str:
        return self.workdir or str(Path(self.path).parent)

    def normalised(self) -> dict[str, Any]:
        """What the hash covers: every field that changes what runs, never where the files are."""
        return {
            "name": self.name,
            "image": self.image,
            "setup": self.setup,
            "run": self.run,
            "env": dict(sorted(self.env.items())),
            "gpus": self.gpus,
            "metrics": list(self.metrics),
            "workdir_sha256": self.workdir_sha256,
        }


def _fail(where: str, key: str, problem: str) -> WorkloadSpecError:
    return WorkloadSpecError(f"{where}: field {key!r}: {problem}")


def _text(where: str, key: str, value: Any, *, multiline: bool = True) -> str:
    if isinstance(value, list) and multiline and all(isinstance(v, str) for v in value):
        value = "\n".join(value)  # dstack-style `commands:` lists are accepted for setup/run
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, key, f"expected {FIELDS[key]}, got {value!r}")
    return value.strip("\n")


def workdir_files(root: Path) -> list[Path]:
    """Files shipped with a workdir, sorted; caches and VCS metadata left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            if not name.endswith(SKIP_SUFFIXES):
                out.append(Path(dirpath) / name)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def workdir_digest(root: Path) -> str:
    """sha256 over (relative path, mode bit x, content) of every shipped file."""
    h = hashlib.sha256()
    total = 0
    for p in workdir_files(root):
        data = p.read_bytes()
        total += len(data)
        if total > MAX_WORKDIR_BYTES:
            raise WorkloadSpecError(
                f"workdir {root}: more than {MAX_WORKDIR_BYTES // 1024**2} MB; it is shipped with every run, "
                "so keep datasets in a bucket and download them in `setup`"
            )
        rel = p.relative_to(root).as_posix()
        h.update(f"{rel}\0{'x' if os.access(p, os.X_OK) else '-'}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def parse_spec(raw: Any, path: str | Path, *, check_workdir: bool = True) -> WorkloadSpec:
    """Validate a loaded YAML document; `path` is the spec file (relative workdirs resolve against it)."""
    path = Path(path).resolve()
    where = str(path)
    if not isinstance(raw, dict):
        raise WorkloadSpecError(
            f"{where}: expected a mapping with at least `name` and `run`, got {type(raw).__name__}; see docs/workloads.md"
        )
    unknown = sorted(str(k) for k in raw if k not in FIELDS)
    if unknown:
        hint = ""
        if unknown[0] in ("envs", "commands", "resources", "file_mounts", "num_nodes", "working_dir"):
            hint = {
                "envs": " (SkyPilot's `envs` is `env` here)",
                "commands": " (put dstack-style commands in `run`, as a list or a multi-line string)",
                "working_dir": " (use `workdir`)",
            }.get(unknown[0], " (resources come from the stack's offering, not the workload)")
        raise _fail(where, unknown[0], f"unknown field{hint}; allowed fields: {', '.join(FIELDS)}")
    for key in ("name", "run"):
        if raw.get(key) in (None, ""):
            raise _fail(where, key, f"required: {FIELDS[key]}")
    name = raw["name"]
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise _fail(where, "name", f"{name!r} is not a valid name; use {FIELDS['name']}")
    run = _text(where, "run", raw["run"])
    setup = _text(where, "setup", raw["setup"]) if raw.get("setup") not in (None, "") else None
    description = raw.get("description") or ""
    if not isinstance(description, str):
        raise _fail(where, "description", f"expected a string, got {description!r}")
    image = raw.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image)):
        raise _fail(where, "image", f"{image!r} is not an image reference; use {FIELDS['image']}")
    env = raw.get("env") or {}
    if not isinstance(env, dict):
        raise _fail(
            where, "env", f"expected a mapping NAME: value, got {type(env).__name__} (e.g. env: {{EPOCHS: '2'}})"
        )
    clean_env = {}
    for k, v in env.items():
        if not isinstance(k, str) or not ENV_RE.match(k):
            raise _fail(where, "env", f"{k!r} is not a variable name (letters, digits, _; not starting with a digit)")
        if k.startswith("GPUBENCH_"):
            raise _fail(where, "env", f"{k} is set by gpubench itself; rename it")
        if v is None or isinstance(v, (dict, list)):
            raise _fail(where, "env", f"{k}: expected a string or number, got {v!r}")
        clean_env[k] = str(v).lower() if isinstance(v, bool) else str(v)
    gpus = raw.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        raise _fail(where, "gpus", f"expected an integer >= 0, got {gpus!r} (omit it to use every visible GPU)")
    metrics = raw.get("metrics", list(METRIC_FORMATS))
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list) or not metrics or any(m not in METRIC_FORMATS for m in metrics):
        raise _fail(where, "metrics", f"{metrics!r}: expected {FIELDS['metrics']}, e.g. metrics: [json]")
    workdir, digest = None, None
    if raw.get("workdir") not in (None, ""):
        wd = raw["workdir"]
        if not isinstance(wd, str):
            raise _fail(where, "workdir", f"expected a directory path, got {wd!r}")
        wd_path = (path.parent / os.path.expanduser(wd)).resolve()
        if check_workdir:
            if not wd_path.is_dir():
                raise _fail(where, "workdir", f"{wd_path} is not a directory; give a path relative to the spec file")
            digest = workdir_digest(wd_path)
        workdir = str(wd_path)
    spec = WorkloadSpec(
        name=name,
        run=run,
        path=str(path),
        description=description,
        image=image.strip() if image else None,
        workdir=workdir,
        setup=setup,
        env=clean_env,
        gpus=gpus,
        metrics=tuple(dict.fromkeys(metrics)),
        workdir_sha256=digest,
    )
    blob = json.dumps(spec.normalised(), sort_keys=True, separators=(",", ":"))
    return _with_hash(spec, hashlib.sha256(blob.encode()).hexdigest())


def _with_hash(spec: WorkloadSpec, sha: str) -> WorkloadSpec:
    from dataclasses import replace

    return replace(spec, sha256=sha)


def load_spec(path: str | Path, *, check_workdir: bool = True) -> WorkloadSpec:
    """Read and validate a workload spec file; WorkloadSpecError names the field and the fix."""
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise WorkloadSpecError(
            f"workload spec {path}: no such file (give the path of a YAML file, see docs/workloads.md)"
        )
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise WorkloadSpecError(f"{p.resolve()}: not valid YAML: {exc}") from None
    return parse_spec(raw, p, check_workdir=check_workdir)
