"""Workloads you bring: a YAML spec (payload.workloads.spec), metrics read from
the job's output (payload.workloads.metrics) and a job (payload.workloads.job) that payload.run.Run
turns into a result like any built-in benchmark's."""

from payload.workloads.job import WorkloadJob
from payload.workloads.spec import WorkloadSpec, WorkloadSpecError, load_spec

__all__ = ["WorkloadJob", "WorkloadSpec", "WorkloadSpecError", "load_spec"]
