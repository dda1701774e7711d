"""AWS sweep: expired instances of ours, their deadline schedules, then their security groups.

Ours means a `gpubench:stack` tag and a `gpubench:expires-at` in the launcher's exact format
(infra.sweep.classify); anything else carrying the expiry tag is reported as left alone.

Order matters: schedules and instances first; a security group can only be
deleted once no instance uses it, so we wait for `terminated` with the EC2
waiter before deleting groups. Every error is recorded and the sweep goes on.
boto3 honours AWS_ENDPOINT_URL, so the same code runs against moto on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from infra import sweep as common
from infra.aws import DEADLINE_SCHEDULE_PREFIX, is_launcher_deadline
from infra.aws import EXPIRES_TAG as AWS_EXPIRES_TAG
from infra.aws import STACK_TAG as AWS_STACK_TAG
from infra.sweep import Action
from infra.tags import MAX_HOURS_KEY, recurring_deadline

LIVE_STATES = frozenset({"pending", "running", "stopping", "stopped"})
TERMINATE_TARGET_SUFFIX = ":ec2:terminateInstances"  # arn:aws:scheduler:::aws-sdk:ec2:terminateInstances
TAGGED = [{"Name": "tag-key", "Values": [AWS_EXPIRES_TAG]}]
MAX_HOURS_TAG = f"gpubench:{MAX_HOURS_KEY}"  # recurring launches (infra/aws/component.py AwsRecurring)
RECURRING = [{"Name": "tag-key", "Values": [MAX_HOURS_TAG]}]


def _tags(resource: dict) -> dict[str, str]:
    """Key -> value; an entry without a string key is dropped (it cannot be ours)."""
    return {
        t["Key"]: t.get("Value")
        for t in resource.get("Tags") or []
        if isinstance(t, dict) and isinstance(t.get("Key"), str)
    }


def _error(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    err = response.get("Error", {}) if isinstance(response, dict) else {}
    return f"{err.get('Code')}: {err.get('Message')}" if err.get("Code") else str(exc)


def classify(tags: dict[str, str], now: datetime) -> tuple[str, str]:
    """('expired' | 'kept' | 'left-alone', reason): ours only with gpubench:stack and a launcher-format deadline."""
    return common.classify(
        tags, now, stack_key=AWS_STACK_TAG, expires_key=AWS_EXPIRES_TAG, is_launcher_deadline=is_launcher_deadline
    )


def _pages(client, operation: str, page_size: int | None, **params) -> Iterator[dict]:
    config = {"PageSize": page_size} if page_size else {}
    return client.get_paginator(operation).paginate(**params, PaginationConfig=config)


def tagged_instances(ec2, page_size: int | None = None) -> Iterator[dict]:
    for page in _pages(ec2, "describe_instances", page_size, Filters=TAGGED):
        for reservation in page.get("Reservations", []):
            yield from reservation.get("Instances", [])


def tagged_security_groups(ec2, page_size: int | None = None) -> Iterator[dict]:
    for page in _pages(ec2, "describe_security_groups", page_size, Filters=TAGGED):
        yield from page.get("SecurityGroups", [])


def terminate_schedules(scheduler, page_size: int | None = None) -> Iterator[dict]:
    """Summaries of the project's deadline schedules: named deadline-schedule-*, target ec2:terminateInstances."""
    for page in _pages(scheduler, "list_schedules", page_size, NamePrefix=DEADLINE_SCHEDULE_PREFIX):
        for summary in page.get("Schedules", []):
            if str(summary.get("Target", {}).get("Arn", "")).endswith(TERMINATE_TARGET_SUFFIX):
                yield summary


def schedule_instance_ids(schedule: dict) -> set[str]:
    try:
        return set(json.loads(schedule.get("Target", {}).get("Input") or "{}").get("InstanceIds") or [])
    except (ValueError, AttributeError, TypeError):
        return set()


def sweep_region(
    session,
    region: str,
    now: datetime,
    dry_run: bool,
    wait_delay: float = 5.0,
    wait_attempts: int = 120,
    log: Callable[[str], None] = lambda line: None,
    page_size: int | None = None,
) -> list[Action]:
    """Sweep one region; `page_size` only makes tests exercise pagination."""
    ec2 = session.client("ec2", region_name=region)
    scheduler = session.client("scheduler", region_name=region)
    out: list[Action] = []

    def record(kind, rid, action, tags=None, reason="", error=None):
        tags = tags or {}
        stack, expires = tags.get(AWS_STACK_TAG), tags.get(AWS_EXPIRES_TAG)
        out.append(Action("aws", region, kind, rid, action, stack, expires, reason, error))

    expired_ids: set[str] = set()  # every expired instance of ours, any state: their schedules go too
    terminated: list[str] = []
    try:
        instances = list(tagged_instances(ec2, page_size))  # list fully, then act
    except Exception as exc:  # noqa: BLE001 - the groups below are still swept
        record("instance", "*", "failed", reason="listing tagged instances", error=_error(exc))
        instances = []
    for inst in instances:
        iid = str(inst.get("InstanceId", "?")) if isinstance(inst, dict) else "?"
        try:
            state, tags = inst.get("State", {}).get("Name"), _tags(inst)
            verdict, reason = classify(tags, now)
        except Exception as exc:  # noqa: BLE001 - one unreadable instance never stops the rest
            record("instance", iid, "failed", reason="reading the instance's tags", error=_error(exc))
            continue
        if verdict == "expired":
            expired_ids.add(iid)
        if state not in LIVE_STATES:
            continue  # already gone or going
        if verdict != "expired":
            record("instance", iid, verdict, tags, reason)
        elif dry_run:
            record("instance", iid, "would-terminate", tags, reason)
        else:
            try:
                ec2.terminate_instances(InstanceIds=[iid])
                terminated.append(iid)
                record("instance", iid, "terminated", tags, reason)
                log(f"[aws {region}] terminated {iid} ({tags.get(AWS_STACK_TAG)}, {reason})")
            except Exception as exc:  # noqa: BLE001 - keep sweeping
                record("instance", iid, "failed", tags, reason, _error(exc))

    try:
        schedules = list(terminate_schedules(scheduler, page_size)) if expired_ids else []
    except Exception as exc:  # noqa: BLE001
        record("schedule", "*", "failed", reason="listing EventBridge Scheduler schedules", error=_error(exc))
        schedules = []
    for summary in schedules:
        name, group = str(summary.get("Name", "?")), str(summary.get("GroupName") or "default")
        try:
            targets = schedule_instance_ids(scheduler.get_schedule(Name=name, GroupName=group))
        except Exception as exc:  # noqa: BLE001 - e.g. deleted by its own completion meanwhile
            record("schedule", f"{group}/{name}", "skipped", reason="could not read the schedule", error=_error(exc))
            continue
        if not targets or not targets <= expired_ids:
            continue  # only schedules aimed solely at expired instances of ours
        reason = f"deadline schedule of {', '.join(sorted(targets))}"
        if dry_run:
            record("schedule", f"{group}/{name}", "would-delete", reason=reason)
            continue
        try:
            scheduler.delete_schedule(Name=name, GroupName=group)
            record("schedule", f"{group}/{name}", "deleted", reason=reason)
        except Exception as exc:  # noqa: BLE001
            record("schedule", f"{group}/{name}", "failed", reason=reason, error=_error(exc))

    if terminated:
        try:
            ec2.get_waiter("instance_terminated").wait(
                InstanceIds=terminated, WaiterConfig={"Delay": wait_delay, "MaxAttempts": wait_attempts}
            )
        except Exception as exc:  # noqa: BLE001 - the group deletes below will say which still hang
            record("instance", ",".join(terminated), "failed", reason="waiting for terminated", error=_error(exc))

    try:
        groups = list(tagged_security_groups(ec2, page_size))
    except Exception as exc:  # noqa: BLE001
        record("security-group", "*", "failed", reason="listing tagged security groups", error=_error(exc))
        groups = []
    for sg in groups:
        gid = str(sg.get("GroupId", "?")) if isinstance(sg, dict) else "?"
        try:
            tags = _tags(sg)
            verdict, reason = classify(tags, now)
        except Exception as exc:  # noqa: BLE001 - one unreadable group never stops the rest
            record("security-group", gid, "failed", reason="reading the group's tags", error=_error(exc))
            continue
        if verdict != "expired":
            record("security-group", gid, verdict, tags, reason)
        elif dry_run:
            record("security-group", gid, "would-delete", tags, reason)
        else:
            try:
                ec2.delete_security_group(GroupId=gid)
                record("security-group", gid, "deleted", tags, reason)
            except Exception as exc:  # noqa: BLE001
                record("security-group", gid, "failed", tags, reason, _error(exc))
    return out


def sweep_recurring_region(
    session,
    region: str,
    now: datetime,
    dry_run: bool,
    log: Callable[[str], None] = lambda line: None,
    page_size: int | None = None,
    **_,
) -> list[Action]:
    """Instances a recurring schedule launched that outlived their own deadline
    (a hung guest whose shutdown timer never fired). Ours only when they carry
    the stack tag and a launcher-format max-hours, and no expires-at (those
    follow the rule above); deadline = LaunchTime + max-hours + grace."""
    ec2 = session.client("ec2", region_name=region)
    out: list[Action] = []
    listed = []
    for page in _pages(ec2, "describe_instances", page_size, Filters=RECURRING):
        for reservation in page.get("Reservations", []):
            listed.extend(reservation.get("Instances", []))
    for inst in listed:
        iid, state, tags = inst["InstanceId"], inst.get("State", {}).get("Name"), _tags(inst)
        if state not in LIVE_STATES or AWS_EXPIRES_TAG in tags or not tags.get(AWS_STACK_TAG):
            continue
        deadline = recurring_deadline(inst["LaunchTime"], tags.get(MAX_HOURS_TAG, ""))

        def record(action, reason, error=None, iid=iid, tags=tags, deadline=deadline):
            shown = deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if deadline else None
            out.append(Action("aws", region, "instance", iid, action, tags.get(AWS_STACK_TAG), shown, reason, error))

        if deadline is None:
            record("skipped", f"{MAX_HOURS_TAG}={tags.get(MAX_HOURS_TAG)!r} is not a launcher max-hours: never guess")
            continue
        reason = f"recurring launch at {inst['LaunchTime'].isoformat()} + {MAX_HOURS_TAG} {tags[MAX_HOURS_TAG]} + grace"
        if deadline > now:
            record("kept", reason)
        elif dry_run:
            record("would-terminate", reason)
        else:
            try:
                ec2.terminate_instances(InstanceIds=[iid])
                record("terminated", reason)
                log(f"[aws {region}] terminated {iid} ({tags.get(AWS_STACK_TAG)}, {reason})")
            except Exception as exc:  # noqa: BLE001 - keep sweeping
                record("failed", reason, _error(exc))
    return out


def default_regions(session=None) -> list[str]:
    """Where this project launches: the catalog's AWS regions, the stacks' aws:region, the session's."""
    from infra import workspace as pulumi_ws
    from infra.catalog import load_catalog

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


def sweep(regions: Iterable[str] | None, now: datetime, dry_run: bool = False, session=None, **kw) -> list[Action]:
    import boto3

    session = session or boto3.session.Session()
    if session.get_credentials() is None:
        raise RuntimeError(
            "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
            "the permissions needed are in schedules/aws-sweeper-policy.json"
        )
    actions: list[Action] = []
    for region in list(regions or []) or default_regions(session):
        try:
            actions.extend(sweep_region(session, region, now, dry_run, **kw))
            actions.extend(sweep_recurring_region(session, region, now, dry_run, **kw))
        except Exception as exc:  # noqa: BLE001 - one region's outage does not hide the others
            actions.append(
                Action("aws", region, "region", region, "failed", reason="sweeping the region", error=_error(exc))
            )
    return actions
