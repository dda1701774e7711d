"""Settled stacks: what a collect carries over from the manifest instead of
listing and reading it again. A stack is settled when every run directory in
it holds a final result that parsed, nothing is half-uploaded and nothing lies
beside the run directories (analysis.collect.manifest says why that is safe)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from analysis.collect.manifest import SettledStack
from analysis.collect.summary import Summary
from analysis.collect.validation import UNKNOWN_RUN_FILE, run_file_problem
from payload import layout
from payload.result import FINAL_STATUSES

DIGEST_KIND = "sum128:"  # a digest without it (a damaged record) is never extended and matches nothing
_MODULUS = 1 << 128


def runs_digest(run_ids: Iterable[str]) -> str:
    """A stack's run directories in one value, what its next listing is compared with: the sum of
    each run id's 128-bit BLAKE2b, so a grown stack's digest needs only the new runs (runs_digest_with)."""
    return f"{DIGEST_KIND}{_hash_sum(run_ids) % _MODULUS:032x}"


def runs_digest_with(digest: str, added: Iterable[str]) -> str | None:
    """The digest of a stack's run ids once `added` (ones it did not have) joined
    them, from its digest before; None for a digest of another kind."""
    if not digest.startswith(DIGEST_KIND):
        return None
    return f"{DIGEST_KIND}{(int(digest[len(DIGEST_KIND) :], 16) + _hash_sum(added)) % _MODULUS:032x}"


def digest_matches(run_ids: list[str], digest: str) -> bool:
    """Whether `digest` is that of `run_ids` (a digest of no known kind matches nothing: the stack is read again)."""
    return runs_digest(run_ids) == digest


def _hash_sum(run_ids: Iterable[str]) -> int:
    blake2b, number = hashlib.blake2b, int.from_bytes
    return sum([number(blake2b(r.encode(), digest_size=16).digest(), "little") for r in run_ids])


def replay(summary: Summary, stack: SettledStack) -> None:
    """Count a settled stack carried over from the manifest in `summary`: its
    runs (each one result, not read again) and the files set aside in it."""
    summary.settled_stacks += 1
    summary.runs += stack.runs
    summary.cached += stack.runs
    summary.skipped.extend(stack.notes)


def settled_stack(objects: dict, status_of: Callable[[str], str | None], notes: list[dict], now: float):
    """The SettledStack of one source's stack from its file-by-file listing (`objects`), or
    None when it is not settled: every run directory has a result.json whose row has a final
    status (`status_of(key)`), no half-uploaded file and nothing outside a run directory
    (unknown files in run directories are allowed). `notes`: the files set aside in it."""
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
