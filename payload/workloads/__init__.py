"""Workloads you bring: the task file (spec), the job (job) and what is read from its output (metrics)."""
