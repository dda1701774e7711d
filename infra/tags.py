"""How this project marks what it launches (the launcher writes, the sweeper and teardown read): tag
keys, deadlines and stack outputs. Each cloud encodes them (infra/<cloud>/): AWS tags `gpubench:<key>`
with RFC 3339 UTC deadlines; GCP labels `gpubench-<key>` (no ':' or uppercase) with `20240501t120000z`.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

from infra.clouds import RESULTS_STACKS  # stacks holding the results buckets: never destroyed

TAG_KEYS = ("project", "stack", "offering", "market", "hourly-usd", "expires-at")

# Stack outputs, first match wins (`expiresAt` accepted in case a program names it so).
DEADLINE_OUTPUTS = ("deadline", "expiresAt")
RESULTS_URL_OUTPUT = "resultsUrl"


_BASIC = re.compile(r"(\d{4})(\d{2})(\d{2})t(\d{2})(\d{2})(\d{2})(?:[._](\d+))?z", re.IGNORECASE | re.ASCII)


class BadDeadline(ValueError):
    """An expires-at value that is neither RFC 3339 nor the GCP label form."""


def parse_deadline(text: str) -> datetime:
    """UTC datetime from `2024-05-01T12:00:00Z`, `...+00:00` or `20240501t120000z` (no zone: UTC);
    anything else, an impossible date included, raises BadDeadline only."""
    raw = str(text).strip()
    try:
        if m := _BASIC.fullmatch(raw):
            y, mo, d, h, mi, s, _ = m.groups()
            return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
        value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise BadDeadline(
            f"expires-at {raw[:80]!r} is not a deadline; expected RFC 3339 UTC like 2024-05-01T12:00:00Z "
            "(AWS tag) or 20240501t120000z (GCP label)"
        ) from None


# The `deadline` stack output as the launcher writes it (pulumi_time Offset.rfc3339, UTC, whole seconds).
_STACK_DEADLINE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", re.ASCII)


def is_stack_deadline(text) -> bool:
    """True only for a deadline output in the launcher's exact form, 2024-05-01T12:00:00Z."""
    return isinstance(text, str) and _STACK_DEADLINE.fullmatch(text) is not None


def parse_now(text: str | None) -> datetime:
    """`--now` for sweep: an ISO timestamp (UTC if no zone), default the current time."""
    if not text:
        return datetime.now(timezone.utc)
    return parse_deadline(text)


# A recurring launch carries `max-hours`, not expires-at: its deadline is its launch + max-hours; the
# guest's timer fires at boot + max-hours, a little later, so the sweep waits a grace beyond it.
MAX_HOURS_KEY = "max-hours"
RECURRING_GRACE = timedelta(minutes=15)
MAX_HOURS_BOUNDS = (0.25, 72.0)  # gpubench:maxHours (infra.config reads them here)
_MAX_HOURS = re.compile(r"^(\d{1,2})(?:[._](\d{1,4}))?$")


def parse_max_hours(text: str) -> float | None:
    """Hours from a max-hours tag as the launcher writes it (`2`, `1.5`; GCP label `1_5`), else None."""
    m = _MAX_HOURS.match(str(text).strip())
    if not m:
        return None
    hours = float(f"{m.group(1)}.{m.group(2) or 0}")
    return hours if MAX_HOURS_BOUNDS[0] <= hours <= MAX_HOURS_BOUNDS[1] else None


def recurring_deadline(launched: datetime, max_hours_text: str) -> datetime | None:
    """When the sweep may delete a recurring launch: launch + max-hours + grace; None if not ours."""
    hours = parse_max_hours(max_hours_text)
    if hours is None:
        return None
    if launched.tzinfo is None:
        launched = launched.replace(tzinfo=timezone.utc)
    return launched.astimezone(timezone.utc) + timedelta(hours=hours) + RECURRING_GRACE


# Ownership: the sweepers (and their IAM conditions) act only on resources whose `project` tag is this
# deployment's GPUBENCH_PROJECT_ID (a valid GCP label value) AND whose stack tag follows the stack-name
# convention (`[recurring-]<cloud>-<family>-<size>[-spot]`).
PROJECT_KEY = "project"
PROJECT_ENV = "GPUBENCH_PROJECT_ID"
DEFAULT_PROJECT_ID = "gpubench"
_PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{0,62}", re.ASCII)
# `<cloud>-...` (infra.catalog stack_name) or `recurring-<cloud>-...` (infra.config RECURRING_PREFIX)
_STACK_NAME = re.compile(r"(?:recurring-)?(?P<cloud>[a-z][a-z0-9]*)-[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)


class BadProjectId(ValueError):
    """A GPUBENCH_PROJECT_ID that cannot be a tag and label value."""


def project_id(env=None) -> str:
    """This deployment's project id: GPUBENCH_PROJECT_ID, default `gpubench`."""
    value = ((os.environ if env is None else env).get(PROJECT_ENV) or DEFAULT_PROJECT_ID).strip()
    if not _PROJECT_ID.fullmatch(value):
        raise BadProjectId(
            f"{PROJECT_ENV}={value[:80]!r} is not a project id; use 1-63 of a-z, 0-9 and '-', starting with a letter"
        )
    return value


def is_project_stack(name, cloud: str) -> bool:
    """True only for a stack name this project generates for `cloud` (aws-p3-8x, gcp-v100-1x-spot);
    never a results stack, never another tool's name (prod-database-NOT-OURS)."""
    if not isinstance(name, str):
        return False
    m = _STACK_NAME.fullmatch(name)
    return m is not None and m.group("cloud") == cloud and name not in RESULTS_STACKS
