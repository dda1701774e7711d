"""The benchmark contract: a benchmark is data (a name, a kind, default parameters) and functions; the
runner owns strategy, precision, timing, checkpoints, preemption and results. Modules import no
framework at import time (``python -m payload list`` stays fast); the helpers below load numpy or Keras
when called.

- ``load_data(source, params, global_batch) -> Data``: ``source`` is the parsed ``--data``; throughput
  benchmarks return one global batch with ``repeat_single_batch=True`` (tf_cnn_benchmarks' synthetic mode).
- ``build_model(params) -> keras.Model``: compiled with an ``accuracy`` metric, built inside the strategy
  scope under the precision policy; output layers compute in float32.
- ``train(model, train_ds, val_ds, run) -> dict`` (optional): timed phases driven through ``run.fit``
  (payload.builtin.PhaseRun), returning ``{"phase_seconds": {..., "total": s}, "final_accuracy": a}``;
  with ``resumable=False`` an interrupted run restarts.
- ``kind``: ``epochs`` (N epochs, held-out accuracy) or ``throughput`` (N steps, samples/s after warm-up).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from payload import frameworks

Kind = Literal["epochs", "throughput"]

# Parameters every epoch benchmark understands (the runner reads them too), and their help.
EPOCH_PARAMS = {"samples": None, "val_samples": None, "steps_per_epoch": None, "warmup_steps": 10}
EPOCH_HELP = {
    "samples": "cap on training samples (default: the full dataset)",
    "val_samples": "cap on held-out samples",
    "steps_per_epoch": "train this many steps per epoch instead of one pass (--steps)",
    "warmup_steps": "steps per attempt excluded from samples/s",
    "epochs": "epochs to train (--epochs)",
    "batch_size": "per-GPU batch size (--batch-size)",
}


class ParamError(ValueError):
    """A bad --param override; names the key and the allowed ones."""


@dataclass
class Data:
    """Arrays for one run. ``transform(x, y)`` (optional) runs inside tf.data per batch."""

    x_train: Any
    y_train: Any
    x_val: Any = None
    y_val: Any = None
    source: str = "synthetic"
    transform: Callable | None = None
    repeat_single_batch: bool = False
    info: dict = field(default_factory=dict)

    @property
    def train_samples(self) -> int:
        return int(len(self.y_train))


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    study: str
    dataset: str
    defaults: Mapping[str, Any]
    load_data: Callable[..., Data]
    build_model: Callable[[dict], Any]
    kind: Kind = "epochs"
    param_help: Mapping[str, str] = field(default_factory=dict)
    # What one training sample is ("tweet", "image", "character window"):
    # throughput is reported in these units, never as "images" for text.
    sample_unit: str = "sample"
    train: Callable[..., dict] | None = None
    resumable: bool = True

    def __post_init__(self) -> None:
        """An epoch benchmark takes EPOCH_PARAMS too, after its own, with their help unless it words its own."""
        if self.kind == "epochs":
            object.__setattr__(self, "defaults", {**self.defaults, **EPOCH_PARAMS})
            object.__setattr__(self, "param_help", {**EPOCH_HELP, **self.param_help})

    def params(self, overrides: Mapping[str, Any] | None = None, *, batch_size=None, steps=None, epochs=None) -> dict:
        """Defaults with overrides coerced to the defaults' types, then the first-class flags given:
        `steps` is a throughput run's total, an epoch run's steps per epoch."""
        params = coerce_params(self.name, self.defaults, overrides or {})
        per_kind = {"steps": steps} if self.kind == "throughput" else {"epochs": epochs, "steps_per_epoch": steps}
        params.update(
            {k: v for k, v in {"batch_size": batch_size, **per_kind}.items() if v is not None and k in params}
        )
        return params

    def run_params(self, cfg) -> dict:
        """The params of a `payload run` (payload.config.RunConfig): the --param values this benchmark takes."""
        own = {k: v for k, v in cfg.param.items() if k in self.defaults}
        return self.params(own, batch_size=cfg.batch_size, steps=cfg.steps, epochs=cfg.epochs)

    def describe(self) -> dict:
        out = {k: getattr(self, k) for k in ("name", "kind", "description", "study", "dataset")}
        extra = {"params": dict(self.defaults), "param_help": dict(self.param_help), "sample_unit": self.sample_unit}
        return {**out, **extra, "phased": self.train is not None}


def units_of(unit: str) -> str:
    """Plural of a sample unit: "tweet" -> "tweets", "character window" -> "character windows"."""
    return unit if unit.endswith("s") else unit + "s"


def _coerce(value: Any, like: Any) -> Any:
    if not isinstance(value, str):
        return value
    if isinstance(like, bool):
        return {"1": True, "true": True, "0": False, "false": False}[value.lower()]
    if isinstance(like, (int, float)):
        return type(like)(value)
    if like is None:  # optional number: int, else float, "none" → None
        if value.lower() in ("none", "null", ""):
            return None
        try:
            return int(value)
        except ValueError:
            return float(value)
    return value


def coerce_params(name: str, defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    params = dict(defaults)
    for key, value in overrides.items():
        if key not in defaults:
            raise ParamError(f"{name}: unknown parameter {key!r}; known: {', '.join(sorted(defaults))}")
        try:
            params[key] = _coerce(value, defaults[key])
        except (ValueError, KeyError):
            raise ParamError(f"{name}: parameter {key}={value!r} must be like {defaults[key]!r}") from None
        problem = _range_problem(key, params[key])
        if problem:
            raise ParamError(f"{name}: parameter {key}={value!r} {problem}")
    return params


# Integer parameters count or size something and must be >= 1, except these, which may be 0.
# Real-valued parameters (learning rates, fractions) must be finite and > 0.
_MAY_BE_ZERO = frozenset({"warmup_steps"})


def _range_problem(key: str, value: Any) -> str | None:
    """Why a coerced parameter value is out of range, or None: caught before any data or model."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return "must be a finite number"
        return None if value > 0 or (value == 0 and key in _MAY_BE_ZERO) else "must be > 0"
    low = 0 if key in _MAY_BE_ZERO else 1
    return f"must be >= {low}" if value < low else None


# --- helpers of the benchmark modules -----------------------------------------------------------------------


def rng_for(params: dict):
    return frameworks.numpy().random.default_rng(params.get("seed", 1234))


def cap(x, y, n):
    return (x, y) if not n else (x[:n], y[:n])


def make_data(x_train, y_train, x_val, y_val, params, source, **kw) -> Data:
    x_train, y_train = cap(x_train, y_train, params.get("samples"))
    x_val, y_val = cap(x_val, y_val, params.get("val_samples"))
    return Data(x_train, y_train, x_val, y_val, source=str(source), **kw)


def n_synthetic(params: dict, full: int) -> int:
    return int(params.get("samples") or full)


def output_layer(units: int, activation: str):
    """Final Dense in float32: softmax/sigmoid stay stable under mixed_float16."""
    return frameworks.keras().layers.Dense(units, activation=activation, dtype="float32")


def compiled(model, optimizer, loss: str = "sparse_categorical_crossentropy"):
    """The model compiled with the `accuracy` metric every benchmark reports."""
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def single_batch(params: dict, global_batch: int, shape: tuple, classes: int) -> Data:
    """tf_cnn_benchmarks-style synthetic input: one batch, repeated forever."""
    np = frameworks.numpy()
    rng = rng_for(params)
    x = rng.random((global_batch, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=global_batch).astype(np.int32)
    return Data(x, y, source="synthetic", repeat_single_batch=True)
