"""AWS sweep: expired instances of ours (infra.cloudparts.Marks.classify), their deadline schedules, then
their security groups, once the EC2 waiter sees the instances `terminated` (a group in use cannot go). Every
error is recorded and the sweep goes on; boto3 honours AWS_ENDPOINT_URL (moto on loopback). The lowest module
of the folder: it holds the tag names and the deadline format, and the sweeper function ships it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import partial

from infra import sweep as common
from infra.cloudparts import Marks, SweepRun
from infra.sweep import Action
from infra.tags import MAX_HOURS_KEY, PROJECT_KEY
from payload.timestamps import iso

# Tags: `gpubench:<key>`; `gpubench:expires-at` in RFC 3339 UTC, seconds, `Z` (2024-05-01T12:00:00Z).
MARKS = Marks(
    "aws", "gpubench:", re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", re.ASCII), partial(iso, seconds=True)
)
STACK_TAG, EXPIRES_TAG, PROJECT_TAG = MARKS.key("stack"), MARKS.key("expires-at"), MARKS.key(PROJECT_KEY)
MAX_HOURS_TAG = MARKS.key(MAX_HOURS_KEY)  # recurring launches (infra/aws/component.py AwsRecurring)
tags, is_launcher_deadline, owner, classify = MARKS.tags, MARKS.is_launcher_deadline, MARKS.owner, MARKS.classify
format_deadline = MARKS.format_deadline
# EventBridge Scheduler deadline schedules: Pulumi auto-names the `deadline-schedule` resource
# `deadline-schedule-<random>`; the sweeper's IAM policy is limited to that name.
DEADLINE_SCHEDULE_PREFIX = "deadline-schedule-"

LIVE_STATES = frozenset({"pending", "running", "stopping", "stopped"})
TERMINATE_TARGET_SUFFIX = ":ec2:terminateInstances"  # arn:aws:scheduler:::aws-sdk:ec2:terminateInstances
TAGGED = [{"Name": "tag-key", "Values": [EXPIRES_TAG]}]
RECURRING = [{"Name": "tag-key", "Values": [MAX_HOURS_TAG]}]


def deadline_tag(rfc3339: str) -> str:
    """The launcher writes the deadline resource's RFC 3339 time as is."""
    return rfc3339


def _tags(resource: dict) -> dict[str, str]:
    """Key -> value; an entry without a string key is dropped (it cannot be ours)."""
    return {
        t["Key"]: t.get("Value")
        for t in resource.get("Tags") or []
        if isinstance(t, dict) and isinstance(t.get("Key"), str)
    }


def error_text(exc: BaseException) -> str:
    """A botocore error in one line: its code and message."""
    response = getattr(exc, "response", None)
    err = response.get("Error", {}) if isinstance(response, dict) else {}
    return f"{err.get('Code')}: {err.get('Message')}" if err.get("Code") else str(exc)


def _pages(client, operation: str, page_size: int | None, key: str, **params) -> Iterator[dict]:
    """Every item under `key` in every page of `operation`."""
    config = {"PageSize": page_size} if page_size else {}
    for page in client.get_paginator(operation).paginate(**params, PaginationConfig=config):
        yield from page.get(key, [])


def tagged_instances(ec2, page_size: int | None = None, filters=TAGGED) -> Iterator[dict]:
    for reservation in _pages(ec2, "describe_instances", page_size, "Reservations", Filters=filters):
        yield from reservation.get("Instances", [])


def schedule_instance_ids(schedule: dict) -> set[str]:
    try:
        return set(json.loads(schedule.get("Target", {}).get("Input") or "{}").get("InstanceIds") or [])
    except (ValueError, AttributeError, TypeError):
        return set()


class _Region:
    """One region's sweep: its clients, what it did so far and what it terminated."""

    def __init__(self, session, region: str, now: datetime, dry_run: bool, log, page_size, mine: common.Owner):
        self.ec2 = session.client("ec2", region_name=region)
        self.scheduler = session.client("scheduler", region_name=region)
        terminate = lambda _, iid: self.ec2.terminate_instances(InstanceIds=[iid])  # noqa: E731
        self.run = SweepRun(MARKS, now, dry_run, mine, terminate, error_text, log)
        self.region, self.page_size = region, page_size
        self.out: list[Action] = []
        self.expired_ids: set[str] = set()  # every expired instance of ours, any state: their schedules go too
        self.terminated: list[str] = []

    def record(self, kind, rid, action, reason="", error=None):
        self.out.append(self.run.action(kind, self.region, rid, action, None, reason, error))

    def listed(self, kind: str, what: str, lister) -> list:
        """Everything `lister` yields, listed fully before acting; a failure is recorded, not raised."""
        try:
            return list(lister(self.page_size))
        except Exception as exc:  # noqa: BLE001 - the rest of the region is still swept
            self.record(kind, "*", "failed", f"listing {what}", error_text(exc))
            return []

    def judged(self, kind: str, noun: str, lister, id_key: str) -> Iterator[tuple[str, dict, dict, str, str]]:
        """(id, resource, tags, verdict, reason) of each tagged resource `lister` lists; one whose
        tags cannot be read is recorded as failed and never stops the rest."""
        for res in self.listed(kind, f"tagged {noun}s", lister):
            rid = str(res.get(id_key, "?")) if isinstance(res, dict) else "?"
            try:
                tags = _tags(res)
                verdict, reason = classify(tags, self.run.now, self.run.mine)
            except Exception as exc:  # noqa: BLE001 - one unreadable resource never stops the rest
                self.record(kind, rid, "failed", f"reading the {noun}'s tags", error_text(exc))
                continue
            yield rid, res, tags, verdict, reason

    def decide(self, kind, rid, verdict, tags, reason, act=None, verb="terminate") -> str:
        self.out.append(self.run.decide(kind, self.region, rid, verdict, tags, reason, act, verb))
        return self.out[-1].action

    def instances(self) -> None:
        lister = lambda n: tagged_instances(self.ec2, n)  # noqa: E731
        for iid, inst, tags, verdict, reason in self.judged("instance", "instance", lister, "InstanceId"):
            if verdict == "expired":
                self.expired_ids.add(iid)
            state = inst.get("State")
            if not isinstance(state, dict) or state.get("Name") not in LIVE_STATES:
                continue  # already gone or going
            if self.decide("instance", iid, verdict, tags, reason) == "terminated":
                self.terminated.append(iid)

    def schedules(self) -> None:
        """Delete deadline schedules aimed solely at expired instances of ours."""
        if not self.expired_ids:
            return
        scheduler = self.scheduler

        def lister(n):  # the project's deadline schedules: deadline-schedule-*, ec2:terminateInstances
            return _pages(scheduler, "list_schedules", n, "Schedules", NamePrefix=DEADLINE_SCHEDULE_PREFIX)

        for summary in self.listed("schedule", "EventBridge Scheduler schedules", lister):
            if not str(summary.get("Target", {}).get("Arn", "")).endswith(TERMINATE_TARGET_SUFFIX):
                continue
            name, group = str(summary.get("Name", "?")), str(summary.get("GroupName") or "default")
            rid = f"{group}/{name}"
            try:
                targets = schedule_instance_ids(self.scheduler.get_schedule(Name=name, GroupName=group))
            except Exception as exc:  # noqa: BLE001 - e.g. deleted by its own completion meanwhile
                self.record("schedule", rid, "skipped", "could not read the schedule", error_text(exc))
                continue
            if targets and targets <= self.expired_ids:
                delete = lambda n=name, g=group: self.scheduler.delete_schedule(Name=n, GroupName=g)  # noqa: E731
                reason = f"deadline schedule of {', '.join(sorted(targets))}"
                self.decide("schedule", rid, "expired", None, reason, delete, "delete")

    def wait(self, delay: float, attempts: int) -> None:
        if not self.terminated:
            return
        try:
            self.ec2.get_waiter("instance_terminated").wait(
                InstanceIds=self.terminated, WaiterConfig={"Delay": delay, "MaxAttempts": attempts}
            )
        except Exception as exc:  # noqa: BLE001 - the group deletes below will say which still hang
            self.record("instance", ",".join(self.terminated), "failed", "waiting for terminated", error_text(exc))

    def groups(self) -> None:
        ec2 = self.ec2
        lister = lambda n: _pages(ec2, "describe_security_groups", n, "SecurityGroups", Filters=TAGGED)  # noqa: E731
        for gid, _, tags, verdict, reason in self.judged("security-group", "security group", lister, "GroupId"):
            delete = lambda gid=gid: self.ec2.delete_security_group(GroupId=gid)  # noqa: E731
            self.decide("security-group", gid, verdict, tags, reason, delete, "delete")


def sweep_region(
    session,
    region: str,
    now: datetime,
    dry_run: bool,
    wait_delay: float = 5.0,
    wait_attempts: int = 120,
    log: Callable[[str], None] = lambda line: None,
    page_size: int | None = None,
    mine: common.Owner | None = None,
) -> list[Action]:
    """Sweep one region: instances, their deadline schedules, then (once terminated) security groups.
    `page_size` only makes tests exercise pagination; `mine` defaults to this deployment's project."""
    run = _Region(session, region, now, dry_run, log, page_size, mine or owner())
    run.instances()
    run.schedules()
    run.wait(wait_delay, wait_attempts)
    run.groups()
    return run.out


def sweep_recurring_region(
    session, region: str, now: datetime, dry_run: bool, log=lambda line: None, page_size=None, mine=None, **_
) -> list[Action]:
    """Instances a recurring schedule launched that outlived their own deadline (a hung guest whose
    shutdown timer never fired): live, with a stack tag and no expires-at (SweepRun.recurring)."""
    run = _Region(session, region, now, dry_run, log, page_size, mine or owner())
    for inst in list(tagged_instances(run.ec2, page_size, RECURRING)):
        state, tags = inst.get("State", {}).get("Name"), _tags(inst)
        if state in LIVE_STATES and EXPIRES_TAG not in tags and tags.get(STACK_TAG):
            run.out.append(run.run.recurring(region, inst["InstanceId"], tags, inst["LaunchTime"]))
    return run.out


def default_regions(session=None) -> list[str]:
    """Where this project launches: the catalog's AWS regions, the stacks' aws:region, the session's."""
    from infra import workspace as pulumi_ws  # not in the sweeper function's package
    from infra.catalog import load_catalog  # not in the sweeper function's package

    regions = {r for o in load_catalog().offerings(provider="aws") for r in o.regions}
    try:
        stacks = pulumi_ws.project_dir() / "stacks"
        for path in stacks.glob("Pulumi.aws-*.yaml"):
            region = pulumi_ws.stack_config(path.name[len("Pulumi.") : -len(".yaml")], stacks.parent).get("aws:region")
            if region:
                regions.add(str(region))
    except pulumi_ws.ProjectNotFound:
        pass
    if session is not None and session.region_name:
        regions.add(session.region_name)
    return sorted(regions)


def boto3_session():
    """A boto3 session made now: credentials resolved now, not cached from earlier in the process."""
    import boto3  # heavy: the cloud SDK; the provider interface (infra/aws/__init__.py) stays light

    return boto3.session.Session()


def session_client(service: str):
    """region -> a client of `service` on a fresh boto3 session (credentials resolved at each call)."""
    return lambda region: boto3_session().client(service, region_name=region)


def sweep(regions: Iterable[str] | None, now: datetime, dry_run: bool = False, session=None, **kw) -> list[Action]:
    session = session or boto3_session()
    if session.get_credentials() is None:
        raise common.NoAccess(
            "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
            "the permissions needed are in schedules/aws-sweeper-policy.json"
        )
    kw["mine"] = kw.get("mine") or owner()  # a bad GPUBENCH_PROJECT_ID stops here, before any call
    actions: list[Action] = []
    for region in list(regions or []) or default_regions(session):
        try:
            actions.extend(sweep_region(session, region, now, dry_run, **kw))
            actions.extend(sweep_recurring_region(session, region, now, dry_run, **kw))
        except Exception as exc:  # noqa: BLE001 - one region's outage does not hide the others
            actions.append(
                Action("aws", region, "region", region, "failed", reason="sweeping the region", error=error_text(exc))
            )
    return actions
