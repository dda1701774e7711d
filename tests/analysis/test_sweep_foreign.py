"""The sweepers act only on this project's resources: an instance that carries the
expiry tag and a stack tag, but another project's id or a stack name outside the
project's convention (`prod-database-NOT-OURS`), is left alone and reported; the
local sweep, the recurring rule and the cloud-side function apply the same rule.
Against moto EC2 and the fake Compute API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_sweep_aws import NOW, PAST, Cloud, aws_env  # noqa: F401  (fixture)
from test_sweep_gcp import PAST as GCP_PAST
from test_sweep_gcp import PROJECT, compute  # noqa: F401  (fixture)

from infra import sweeper_function
from infra.aws import sweep as sweep_aws
from infra.gcp import sweep as sweep_gcp
from infra.tags import BadProjectId, is_project_stack, project_id

FOREIGN_STACK = "prod-database-NOT-OURS"


def aws_tags(**values):
    return [{"Key": f"gpubench:{k}", "Value": v} for k, v in values.items()]


def test_stack_name_convention_and_project_id():
    for ours in ("aws-p3-8x", "aws-g4dn-1x-spot", "recurring-aws-g4dn-1x-spot"):
        assert is_project_stack(ours, "aws"), ours
    for theirs in (FOREIGN_STACK, "prod-database", "aws-results", "gcp-v100-1x", "AWS-P3-8X", "aws-", "aws", None):
        assert not is_project_stack(theirs, "aws"), theirs
    assert project_id({}) == "gpubench" and project_id({"GPUBENCH_PROJECT_ID": "team-a"}) == "team-a"
    with pytest.raises(BadProjectId, match="GPUBENCH_PROJECT_ID='Team A!' is not a project id"):
        project_id({"GPUBENCH_PROJECT_ID": "Team A!"})


def test_aws_local_sweep_leaves_foreign_instances_alone(aws_env):  # noqa: F811
    cloud = Cloud(aws_env, "ca-central-1")

    def launch(**values):
        spec = [{"ResourceType": "instance", "Tags": aws_tags(**{"expires-at": PAST, **values})}]
        return cloud.ec2.run_instances(ImageId=cloud.ami, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][
            0
        ]["InstanceId"]

    ours = launch(project="gpubench", stack="aws-p3-8x")
    foreign_stack = launch(project="gpubench", stack=FOREIGN_STACK)
    no_project = launch(stack="aws-p3-8x")
    other_project = launch(project="someone-else", stack="aws-p3-8x")
    actions = sweep_aws.sweep_region(aws_env, "ca-central-1", NOW, dry_run=False, wait_delay=0.1, wait_attempts=5)
    acted = {a.id: a for a in actions}
    assert acted[ours].action == "terminated" and cloud.state(ours) in ("shutting-down", "terminated")
    for iid in (foreign_stack, no_project, other_project):
        assert cloud.state(iid) == "running", iid
        assert acted[iid].action == "left-alone", iid
    assert acted[foreign_stack].reason == f"gpubench:stack={FOREIGN_STACK!r} is not a aws stack name of this project"
    assert acted[no_project].reason == "gpubench:project=None is not this project ('gpubench')"
    assert acted[other_project].reason == "gpubench:project='someone-else' is not this project ('gpubench')"


def test_aws_configured_project_id_decides(aws_env, monkeypatch):  # noqa: F811
    cloud = Cloud(aws_env, "sa-east-1")
    spec = [
        {
            "ResourceType": "instance",
            "Tags": aws_tags(**{"expires-at": PAST, "project": "team-a", "stack": "aws-p3-8x"}),
        }
    ]
    iid = cloud.ec2.run_instances(ImageId=cloud.ami, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][0][
        "InstanceId"
    ]
    first = sweep_aws.sweep(["sa-east-1"], NOW, dry_run=True, session=aws_env)
    assert [a.action for a in first if a.id == iid] == ["left-alone"]
    monkeypatch.setenv("GPUBENCH_PROJECT_ID", "team-a")
    second = sweep_aws.sweep(["sa-east-1"], NOW, dry_run=True, session=aws_env)
    assert [a.action for a in second if a.id == iid] == ["would-terminate"]


def test_aws_recurring_rule_leaves_foreign_instances_alone(aws_env):  # noqa: F811
    cloud = Cloud(aws_env, "eu-north-1")
    spec = [
        {"ResourceType": "instance", "Tags": aws_tags(project="gpubench", stack=FOREIGN_STACK, **{"max-hours": "1"})}
    ]
    out = cloud.ec2.run_instances(ImageId=cloud.ami, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][0]
    later = out["LaunchTime"] + timedelta(hours=5)
    actions = sweep_aws.sweep_recurring_region(aws_env, "eu-north-1", later, dry_run=False)
    assert [(a.id, a.action) for a in actions] == [(out["InstanceId"], "left-alone")]
    assert cloud.state(out["InstanceId"]) == "running"


def test_aws_cloud_side_function_leaves_foreign_instances_alone(aws_env):  # noqa: F811
    cloud = Cloud(aws_env, "ap-northeast-2")
    spec = [
        {"ResourceType": "instance", "Tags": aws_tags(project="gpubench", stack=FOREIGN_STACK, **{"expires-at": PAST})}
    ]
    iid = cloud.ec2.run_instances(ImageId=cloud.ami, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][0][
        "InstanceId"
    ]
    env = {"GPUBENCH_SWEEP_PROVIDER": "aws", "GPUBENCH_SWEEP_REGIONS": "ap-northeast-2"}
    result = sweeper_function.run_sweep(env, now=NOW, session=aws_env)
    assert {a["id"]: a["action"] for a in result["actions"]}[iid] == "left-alone" and result["ok"] is True
    assert cloud.state(iid) == "running"


def test_gcp_sweep_and_function_leave_foreign_vms_alone(compute):  # noqa: F811
    base = {"gpubench-expires-at": GCP_PAST}
    compute.add("us-central1-a", "ours", {**base, "gpubench-project": "gpubench", "gpubench-stack": "gcp-v100-1x"})
    compute.add("us-central1-a", "foreign", {**base, "gpubench-project": "gpubench", "gpubench-stack": "prod-database"})
    compute.add("us-central1-b", "other-project", {**base, "gpubench-project": "x", "gpubench-stack": "gcp-v100-1x"})
    compute.add("us-central1-b", "no-project", {**base, "gpubench-stack": "gcp-v100-1x"})
    env = {"GPUBENCH_SWEEP_PROVIDER": "gcp"}
    result = sweeper_function.run_sweep(env, now=NOW, project=PROJECT)
    acted = {a["id"]: a["action"] for a in result["actions"]}
    assert acted == {
        "ours": "terminated",
        "foreign": "left-alone",
        "other-project": "left-alone",
        "no-project": "left-alone",
    }
    assert compute.deleted == [("us-central1-a", "ours")]
    recurring = {"gpubench-project": "gpubench", "gpubench-stack": "prod-database", "gpubench-max-hours": "1"}
    compute.add("us-central1-a", "foreign-recurring", recurring)
    compute.instances["us-central1-a"]["foreign-recurring"]["creationTimestamp"] = "2024-05-01T00:00:00.000+00:00"
    again = sweep_gcp.sweep(None, NOW, project=PROJECT)
    assert {a.id: a.action for a in again}["foreign-recurring"] == "left-alone"
    assert ("us-central1-a", "foreign-recurring") not in compute.deleted
