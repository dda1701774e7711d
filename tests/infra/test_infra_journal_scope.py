"""What an instance may do in its stack's results journal (`journal/<stack>/<stamp>-<run id>`),
judged the way the clouds judge it: the AWS policy's resource patterns and conditions evaluated
against real keys (a `*` matches any characters, `/` included, as in IAM), and the GCP
condition's `startsWith` clauses against real object names. The keys come from the payload's
own layout and run ids, so the grant is checked against what the writer will write."""

from __future__ import annotations

import fnmatch
import json
import re

import pytest

from infra.aws.component import results_policy
from infra.gcp.component import own_runs_condition
from infra.results_ref import journal_prefix_beside
from payload.identity import make_run_id
from payload.layout import journal_key, journal_run, result_key

LAUNCH = "L20300101T000000Z"
OTHER_LAUNCH = "L20300102T000000Z"
WHEN = 1_900_000_000.123456


def _run(launch: str | None, bench: str = "matmul") -> str:
    return make_run_id(1_899_999_000.0, "i-0abc", bench, launch=launch)


def _condition_holds(condition: dict, *, if_none_match: bool, list_prefix: str | None) -> bool:
    """The two condition forms the policy uses; anything else fails the test instead of passing it."""
    holds = True
    for operator, keys in condition.items():
        for key, value in keys.items():
            if (operator, key) == ("Null", "s3:if-none-match"):
                holds &= (value == "true") != if_none_match
            elif (operator, key) == ("StringLike", "s3:prefix"):
                holds &= list_prefix is not None and any(fnmatch.fnmatchcase(list_prefix, v) for v in value)
            else:
                raise AssertionError(f"condition {operator} {key} is not modelled here")
    return holds


def s3_allows(policy: str, action: str, bucket: str, key: str = "", **request) -> bool:
    """Whether an identity policy allows `action` on `key` (or, for s3:ListBucket, on the bucket)."""
    arn = f"arn:aws:s3:::{bucket}" if action == "s3:ListBucket" else f"arn:aws:s3:::{bucket}/{key}"
    request = {"if_none_match": False, "list_prefix": None, **request}
    for st in json.loads(policy)["Statement"]:
        assert st["Effect"] == "Allow" and "[" not in json.dumps(st["Resource"])  # fnmatch's [..] is not IAM's
        resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        if (
            st["Action"] == action
            and any(fnmatch.fnmatchcase(arn, r) for r in resources)
            and _condition_holds(st.get("Condition", {}), **request)
        ):
            return True
    return False


def gcs_allows(condition: dict, bucket: str, name: str) -> bool:
    """Whether an object name satisfies the condition, a disjunction of `resource.name.startsWith` clauses."""
    clauses = condition["expression"].split(" || ")
    prefixes = [re.fullmatch(r'resource\.name\.startsWith\("([^"]*)"\)', c) for c in clauses]
    assert all(prefixes), f"not a startsWith disjunction: {condition['expression']}"
    resource = f"projects/_/buckets/{bucket}/objects/{name}"
    return any(resource.startswith(m[1]) for m in prefixes)


def _put(policy: str, key: str, bucket: str = "b") -> bool:
    return s3_allows(policy, "s3:PutObject", bucket, key, if_none_match=True)


@pytest.mark.parametrize("root", ["", "team/bench/"])
def test_aws_launch_creates_only_its_own_entries_in_its_stacks_journal(root):
    policy = results_policy("b", f"{root}runs/s/", f"{root}code/", LAUNCH)
    mine = root + journal_key("s", _run(LAUNCH), WHEN)
    assert _put(policy, mine)
    assert not s3_allows(policy, "s3:PutObject", "b", mine)  # without If-None-Match: could overwrite
    assert not _put(policy, root + journal_key("s", _run(OTHER_LAUNCH), WHEN))  # another launch's run
    assert not _put(policy, root + journal_key("s2", _run(LAUNCH), WHEN))  # a stack whose name extends ours
    assert not _put(policy, root + journal_key("other", _run(LAUNCH), WHEN))
    if root:
        assert not _put(policy, journal_key("s", _run(LAUNCH), WHEN))  # outside the results root
    # nothing but creating: no read, no tagging, no delete, no listing of the journal
    for action in ("s3:GetObject", "s3:PutObjectTagging", "s3:DeleteObject"):
        assert not s3_allows(policy, action, "b", mine, if_none_match=True)
    assert not s3_allows(policy, "s3:ListBucket", "b", list_prefix=journal_prefix_beside(f"{root}runs/s/"))
    assert not s3_allows(policy, "s3:ListBucket", "b", list_prefix=f"{root}journal/")
    # the runs grant is what it was: its own launch's results, create-only
    assert _put(policy, root + result_key("s", _run(LAUNCH)))
    assert not _put(policy, root + result_key("s", _run(OTHER_LAUNCH)))


def test_aws_pattern_admits_keys_that_no_collect_reads():
    """`*` crosses `/` in an S3 ARN, so odd keys carrying `-<launch>-` pass the grant; the
    journal's reader rejects each of them, and none reaches outside the stack's journal."""
    policy = results_policy("b", "runs/s/", None, LAUNCH)
    for odd in (f"journal/s/x/y-{LAUNCH}-z", f"journal/s/not-a-stamp-{LAUNCH}-r"):
        assert _put(policy, odd) and journal_run(odd, "s") is None
    for outside in (f"journal/other/x-{LAUNCH}-z", f"journal/s-{LAUNCH}-z/y", f"runs/other/x-{LAUNCH}-z"):
        assert not _put(policy, outside)


def test_aws_recurring_stack_creates_any_entry_of_its_stack_only():
    policy = results_policy("b", "runs/s/", None, None)
    assert _put(policy, journal_key("s", _run(None), WHEN))
    assert _put(policy, journal_key("s", _run(LAUNCH), WHEN))
    assert not _put(policy, journal_key("s2", _run(None), WHEN))
    assert not s3_allows(policy, "s3:PutObject", "b", journal_key("s", _run(None), WHEN))
    assert not s3_allows(policy, "s3:GetObject", "b", journal_key("s", _run(None), WHEN))


@pytest.mark.parametrize("launch", [LAUNCH, None])
@pytest.mark.parametrize("root", ["", "team/bench/"])
def test_gcp_runner_creates_in_its_stacks_journal_only(root, launch):
    """Stack-scoped on GCP: the launch sits mid-name, beyond what startsWith can pin."""
    condition = own_runs_condition("b", f"{root}runs/s/", launch)
    assert gcs_allows(condition, "b", root + journal_key("s", _run(launch), WHEN))
    assert gcs_allows(condition, "b", root + journal_key("s", _run(OTHER_LAUNCH), WHEN))
    assert not gcs_allows(condition, "b", root + journal_key("s2", _run(launch), WHEN))
    assert not gcs_allows(condition, "b", root + journal_key("other", _run(launch), WHEN))
    assert not gcs_allows(condition, "c", root + journal_key("s", _run(launch), WHEN))  # another bucket
    if root:
        assert not gcs_allows(condition, "b", journal_key("s", _run(launch), WHEN))
    # the runs clause is what it was
    assert gcs_allows(condition, "b", root + result_key("s", _run(launch)))
    assert gcs_allows(condition, "b", root + result_key("s", _run(OTHER_LAUNCH))) is (launch is None)


@pytest.mark.parametrize(
    ("run_prefix", "journal"),
    [("runs/s/", "journal/s/"), ("team/runs/s/", "team/journal/s/"), ("a/b/runs/aws-g5-1x/", "a/b/journal/aws-g5-1x/")],
)
def test_journal_prefix_sits_beside_the_runs_under_the_same_root(run_prefix, journal):
    assert journal_prefix_beside(run_prefix) == journal


@pytest.mark.parametrize("bad", ["runs/s", "s/", "runs/", "code/", "runs/s/x/", "xruns/s/", "runs/../"])
def test_journal_prefix_refuses_what_is_not_a_stacks_run_prefix(bad):
    with pytest.raises(ValueError, match="run prefix|cannot be part of a bucket key|stack name"):
        journal_prefix_beside(bad)
