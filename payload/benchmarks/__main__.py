"""`python -m payload.benchmarks NAME`: one built-in benchmark as a plain training job, so `gpubench bench`
can probe the same models like any job of yours (docs/workloads.md)::

    python -m payload.benchmarks resnet50 --batch-size 64 --total-samples 115305030
    python -m payload.benchmarks bilstm-sentiment --epochs 4 --data download

Data is synthetic unless ``--data`` says otherwise; it prints `GPUBENCH_METRICS` progress lines
(payload.benchmarks.progress) and a last line with the rate and the final accuracy.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from payload import exitcodes, frameworks, training
from payload.benchmarks import REGISTRY, ParamError, UnknownBenchmark, get
from payload.benchmarks.progress import DEFAULT_EVERY_SECONDS, Progress, keras_callback
from payload.builtin import fit
from payload.config import ConfigError, DataSource

SEED = 1234


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m payload.benchmarks",
        description="Run one built-in benchmark as a plain job that prints GPUBENCH_METRICS progress lines.",
    )
    p.add_argument("name", help=f"the benchmark: {', '.join(REGISTRY)}")
    p.add_argument("--epochs", type=int, help="epochs to train (epoch benchmarks)")
    p.add_argument("--steps", type=int, help="throughput benchmarks: steps in all; epoch benchmarks: steps per epoch")
    p.add_argument(
        "--total-samples",
        type=float,
        metavar="N",
        help="throughput benchmarks: train N samples in all, whatever the GPU count (steps = N / global batch)",
    )
    p.add_argument("--batch-size", type=int, help="per-GPU batch size")
    p.add_argument("--data", default="synthetic", help="synthetic (default, offline), download, or a directory")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a benchmark parameter")
    p.add_argument("--gpus", type=int, help="GPUs to use (default: every visible GPU)")
    p.add_argument("--precision", choices=("fp32", "mixed"), default="fp32", help="fp32 or mixed (float16)")
    p.add_argument(
        "--metrics-every",
        type=float,
        default=DEFAULT_EVERY_SECONDS,
        metavar="SECONDS",
        help=f"seconds between progress lines (default {DEFAULT_EVERY_SECONDS:g}; 0: every step)",
    )
    return p


def _params(bench, args) -> dict:
    """Benchmark defaults, then --param, then the first-class flags (as `payload run` orders them)."""
    pairs = [item.split("=", 1) for item in args.param]
    if any(len(pair) != 2 for pair in pairs):
        raise ParamError(f"--param {args.param}: expected KEY=VALUE, e.g. --param samples=1024")
    if bench.kind != "throughput" and args.total_samples is not None:
        raise ParamError(f"{bench.name} trains epochs: give --epochs (and --steps per epoch), not --total-samples")
    flags = {"batch_size": args.batch_size, "steps": args.steps, "epochs": args.epochs}
    for key, value in flags.items():
        if value is not None and value < 1:
            raise ParamError(f"--{key.replace('_', '-')} {value}: must be at least 1")
    return bench.params(dict(pairs), **flags)


def train(bench, params: dict, source, args) -> dict:
    """Load, build and fit with the payload's own data readers, devices and precision; return the last line."""
    keras = frameworks.keras()
    devices = training.setup_devices(args.gpus, False, backend=os.environ.get("KERAS_BACKEND", "tensorflow"))
    global_batch = params["batch_size"] * devices.replicas
    if args.total_samples is not None:
        params["steps"] = max(1, math.ceil(args.total_samples / global_batch))
    keras.utils.set_random_seed(SEED)
    work = dict(params, seed=SEED)
    data = bench.load_data(source, work, global_batch)
    plan = training.fit_plan(bench.kind, params, 0, 0, params.get("steps") or 1)
    train_ds, val_ds = training.make_datasets(data, global_batch, SEED, plan.steps_per_epoch)
    progress = Progress(global_batch, args.metrics_every)
    callback = keras_callback(progress)
    with training.precision_policy(args.precision):
        with devices.strategy.scope():
            model = bench.build_model(work)
        fit(bench, model, plan, train_ds, val_ds, params, data.train_samples // global_batch, devices, callback)
    return progress.end(callback.last_logs)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    try:
        bench = get(args.name)
        params = _params(bench, args)
        source = DataSource.parse(args.data)
        if args.metrics_every < 0:
            raise ParamError(f"--metrics-every {args.metrics_every}: give seconds >= 0")
    except (UnknownBenchmark, ParamError, ConfigError, ValueError) as exc:  # all before TensorFlow loads
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    try:
        train(bench, params, source, args)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {args.name}: {exc}", file=sys.stderr)
        return exitcodes.FAILED
    return exitcodes.OK


if __name__ == "__main__":
    sys.exit(main())
