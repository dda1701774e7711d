"""The spec-ratio model: with alpha a job's compute-bound share (0..1), C the peak compute and B the
memory bandwidth, rate_t / rate_s = (C_t / C_s) ** alpha * (B_t / B_s) ** (1 - alpha); N GPUs run at
N * E ** log2(N) times one (E: the efficiency of doubling). docs/bench-method.md, section 5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
