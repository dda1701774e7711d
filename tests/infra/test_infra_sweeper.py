"""Sweeper stacks under Pulumi mocks: the leak sweep as a Lambda function on an
EventBridge Scheduler schedule and as a Cloud Run function on a Cloud Scheduler
job, built from this checkout's sweep code, with roles that allow exactly the
sweep's calls on resources this project tagged."""

from __future__ import annotations

import json

import pytest
from infra_matrix import NOW

from infra import sweeper_function
from infra.catalog import load_catalog
from infra.config import ConfigError, parse_config

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def render(stack, config):
    from infra.render import render as run

    return run(stack, config, load_catalog(), now=NOW)


@pytest.fixture(scope="module")
def aws():
    return render(
        "aws-sweeper", {"gpubench:stackType": "sweeper", "gpubench:provider": "aws", "aws:region": "us-east-1"}
    )


@pytest.fixture(scope="module")
def gcp():
    return render(
        "gcp-sweeper",
        {
            "gpubench:stackType": "sweeper",
            "gpubench:provider": "gcp",
            "gcp:region": "europe-west4",
            "gpubench:every": "rate(30 minutes)",
        },
    )


def test_config():
    cfg = parse_config({"gpubench:stackType": "sweeper", "gpubench:provider": "aws"}, "aws-sweeper")
    assert cfg.every == "rate(1 hour)" and cfg.regions is None and cfg.dry_run is False
    with pytest.raises(ConfigError, match="gpubench:provider: required for a sweeper stack"):
        parse_config({"gpubench:stackType": "sweeper"}, "aws-sweeper")
    with pytest.raises(ConfigError, match="unknown key for a sweeper stack"):
        parse_config({"gpubench:stackType": "sweeper", "gpubench:provider": "aws", "gpubench:offering": "x"}, "s")


def test_aws_function_is_the_projects_sweep_code(aws):
    fn = aws.one("aws:lambda/function:Function").inputs
    assert fn["handler"] == "infra.sweeper_function.handler" and fn["runtime"] == "python3.12"
    assert fn["timeout"] == 900 and fn["memorySize"] == 128
    assert fn["environment"]["variables"] == {
        "GPUBENCH_SWEEP_PROVIDER": "aws",
        "GPUBENCH_SWEEP_REGIONS": "us-east-1",
        "GPUBENCH_SWEEP_DRY_RUN": "false",
        "GPUBENCH_PROJECT_ID": "gpubench",
    }
    assert sweeper_function.package_hash(sweeper_function.package("aws"))[:12] in fn["description"]
    sched = aws.one("aws:scheduler/schedule:Schedule").inputs
    assert sched["scheduleExpression"] == "rate(1 hour)"
    assert sched["target"]["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:gpubench-sweeper-aws-sweeper"
    assert sched["target"]["retryPolicy"]["maximumRetryAttempts"] == 0


def test_aws_roles_allow_exactly_the_sweep(aws):
    roles = {r.name: r.inputs for r in aws.of_type("aws:iam/role:Role")}
    trust = json.loads(roles["function-role"]["assumeRolePolicy"])["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "lambda.amazonaws.com"}]
    policies = {p.name: json.loads(p.inputs["policy"]) for p in aws.of_type("aws:iam/rolePolicy:RolePolicy")}
    st = {s["Sid"]: s for s in policies["sweep-access"]["Statement"]}
    assert set(st) == {
        "FindTaggedResources",
        "TerminateOnlyProjectInstances",
        "TerminateOnlyRecurringLaunches",
        "DeleteOnlyProjectSecurityGroups",
        "DeleteOnlyDeadlineSchedules",
        "OwnLogGroupOnly",
    }
    assert all(s["Effect"] == "Allow" for s in st.values())
    # only read-only calls on "*"
    assert set(st["FindTaggedResources"]["Action"]) == {
        "ec2:DescribeInstances",
        "ec2:DescribeSecurityGroups",
        "scheduler:ListSchedules",
    }
    for sid in ("TerminateOnlyProjectInstances", "TerminateOnlyRecurringLaunches", "DeleteOnlyProjectSecurityGroups"):
        assert st[sid]["Resource"].startswith("arn:aws:ec2:us-east-1:123456789012:") and "Null" in st[sid]["Condition"]
    # only this project's resources: its project id AND a stack named by the convention, never
    # an instance that merely carries an expiry tag (another team's prod-database, say)
    ours = {
        "StringEquals": {"aws:ResourceTag/gpubench:project": "gpubench"},
        "StringLike": {"aws:ResourceTag/gpubench:stack": ["aws-*", "recurring-aws-*"]},
    }
    assert st["TerminateOnlyProjectInstances"]["Condition"] == {
        **ours,
        "Null": {"aws:ResourceTag/gpubench:expires-at": "false"},
    }
    assert st["DeleteOnlyProjectSecurityGroups"]["Condition"] == st["TerminateOnlyProjectInstances"]["Condition"]
    assert st["TerminateOnlyRecurringLaunches"]["Condition"] == {
        **ours,
        "Null": {"aws:ResourceTag/gpubench:max-hours": "false"},
    }
    assert st["DeleteOnlyDeadlineSchedules"]["Resource"] == (
        "arn:aws:scheduler:us-east-1:123456789012:schedule/default/deadline-schedule-*"
    )
    assert st["OwnLogGroupOnly"]["Resource"] == (
        "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/gpubench-sweeper-aws-sweeper:*"
    )
    assert aws.one("aws:cloudwatch/logGroup:LogGroup").inputs["name"] == "/aws/lambda/gpubench-sweeper-aws-sweeper"
    assert policies["invoke"]["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": "arn:aws:lambda:us-east-1:123456789012:function:gpubench-sweeper-aws-sweeper",
        }
    ]
    trust = json.loads(roles["invoke-role"]["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}


def test_gcp_function_job_and_roles(gcp):
    fn = gcp.one("gcp:cloudfunctionsv2/function:Function").inputs
    assert fn["location"] == "europe-west4"
    assert fn["buildConfig"]["runtime"] == "python312" and fn["buildConfig"]["entryPoint"] == "sweep"
    obj = gcp.one("gcp:storage/bucketObject:BucketObject").inputs
    digest = sweeper_function.package_hash(sweeper_function.package("gcp"))
    assert obj["name"] == f"sweeper-{digest[:16]}.zip"
    assert fn["buildConfig"]["source"]["storageSource"]["object"] == obj["name"]
    svc = fn["serviceConfig"]
    assert svc["environmentVariables"] == {
        "GPUBENCH_SWEEP_PROVIDER": "gcp",
        "GPUBENCH_SWEEP_DRY_RUN": "false",
        "GPUBENCH_PROJECT_ID": "gpubench",
        "GOOGLE_CLOUD_PROJECT": "mock-project",
    }
    accounts = {
        a.name: f"{a.inputs['accountId']}@mock-project.iam.gserviceaccount.com"
        for a in gcp.of_type("gcp:serviceaccount/account:Account")
    }
    assert svc["serviceAccountEmail"] == accounts["sweeper"] and svc["maxInstanceCount"] == 1
    role = gcp.one("gcp:projects/iAMCustomRole:IAMCustomRole").inputs
    assert sorted(role["permissions"]) == ["compute.instances.delete", "compute.instances.list"]
    grant = gcp.one("gcp:projects/iAMMember:IAMMember").inputs
    assert grant["member"] == f"serviceAccount:{accounts['sweeper']}" and grant["role"].endswith(role["roleId"])
    invoke = gcp.one("gcp:cloudrunv2/serviceIamMember:ServiceIamMember").inputs
    assert invoke["role"] == "roles/run.invoker" and invoke["member"] == f"serviceAccount:{accounts['invoker']}"
    job = gcp.one("gcp:cloudscheduler/job:Job").inputs
    assert job["schedule"] == "*/30 * * * *" and job["region"] == "europe-west4"
    target = job["httpTarget"]
    assert target["uri"].startswith("https://function-") and target["uri"].endswith(".a.run.app")
    assert target["oidcToken"] == {"serviceAccountEmail": accounts["invoker"], "audience": target["uri"]}


def test_package_is_deterministic_and_has_the_entry_points():
    a, b = sweeper_function.package("gcp"), sweeper_function.package("gcp")
    assert a == b and sweeper_function.package_hash(a) == sweeper_function.package_hash(b)
    assert set(a) == {*sweeper_function.MODULES, "main.py", "requirements.txt"}
    assert "main.py" not in sweeper_function.package("aws")
    changed = {**a, "infra/tags.py": a["infra/tags.py"] + b"\n"}
    assert sweeper_function.package_hash(changed) != sweeper_function.package_hash(a)


@pytest.mark.parametrize(
    "stack, tag, allowed",
    [
        ("aws-g4dn-1x", "gpubench:expires-at", True),
        ("recurring-aws-g4dn-1x", "gpubench:max-hours", True),  # a launch of a recurring stack
        ("prod-database-NOT-OURS", "gpubench:expires-at", False),
        ("gcp-t4-1x", "gpubench:expires-at", False),
    ],
)
def test_aws_sweeper_may_terminate_exactly_what_the_sweep_code_calls_ours(aws, stack, tag, allowed):
    from iam_eval import allows

    from infra.tags import is_project_stack

    policy = json.loads(
        next(p for p in aws.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "sweep-access").inputs["policy"]
    )
    context = {
        "aws:ResourceTag/gpubench:project": "gpubench",
        "aws:ResourceTag/gpubench:stack": stack,
        f"aws:ResourceTag/{tag}": "x",
    }
    arn = "arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"
    assert allows(policy, "ec2:TerminateInstances", arn, context) is allowed is is_project_stack(stack, "aws")
