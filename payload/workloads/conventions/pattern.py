"""A regular expression of the task file's, for output no built-in convention reads.

    progress:
      pattern: '\\| epoch +(?P<epoch>\\d+) \\| +(?P<step>\\d+)/ *(?P<steps_per_epoch>\\d+) batches'
      samples_per_step: 20

Named groups: `step` (steps or batches done in the epoch, or in the job), `steps_per_epoch`,
`epoch`, `samples` (cumulative samples). A line matching `epoch_end` (default: `end of epoch`)
is an epoch boundary.
"""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Reading, bounded

NAME = "pattern"
GROUPS = ("step", "steps_per_epoch", "epoch", "samples")
EPOCH_END = r"(?i)\bend of epoch\b"


def compile_pattern(text: str, groups: bool = True) -> re.Pattern[str]:
    """The task file's pattern (with `groups`, its named groups too), checked: ValueError names the fix."""
    try:
        rx = re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    if not groups:
        return rx
    named = set(rx.groupindex)
    if not named & {"step", "samples"}:
        raise ValueError(
            f"no named group `step` or `samples` among {sorted(named) or 'none'}: name the counter, "
            r"e.g. (?P<step>\d+)/(?P<steps_per_epoch>\d+)"
        )
    unknown = sorted(named - set(GROUPS))
    if unknown:
        raise ValueError(f"unknown named group {unknown[0]!r}; the groups read are {', '.join(GROUPS)}")
    return rx


class Pattern:
    """One task file's pattern as a convention."""

    name = NAME

    def __init__(self, pattern: str, epoch_end: str | None = None):
        self.rx = compile_pattern(pattern)
        self.end = re.compile(epoch_end or EPOCH_END)
        self.expects = f"a line matching {pattern!r}"

    def read(self, line: str) -> Reading | None:
        if m := self.rx.search(line):
            groups = m.groupdict()
            return Reading(
                step=bounded(groups.get("step"), whole=True),
                steps_per_epoch=bounded(groups.get("steps_per_epoch"), whole=True),
                epoch=bounded(groups.get("epoch"), whole=True),
                samples=bounded(groups.get("samples"), whole=True),
            )
        if self.end.search(line):
            return Reading(boundary="epoch")
        return None
