"""The spec-ratio model and the public throughput tables it is calibrated on. With alpha a job's compute-bound
share (0..1), C the peak compute and B the memory bandwidth, rate_t / rate_s = (C_t / C_s) ** alpha *
(B_t / B_s) ** (1 - alpha); N GPUs run at N * E ** log2(N) times one (E: the efficiency of doubling).
docs/bench-method.md, section 5. The tables (data/*.csv, each row with its table's URL at a commit, the
commit's date and the license) set the prior alpha per family and precision, E, and the leave-one-out
errors that set the interval.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

# The compute figure each precision runs at, first present wins: mixed precision on tensor
# cores (FP16/BF16), FP32 training as TF32 on tensor cores where the GPU has them (what the
# frameworks' Ampere-and-later defaults and the calibration tables use), CUDA-core FP32 before.
COMPUTE_FIGURES = {
    "mixed": ("fp16_tensor_tflops", "fp32_tflops"),
    "fp32": ("tf32_tflops", "fp32_tflops"),
}
PRECISIONS = tuple(COMPUTE_FIGURES)
ANY_FAMILY = "any"  # the prior fitted on every model family (calibration.priors)
BANDWIDTH = "memory_bandwidth_gbs"


class NotPredictable(ValueError):
    """A GPU lacks the datasheet figures the model needs; the message names them."""


def figures(spec: Any, precision: str) -> tuple[float, float]:
    """(peak compute in TFLOPS, bandwidth in GB/s) of a catalog GpuSpec for `precision`."""
    names = COMPUTE_FIGURES[precision]
    compute = next((getattr(spec, n) for n in names if getattr(spec, n, None)), None)
    bandwidth = getattr(spec, BANDWIDTH, None)
    missing = ([" or ".join(names)] if not compute else []) + ([BANDWIDTH] if not bandwidth else [])
    if missing:
        note = f" ({spec.spec_note})" if getattr(spec, "spec_note", "") else ""
        raise NotPredictable(f"the catalog has no {' and no '.join(missing)} for {spec.model}{note}")
    return float(compute), float(bandwidth)


def log_ratios(source: Any, target: Any, precision: str) -> tuple[float, float]:
    """(ln C_t/C_s, ln B_t/B_s): the two regressors of the model."""
    c_s, b_s = figures(source, precision)
    c_t, b_t = figures(target, precision)
    return math.log(c_t / c_s), math.log(b_t / b_s)


def ratio(alpha: float, x_compute: float, x_bandwidth: float) -> float:
    """rate_t / rate_s for a job alpha compute-bound."""
    return math.exp(alpha * x_compute + (1.0 - alpha) * x_bandwidth)


def fit_alpha(pairs: Sequence[tuple[float, float, float]], prior: float, weight: float) -> float:
    """The alpha that best explains (ln C ratio, ln B ratio, ln rate ratio) pairs, pulled toward `prior`:
    least squares on y - x_b = alpha * (x_c - x_b) plus weight * (alpha - prior)^2, clipped to [0, 1]."""
    num = weight * prior + math.fsum((xc - xb) * (y - xb) for xc, xb, y in pairs)
    den = weight + math.fsum((xc - xb) ** 2 for xc, xb, _ in pairs)
    return min(1.0, max(0.0, num / den)) if den > 0 else prior


def machine_factor(gpus: int, efficiency: float) -> float:
    """A machine of `gpus` GPUs runs this many times one GPU's rate."""
    return gpus * efficiency ** math.log2(gpus)


DATA_DIR = Path(__file__).resolve().parent / "data"
# The prior pulls a family's alpha toward its precision's (and that toward one half) with the
# weight of this many squared log-units of evidence: a family with few tables leans on its precision.
PRIOR_WEIGHT = 0.05
# A family gets a prior of its own from this many workloads up; below, one odd workload would set it
# (held out, the two "language" tables predict each other 60-160 % off), so it takes every family's.
MIN_FAMILY_WORKLOADS = 4
# Published rates of one model on one GPU differ between software stacks: ResNet-50 mixed precision
# on a V100 trains at 1,200 img/s in NVIDIA's DeepLearningExamples PyTorch table (shipped,
# dle_training.csv) and at 833 img/s in Lambda's benchmarks (github.com/lambdal/deeplearning-benchmark,
# pytorch/pytorch-train-throughput-fp16.csv at aa5addb6a53675a649a80036dad548f1c27cbcc4, row
# "LambdaCloud V100 16GB", column resnet50; the repository states no license, so it is quoted, not
# shipped). No interval is narrower than that spread, high end over low end.
STACK_SPREAD = 1200.0 / 833.0
INTERVAL_QUANTILE = 0.9  # the interval holds this share of the calibration's own errors


@dataclass(frozen=True)
class Row:
    """One published figure: a workload's rate on a machine of `gpu_count` GPUs of a catalog model."""

    workload: str
    family: str
    precision: str
    gpu: str
    gpu_count: int
    throughput: float
    column: str  # the table's column, with its unit
    source_url: str
    commit: str
    date: str
    license: str


def load_rows(paths: Iterable[Path] | None = None) -> list[Row]:
    """Every shipped row (or those of `paths`)."""
    rows = []
    for path in sorted(paths if paths is not None else DATA_DIR.glob("*.csv")):
        with open(path, newline="") as handle:
            rows += [
                Row(**raw | {"gpu_count": int(raw["gpu_count"]), "throughput": float(raw["throughput"])})
                for raw in csv.DictReader(handle)
            ]
    return rows


def sources(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """What the rows were read from: one entry per repository commit, with its license and row count."""
    found: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        repo = r.source_url.split("/blob/")[0]
        entry = found.setdefault((repo, r.commit), {"repository": repo, "commit": r.commit, "date": r.date})
        entry["license"], entry["rows"] = r.license, entry.get("rows", 0) + 1
        entry.setdefault("gpus", set()).add(r.gpu)
    return [{**e, "gpus": sorted(e["gpus"])} for e in found.values()]


def tables(rows: Sequence[Row]) -> dict[tuple[str, str], dict[str, float]]:
    """(workload, precision) -> {gpu: one GPU's rate}."""
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r.gpu_count == 1:
            out[(r.workload, r.precision)][r.gpu] = r.throughput
    return dict(out)


def _families(rows: Sequence[Row]) -> dict[str, str]:
    return {r.workload: r.family for r in rows}


def _ratios(specs: dict[str, Any], source: str, target: str, precision: str) -> tuple[float, float] | None:
    """log_ratios of two GPUs, None when either lacks the figures."""
    try:
        return log_ratios(specs[source], specs[target], precision)
    except (KeyError, NotPredictable):
        return None


def priors(rows: Sequence[Row], specs: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(family, precision) -> alpha, for families with enough workloads and for ANY_FAMILY."""
    family = _families(rows)
    grouped: dict[tuple[str, str], list] = defaultdict(list)
    for (workload, precision), rates in tables(rows).items():
        # every ordered pair of GPUs in the table as (ln C ratio, ln B ratio, ln rate ratio)
        pairs = [
            (*x, math.log(rates[t] / rates[s]))
            for s in rates
            for t in rates
            if s != t and (x := _ratios(specs, s, t, precision))
        ]
        grouped[(family[workload], precision)] += pairs
        grouped[(ANY_FAMILY, precision)] += pairs
    workloads = Counter(family.values())  # family is workload -> its family: one count per workload
    out = {}
    for precision in {p for _, p in grouped}:
        out[(ANY_FAMILY, precision)] = fit_alpha(grouped[(ANY_FAMILY, precision)], 0.5, PRIOR_WEIGHT)
    for (fam, precision), pairs in grouped.items():
        if fam != ANY_FAMILY and workloads[fam] >= MIN_FAMILY_WORKLOADS:
            out[(fam, precision)] = fit_alpha(pairs, out[(ANY_FAMILY, precision)], PRIOR_WEIGHT)
    return out


def prior_alpha(table: dict[tuple[str, str], float], family: str, precision: str) -> tuple[float, str]:
    """The prior for a job, and which group it came from."""
    if family != ANY_FAMILY and (family, precision) in table:
        return table[(family, precision)], f"{family}, {precision}"
    return table.get((ANY_FAMILY, precision), 0.5), f"every family, {precision}"


def scaling_efficiency(rows: Sequence[Row]) -> float:
    """E in N * E ** log2(N): the median over tables of (rate_N / (N * rate_1)) ** (1 / log2 N)."""
    one = {(r.workload, r.precision, r.gpu): r.throughput for r in rows if r.gpu_count == 1}
    found = [
        (r.throughput / (r.gpu_count * one[key])) ** (1.0 / math.log2(r.gpu_count))
        for r in rows
        if r.gpu_count > 1 and (key := (r.workload, r.precision, r.gpu)) in one
    ]
    return min(1.0, quantile(found, 0.5)) if found else 1.0


@dataclass(frozen=True)
class Held:
    """One leave-one-out prediction: `gpu`'s rate in a table predicted from `source`'s."""

    workload: str
    precision: str
    gpu: str
    source: str
    predicted: float
    actual: float

    @property
    def error(self) -> float:
        return self.predicted / self.actual - 1.0


def leave_one_out(rows: Sequence[Row], specs: dict[str, Any]) -> list[Held]:
    """Each GPU of each table predicted from each other GPU of it, the priors fitted on the other workloads."""
    family = _families(rows)
    out = []
    for (workload, precision), rates in sorted(tables(rows).items()):
        others = [r for r in rows if r.workload != workload]
        alpha, _ = prior_alpha(priors(others, specs), family[workload], precision)
        out += [
            Held(workload, precision, gpu, source, rate * ratio(alpha, *x), actual)
            for gpu, actual in rates.items()
            for source, rate in rates.items()
            if source != gpu and (x := _ratios(specs, source, gpu, precision))
        ]
    return out


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def interval_factor(held: Sequence[Held]) -> float:
    """k such that [rate / k, rate * k] holds INTERVAL_QUANTILE of the leave-one-out errors (k * k >= STACK_SPREAD)."""
    logs = [abs(math.log(h.predicted / h.actual)) for h in held]
    fitted = math.exp(quantile(logs, INTERVAL_QUANTILE)) if logs else math.inf
    return max(fitted, math.sqrt(STACK_SPREAD))


@dataclass(frozen=True)
class Calibration:
    """Everything the model takes from the tables."""

    rows: tuple[Row, ...]
    priors: dict[tuple[str, str], float]
    efficiency: float
    held: tuple[Held, ...]
    factor: float

    @property
    def gpus(self) -> list[str]:
        return sorted({r.gpu for r in self.rows})

    @property
    def families(self) -> list[str]:
        return sorted({r.family for r in self.rows})


def calibrate(rows: Sequence[Row], specs: dict[str, Any]) -> Calibration:
    held = leave_one_out(rows, specs)
    return Calibration(tuple(rows), priors(rows, specs), scaling_efficiency(rows), tuple(held), interval_factor(held))


@lru_cache(maxsize=1)
def shipped(specs_key: tuple) -> Calibration:
    """The calibration on the shipped tables (cached per set of specs)."""
    return calibrate(load_rows(), dict(specs_key))
