"""A settled stack's run digest: the same for the same run ids in any order, different
for different ones, and extended by new runs alone to what the whole stack hashes to."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from analysis.collect.manifest import DIGEST_KIND, runs_digest, runs_digest_with

RUN_IDS = st.sets(st.from_regex(r"20[0-9]{6}T[0-9]{6}Z-[a-z0-9-]{1,20}", fullmatch=True), max_size=40)


@given(RUN_IDS, RUN_IDS)
def test_extending_by_new_runs_equals_hashing_the_whole_stack(old, more):
    added = more - old
    whole = runs_digest(sorted(old | added))
    assert runs_digest_with(runs_digest(old), added) == whole == runs_digest(list(reversed(sorted(old | added))))
    assert runs_digest(list(old | added)) == whole


@given(RUN_IDS, RUN_IDS)
def test_different_run_ids_have_different_digests(a, b):
    assert (runs_digest(a) == runs_digest(b)) == (a == b)


def test_a_digest_of_no_known_kind_is_never_extended_and_matches_nothing():
    runs = ["20250101T000000Z-i-1-resnet50", "20250102T000000Z-i-2-resnet50"]
    other = hashlib.sha256("\n".join(sorted(runs)).encode()).hexdigest()
    assert runs_digest_with(other, ["20250103T000000Z-i-3-resnet50"]) is None
    assert runs_digest(list(reversed(runs))) != other
    assert runs_digest(runs).startswith(DIGEST_KIND) and runs_digest(runs) != runs_digest(runs[:1])


def test_a_stack_settles_only_when_every_run_has_a_final_result_and_nothing_else_lies_there():
    from analysis.collect.manifest import settled_stack

    runs = ["20250101T000000Z-i-1-resnet50", "20250102T000000Z-i-2-resnet50"]
    results = {f"runs/s/{r}/result.json": "completed" for r in runs}

    def judge(*extra: str, status: str = "completed"):
        objects = dict.fromkeys([*results, *extra])
        return settled_stack(objects, lambda key: status if key in results else None, [], 1.0)

    whole = judge(f"runs/s/{runs[0]}/notes.txt")  # an unknown file in a run directory: set aside, still settled
    assert (whole.runs, whole.digest, whole.listed_at) == (2, runs_digest(runs), 1.0)
    assert judge(f"runs/s/{runs[0]}/result.json.tmp") is None  # an upload in progress
    assert judge("runs/s/stray.txt") is None  # beside the run directories
    assert judge("runs/s/20250103T000000Z-i-3-resnet50/events.jsonl") is None  # a run without its result yet
    assert judge(status="interrupted") is None  # a run that will resume
    assert settled_stack({}, lambda key: None, [], 1.0) is None  # no run at all
