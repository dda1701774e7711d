"""A process's own peak resident memory.

`resource.getrusage(RUSAGE_SELF).ru_maxrss` is not it for a child process: Linux
keeps the high-water mark across fork and exec, so a child started by a
benchmark that holds 500 MB reports at least 500 MB. `VmHWM` in
/proc/self/status belongs to the process's own address space, new at exec.
"""

from __future__ import annotations

import resource


def peak_rss_kb() -> int:
    """This process's peak RSS in KiB (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
