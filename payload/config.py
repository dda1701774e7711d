"""Run options: one table names them, one pydantic model types and checks them.

cloud-init hands the container an env file, so every ``run`` option has an
environment variable (docs/CONTRACTS.md). ``OPTIONS`` is the table: each row is
a CLI flag, its GPUBENCH_* variable, the text parser, the default and the help.
``RunConfig`` is the pydantic model built from it (field type = what the row's
parser returns, description = its help), so adding a row adds the option
everywhere: argparse, the environment, validation, rendering and the JSON schema.
Precedence is stated once, in ``given_values``. Every parse error names the
option, where the value came from and the allowed values.

Python 3.8 compatible (the legacy payload image): pydantic evaluates the
annotations of the model, hence typing's List/Dict/Optional in them.
"""

from __future__ import annotations

import argparse
import math
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Optional  # noqa: UP035 - pydantic evaluates these on Python 3.8

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model, model_validator
from typing_extensions import Annotated  # noqa: UP035 - typing.Annotated is Python 3.9+

from payload.benchmarks import REGISTRY, UnknownBenchmark, get
from payload.layout import BadKeyPart, check_name, check_stack_name
from payload.results_location import parse_results_location
from payload.timestamps import parse_iso

# Keras 3 backends the payload runs on, and MirroredStrategy's all-reduce choices
# (today's analogues of tf_cnn_benchmarks' NCCL / parameter-device configurations).
BACKENDS = ("tensorflow", "jax", "torch")
ALL_REDUCES = ("nccl", "hierarchical", "one-device")


class ConfigError(ValueError):
    """A bad option value; the message names the option and the allowed values."""


def _number(cast: Callable[[str], Any], ok: Callable[[Any], bool], rule: str) -> Callable[[str], Any]:
    """A text parser for a number obeying `ok`; `rule` ("a positive integer") is the message."""

    def parse(text: str) -> Any:
        try:
            value = cast(text)
        except ValueError:
            raise ValueError(f"must be {rule}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"must be a finite {rule.split(' ', 1)[1]}, not {text!r}")
        if not ok(value):
            raise ValueError(f"must be {rule}")
        return value

    parse.__annotations__["return"] = cast.__name__
    return parse


_positive_int = _number(int, lambda v: v >= 1, "a positive integer")
_nonneg_int = _number(int, lambda v: v >= 0, "an integer >= 0")
# The most GPUs one machine in the catalog has (tests/bench/test_task_file.py holds it to the catalog):
# every GPU count a user gives is bounded by it, so none sizes a device list past what is sold.
MAX_GPUS_PER_MACHINE = 16
_gpu_count = _number(
    int,
    lambda v: 0 <= v <= MAX_GPUS_PER_MACHINE,
    f"an integer from 0 to {MAX_GPUS_PER_MACHINE} (the most GPUs one machine in the catalog has)",
)
_positive_float = _number(float, lambda v: v > 0, "a positive number")
_nonneg_float = _number(float, lambda v: v >= 0, "a number >= 0")


_BOOLS = {**dict.fromkeys(("1", "true", "yes", "on"), True), **dict.fromkeys(("0", "false", "no", "off", ""), False)}


def _bool(text: Any) -> bool:
    """1/0, true/false, yes/no, on/off (or a bool, from a flag)."""
    if isinstance(text, bool):
        return text
    try:
        return _BOOLS[text.strip().lower()]
    except KeyError:
        raise ValueError("must be 1/0 (or true/false)") from None


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"must be one of: {', '.join(allowed)}")
        return text

    parse.choices = allowed  # type: ignore[attr-defined]
    return parse


def _benchmarks(text: str) -> List[str]:  # noqa: UP006 - RunConfig evaluates it on Python 3.8
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError(f"no benchmark given; known: {', '.join(REGISTRY)}")
    for n in names:
        try:
            get(n)
        except UnknownBenchmark as exc:
            raise ValueError(str(exc)) from None
    return names


def _deadline(text: str) -> float:
    try:
        return parse_iso(text)
    except ValueError:
        raise ValueError("must be an ISO 8601 UTC time, e.g. 2025-01-31T12:00:00Z") from None


def _params(text: str) -> Dict[str, str]:  # noqa: UP006 - RunConfig evaluates it on Python 3.8
    out = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"{part!r} is not key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _text(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


def _stack(text: str) -> str:
    """A slug: it becomes one segment of every result key (runs/<stack>/...)."""
    try:
        return check_stack_name(text.strip())
    except BadKeyPart as exc:
        raise ValueError(str(exc).replace(f"stack name {text.strip()!r} ", "")) from None


def _launch(text: str) -> str:
    """A launch id: the head of every run id of the launch, hence a slug like them."""
    try:
        return check_name("run id", text.strip())
    except BadKeyPart as exc:
        raise ValueError(str(exc)) from None


def _results(text: str) -> str:
    """s3://, gs://, file:// or a path, with a valid bucket name: checked before anything trains."""
    parse_results_location(text.strip())  # ResultsLocationError is a ValueError naming the value and the fix
    return text.strip()


def _date(text: str) -> str:
    """An ISO date or time (2025-01-31, 2025-01-31T12:00:00Z): results carry when their price was true."""
    value = text.strip()
    try:
        parse_iso(value)
    except ValueError:
        raise ValueError("must be an ISO 8601 date, e.g. 2025-01-31") from None
    return value


def _data(text: str) -> DataSource:
    return DataSource.parse(text)


@dataclass(frozen=True)
class Option:
    """One run option: CLI flag, parser, default, help, and its variable GPUBENCH_<NAME>."""

    name: str
    parse: Callable[[str], Any]
    default: Any = None
    help: str = ""
    metavar: str | None = None
    required: bool = False
    flag: bool = False  # store_true on the command line
    repeat: bool = False  # --param k=v may be given several times
    variable: str | None = None  # the variable when it is not GPUBENCH_<NAME>

    @property
    def env(self) -> str:
        return self.variable or f"GPUBENCH_{self.name.upper()}"

    @property
    def cli(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option(
        "benchmark",
        _benchmarks,
        None,
        "benchmark name, or a comma-separated suite (see `python -m payload list`); not with --workload",
        "NAME[,NAME...]",
        required=True,
    ),
    Option(
        "workload",
        _text,
        None,
        "your own job instead of a built-in benchmark: a workload spec YAML (name, run, setup, workdir, env, "
        "gpus, metrics; see docs/workloads.md)",
        "FILE",
    ),
    Option(
        "results",
        _results,
        None,
        "where results go: s3://bucket/prefix, gs://bucket/prefix, file:///dir or a local path",
        "URL",
        required=True,
    ),
    Option(
        "stack",
        _stack,
        None,
        "stack name (results land under runs/<stack>/), e.g. aws-p3-8x-spot",
        "STACK",
        required=True,
    ),
    Option(
        "offering",
        _text,
        None,
        "catalog offering id (e.g. aws/p3.8xlarge); its prefix is the provider",
        "ID",
    ),
    Option(
        "offering_kind",
        _text,
        None,
        "the offering's kind in the catalog (cloud, dedicated, onprem, local)",
        "KIND",
    ),
    Option(
        "instance_type",
        _text,
        None,
        "the offering's instance or machine type (default: from instance metadata)",
        "TYPE",
    ),
    Option(
        "market",
        _choice("on-demand", "spot"),
        None,
        "billing market (default: from instance metadata, else on-demand)",
        "on-demand|spot",
    ),
    Option(
        "epochs",
        _positive_int,
        None,
        "epochs to train (epoch benchmarks; total over all resumed attempts)",
        "N",
    ),
    Option(
        "steps",
        _positive_int,
        None,
        "training steps: total steps for throughput benchmarks (warm-up included), "
        "steps per epoch for epoch benchmarks",
        "N",
    ),
    Option(
        "batch_size",
        _positive_int,
        None,
        "per-GPU (per-replica) batch size; global batch = this x replicas",
        "N",
    ),
    Option(
        "precision",
        _choice("fp32", "mixed"),
        "fp32",
        "fp32, or mixed (Keras mixed_float16 policy)",
        "fp32|mixed",
    ),
    Option(
        "gpus",
        _gpu_count,
        None,
        "GPUs to use (default: all visible; 0 = CPU). >1 trains data-parallel (see --all-reduce)",
        "N",
    ),
    Option(
        "backend",
        _choice(*BACKENDS),
        "tensorflow",
        "Keras backend (KERAS_BACKEND, set before keras is imported): tensorflow, jax or torch; "
        "several GPUs: tensorflow uses MirroredStrategy, jax keras.distribution.DataParallel, "
        "torch is refused (released Keras has no multi-GPU for it)",
        "|".join(BACKENDS),
    ),
    Option(
        "all_reduce",
        _choice(*ALL_REDUCES),
        "nccl",
        "tensorflow backend, several GPUs: the cross-device all-reduce of MirroredStrategy "
        "(nccl: NcclAllReduce; hierarchical: HierarchicalCopyAllReduce; one-device: ReductionToOneDevice)",
        "|".join(ALL_REDUCES),
    ),
    Option(
        "data",
        _data,
        "download",
        "synthetic (right shapes/vocab/classes), download (Keras/upstream datasets) or a directory "
        "with the study's files (mnist.npz, cifar-10-batches-py/, imdb.npz, nietzsche.txt, tweets CSV)",
        "synthetic|download|DIR",
    ),
    Option(
        "param",
        _params,
        None,
        "override a benchmark parameter, e.g. --param samples=512 (repeatable; env: k=v,k=v)",
        "KEY=VALUE",
        repeat=True,
        variable="GPUBENCH_PARAMS",
    ),
    Option(
        "expect_gpu",
        _bool,
        False,
        "fail at once (exit 3, failed result) if TensorFlow sees no GPU",
        flag=True,
    ),
    Option(
        "hourly_usd",
        _nonneg_float,
        None,
        "price per hour of the launched market, recorded with every result (the launcher passes the catalog's)",
        "USD",
    ),
    Option(
        "on_demand_hourly_usd",
        _nonneg_float,
        None,
        "spot runs: the on-demand price per hour, recorded beside the spot price",
        "USD",
    ),
    Option("price_source", _text, None, "where the launch price came from", "TEXT"),
    Option("price_as_of", _date, None, "date of the launch price", "DATE"),
    Option("image", _text, None, "the container image this run is in, recorded with the result", "IMAGE"),
    Option(
        "host_events",
        _text,
        None,
        "host-side events.jsonl (instance_launch, boot_done, container_start) to merge",
        "PATH",
    ),
    Option(
        "deadline",
        _deadline,
        None,
        "hard deadline (ISO 8601 UTC); the run checkpoints and stops 5 minutes before it",
        "TIME",
    ),
    Option(
        "launch",
        _launch,
        None,
        "the launch (deployment) this run belongs to: run ids start with it, the only runs the "
        "instance may write to (set by the launcher; see docs/security.md)",
        "ID",
        variable="GPUBENCH_LAUNCH_ID",
    ),
    Option(
        "checkpoint_every",
        _positive_int,
        500,
        "throughput benchmarks: checkpoint every N steps (epoch benchmarks: every epoch)",
        "N",
    ),
    Option(
        "watch_interval",
        _positive_float,
        5.0,
        "seconds between spot/preemption notice polls",
        "SECONDS",
    ),
    Option(
        "spool",
        _text,
        None,
        "local spool directory for results the bucket did not take (default ~/.cache/gpubench/spool)",
        "DIR",
    ),
    Option(
        "no_resume",
        _bool,
        False,
        "start fresh even if an interrupted checkpoint of the same run exists",
        flag=True,
    ),
    Option("seed", _nonneg_int, 1234, "random seed for data shuffling and init", "N"),
    Option(
        "cpu_replicas",
        _positive_int,
        1,
        "testing aid: split the CPU into N logical devices to exercise MirroredStrategy without GPUs",
        "N",
    ),
    Option(
        "probe_seconds",
        _positive_float,
        None,
        "workloads: probe mode, stop the job once its throughput is steady or after this many seconds of `run` "
        "(result.probe records the rate, its interval and the overhead; see docs/workloads.md)",
        "SECONDS",
    ),
    Option(
        "probe_target",
        _positive_float,
        0.03,
        "probe mode: steady when the half-width of the rate's 95 percent interval is at most this fraction of the rate",
        "FRACTION",
    ),
)


@dataclass(frozen=True)
class DataSource:
    """Parsed --data: mode is synthetic | download | dir."""

    mode: str
    path: Optional[str] = None  # noqa: UP045 - pydantic evaluates it on Python 3.8

    def __str__(self) -> str:
        return self.path if self.mode == "dir" else self.mode

    @classmethod
    def parse(cls, text: str) -> DataSource:
        if text in ("synthetic", "download"):
            return cls(text)
        if not os.path.isdir(text):
            raise ValueError("must be 'synthetic', 'download' or an existing directory")
        return cls("dir", os.path.abspath(text))


class _RunOptions(BaseModel):
    """Cross-option rules of a run; the fields come from OPTIONS (see RunConfig)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _epochs_or_steps(self) -> _RunOptions:
        if self.epochs is not None and self.steps is not None:
            raise ConfigError("--epochs and --steps are mutually exclusive (GPUBENCH_EPOCHS / GPUBENCH_STEPS)")
        return self


def _field(opt: Option) -> tuple[Any, Any]:
    """(annotation, FieldInfo) of one option: the type its parser returns, its default and help."""
    kind = typing.get_type_hints(opt.parse).get("return", Any)
    parse = (lambda raw, p=opt.parse: _merged(p, raw)) if opt.repeat else opt.parse
    check = BeforeValidator(lambda raw, p=parse: raw if raw is None else p(raw))
    annotation = Annotated[Optional[kind], check]  # noqa: UP045 - `X | None` needs Python 3.10
    empty = getattr(kind, "__origin__", None) in (list, dict)
    if opt.default is None and empty:
        return annotation, Field(default_factory=kind.__origin__, description=opt.help)
    default = opt.parse(opt.default) if isinstance(opt.default, str) else opt.default
    return annotation, Field(default, description=opt.help)


def _merged(parse: Callable[[str], dict[str, str]], raw: Any) -> dict[str, str]:
    """A repeatable option given several times (--param a=1 --param b=2): one mapping."""
    merged: dict[str, str] = {}
    for item in raw if isinstance(raw, list) else [raw]:
        merged.update(parse(item))
    return merged


RunConfig = create_model("RunConfig", __base__=_RunOptions, **{opt.name: _field(opt) for opt in OPTIONS})
RunConfig.__doc__ = "The run options of `python -m payload run`, typed and checked (one field per OPTIONS row)."


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for every option; defaults stay None so the env can fill in."""
    for opt in OPTIONS:
        env_note = f" [env {opt.env}]"
        if opt.flag:
            parser.add_argument(
                opt.cli, dest=opt.name, action="store_const", const="1", default=None, help=opt.help + env_note
            )
        elif opt.repeat:
            parser.add_argument(
                opt.cli, dest=opt.name, action="append", default=None, metavar=opt.metavar, help=opt.help + env_note
            )
        else:
            default = f" (default: {opt.default})" if opt.default not in (None, False) else ""
            parser.add_argument(
                opt.cli, dest=opt.name, default=None, metavar=opt.metavar, help=opt.help + default + env_note
            )


def given_values(given: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """{option name: (raw value, where it came from)} for every option given, by precedence.

    The one statement of precedence: the command line beats the GPUBENCH_* environment, which
    beats the option's default (left to RunConfig). An empty variable counts as unset, so an env
    file may list every variable. Stack files never reach the payload directly: launchers render
    a stack's values into this environment (render_env) or onto the command line (render_argv)."""
    out: dict[str, tuple[Any, str]] = {}
    for opt in OPTIONS:
        if given.get(opt.name) is not None:
            out[opt.name] = (given[opt.name], opt.cli)
        elif environ.get(opt.env, "") != "":
            out[opt.name] = (environ[opt.env], opt.env)
    return out


def _check_presence(values: Mapping[str, tuple[Any, str]]) -> None:
    """Required options are given; a run is built-in benchmarks or one workload, never both."""
    if "workload" in values and "benchmark" in values:
        (bench, where), (workload, _) = values["benchmark"], values["workload"]
        raise ConfigError(
            f"{where}={bench!r} and --workload/GPUBENCH_WORKLOAD={workload!r} both given: "
            "a run is either built-in benchmarks or one workload; drop one"
        )
    for opt in OPTIONS:
        if opt.required and opt.name not in values and not (opt.name == "benchmark" and "workload" in values):
            raise ConfigError(f"{opt.cli} (or {opt.env}) is required: {opt.help}")


def resolve(args: argparse.Namespace | Mapping[str, Any], environ: Mapping[str, str] | None = None) -> RunConfig:
    """Combine CLI values, GPUBENCH_* env and defaults into a validated RunConfig."""
    environ = os.environ if environ is None else environ
    values = given_values(vars(args) if isinstance(args, argparse.Namespace) else args, environ)
    _check_presence(values)
    try:
        return RunConfig.model_validate({name: raw for name, (raw, _) in values.items()})
    except ValidationError as exc:
        raise _config_error(exc, values) from None


def _config_error(exc: ValidationError, values: Mapping[str, tuple[Any, str]]) -> ConfigError:
    """The first error, worded as ever: `<flag or variable>=<value>: <rule>`."""
    error = exc.errors()[0]
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, ConfigError):
        return cause
    name = error["loc"][0] if error["loc"] else ""
    raw, where = values.get(name, (error.get("input"), name))
    return ConfigError(f"{where}={raw!r}: {cause if cause is not None else error['msg']}")


# --- rendering: launchers (cloud-init env file, SSH runner) write options from this table ---

_BY_NAME = {opt.name: opt for opt in OPTIONS}


def _option(name: str) -> Option:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a payload run option; known: {', '.join(_BY_NAME)}") from None


def _text_of(opt: Option, value: Any) -> str:
    if opt.flag:
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _given(values: dict[str, Any]) -> list[tuple[Option, Any, str]]:
    """(option, value, its text) of the options with a value, in the table's order; None means "not
    given" and is left out. Each text is checked with the option's own parser first, so a launcher
    cannot hand the payload a value it would refuse at boot."""
    for name in values:
        _option(name)
    given = [
        (opt, values[opt.name], _text_of(opt, values[opt.name])) for opt in OPTIONS if values.get(opt.name) is not None
    ]
    for opt, _, text in given:
        _check(opt, text)
    return given


def render_env(values: dict[str, Any]) -> dict[str, str]:
    """GPUBENCH_* variables for run options given by name, e.g. {"stack": "aws-p3-8x"}."""
    return {opt.env: text for opt, _, text in _given(values)}


def render_argv(values: dict[str, Any]) -> list[str]:
    """`python -m payload run` arguments for run options given by name (flags only when true)."""
    argv: list[str] = []
    for opt, value, text in _given(values):
        argv += ([opt.cli] if value else []) if opt.flag else [opt.cli, text]
    return argv


def _check(opt: Option, text: str) -> None:
    if opt.name in ("benchmark", "data", "workload"):  # checked on the host: its benchmarks, data and spec file
        return
    try:
        opt.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{opt.cli} ({opt.env}) {text!r}: {exc}") from None
