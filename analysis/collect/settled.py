"""Settled stacks, carried over from the manifest instead of listed and read again: every run directory
holds a final result that parsed, nothing half-uploaded, nothing beside them (manifest says why it is safe)."""

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
    """A stack's run ids in one value: the sum of their 128-bit BLAKE2b (a grown stack's needs only the new)."""
    return f"{DIGEST_KIND}{_hash_sum(run_ids) % _MODULUS:032x}"


def runs_digest_with(digest: str, added: Iterable[str]) -> str | None:
    """The digest once `added` (new run ids) joined; None for a digest of another kind."""
    if not digest.startswith(DIGEST_KIND):
        return None
    return f"{DIGEST_KIND}{(int(digest[len(DIGEST_KIND) :], 16) + _hash_sum(added)) % _MODULUS:032x}"


def _hash_sum(run_ids: Iterable[str]) -> int:
    blake2b, number = hashlib.blake2b, int.from_bytes
    return sum([number(blake2b(r.encode(), digest_size=16).digest(), "little") for r in run_ids])


def replay(summary: Summary, stack: SettledStack) -> None:
    """Count a settled stack carried over: its runs (not read again) and the files set aside in it."""
    summary.settled_stacks += 1
    summary.runs += stack.runs
    summary.cached += stack.runs
    summary.skipped.extend(stack.notes)


def settled_stack(objects: dict, status_of: Callable[[str], str | None], notes: list[dict], now: float):
    """The SettledStack of a stack's listing (`objects`), None unless every run directory has a result
    with a final status (`status_of(key)`), nothing is half-uploaded and nothing lies beside them."""
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
