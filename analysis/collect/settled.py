"""Settled stacks: what a collect carries over from the manifest instead of
listing and reading it again.

A stack is settled when every run directory in it holds a final result that
parsed, nothing is half-uploaded and nothing lies beside the run
directories (analysis.manifest says why that is safe to trust). Its own
module because deciding what is settled and replaying a settled stack must
agree on one definition."""

from __future__ import annotations

from collections.abc import Callable

from analysis.collect.summary import Summary
from analysis.collect.validation import UNKNOWN_RUN_FILE, run_file_problem
from analysis.manifest import SettledStack
from payload import layout


def replay(summary: Summary, stack: SettledStack) -> None:
    """Count a settled stack carried over from the manifest in `summary`: its
    runs (each one result, not read again) and the files set aside in it."""
    summary.settled_stacks += 1
    summary.runs += stack.runs
    summary.cached += stack.runs
    summary.skipped.extend(stack.notes)


def settled_stack(objects: dict, status_of: Callable[[str], str | None], notes: list[dict], now: float):
    """The SettledStack of one source's stack from its file-by-file listing
    (`objects`, {key: info}), or None when it is not settled: every run
    directory has a result.json whose row has a final status (`status_of(key)`,
    None when it did not parse or was not read this time), no half-uploaded
    file and nothing outside a run directory. Unknown files in run
    directories are allowed. `notes` are the files set aside in it."""
    from analysis.bulk import runs_digest
    from payload.result import FINAL_STATUSES

    runs, with_result = set(), set()
    for key in objects:
        m = layout.parse_key(key)
        if m is None:  # beside the run directories
            return None
        runs.add(m.run_id)
        if m.is_result:
            if status_of(key) not in FINAL_STATUSES:
                return None
            with_result.add(m.run_id)
        elif (why := run_file_problem(m.rest)) is not None and why != UNKNOWN_RUN_FILE:
            return None  # an upload in progress
    if not runs or runs != with_result:
        return None
    return SettledStack(len(runs), runs_digest(runs), tuple(notes), now)
