"""Recurring stacks under Pulumi mocks: the cloud's own scheduler launches the
benchmark, the template carries the benchmark stack's user-data, tags and
per-launch deadline, and the scheduler's role may do exactly that launch."""

from __future__ import annotations

import json

import pytest
import yaml
from iam_eval import allows
from infra_matrix import NOW

from infra import cloud_init
from infra import stacks as stackfiles
from infra.catalog import load_catalog
from infra.config import ConfigError, parse_config

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
BENCH = "aws-g4dn-1x-spot"
STACK = f"recurring-{BENCH}"


def recurring_config(**extra):
    return {
        **stackfiles.load_config(BENCH),
        "gpubench:stackType": "recurring",
        "gpubench:every": "cron(0 3 ? * MON *)",
        "gpubench:maxHours": 2,
        **extra,
    }


@pytest.fixture(scope="module")
def rendered():
    from infra.render import render

    return render(STACK, recurring_config(), load_catalog(), now=NOW)


def test_resources(rendered):
    types = [r.type for r in rendered.resources if r.custom]
    assert sorted(types) == sorted(
        [
            "aws:iam/role:Role",
            "aws:iam/role:Role",
            "aws:iam/rolePolicy:RolePolicy",
            "aws:iam/rolePolicy:RolePolicy",
            "aws:iam/instanceProfile:InstanceProfile",
            "aws:ec2/securityGroup:SecurityGroup",
            "aws:ec2/launchTemplate:LaunchTemplate",
            "aws:scheduler/schedule:Schedule",
            "aws:s3/bucketObjectv2:BucketObjectv2",  # the code bundle every launch fetches
        ]
    )
    assert not rendered.of_type("aws:ec2/instance:Instance")  # nothing runs until the schedule fires


def test_template_carries_user_data_market_and_self_termination(rendered):
    lt = rendered.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    user_data = cloud_init.inflated(lt["userData"])
    assert user_data.startswith("#cloud-config")
    env = next(f for f in yaml.safe_load(user_data)["write_files"] if f["path"] == cloud_init.ENV_FILE)["content"]
    assert "GPUBENCH_DEADLINE=boot+120m\n" in env  # maxHours 2, counted from each launch's own boot
    assert f"GPUBENCH_STACK={STACK}\n" in env and "GPUBENCH_MARKET=spot\n" in env
    runcmd = yaml.safe_load(user_data)["runcmd"]
    # the relative deadline is made absolute before the in-guest shutdown timer reads it
    assert runcmd.index([f"{cloud_init.LIB_DIR}/boot-deadline.sh"]) < runcmd.index(
        [f"{cloud_init.LIB_DIR}/deadline.sh"]
    )
    assert lt["instanceInitiatedShutdownBehavior"] == "terminate"
    assert lt["instanceMarketOptions"]["marketType"] == "spot"
    assert lt["instanceMarketOptions"]["spotOptions"] == {
        "instanceInterruptionBehavior": "terminate",
        "spotInstanceType": "one-time",
    }
    assert lt["metadataOptions"]["httpTokens"] == "required"
    ebs = lt["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] == "true" and ebs["deleteOnTermination"] == "true"
    assert lt["iamInstanceProfile"]["arn"].startswith("arn:aws:iam::123456789012:instance-profile/instance-profile")
    tagged = {t["resourceType"]: t["tags"] for t in lt["tagSpecifications"]}
    for tags in tagged.values():
        assert tags["gpubench:stack"] == STACK and tags["gpubench:max-hours"] == "2"
        assert tags["gpubench:offering"] == "aws/g4dn.xlarge"


def test_schedule_targets_run_instances_on_the_template(rendered):
    sched = rendered.one("aws:scheduler/schedule:Schedule").inputs
    assert sched["scheduleExpression"] == "cron(0 3 ? * 2 *)"
    assert sched["scheduleExpressionTimezone"] == "UTC"
    target = sched["target"]
    assert target["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:runInstances"
    body = json.loads(target["input"])
    assert body["LaunchTemplate"]["LaunchTemplateId"].startswith("launch-template-")  # the mock's id
    assert (body["MinCount"], body["MaxCount"]) == (1, 1)
    assert body["ClientToken"] == "gpubench-<aws.scheduler.scheduled-time>"
    for spec in body["TagSpecifications"]:
        tags = {t["Key"]: t["Value"] for t in spec["Tags"]}
        assert tags["gpubench:run-id"] == "<aws.scheduler.execution-id>"  # each launch its own run id
        assert tags["gpubench:stack"] == STACK and tags["gpubench:max-hours"] == "2"
    assert target["retryPolicy"]["maximumRetryAttempts"] <= 2


def test_launcher_role_may_launch_only_this_template_and_pass_only_this_role(rendered):
    roles = {r.name: r.inputs for r in rendered.of_type("aws:iam/role:Role")}
    trust = json.loads(roles["launcher-role"]["assumeRolePolicy"])["Statement"]
    assert trust == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {"aws:SourceAccount": "123456789012"},
                "ArnEquals": {"aws:SourceArn": "arn:aws:scheduler:us-east-1:123456789012:schedule-group/default"},
            },
        }
    ]
    policy = json.loads(
        next(p for p in rendered.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "launcher-run-instances").inputs[
            "policy"
        ]
    )
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert set(by_sid) == {
        "RunOnlyFromThisTemplate",
        "TemplateAndNetworkOfItsLaunch",
        "TagOnlyAtLaunch",
        "PassOnlyInstanceRole",
    }
    assert all(s["Effect"] == "Allow" and "Condition" in s for s in policy["Statement"])
    run = by_sid["RunOnlyFromThisTemplate"]
    template_arn = run["Condition"]["ArnEquals"]["ec2:LaunchTemplate"]
    assert template_arn.startswith("arn:aws:ec2:us-east-1:123456789012:launch-template/lt-")
    assert run["Action"] == "ec2:RunInstances"
    assert run["Condition"]["Bool"] == {"ec2:IsLaunchTemplateResource": "true"}
    assert "*" not in run["Resource"]
    network = by_sid["TemplateAndNetworkOfItsLaunch"]
    assert network["Condition"] == {"ArnEquals": {"ec2:LaunchTemplate": template_arn}}
    assert template_arn in network["Resource"] and "*" not in network["Resource"]
    assert by_sid["TagOnlyAtLaunch"]["Action"] == "ec2:CreateTags"
    assert by_sid["TagOnlyAtLaunch"]["Condition"] == {"StringEquals": {"ec2:CreateAction": "RunInstances"}}
    passrole = by_sid["PassOnlyInstanceRole"]
    assert passrole["Action"] == "iam:PassRole"
    assert passrole["Resource"].startswith("arn:aws:iam::123456789012:role/instance-role-")
    assert passrole["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


def test_a_recurring_stack_needs_a_readable_schedule():
    raw = {k: v for k, v in recurring_config().items() if k != "gpubench:every"}
    with pytest.raises(ConfigError, match="gpubench:every: required"):
        parse_config(raw, STACK)
    with pytest.raises(ConfigError, match="rate\\(N minutes"):
        parse_config(recurring_config(**{"gpubench:every": "rate(2 weeks)"}), STACK)
    with pytest.raises(ConfigError, match="unknown key for a benchmark stack"):
        parse_config({**stackfiles.load_config(BENCH), "gpubench:every": "rate(1 day)"}, BENCH)


def test_boot_deadline_script_turns_the_relative_deadline_into_boot_plus_max_hours(tmp_path):
    import datetime as dt
    import subprocess

    env = tmp_path / "payload.env"
    env.write_text("GPUBENCH_STACK=s\nGPUBENCH_DEADLINE=boot+120m\n")
    script = tmp_path / "boot-deadline.sh"
    script.write_text(cloud_init.guest_file("boot-deadline.sh").replace(cloud_init.ENV_FILE, str(env)))
    subprocess.run(["bash", str(script)], check=True)
    btime = next(int(line.split()[1]) for line in open("/proc/stat") if line.startswith("btime"))
    want = dt.datetime.fromtimestamp(btime + 7200, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert env.read_text() == f"GPUBENCH_STACK=s\nGPUBENCH_DEADLINE={want}\n"
    # an absolute deadline (one-off benchmark stacks) is left alone
    env.write_text("GPUBENCH_DEADLINE=2030-01-01T00:00:00Z\n")
    subprocess.run(["bash", str(script)], check=True)
    assert env.read_text() == "GPUBENCH_DEADLINE=2030-01-01T00:00:00Z\n"


def test_launcher_role_allows_the_launch_its_template_makes(rendered):
    """A template that names no subnet: EC2 picks the default subnet and creates the network
    interface, and neither is a launch-template resource (ec2:IsLaunchTemplateResource false);
    everything else the launch touches comes from the template. Each must be allowed, and a
    launch from another template must not be."""
    policy = json.loads(
        next(p for p in rendered.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "launcher-run-instances").inputs[
            "policy"
        ]
    )
    lt = rendered.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert "networkInterfaces" not in lt  # no subnet configured: EC2 chooses it
    template = next(s for s in policy["Statement"] if s["Sid"] == "RunOnlyFromThisTemplate")
    template_arn = template["Condition"]["ArnEquals"]["ec2:LaunchTemplate"]
    base = "arn:aws:ec2:us-east-1:123456789012"
    touched = {
        template_arn: False,  # whether the template counts as its own resource: either way
        "arn:aws:ec2:us-east-1::image/ami-0abc": True,
        f"{base}:instance/i-0abc": True,
        f"{base}:volume/vol-0abc": True,
        f"{base}:security-group/sg-0abc": True,
        f"{base}:spot-instances-request/sir-0abc": True,
        f"{base}:network-interface/eni-0abc": False,
        f"{base}:subnet/subnet-0abc": False,
    }
    for arn, in_template in touched.items():
        context = {"ec2:LaunchTemplate": template_arn, "ec2:IsLaunchTemplateResource": in_template}
        assert allows(policy, "ec2:RunInstances", arn, context), arn
        other = {**context, "ec2:LaunchTemplate": f"{base}:launch-template/lt-0other"}
        assert not allows(policy, "ec2:RunInstances", arn, other), arn
