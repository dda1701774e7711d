"""Task files: the user's own training job in a small YAML file, fields as SkyPilot's (docs/workloads.md).

Field descriptions are the fixes errors suggest: ``<file>: field '<field>': <problem> (<fix>)``."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from payload.config import MAX_GPUS_PER_MACHINE
from payload.workloads.conventions import compile_pattern, whole_job
from payload.workloads.files import WorkdirError, confine_workdir, files_digest, read_workdir
from payload.yamlfile import YamlFileError, quote, read_yaml

# The progress conventions a job's output is read in (payload.workloads.metrics and .conventions);
# `pattern` only with `progress.pattern`. Without `metrics`, every built-in one is tried.
METRIC_FORMATS = ("json", "mllog", "keras", "hf", "tqdm", "pattern")
BUILTIN_FORMATS = tuple(f for f in METRIC_FORMATS if f != "pattern")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # at most 128 characters: errors quote it whole
# One accelerator alternative, SkyPilot style: NAME or NAME:COUNT (T4, A100:8, GTX-1080-Ti:2).
ACCELERATOR_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)(?::(?P<count>\d+))?$")
# Lists of names: (the test of one, what they are, an example)
NAME_LISTS = {
    "providers": (re.compile(r"^[a-z][a-z0-9-]*$").match, "provider names (lowercase)", "aws, gcp"),
    "regions": (re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$").match, "region names", "us-east-1, us-central1"),
    "allow": (
        lambda p: p and not p.startswith(("/", "~")) and ".." not in p.split("/"),
        "paths relative to the workdir",
        "certs/ca.pem",
    ),
}
WORK_SHAPES = (("samples",), ("steps", "samples_per_step"), ("epochs", "samples_per_epoch"))
WORK_EXAMPLE = "samples: 1281167 | steps: 10000 (+ samples_per_step: 256) | epochs: 90 (+ samples_per_epoch: 1281167)"
# Bounds no real job reaches, so a typo or a hostile file is refused before anything is sized by it.
MAX_DISK_GB = 65_536  # 64 TiB: the largest single EBS volume or Persistent Disk
# `setup`, `run` and each `env` value reach the job as one argument or variable of an exec, which Linux
# refuses past 128 KiB (MAX_ARG_STRLEN, execve(2)): longer scripts belong in a file in the workdir.
MAX_SCRIPT_CHARS = 100_000
# Samples of a whole job: the largest published training runs count about 1.5e13 tokens.
MAX_WORK_SAMPLES = 1e15


class WorkloadSpecError(ValueError):
    """A bad workload spec; the message names the file, the field and the fix."""


class _Problem(ValueError):
    """A problem with one field, raised inside a model validator (where pydantic knows no field)."""

    def __init__(self, field: str | None, problem: str):
        super().__init__(problem)
        self.field, self.problem = field, problem


class _Model(BaseModel):
    """A mapping (`LIKE` its example, `EMPTY` why not empty) of known fields (`HINTS`: neighbouring tools' names)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    LIKE: ClassVar[str] = ""
    EMPTY: ClassVar[str | None] = None
    HINTS: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise _Problem(None, f"expected a mapping {cls.LIKE}, got {quote(raw)}")
        if not raw and cls.EMPTY:
            raise _Problem(None, cls.EMPTY)
        allowed = list(cls.model_fields)
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            hint = cls.HINTS.get(unknown[0], "")
            raise _Problem(unknown[0], f"unknown field{hint}; allowed fields: {', '.join(allowed)}")
        return cls._given(raw)

    @classmethod
    def _given(cls, raw: dict) -> dict:  # a section's own checks of the whole mapping
        return raw


def _positive_number(value: Any, what: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"expected a number > 0 ({what}), got {quote(value)}")
    return value


# --- resources ---------------------------------------------------------------------------------------------


class Accelerator(_Model):
    """One GPU alternative: a catalog GPU model and how many of it one machine has."""

    name: str = Field(description="a GPU model as the catalog names it, e.g. T4, L4, A10G, A100, H100")
    count: int = Field(1, ge=1, le=MAX_GPUS_PER_MACHINE, description="GPUs of that model on one machine (default 1)")

    def __str__(self) -> str:
        return f"{self.name}:{self.count}"


def parse_accelerators(value: Any) -> tuple[Accelerator, ...]:
    """SkyPilot-style alternatives: a list of NAME[:COUNT], one such string (commas allowed), or NAME: COUNT."""
    if isinstance(value, str):
        items: list[Any] = [part.strip() for part in value.split(",")]
    elif isinstance(value, dict):
        items = [f"{k}:{v}" for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError(f"expected a list of GPU alternatives like [T4:1, L4:1, A100:8], got {quote(value)}")
    if not items or items == [""]:
        raise ValueError("empty: list at least one GPU alternative, e.g. [T4:1, L4:1, A100:8]")
    out = []
    for item in items:
        if isinstance(item, Accelerator):
            out.append(item)
            continue
        match = ACCELERATOR_RE.match(item) if isinstance(item, str) else None
        if match is None:
            raise ValueError(f"{quote(item)} is not NAME or NAME:COUNT (e.g. T4, V100:1, A100:8)")
        digits = match["count"] or "1"
        count = int(digits) if len(digits) <= 6 else 0  # a long string of digits is never read as a number
        if not 1 <= count <= MAX_GPUS_PER_MACHINE:
            raise ValueError(
                f"{quote(item)}: the count must be 1 to {MAX_GPUS_PER_MACHINE}, the most GPUs one machine in "
                f"the catalog has (e.g. {match['name']}:1)"
            )
        out.append(Accelerator(name=match["name"], count=count))
    return tuple(dict.fromkeys(out))


def _names(value: Any, info: ValidationInfo) -> tuple[str, ...]:
    ok, what, example = NAME_LISTS[str(info.field_name)]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not (items or info.field_name == "allow"):
        raise ValueError(f"expected a list of {what}, e.g. [{example}], got {quote(value)}")
    for item in items:
        if not isinstance(item, str) or not ok(item):
            raise ValueError(f"{quote(item)}: expected {what}, e.g. [{example}]")
    return tuple(dict.fromkeys(items))


class Resources(_Model):
    """Where the job may run: the GPU alternatives `gpubench bench` compares, and the market."""

    accelerators: tuple[Accelerator, ...] = Field(
        (),
        description="GPU alternatives to compare, SkyPilot style: a list like [T4:1, L4:1, A100:8] "
        "or one string like V100:1 (NAME:COUNT, count default 1)",
    )
    spot: bool = Field(
        False, strict=True, description="true or false: true runs on the spot market, cheaper but preemptible"
    )
    providers: tuple[str, ...] | None = Field(
        None, description="only these providers, e.g. [aws, gcp] (default: every provider)"
    )
    regions: tuple[str, ...] | None = Field(
        None, description="only these regions, e.g. [us-east-1, us-central1] (default: any region)"
    )
    disk_gb: int | None = Field(
        None,
        strict=True,
        ge=1,
        le=MAX_DISK_GB,
        description=f"boot disk size in whole GB, an integer from 1 to {MAX_DISK_GB}; default: the stack's",
    )

    LIKE = "like {accelerators: [T4:1, L4:1], spot: false}"
    EMPTY = (
        "empty: list the GPUs to compare in `accelerators` (e.g. [T4:1, L4:1]) or drop `resources` "
        "(a run on a stack takes them from the stack: resources come from the stack's offering)"
    )
    HINTS = {
        "use_spot": " (SkyPilot's `use_spot` is `spot` here)",
        "cloud": " (use `providers: [aws]`)",
        "infra": " (use `providers: [aws]` and `regions: [us-east-1]`)",
        "region": " (use `regions: [us-east-1]`)",
        "disk_size": " (use `disk_gb`)",
        "gpus": " (use `accelerators: [T4:1]`)",
        "accelerator": " (use `accelerators`)",
    }

    @field_validator("accelerators", mode="before")
    @classmethod
    def _accelerators(cls, value: Any) -> tuple[Accelerator, ...]:
        return parse_accelerators(value)

    _places = field_validator("providers", "regions", mode="before")(_names)


# --- work --------------------------------------------------------------------------------------------------


class Work(_Model):
    """How much the whole job trains, so a short probe's throughput can be extrapolated to it."""

    samples: float | int | None = Field(None, description="total training samples of the whole job, e.g. 1281167")
    steps: float | int | None = Field(None, description="total optimizer steps (with samples_per_step)")
    samples_per_step: float | int | None = Field(
        None, description="samples per optimizer step, the global batch size (with steps)"
    )
    epochs: float | int | None = Field(None, description="total epochs (with samples_per_epoch)")
    samples_per_epoch: float | int | None = Field(
        None, description="training samples per epoch, the dataset size (with epochs)"
    )

    LIKE = f"(one of {WORK_EXAMPLE})"
    HINTS = {
        "batch_size": " (give `samples_per_step`: samples per optimizer step, the global batch size)",
        "total_samples": " (use `samples`)",
        "epoch": " (use `epochs`)",
        "step": " (use `steps`)",
    }

    @classmethod
    def _given(cls, raw: dict) -> dict:
        given = [shape for shape in WORK_SHAPES if any(raw.get(k) is not None for k in shape)]
        if len(given) != 1:
            said = "none" if not given else " and ".join("+".join(s) for s in given)
            raise _Problem(None, f"give exactly one of {WORK_EXAMPLE} (got {said})")
        count = given[0][0]  # epochs or steps may stand alone: the job's output tells their size
        if raw.get(count) is None:
            raise _Problem(count, f"required with `{given[0][1]}`: {cls.model_fields[count].description}")
        return raw

    @field_validator("*", mode="before")
    @classmethod
    def _positive(cls, value: Any, info: ValidationInfo) -> Any:
        return None if value is None else _positive_number(value, str(cls.model_fields[info.field_name].description))

    @model_validator(mode="after")
    def _bounded(self) -> Work:
        for what, value in [("samples in all", self.total_samples()), ("steps", self.steps), ("epochs", self.epochs)]:
            if value is not None and value > MAX_WORK_SAMPLES:
                raise _Problem(
                    None,
                    f"{value:.3g} {what}, more than {MAX_WORK_SAMPLES:.0e} (no real job trains that many); "
                    f"give the whole job's work, one of {WORK_EXAMPLE}",
                )
        return self

    def total_samples(self) -> float | None:
        """Samples the whole job trains, whichever way the file gave them; None when `epochs` or `steps`
        came without their size (the job's output fills it in)."""
        return whole_job(self, None)["value"]


# --- progress ----------------------------------------------------------------------------------------------


class ProgressSpec(_Model):
    """How to read the job's progress when no built-in convention does, and how big its steps are."""

    pattern: str | None = Field(
        None,
        description="a regular expression with named groups step, steps_per_epoch, epoch or samples, "
        r"e.g. '(?P<step>\d+)/(?P<steps_per_epoch>\d+) batches'",
    )
    epoch_end: str | None = Field(
        None, description="a regular expression for the line that ends an epoch (default: `end of epoch`)"
    )
    samples_per_step: float | int | None = Field(
        None, description="samples one counted step (or batch) trains, the global batch size, e.g. 64"
    )

    LIKE = "like {pattern: '...', samples_per_step: 64}"
    EMPTY = f"expected a mapping {LIKE}, got {{}}"
    HINTS = {"batch_size": " (use `samples_per_step`)", "regex": " (use `pattern`)"}

    @field_validator("pattern", "epoch_end", mode="before")
    @classmethod
    def _regex(cls, value: Any, info: ValidationInfo) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"expected a regular expression, got {value!r}")
        compile_pattern(value, groups=info.field_name == "pattern")
        return value

    @field_validator("samples_per_step", mode="before")
    @classmethod
    def _positive(cls, value: Any) -> Any:
        return None if value is None else _positive_number(value, "samples per step, e.g. 64")


# --- the task file -----------------------------------------------------------------------------------------


class TaskFile(_Model):
    """What the user writes: the job (the hashed part) plus where it may run and how much it trains."""

    name: str = Field(
        description="a short name for the workload: letters, digits, '.', '_' or '-' (e.g. pytorch-resnet)"
    )
    description: str = Field("", strict=True, description="a string: one line saying what the job trains")
    image: str | None = Field(
        None,
        description="the container image the docker runtimes start the job in, e.g. pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime",
    )
    workdir: str | None = Field(
        None,
        description="a directory shipped with the run, inside the spec file's directory (e.g. `.`); the job runs inside it",
    )
    allow: tuple[str, ...] = Field(
        (),
        description="workdir files (relative paths) shipped although they look like credentials, e.g. [certs/ca.pem]",
    )
    setup: str | None = Field(
        None, description="shell commands run once before the job (pip install ...); not timed as training"
    )
    run: str = Field(description="shell commands that train; timed, GPU-sampled, and read for metrics lines")
    env: dict[str, str] = Field(
        default_factory=dict, description="environment variables for setup and run, a mapping of NAME: value"
    )
    gpus: int | None = Field(
        None,
        strict=True,
        ge=0,
        le=MAX_GPUS_PER_MACHINE,
        description=f"GPUs the job uses, an integer from 0 to {MAX_GPUS_PER_MACHINE} (the most GPUs one machine in "
        "the catalog has); omit it to use every visible GPU",
    )
    metrics: tuple[str, ...] = Field(
        BUILTIN_FORMATS,
        description=f"which progress conventions the job prints: one or more of {', '.join(METRIC_FORMATS)} "
        "(default: every one but pattern, plus pattern when `progress.pattern` is given)",
    )
    progress: ProgressSpec | None = Field(
        None,
        description="how to read progress no convention reads: {pattern: '(?P<step>\\d+)/(?P<steps_per_epoch>\\d+)', "
        "samples_per_step: 64}",
    )
    resources: Resources | None = Field(
        None,
        description="for `gpubench bench`: the GPU alternatives to compare ({accelerators: [T4:1, L4:1], spot: false}); "
        "not part of the workload's hash",
    )
    work: Work | None = Field(
        None,
        description=f"for `gpubench bench`: how much the whole job trains, one of {WORK_EXAMPLE}; "
        "not part of the workload's hash",
    )

    HINTS = {  # names from neighbouring tools, and what they are called here
        "envs": " (SkyPilot's `envs` is `env` here)",
        "commands": " (put dstack-style commands in `run`, as a list or a multi-line string)",
        "working_dir": " (use `workdir`)",
        "file_mounts": " (ship small files in `workdir` and fetch data in `setup`)",
        "num_nodes": " (gpubench runs single-machine jobs)",
    }

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise WorkloadSpecError(
                f"expected a mapping with at least `name` and `run`, got {type(raw).__name__}; see docs/workloads.md"
            )
        return super()._shape(raw)

    @classmethod
    def _given(cls, raw: dict) -> dict:
        for key in ("name", "run"):
            if raw.get(key) in (None, ""):
                raise _Problem(key, f"required: {FIELDS[key]}")
        # Empty optional fields mean "not given", as they always have.
        return {k: v for k, v in raw.items() if not (k in ("setup", "workdir", "description") and v in (None, ""))}

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        if not isinstance(value, str) or not NAME_RE.match(value):
            raise ValueError(f"{quote(value)} is not a valid name; use {FIELDS['name']}")
        return value

    @field_validator("run", "setup", mode="before")
    @classmethod
    def _script(cls, value: Any, info: ValidationInfo) -> str:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "\n".join(value)  # dstack-style `commands:` lists are accepted for setup/run
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected {FIELDS[str(info.field_name)]}, got {quote(value)}")
        if len(value) > MAX_SCRIPT_CHARS:
            raise ValueError(
                f"{len(value):,} characters, more than {MAX_SCRIPT_CHARS:,} (a process argument's limit); put the "
                "commands in a script in the workdir and run that"
            )
        return value.strip("\n")

    @field_validator("image", mode="before")
    @classmethod
    def _image(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
            raise ValueError(f"{quote(value)} is not an image reference; use {FIELDS['image']}")
        return value.strip()

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> dict[str, str]:
        value = value or {}
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping NAME: value, got {type(value).__name__} (e.g. env: {{EPOCHS: '2'}})")
        clean = {}
        for k, v in value.items():
            if not isinstance(k, str) or not ENV_RE.match(k):
                raise ValueError(
                    f"{quote(k)} is not a variable name (letters, digits, _; not starting with a digit; at most 128)"
                )
            if k.startswith("GPUBENCH_"):
                raise ValueError(f"{k} is set by gpubench itself; rename it")
            if v is None or isinstance(v, (dict, list)):
                raise ValueError(f"{k}: expected a string or number, got {quote(v)}")
            clean[k] = str(v).lower() if isinstance(v, bool) else str(v)
            if len(clean[k]) > MAX_SCRIPT_CHARS:
                raise ValueError(
                    f"{k}: {len(clean[k]):,} characters, more than {MAX_SCRIPT_CHARS:,} (a variable's limit); "
                    "ship the value as a file in the workdir"
                )
        return clean

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics(cls, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or any(m not in METRIC_FORMATS for m in value):
            raise ValueError(f"{quote(value)}: expected {FIELDS['metrics']}, e.g. metrics: [json]")
        return tuple(dict.fromkeys(value))

    @field_validator("workdir", mode="before")
    @classmethod
    def _workdir(cls, value: Any, info: ValidationInfo) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected a directory path, got {quote(value)}")
        context = info.context or {}
        path = confine_workdir(value, Path(context.get("path", "workload.yaml")).parent)
        if context.get("check_workdir", True) and not path.is_dir():
            raise ValueError(f"{path} is not a directory; give a path relative to the spec file")
        return str(path)

    _allow = field_validator("allow", mode="before")(_names)

    @model_validator(mode="after")
    def _pattern_given(self) -> TaskFile:
        has_pattern = self.progress is not None and self.progress.pattern is not None
        if "pattern" in self.metrics and not has_pattern:
            raise _Problem("metrics", "`pattern` needs `progress.pattern`: the regular expression to read")
        if has_pattern and "pattern" not in self.metrics:
            if "metrics" in self.model_fields_set:
                raise _Problem("progress", "`progress.pattern` is given but `metrics` does not list `pattern`")
            object.__setattr__(self, "metrics", ("pattern", *self.metrics))
        return self

    @model_validator(mode="after")
    def _gpus_fit(self) -> TaskFile:
        if self.gpus and self.resources:
            small = [str(a) for a in self.resources.accelerators if a.count < self.gpus]
            if small:
                raise _Problem(
                    "gpus",
                    f"the job uses {self.gpus} GPUs but resources.accelerators offers fewer in {', '.join(small)}; "
                    "drop those alternatives or lower `gpus`",
                )
        return self


FIELDS: dict[str, str] = {name: str(f.description) for name, f in TaskFile.model_fields.items()}


class WorkloadSpec(TaskFile):
    """A checked task file, resolved: the workdir absolute, its digest and the job's content hash computed."""

    path: str = Field(description="the spec file (absolute)")
    workdir_sha256: str | None = Field(None, description="digest of the workdir's files")
    sha256: str = Field("", description="the workload's content hash (normalised spec + workdir digest)")
    env_from_environment: tuple[str, ...] = Field(
        (), description="variables of `env` whose value came from the payload's environment (with_environment)"
    )

    @property
    def benchmark_name(self) -> str:
        """The name results and the report use: the hash keeps edited jobs apart."""
        return f"workload:{self.name}@{self.sha256[:12]}"

    @property
    def cwd(self) -> str:
        return self.workdir or str(Path(self.path).parent)

    def with_environment(self, environ: Mapping[str, str]) -> WorkloadSpec:
        """The job as it runs in `environ`: a variable named in `env` takes the environment's value
        when it sets one, and the hash covers the values used (a changed job is a new workload).
        Variables the spec does not name pass through to the job and are not hashed."""
        override = {k: environ[k] for k in sorted(self.env) if k in environ and environ[k] != self.env[k]}
        if not override:
            return self
        update = {"env": {**self.env, **override}, "env_from_environment": tuple(override)}
        return _hashed(self.model_copy(update=update))

    def normalised(self) -> dict[str, Any]:
        """What the content hash covers: every field that changes what runs, never where the files are, where
        it runs or how long (`resources`, `work`: the same job on another GPU is the same job)."""
        hashed = {"name", "image", "setup", "run", "env", "gpus", "metrics", "workdir_sha256", "progress"}
        out = self.model_dump(include=hashed)
        return out if out["progress"] is not None else {k: v for k, v in out.items() if k != "progress"}


def _describe(path: tuple[str, ...]) -> str | None:
    """The description (the fix) of a dotted field, walking the nested models."""
    model: Any = TaskFile
    info = None
    for part in path:
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return None
        info = fields[part]
        model = next((a for a in getattr(info.annotation, "__args__", ()) if isinstance(a, type)), info.annotation)
    return info.description if info else None


def _spec_error(where: str, exc: ValidationError) -> WorkloadSpecError:
    """The first problem pydantic found, as `file: field 'x.y': problem (fix)`."""
    first = exc.errors(include_url=False)[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, WorkloadSpecError):
        return WorkloadSpecError(f"{where}: {cause}")
    path = tuple(str(p) for p in first["loc"] if isinstance(p, str))
    if isinstance(cause, _Problem):
        path += (cause.field,) if cause.field else ()
        problem = cause.problem
    elif isinstance(cause, ValueError):
        problem = str(cause)
    else:  # pydantic's own check (a type, a bound): say what was expected
        fix = _describe(path)
        problem = f"{first['msg'].lower()}, got {quote(first.get('input'))}" + (f" (expected {fix})" if fix else "")
    return WorkloadSpecError(f"{where}: field {quote('.'.join(path))}: {problem}")


def parse_spec(raw: Any, path: str | Path, *, check_workdir: bool = True) -> WorkloadSpec:
    """Validate a loaded YAML document; `path` is the spec file (relative workdirs resolve against it)."""
    path = Path(path).resolve()
    where = str(path)
    try:
        task = TaskFile.model_validate(raw, context={"path": path, "check_workdir": check_workdir})
    except ValidationError as exc:
        raise _spec_error(where, exc) from None
    try:
        digest = files_digest(read_workdir(Path(task.workdir), task.allow)) if task.workdir and check_workdir else None
    except WorkdirError as exc:
        raise WorkloadSpecError(f"{where}: field 'workdir': {exc}") from None
    values = {name: getattr(task, name) for name in TaskFile.model_fields}
    return _hashed(WorkloadSpec.model_construct(**values, path=where, workdir_sha256=digest))


def _hashed(spec: WorkloadSpec) -> WorkloadSpec:
    """The spec with its content hash (of `normalised()`) filled in."""
    blob = json.dumps(spec.normalised(), sort_keys=True, separators=(",", ":"))
    return spec.model_copy(update={"sha256": hashlib.sha256(blob.encode()).hexdigest()})


def load_spec(path: str | Path, *, check_workdir: bool = True) -> WorkloadSpec:
    """Read and validate a workload spec file; WorkloadSpecError names the field and the fix."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise WorkloadSpecError(
            f"workload spec {path}: no such file (give the path of a YAML file, see docs/workloads.md)"
        )
    try:
        raw = read_yaml(p.resolve())
    except YamlFileError as exc:
        raise WorkloadSpecError(str(exc)) from None
    return parse_spec(raw, p, check_workdir=check_workdir)
