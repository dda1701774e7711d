"""Per-run write scope of the instance's role, for the stacks whose launches share one role: a
recurring stack's instances set their deadline at boot, so there is no launch id to pin; they
may still only create (never overwrite, never delete) under their stack's runs. Rendered
under Pulumi mocks, with the policy builders' own launch-scoped form beside them."""

from __future__ import annotations

import json

import pytest
from infra_matrix import NOW
from test_infra_recurring import recurring_config as aws_recurring
from test_infra_recurring_gcp import recurring_config as gcp_recurring

from infra.aws.component import results_policy
from infra.catalog import load_catalog
from infra.gcp.component import own_runs_condition
from infra.render import render

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _render(stack: str, config: dict):
    return render(stack, config, load_catalog(), now=NOW)


def test_aws_recurring_role_creates_only_under_its_stack_and_deletes_nothing():
    stack = "recurring-aws-g4dn-1x-spot"
    r = _render(stack, aws_recurring())
    policy = json.loads(
        next(x for x in r.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "results-access").inputs["policy"]
    )
    by_sid = {st["Sid"]: st for st in policy["Statement"]}
    create = by_sid["OwnRunsCreateOnly"]
    assert create["Action"] == "s3:PutObject" and create["Resource"].endswith(f"/runs/{stack}/*")
    assert create["Condition"] == {"Null": {"s3:if-none-match": "false"}}
    journal = by_sid["OwnJournalCreateOnly"]
    bucket_arn = create["Resource"].removesuffix(f"/runs/{stack}/*")
    assert journal["Action"] == "s3:PutObject" and journal["Resource"] == f"{bucket_arn}/journal/{stack}/*"
    assert journal["Condition"] == create["Condition"]
    assert not any("Delete" in json.dumps(st) for st in policy["Statement"])
    assert "GPUBENCH_LAUNCH_ID" not in json.dumps(r.one("aws:ec2/launchTemplate:LaunchTemplate").inputs)


def test_gcp_recurring_account_creates_only_under_its_stack():
    stack = "recurring-gcp-t4-1x-spot"
    r = _render(stack, gcp_recurring())
    (grant,) = [g.inputs for g in r.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")]
    assert grant["role"] == "roles/storage.objectCreator"
    objects = f"projects/_/buckets/{grant['bucket']}/objects"
    assert grant["condition"]["expression"] == (
        f'resource.name.startsWith("{objects}/runs/{stack}/") || resource.name.startsWith("{objects}/journal/{stack}/")'
    )


def test_the_launch_narrows_both_clouds_to_its_own_runs():
    policy = json.loads(results_policy("b", "runs/s/", "code/", "L20300101T000000Z"))
    resources = {st["Sid"]: st["Resource"] for st in policy["Statement"]}
    assert resources["OwnRunsCreateOnly"] == "arn:aws:s3:::b/runs/s/L20300101T000000Z-*"
    assert resources["OwnCheckpointsTag"] == "arn:aws:s3:::b/runs/s/L20300101T000000Z-*/checkpoints/*"
    assert resources["CheckpointsRead"] == "arn:aws:s3:::b/runs/s/*/checkpoints/*"
    assert resources["OwnJournalCreateOnly"] == "arn:aws:s3:::b/journal/s/*-L20300101T000000Z-*"
    condition = own_runs_condition("b", "runs/s/", "L20300101T000000Z")
    assert condition["expression"] == (
        'resource.name.startsWith("projects/_/buckets/b/objects/runs/s/L20300101T000000Z-")'
        ' || resource.name.startsWith("projects/_/buckets/b/objects/journal/s/")'
    )
