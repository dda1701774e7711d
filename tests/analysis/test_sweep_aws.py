"""The AWS leak sweeper against a real moto server on loopback (EC2 + EventBridge Scheduler).

Each test uses its own region so tests sharing the session's moto server never see each other.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from analysis.cli import main
from infra import aws
from infra.aws import sweep as sweep_aws

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def aws_tag_deadline(when: datetime) -> str:
    """The expires-at tag as the launcher writes it from the deadline's RFC 3339 time."""
    return aws.deadline_tag(when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


PAST = aws_tag_deadline(NOW - timedelta(minutes=1))
FUTURE = aws_tag_deadline(NOW + timedelta(hours=3))
TERMINATE = "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"


@pytest.fixture
def aws_env(moto_server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    import boto3

    return boto3.session.Session()


# An image moto has in every region (its own example AMI): listing all its ~1,300 images instead costs the
# moto server seconds of CPU per call.
MOTO_AMI = "ami-12c6146b"


class Cloud:
    """Helpers to populate one region of the moto server."""

    def __init__(self, session, region):
        self.region = region
        self.ec2 = session.client("ec2", region_name=region)
        self.scheduler = session.client("scheduler", region_name=region)
        self.ami = self.ec2.describe_images(ImageIds=[MOTO_AMI])["Images"][0]["ImageId"]

    def sg(self, name, expires=None, stack="aws-p3-8x"):
        spec = [{"ResourceType": "security-group", "Tags": tags(expires, stack)}] if expires else []
        return self.ec2.create_security_group(GroupName=name, Description="gpubench test", TagSpecifications=spec)[
            "GroupId"
        ]

    def instance(self, expires=None, stack="aws-p3-8x", sg=None, extra_tags=()):
        own = tags(expires, stack) if expires else []
        spec = [{"ResourceType": "instance", "Tags": own + list(extra_tags)}] if own or extra_tags else []
        kw = {"SecurityGroupIds": [sg]} if sg else {}
        return self.ec2.run_instances(
            ImageId=self.ami, MinCount=1, MaxCount=1, InstanceType="p3.2xlarge", TagSpecifications=spec, **kw
        )["Instances"][0]["InstanceId"]

    def schedule(self, name, instance_id, arn=TERMINATE):
        self.scheduler.create_schedule(
            Name=name,
            ScheduleExpression="at(2024-05-01T12:00:00)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={
                "Arn": arn,
                "RoleArn": "arn:aws:iam::123456789012:role/deadline-role",
                "Input": json.dumps({"InstanceIds": [instance_id]}),
            },
        )

    def state(self, iid):
        return self.ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]

    def sg_ids(self):
        return {g["GroupId"] for g in self.ec2.describe_security_groups()["SecurityGroups"]}

    def schedule_names(self):
        return {s["Name"] for s in self.scheduler.list_schedules()["Schedules"]}


def tags(expires, stack):
    """The launcher's tags; stack=None leaves the stack tag out (someone else's resource)."""
    own = [
        {"Key": "gpubench:expires-at", "Value": expires},
        {"Key": "gpubench:offering", "Value": "aws/p3.2xlarge"},
        {"Key": "gpubench:project", "Value": "gpubench"},
    ]
    return own + ([{"Key": "gpubench:stack", "Value": stack}] if stack is not None else [])


def sweep_cli(capsys, region, *extra):
    code = main(["sweep", "--provider", "aws", "--region", region, "--now", NOW.isoformat(), "--json", "--yes", *extra])
    return code, json.loads(capsys.readouterr().out)


def populate(cloud):
    ids = {}
    ids["sg_expired"] = cloud.sg("gpubench-expired", PAST)
    ids["sg_fresh"] = cloud.sg("gpubench-fresh", FUTURE)
    ids["sg_untagged"] = cloud.sg("someone-elses")
    ids["expired"] = cloud.instance(PAST, "aws-p3-8x", sg=ids["sg_expired"])
    ids["expired_spot"] = cloud.instance(PAST, "aws-p3-8x-spot")
    ids["fresh"] = cloud.instance(FUTURE, "aws-p2-1x", sg=ids["sg_fresh"])
    ids["untagged"] = cloud.instance(extra_tags=[{"Key": "Name", "Value": "prod-db"}])
    ids["other_project_expiry"] = cloud.instance(extra_tags=[{"Key": "expires-at", "Value": PAST}])
    ids["garbled"] = cloud.instance("next tuesday", "aws-g4dn-1x")
    cloud.schedule("deadline-schedule-expired", ids["expired"])
    cloud.schedule("deadline-schedule-fresh", ids["fresh"])
    cloud.schedule("someone-elses-schedule", ids["untagged"])
    cloud.schedule("deadline-schedule-not-ours", ids["untagged"])
    return ids


def test_sweeps_exactly_the_expired_tagged_resources(aws_env, capsys):
    cloud = Cloud(aws_env, "eu-west-1")
    ids = populate(cloud)
    code, doc = sweep_cli(capsys, "eu-west-1")
    assert code == 0 and doc["ok"] is True
    assert cloud.state(ids["expired"]) == "terminated" and cloud.state(ids["expired_spot"]) == "terminated"
    for key in ("fresh", "untagged", "other_project_expiry", "garbled"):
        assert cloud.state(ids[key]) == "running", key
    assert ids["sg_expired"] not in cloud.sg_ids()
    assert {ids["sg_fresh"], ids["sg_untagged"]} <= cloud.sg_ids()
    assert cloud.schedule_names() == {"deadline-schedule-fresh", "someone-elses-schedule", "deadline-schedule-not-ours"}

    # --json shape
    assert set(doc) == {"provider", "now", "dry_run", "regions", "counts", "actions", "ok"}
    assert doc["provider"] == "aws" and doc["regions"] == ["eu-west-1"] and doc["dry_run"] is False
    acted = {(a["kind"], a["id"]): a["action"] for a in doc["actions"]}
    assert acted[("instance", ids["expired"])] == "terminated"
    assert acted[("instance", ids["fresh"])] == "kept"
    assert acted[("instance", ids["garbled"])] == "left-alone"
    assert acted[("security-group", ids["sg_expired"])] == "deleted"
    assert acted[("schedule", "default/deadline-schedule-expired")] == "deleted"
    assert ("instance", ids["untagged"]) not in acted  # untagged resources are not even listed
    assert doc["counts"] == {"terminated": 2, "deleted": 2, "kept": 2, "left-alone": 1}
    first = next(a for a in doc["actions"] if a["id"] == ids["expired"])
    assert set(first) == {"provider", "region", "kind", "id", "action", "stack", "expires_at", "reason", "error", "ok"}
    assert first["stack"] == "aws-p3-8x" and first["expires_at"] == PAST

    # a second sweep finds nothing left to do
    code, doc = sweep_cli(capsys, "eu-west-1")
    assert code == 0 and "terminated" not in doc["counts"] and "deleted" not in doc["counts"]


def test_dry_run_changes_nothing(aws_env, capsys):
    cloud = Cloud(aws_env, "us-west-2")
    ids = populate(cloud)
    sgs, schedules = cloud.sg_ids(), cloud.schedule_names()
    code, doc = sweep_cli(capsys, "us-west-2", "--dry-run")
    assert code == 0 and doc["dry_run"] is True
    for key in ("expired", "expired_spot", "fresh", "untagged", "garbled"):
        assert cloud.state(ids[key]) == "running", key
    assert cloud.sg_ids() == sgs and cloud.schedule_names() == schedules
    assert doc["counts"] == {"would-terminate": 2, "would-delete": 2, "kept": 2, "left-alone": 1}


def test_paginates_instances_schedules_and_groups(aws_env):
    cloud = Cloud(aws_env, "ap-southeast-2")
    expired = [cloud.instance(PAST, f"aws-s{i}") for i in range(12)]
    for i, iid in enumerate(expired):
        cloud.schedule(f"deadline-schedule-{i}", iid)
    groups = [cloud.sg(f"g{i}", PAST) for i in range(7)]
    fresh = cloud.instance(FUTURE)
    actions = sweep_aws.sweep(["ap-southeast-2"], NOW, session=aws_env, page_size=5, wait_delay=0.1)
    assert sorted(a.id for a in actions if a.action == "terminated") == sorted(expired)
    assert sum(a.kind == "schedule" and a.action == "deleted" for a in actions) == 12
    assert {a.id for a in actions if a.kind == "security-group" and a.action == "deleted"} == set(groups)
    assert cloud.state(fresh) == "running" and cloud.schedule_names() == set()


class FailingSession:
    """The real session, except that terminating one instance id fails (as with an IAM deny)."""

    def __init__(self, session, bad_id):
        self.session, self.bad_id, self.region_name = session, bad_id, session.region_name
        self.get_credentials = session.get_credentials

    def client(self, name, **kw):
        real = self.session.client(name, **kw)
        if name != "ec2":
            return real
        bad_id = self.bad_id
        original = real.terminate_instances

        def terminate_instances(**params):
            if bad_id in params.get("InstanceIds", []):
                from botocore.exceptions import ClientError

                raise ClientError(
                    {"Error": {"Code": "UnauthorizedOperation", "Message": "denied"}}, "TerminateInstances"
                )
            return original(**params)

        real.terminate_instances = terminate_instances
        return real


def test_one_failure_does_not_stop_the_sweep(aws_env):
    cloud = Cloud(aws_env, "eu-central-1")
    bad, good = cloud.instance(PAST, "aws-bad"), cloud.instance(PAST, "aws-good")
    sg = cloud.sg("gpubench-expired", PAST)
    actions = sweep_aws.sweep(["eu-central-1"], NOW, session=FailingSession(aws_env, bad), wait_delay=0.1)
    by_id = {a.id: a for a in actions}
    assert by_id[bad].action == "failed" and "UnauthorizedOperation" in by_id[bad].error
    assert by_id[good].action == "terminated" and by_id[sg].action == "deleted"
    assert cloud.state(bad) == "running" and cloud.state(good) == "terminated"


def test_cli_exit_code_on_failure_and_bad_now(aws_env, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: every call fails
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    code, doc = sweep_cli(capsys, "sa-east-1")
    assert code == 1 and doc["ok"] is False and doc["actions"][0]["action"] == "failed"
    assert main(["sweep", "--provider", "aws", "--now", "yesterday"]) == 2
    assert "--now 'yesterday'" in capsys.readouterr().err


def test_classify_reads_only_the_project_tag():
    ours = {"gpubench:project": "gpubench", "gpubench:stack": "aws-p3-8x"}
    assert sweep_aws.classify({**ours, "gpubench:expires-at": PAST}, NOW)[0] == "expired"
    assert sweep_aws.classify({**ours, "gpubench:expires-at": aws_tag_deadline(NOW)}, NOW)[0] == "expired"
    assert sweep_aws.classify({**ours, "gpubench:expires-at": FUTURE}, NOW)[0] == "kept"
    assert sweep_aws.classify({**ours, "gpubench:expires-at": "soon"}, NOW)[0] == "left-alone"
    assert sweep_aws.classify({**ours, "expires-at": PAST}, NOW)[0] == "left-alone"
    assert sweep_aws.classify({"gpubench:expires-at": PAST}, NOW) == ("left-alone", "no gpubench:stack tag")
    for odd in ("2024-05-01T11:00:00+00:00", "20240501t110000z", PAST + "\n", "2024-05-01T11:00:00.000Z"):
        verdict, reason = sweep_aws.classify({**ours, "gpubench:expires-at": odd}, NOW)
        assert verdict == "left-alone" and "expires-at not in the launcher's format" in reason, odd


def test_missing_credentials_is_a_clear_error(monkeypatch, capsys, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    assert (
        main(["sweep", "--provider", "aws", "--region", "us-east-1"]) == 3
    )  # credentials are missing, not a bad argument
    assert "no AWS credentials" in capsys.readouterr().err


def test_acts_only_on_what_is_ours(aws_env, capsys):
    """Foreign (expiry tag, no stack tag) and malformed-tag resources are reported as left alone, never touched;
    a tag that used to crash the parser does not stop the region."""
    cloud = Cloud(aws_env, "ca-central-1")
    ours = cloud.instance(PAST, "aws-p3-8x")
    ours_sg = cloud.sg("ours", PAST)
    foreign = cloud.instance(PAST, None)  # another tool reusing the key, no gpubench:stack
    foreign_sg = cloud.sg("foreign", PAST, stack=None)
    offset = cloud.instance("2024-05-01T11:00:00+00:00", "aws-p3-8x")  # a valid time, not the launcher's form
    gcp_form = cloud.instance("20240501t110000z", "aws-p3-8x")
    crashy = cloud.instance("20240501t250000z", "aws-p3-8x")  # hour 25 in basic form: used to raise
    impossible = cloud.instance("2024-02-31T00:00:00Z", "aws-p3-8x")  # launcher's shape, no such day
    bad_sg = cloud.sg("garbled", "yesterday")
    code, doc = sweep_cli(capsys, "ca-central-1")
    acted = {a["id"]: a for a in doc["actions"]}
    assert code == 0 and doc["ok"] is True
    assert cloud.state(ours) == "terminated" and ours_sg not in cloud.sg_ids()
    for iid in (foreign, offset, gcp_form, crashy, impossible):
        assert cloud.state(iid) == "running", iid
        assert acted[iid]["action"] == "left-alone", acted[iid]
    assert {foreign_sg, bad_sg} <= cloud.sg_ids()
    assert acted[foreign]["reason"] == "no gpubench:stack tag"
    assert acted[foreign_sg]["action"] == "left-alone" and acted[foreign_sg]["reason"] == "no gpubench:stack tag"
    for rid in (offset, gcp_form, crashy, impossible, bad_sg):
        assert acted[rid]["reason"].startswith("expires-at not in the launcher's format"), acted[rid]


class UnreadableSession(FailingSession):
    """Listing instances fails (as with a throttled or denied DescribeInstances); groups still list."""

    def client(self, name, **kw):
        real = self.session.client(name, **kw)
        if name == "ec2":

            def describe_instances(**params):
                from botocore.exceptions import ClientError

                raise ClientError({"Error": {"Code": "RequestLimitExceeded", "Message": "slow down"}}, "Describe")

            real.describe_instances = describe_instances
        return real


def test_an_unreadable_listing_is_a_failure_and_the_rest_is_swept(aws_env, capsys):
    cloud = Cloud(aws_env, "eu-west-3")
    sg = cloud.sg("ours", PAST)
    actions = sweep_aws.sweep(["eu-west-3"], NOW, session=UnreadableSession(aws_env, None), wait_delay=0.1)
    by = {(a.kind, a.id): a for a in actions}
    assert by[("instance", "*")].action == "failed" and "RequestLimitExceeded" in by[("instance", "*")].error
    assert by[("security-group", sg)].action == "deleted"
