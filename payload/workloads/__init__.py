"""Workloads you bring: a YAML spec (payload.workloads.spec), metrics read from
the job's output (payload.workloads.metrics) and a runner that turns one run
into a result like any built-in benchmark's (payload.workloads.runner)."""

from payload.workloads.runner import WorkloadRun
from payload.workloads.spec import WorkloadSpec, WorkloadSpecError, load_spec, parse_spec

__all__ = ["WorkloadRun", "WorkloadSpec", "WorkloadSpecError", "load_spec", "parse_spec"]
