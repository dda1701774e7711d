"""Reading a run's files as every reader of a run does: the newest version of each.

A file a run writes again gets a new name each time (payload.layout: `log-tail.txt`, then
`log-tail.v0.1.txt`, ...); a job that runs past the first upload of its log tail leaves the
final tail under a versioned name, so a test that opens `log-tail.txt` itself reads an early one.
"""

from __future__ import annotations

from pathlib import Path

from payload.layout import newest_versions


def final_log_tail(run_dir: Path) -> str:
    """The text of a run's last log tail (the newest version of log-tail.txt in `run_dir`)."""
    names = [p.name for p in run_dir.glob("log-tail*.txt")]
    return (run_dir / newest_versions(names)["log-tail.txt"]).read_text()
