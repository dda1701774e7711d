"""gpubench's per-user places, which the suite points into temporary folders (tests/conftest.py):
the name of each variable and the file or folder it names there."""

USER_STATE_VARIABLES = {
    "GPUBENCH_CACHE": "cache",  # a bucket table's collect manifest, workloads' environments (~/.cache/gpubench)
    "GPUBENCH_KNOWN_HOSTS": "known_hosts",  # SSH host keys recorded on first use (~/.config/gpubench)
    "GPUBENCH_SPOOL": "spool",  # results waiting for their bucket (~/.cache/gpubench/spool)
}
