"""Checks a run's settings before anything runs: every benchmark's --param values, no parameter
that none of them takes, and a workload spec that loads. `python -m payload run` calls it first,
so a typo fails in a second with the option's name instead of after a model is built."""

from __future__ import annotations

from payload.benchmarks import ParamError, get
from payload.config import RunConfig
from payload.workloads import load_spec


def check_run(cfg: RunConfig) -> None:
    """Raise ParamError, ConfigError or ValueError naming the bad setting; return when the run can start."""
    for name in cfg.benchmark:  # bad --param values fail before anything runs
        get(name).run_params(cfg)
    unknown = [k for k in cfg.param if not any(k in get(n).defaults for n in cfg.benchmark)]
    if unknown:
        raise ParamError(
            f"--param {unknown[0]!r} is not a parameter of {', '.join(cfg.benchmark)} (see `python -m payload list`)"
        )
    if cfg.workload:
        load_spec(cfg.workload)  # a bad spec fails here, naming the field, before anything runs
