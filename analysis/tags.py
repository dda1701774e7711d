"""How this project marks what it launches, seen from the sweeper and teardown.

Mirrors what the Pulumi program writes (infra/launch.py, infra/aws.py), kept
here so analysis works without importing the Pulumi program; a test checks
the two agree.

- AWS tags: `gpubench:<key>`, `gpubench:expires-at` in RFC 3339 UTC
  (`2024-05-01T12:00:00Z`).
- GCP labels: `gpubench-<key>` (labels allow no ':' and no uppercase), the
  deadline in ISO 8601 basic form, lowercased (`20240501t120000z`).
- Stack outputs: `deadline` (RFC 3339) and `resultsUrl` on benchmark stacks;
  results stacks export `resultsUrl` and `bucketName`.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

TAG_KEYS = ("stack", "offering", "market", "hourly-usd", "expires-at")

AWS_PREFIX = "gpubench:"
GCP_PREFIX = "gpubench-"
AWS_STACK_TAG = AWS_PREFIX + "stack"
AWS_EXPIRES_TAG = AWS_PREFIX + "expires-at"
GCP_STACK_LABEL = GCP_PREFIX + "stack"
GCP_EXPIRES_LABEL = GCP_PREFIX + "expires-at"

# Stack outputs, first match wins (`expiresAt` accepted in case a program names it so).
DEADLINE_OUTPUTS = ("deadline", "expiresAt")
RESULTS_URL_OUTPUT = "resultsUrl"

# EventBridge Scheduler deadline schedules: Pulumi auto-names the `deadline-schedule` resource
# `deadline-schedule-<random>`; the sweeper's IAM policy is limited to that name.
DEADLINE_SCHEDULE_PREFIX = "deadline-schedule-"

# Stacks that hold the results buckets: never destroyed by teardown.
RESULTS_STACKS = frozenset({"aws-results", "gcp-results"})

_BASIC = re.compile(r"^(\d{4})(\d{2})(\d{2})t(\d{2})(\d{2})(\d{2})(?:[._](\d+))?z$", re.IGNORECASE)


class BadDeadline(ValueError):
    """An expires-at value that is neither RFC 3339 nor the GCP label form."""


def parse_deadline(text: str) -> datetime:
    """Timezone-aware UTC datetime from `2024-05-01T12:00:00Z`, `...+00:00` or `20240501t120000z`.

    A value without a zone is taken as UTC (the project writes UTC only).
    """
    raw = str(text).strip()
    m = _BASIC.match(raw)
    if m:
        y, mo, d, h, mi, s, _ = m.groups()
        return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), tzinfo=timezone.utc)
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadDeadline(
            f"expires-at {raw!r} is not a deadline; expected RFC 3339 UTC like 2024-05-01T12:00:00Z "
            "(AWS tag) or 20240501t120000z (GCP label)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def is_expired(text: str, now: datetime) -> bool:
    return parse_deadline(text) <= now


def gcp_label_deadline(when: datetime) -> str:
    """The GCP label form of a deadline (tests and fixtures write it this way)."""
    return when.astimezone(timezone.utc).strftime("%Y%m%dt%H%M%Sz")


def aws_tag_deadline(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_now(text: str | None) -> datetime:
    """`--now` for sweep: an ISO timestamp (UTC if no zone), default the current time."""
    if not text:
        return datetime.now(timezone.utc)
    return parse_deadline(text)
