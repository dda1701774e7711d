"""The leak sweep's rule for recurring launches: an instance launched by a
recurring schedule has no fixed expires-at, only the stack tag and max-hours;
the sweep deletes it once launch time + max-hours + grace has passed (a hung
guest whose own shutdown never fired). Against moto EC2 and the fake Compute API."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from test_sweep_aws import MOTO_AMI, aws_env  # noqa: F401  (aws_env: a fixture)
from test_sweep_gcp import PROJECT, compute  # noqa: F401  (fixture)

from analysis.cli import main
from infra.aws import sweep as sweep_aws
from infra.gcp import sweep as sweep_gcp
from infra.tags import RECURRING_GRACE, parse_max_hours, recurring_deadline


def test_max_hours_format_is_the_launchers():
    assert parse_max_hours("2") == 2.0 and parse_max_hours("1.5") == 1.5 and parse_max_hours("1_5") == 1.5
    for bad in ("", "two", "-1", "1e3", "0.1", "73", "1.5h", "2x"):
        assert parse_max_hours(bad) is None, bad
    t0 = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    assert recurring_deadline(t0, "2") == t0 + timedelta(hours=2) + RECURRING_GRACE
    assert recurring_deadline(t0, "garbled") is None


def run_instance(ec2, ami, tags):
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    out = ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, InstanceType="g4dn.xlarge", TagSpecifications=spec)
    return out["Instances"][0]["InstanceId"], out["Instances"][0]["LaunchTime"]


def state(ec2, iid):
    return ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]


def test_aws_terminates_recurring_launches_past_their_own_deadline(aws_env, capsys):  # noqa: F811
    region = "ap-southeast-2"
    ec2 = aws_env.client("ec2", region_name=region)
    ami = ec2.describe_images(ImageIds=[MOTO_AMI])["Images"][0]["ImageId"]
    ours = {"gpubench:project": "gpubench", "gpubench:stack": "recurring-aws-g4dn-1x-spot", "gpubench:max-hours": "2"}
    hung, launched = run_instance(ec2, ami, ours)
    short = run_instance(ec2, ami, {**ours, "gpubench:max-hours": "4"})[0]
    no_stack = run_instance(ec2, ami, {"gpubench:max-hours": "1"})[0]
    garbled = run_instance(ec2, ami, {**ours, "gpubench:max-hours": "forever"})[0]
    other = run_instance(ec2, ami, {"Name": "prod-db", "max-hours": "1"})[0]
    now = launched + timedelta(hours=3)  # past 2 h + grace, before 4 h

    code = main(["sweep", "--provider", "aws", "--region", region, "--now", now.isoformat(), "--json", "--dry-run"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and state(ec2, hung) == "running"
    assert {a["id"]: a["action"] for a in doc["actions"]}[hung] == "would-terminate"

    code = main(["sweep", "--provider", "aws", "--region", region, "--now", now.isoformat(), "--json", "--yes"])
    doc = json.loads(capsys.readouterr().out)
    acted = {a["id"]: a for a in doc["actions"]}
    assert code == 0 and state(ec2, hung) in ("shutting-down", "terminated")
    for iid in (short, no_stack, garbled, other):
        assert state(ec2, iid) == "running", iid
    assert acted[hung]["action"] == "terminated" and acted[hung]["stack"] == ours["gpubench:stack"]
    want = (launched + timedelta(hours=2) + RECURRING_GRACE).astimezone(timezone.utc)
    assert acted[hung]["expires_at"] == want.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert acted[short]["action"] == "kept" and acted[garbled]["action"] == "skipped"
    assert no_stack not in acted and other not in acted  # without the stack tag it is not ours

    # just before the deadline, nothing goes
    before = sweep_aws.sweep_recurring_region(aws_env, region, want - timedelta(seconds=1), dry_run=False)
    assert all(a.action in ("kept", "skipped") for a in before)


def test_gcp_deletes_recurring_vms_past_their_own_deadline(compute):  # noqa: F811
    created = "2024-05-01T05:00:00.000-07:00"  # 12:00 UTC, as Compute writes it
    ours = {"gpubench-project": "gpubench", "gpubench-stack": "recurring-gcp-t4-1x-spot", "gpubench-max-hours": "1_5"}
    for zone, name, labels in (
        ("us-central1-a", "recurring-gcp-t4-1x-spot-00000001", ours),
        ("us-central1-a", "recurring-gcp-t4-1x-spot-00000002", {**ours, "gpubench-max-hours": "8"}),
        ("us-central1-b", "no-stack", {"gpubench-max-hours": "1"}),
        ("us-central1-b", "garbled", {**ours, "gpubench-max-hours": "lots"}),
        ("us-central1-b", "someone-elses", {"max-hours": "1"}),
    ):
        compute.add(zone, name, labels)
        compute.instances[zone][name]["creationTimestamp"] = created
    now = datetime(2024, 5, 1, 13, 45, 1, tzinfo=timezone.utc)  # 1.5 h + 15 min grace + 1 s
    actions = sweep_gcp.sweep(None, now, project=PROJECT)
    acted = {a.id: a for a in actions}
    assert compute.deleted == [("us-central1-a", "recurring-gcp-t4-1x-spot-00000001")]
    assert acted["recurring-gcp-t4-1x-spot-00000001"].expires_at == "20240501t134500z"
    assert acted["recurring-gcp-t4-1x-spot-00000002"].action == "kept"
    assert acted["garbled"].action == "skipped"
    assert "no-stack" not in acted and "someone-elses" not in acted


@pytest.mark.parametrize("seconds, deleted", [(-1, 0), (0, 1)])
def test_gcp_deadline_boundary(compute, seconds, deleted):  # noqa: F811
    compute.add(
        "us-central1-a",
        "r-1",
        {"gpubench-project": "gpubench", "gpubench-stack": "recurring-gcp-t4-1x", "gpubench-max-hours": "1"},
    )
    compute.instances["us-central1-a"]["r-1"]["creationTimestamp"] = "2024-05-01T12:00:00.000+00:00"
    now = datetime(2024, 5, 1, 13, 15, tzinfo=timezone.utc) + timedelta(seconds=seconds)
    sweep_gcp.sweep(None, now, project=PROJECT)
    assert len(compute.deleted) == deleted
