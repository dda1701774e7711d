"""Run options: one table (`OPTIONS`) names them; `resolve` checks each with its row's parser into a `RunConfig`.

A row is a CLI flag, its GPUBENCH_* variable (cloud-init hands the container an env file), the text parser,
the help and the default.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, make_dataclass
from typing import Any

from payload.benchmarks import REGISTRY, UnknownBenchmark, get
from payload.layout import BadKeyPart, check_name
from payload.results_location import parse_results_location
from payload.timestamps import parse_iso

# Keras 3 backends, and MirroredStrategy's all-reduce choices (analogues of tf_cnn_benchmarks' configurations).
BACKENDS = ("tensorflow", "jax", "torch")
ALL_REDUCES = ("nccl", "hierarchical", "one-device")
# The payload cannot read the catalog (infra is a layer above): it checks an offering id's form and
# knows the catalog's local offerings (tests/cli/test_errors_trust.py holds both to the catalog).
LOCAL_OFFERINGS = ("local/this-machine",)
OFFERING_FORM = re.compile(r"^[a-z0-9][a-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.+:-]*$")
# The most GPUs one machine in the catalog has (tests/bench/test_task_file.py holds it to the catalog).
MAX_GPUS_PER_MACHINE = 16


class ConfigError(ValueError):
    """A bad option value; the message names the option and the allowed values."""


def _parser(metavar: str) -> Callable:
    """Marks a text parser with the metavar its options show in --help."""

    def mark(parse: Callable) -> Callable:
        parse.metavar = metavar  # type: ignore[attr-defined]
        return parse

    return mark


def _number(cast: Callable[[str], Any], ok: Callable[[Any], bool], rule: str, metavar: str = "N") -> Callable:
    """A text parser for a number obeying `ok`; `rule` ("a positive integer") says what it must be."""

    @_parser(metavar)
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

    return parse


_positive_int = _number(int, lambda v: v >= 1, "a positive integer")
_nonneg_int = _number(int, lambda v: v >= 0, "an integer >= 0")
_gpu_count = _number(
    int,
    lambda v: 0 <= v <= MAX_GPUS_PER_MACHINE,
    f"an integer from 0 to {MAX_GPUS_PER_MACHINE} (the most GPUs one machine in the catalog has)",
)
_positive_float = _number(float, lambda v: v > 0, "a positive number", "SECONDS")
_nonneg_float = _number(float, lambda v: v >= 0, "a number >= 0", "USD")
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
    @_parser("|".join(allowed))
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"must be one of: {', '.join(allowed)}")
        return text

    return parse


@_parser("NAME[,NAME...]")
def _benchmarks(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError(f"no benchmark given; known: {', '.join(REGISTRY)}")
    for n in names:
        try:
            get(n)
        except UnknownBenchmark as exc:
            raise ValueError(str(exc)) from None
    return names


@_parser("TIME")
def _deadline(text: str) -> float:
    try:
        return parse_iso(text)
    except ValueError:
        raise ValueError("must be an ISO 8601 UTC time, e.g. 2025-01-31T12:00:00Z") from None


@_parser("DATE")
def _date(text: str) -> str:
    """Results carry when their price was true (2025-01-31, 2025-01-31T12:00:00Z)."""
    try:
        parse_iso(text.strip())
    except ValueError:
        raise ValueError("must be an ISO 8601 date, e.g. 2025-01-31") from None
    return text.strip()


@_parser("KEY=VALUE")
def _params(text: Any) -> dict[str, str]:
    """k=v,k=v; a list of those when --param is given several times: one mapping."""
    out = {}
    for part in filter(None, (p.strip() for p in ",".join(text if isinstance(text, list) else [text]).split(","))):
        if "=" not in part:
            raise ValueError(f"{part!r} is not key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _text(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


def _slug(kind: str, metavar: str) -> Callable[[str], str]:
    """A stack name or launch id: one segment of every result key (runs/<stack>/<launch>-...)."""

    @_parser(metavar)
    def parse(text: str) -> str:
        try:
            return check_name(kind, text.strip())
        except BadKeyPart as exc:
            raise ValueError(str(exc).replace(f"{kind} {text.strip()!r} ", "")) from None

    return parse


@_parser("URL")
def _results(text: str) -> str:
    """s3://, gs://, file:// or a path, with a valid bucket name: checked before anything trains."""
    parse_results_location(text.strip())  # ResultsLocationError is a ValueError naming the value and the fix
    return text.strip()


@_parser("ID")
def _offering(text: str) -> str:
    """The form of a catalog id, and the local offerings by name (the launchers check the rest)."""
    text = _text(text)
    if not OFFERING_FORM.match(text):
        raise ValueError(
            "expected PROVIDER/NAME, e.g. aws/p3.8xlarge or local/this-machine (`gpubench offerings` lists them)"
        )
    if text.startswith("local/") and text not in LOCAL_OFFERINGS:
        raise ValueError(f"the local offerings are {', '.join(LOCAL_OFFERINGS)}")
    return text


@_parser("synthetic|download|DIR")
def _data(text: str) -> DataSource:
    return DataSource.parse(text)


@dataclass(frozen=True)
class Option:
    """One run option: CLI flag, parser, help, default, and its variable GPUBENCH_<NAME>."""

    name: str
    parse: Callable[[str], Any]
    help: str
    default: Any = None
    metavar: str | None = None  # else the parser's, else the name's last word (KIND)
    required: bool = False
    repeat: bool = False  # --param k=v may be given several times
    variable: str | None = None  # the variable when it is not GPUBENCH_<NAME>

    @property
    def env(self) -> str:
        return self.variable or f"GPUBENCH_{self.name.upper()}"

    @property
    def cli(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def flag(self) -> bool:  # store_true on the command line
        return self.parse is _bool


_stack, _launch = _slug("stack name", "STACK"), _slug("run id", "ID")

OPTIONS: tuple[Option, ...] = (
    Option(
        "benchmark",
        _benchmarks,
        "benchmark name, or a comma-separated suite (see `python -m payload list`); not with --workload",
        required=True,
    ),
    Option(
        "workload",
        _text,
        "your own job instead of a built-in benchmark: a workload spec YAML (name, run, setup, workdir, env, "
        "gpus, metrics; see docs/workloads.md)",
        metavar="FILE",
    ),
    Option(
        "results",
        _results,
        "where results go: s3://bucket/prefix, gs://bucket/prefix, file:///dir or a local path",
        required=True,
    ),
    Option("stack", _stack, "stack name (results land under runs/<stack>/), e.g. aws-p3-8x-spot", required=True),
    Option("offering", _offering, "catalog offering id (e.g. aws/p3.8xlarge); its prefix is the provider"),
    Option("offering_kind", _text, "the offering's kind in the catalog (cloud, dedicated, onprem, local)"),
    Option("instance_type", _text, "the offering's instance or machine type (default: from instance metadata)"),
    Option("market", _choice("on-demand", "spot"), "billing market (default: from instance metadata, else on-demand)"),
    Option("epochs", _positive_int, "epochs to train (epoch benchmarks; total over all resumed attempts)"),
    Option(
        "steps",
        _positive_int,
        "training steps: total steps for throughput benchmarks (warm-up included), "
        "steps per epoch for epoch benchmarks",
    ),
    Option("batch_size", _positive_int, "per-GPU (per-replica) batch size; global batch = this x replicas"),
    Option("precision", _choice("fp32", "mixed"), "fp32, or mixed (Keras mixed_float16 policy)", "fp32"),
    Option(
        "gpus", _gpu_count, "GPUs to use (default: all visible; 0 = CPU). >1 trains data-parallel (see --all-reduce)"
    ),
    Option(
        "backend",
        _choice(*BACKENDS),
        "Keras backend (KERAS_BACKEND, set before keras is imported): tensorflow, jax or torch; "
        "several GPUs: tensorflow uses MirroredStrategy, jax keras.distribution.DataParallel, "
        "torch is refused (released Keras has no multi-GPU for it)",
        "tensorflow",
    ),
    Option(
        "all_reduce",
        _choice(*ALL_REDUCES),
        "tensorflow backend, several GPUs: the cross-device all-reduce of MirroredStrategy "
        "(nccl: NcclAllReduce; hierarchical: HierarchicalCopyAllReduce; one-device: ReductionToOneDevice)",
        "nccl",
    ),
    Option(
        "data",
        _data,
        "synthetic (right shapes/vocab/classes), download (Keras/upstream datasets) or a directory "
        "with the study's files (mnist.npz, cifar-10-batches-py/, imdb.npz, nietzsche.txt, tweets CSV)",
        "download",
    ),
    Option(
        "param",
        _params,
        "override a benchmark parameter, e.g. --param samples=512 (repeatable; env: k=v,k=v)",
        repeat=True,
        variable="GPUBENCH_PARAMS",
    ),
    Option("expect_gpu", _bool, "fail at once (exit 3, failed result) if TensorFlow sees no GPU", False),
    Option(
        "hourly_usd",
        _nonneg_float,
        "price per hour of the launched market, recorded with every result (the launcher passes the catalog's)",
    ),
    Option(
        "on_demand_hourly_usd", _nonneg_float, "spot runs: the on-demand price per hour, recorded beside the spot price"
    ),
    Option("price_source", _text, "where the launch price came from"),
    Option("price_as_of", _date, "date of the launch price"),
    Option("image", _text, "the container image this run is in, recorded with the result"),
    Option(
        "host_events",
        _text,
        "host-side events.jsonl (instance_launch, boot_done, container_start) to merge",
        metavar="PATH",
    ),
    Option("deadline", _deadline, "hard deadline (ISO 8601 UTC); the run checkpoints and stops 5 minutes before it"),
    Option(
        "launch",
        _launch,
        "the launch (deployment) this run belongs to: run ids start with it, the only runs the "
        "instance may write to (set by the launcher; see docs/security.md)",
        variable="GPUBENCH_LAUNCH_ID",
    ),
    Option(
        "checkpoint_every",
        _positive_int,
        "throughput benchmarks: checkpoint every N steps (epoch benchmarks: every epoch)",
        500,
    ),
    Option("watch_interval", _positive_float, "seconds between spot/preemption notice polls", 5.0),
    Option(
        "spool",
        _text,
        "local spool directory for results the bucket did not take (default ~/.cache/gpubench/spool)",
        metavar="DIR",
    ),
    Option("no_resume", _bool, "start fresh even if an interrupted checkpoint of the same run exists", False),
    Option("seed", _nonneg_int, "random seed for data shuffling and init", 1234),
    Option(
        "cpu_replicas",
        _positive_int,
        "testing aid: split the CPU into N logical devices to exercise MirroredStrategy without GPUs",
        1,
    ),
    Option(
        "probe_seconds",
        _positive_float,
        "workloads: probe mode, stop the job once its throughput is steady or after this many seconds of `run` "
        "(result.probe records the rate, its interval and the overhead; see docs/workloads.md)",
    ),
    Option(
        "probe_target",
        _positive_float,
        "probe mode: steady when the half-width of the rate's 95 percent interval is at most this fraction of the rate",
        0.03,
        metavar="FRACTION",
    ),
)


@dataclass(frozen=True)
class DataSource:
    """Parsed --data: mode is synthetic | download | dir."""

    mode: str
    path: str | None = None

    def __str__(self) -> str:
        return self.path if self.mode == "dir" else self.mode

    @classmethod
    def parse(cls, text: str) -> DataSource:
        if text in ("synthetic", "download"):
            return cls(text)
        if not os.path.isdir(text):
            raise ValueError("must be 'synthetic', 'download' or an existing directory")
        return cls("dir", os.path.abspath(text))


RunConfig = make_dataclass("RunConfig", [(opt.name, Any) for opt in OPTIONS])
RunConfig.__doc__ = "The run options of `python -m payload run`, each checked by its OPTIONS row's parser."
# The value of an option given nowhere whose row has no default (the suite and --param: empty, not None).
EMPTY = {"benchmark": list, "param": dict}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for every option; defaults stay None so the env can fill in."""
    for opt in OPTIONS:
        note = f" [env {opt.env}]"
        if opt.flag:
            parser.add_argument(opt.cli, dest=opt.name, action="store_const", const="1", help=opt.help + note)
            continue
        default = f" (default: {opt.default})" if opt.default is not None else ""
        metavar = opt.metavar or getattr(opt.parse, "metavar", None) or opt.name.rsplit("_", 1)[-1].upper()
        action = "append" if opt.repeat else "store"
        parser.add_argument(opt.cli, dest=opt.name, action=action, metavar=metavar, help=opt.help + default + note)


def given_values(given: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """{option name: (raw value, where it came from)}: the one statement of precedence. The command line
    beats the GPUBENCH_* environment (an empty variable is unset), which beats the default (RunConfig's)."""
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
    out = {}
    for opt in OPTIONS:
        if opt.name not in values:  # the default: a text one parsed, the suite and --param empty
            default = EMPTY[opt.name]() if opt.name in EMPTY else opt.default
            out[opt.name] = opt.parse(default) if isinstance(default, str) else default
            continue
        raw, where = values[opt.name]
        try:
            out[opt.name] = opt.parse(raw)
        except ValueError as exc:  # worded as ever: `<flag or variable>=<value>: <rule>`
            raise ConfigError(f"{where}={raw!r}: {exc}") from None
    if out["epochs"] is not None and out["steps"] is not None:
        raise ConfigError("--epochs and --steps are mutually exclusive (GPUBENCH_EPOCHS / GPUBENCH_STEPS)")
    return RunConfig(**out)


# --- rendering: launchers (cloud-init env file, SSH runner) write options from this table ---

_BY_NAME = {opt.name: opt for opt in OPTIONS}


def _text_of(opt: Option, value: Any) -> str:
    if opt.flag:
        return "1" if value else "0"
    if isinstance(value, dict):
        value = [f"{k}={v}" for k, v in value.items()]
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _given(values: dict[str, Any]) -> list[tuple[Option, Any, str]]:
    """(option, value, its text) of the options with a value, in the table's order, each text checked by the
    option's parser: a launcher cannot hand the payload a value it would refuse at boot (benchmarks, data and
    the spec file are checked on the host)."""
    unknown = [name for name in values if name not in _BY_NAME]
    if unknown:
        raise KeyError(f"{unknown[0]!r} is not a payload run option; known: {', '.join(_BY_NAME)}")
    given = [
        (opt, values[opt.name], _text_of(opt, values[opt.name])) for opt in OPTIONS if values.get(opt.name) is not None
    ]
    for opt, _, text in given:
        if opt.name in ("benchmark", "data", "workload"):
            continue
        try:
            opt.parse(text)
        except ValueError as exc:
            raise ConfigError(f"{opt.cli} ({opt.env}) {text!r}: {exc}") from None
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
