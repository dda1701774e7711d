"""GCP's documented rules for what a stack renders (ids, names, labels, object names, metadata keys), and
where each resource holds them. Each rule carries the page that states it (read 2026-11); infra/provider_rules.py
applies the table. A resource type the program creates must appear in FIELDS or EXEMPT.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from infra.provider_rules import Field, Rule, Table

RFC1035 = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?", re.ASCII)
LABELS = "https://cloud.google.com/compute/docs/labeling-resources#requirements"
METADATA = "https://cloud.google.com/compute/docs/metadata/setting-custom-metadata#limitations"
IAM_ACCOUNTS = "https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts"
IAM_ROLES = "https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles"
SCHEDULER_JOB = "https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs#Job"

RULES: dict[str, Rule] = {
    # projects.serviceAccounts.create: accountId "must be 6-30 characters long, and match the
    # regular expression [a-z]([-a-z0-9]*[a-z0-9])"; the google provider checks the same
    # (validateRFC1035Name(6, 30)) before it calls the API.
    "service-account-id": Rule(
        "service account id",
        f"{IAM_ACCOUNTS}/create",
        "[a-z]([-a-z0-9]*[a-z0-9]), 6-30 characters",
        30,
        6,
        pattern=RFC1035,
    ),
    "service-account-display-name": Rule(
        "service account display name",
        f"{IAM_ACCOUNTS}#ServiceAccount",
        "displayName: at most 100 UTF-8 bytes",
        100,
        bytes_utf8=True,
    ),
    # Labels: keys and values "can contain only lowercase letters, numeric characters,
    # underscores, and dashes" (and international characters), at most 63 characters;
    # keys "must start with a lowercase letter"; at most 64 labels.
    "label-key": Rule(
        "label key",
        LABELS,
        "lowercase letters, digits, _ and -, starting with a lowercase letter, 1-63 characters",
        63,
        1,
        pattern=re.compile(r"[a-z][a-z0-9_-]*", re.ASCII),
    ),
    "label-value": Rule(
        "label value",
        LABELS,
        "lowercase letters, digits, _ and -, 0-63 characters",
        63,
        pattern=re.compile(r"[a-z0-9_-]*", re.ASCII),
    ),
    # Compute Engine resource names: "[a-z]([-a-z0-9]*[a-z0-9])?", 1-63 characters.
    "compute-name": Rule(
        "Compute Engine resource name",
        "https://cloud.google.com/compute/docs/naming-resources#resource-name-format",
        "[a-z]([-a-z0-9]*[a-z0-9])?, 1-63 characters",
        63,
        1,
        pattern=RFC1035,
    ),
    # The google provider's name_prefix of an instance template: "Max length is 54 characters";
    # a generated suffix completes it into a resource name.
    "compute-name-prefix": Rule(
        "instance template name prefix",
        "https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/compute_instance_template#name_prefix",
        "the start of a resource name, [a-z][-a-z0-9]*, at most 54 characters",
        54,
        1,
        pattern=re.compile(r"[a-z][-a-z0-9]*", re.ASCII),
    ),
    "metadata-key": Rule(
        "metadata key",
        METADATA,
        "[a-zA-Z0-9-_], at most 128 bytes",
        128,
        1,
        pattern=re.compile(r"[a-zA-Z0-9_-]+", re.ASCII),
    ),
    "metadata-value": Rule("metadata value", METADATA, "at most 256 KB", 262144, bytes_utf8=True),
    "custom-role-id": Rule(
        "custom role id",
        f"{IAM_ROLES}/create",
        "[a-zA-Z0-9_\\.]{3,64}",
        64,
        3,
        pattern=re.compile(r"[a-zA-Z0-9_.]+", re.ASCII),
    ),
    "custom-role-title": Rule(
        "custom role title", f"{IAM_ROLES}#Role", "title: limited to 100 UTF-8 bytes", 100, bytes_utf8=True
    ),
    # Object names: 1-1024 bytes of UTF-8, no carriage return or line feed, not '.' or '..',
    # not starting with .well-known/acme-challenge/.
    "gcs-object-name": Rule(
        "Cloud Storage object name",
        "https://cloud.google.com/storage/docs/objects#naming",
        "1-1024 bytes of UTF-8, no CR or LF, not . or ..",
        1024,
        1,
        pattern=re.compile(r"[^\r\n]+"),
        bytes_utf8=True,
        forbidden=(".", ".."),
        forbidden_prefixes=(".well-known/acme-challenge/",),
    ),
    "gcs-bucket-name": Rule(
        "Cloud Storage bucket name",
        "https://cloud.google.com/storage/docs/buckets#naming",
        "3-63 of a-z 0-9 - _ ., starting and ending with a letter or number, not starting with goog",
        63,
        3,
        pattern=re.compile(r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?", re.ASCII),
        forbidden_prefixes=("goog",),
    ),
    "scheduler-job-name": Rule(
        "Cloud Scheduler job id",
        SCHEDULER_JOB,
        "letters, digits, - and _, at most 500 characters",
        500,
        1,
        pattern=re.compile(r"[A-Za-z0-9_-]+", re.ASCII),
    ),
    "scheduler-job-description": Rule("Cloud Scheduler job description", SCHEDULER_JOB, "at most 500 characters", 500),
    # A Cloud Run function's name: "must start with a letter, be at most 63 characters and
    # contain only lowercase letters, numbers and hyphens" (not ending in a hyphen).
    "function-name": Rule(
        "Cloud Run function name",
        "https://cloud.google.com/functions/docs/reference/rest/v2/projects.locations.functions#Function",
        "[a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters",
        63,
        1,
        pattern=RFC1035,
    ),
}

LABEL_LIMIT = f"{LABELS}: each resource can have up to 64 labels"


def _labels(path: str) -> Field:
    return Field(path, key_rule="label-key", value_rule="label-value", max_items=64, items_rule=LABEL_LIMIT)


def _bulk_insert_body(table: Table, inputs: Mapping[str, Any]) -> list[str]:
    """A recurring job's bulkInsert body: the VM names its namePattern makes are resource names."""
    body = (inputs.get("httpTarget") or {}).get("body")
    if not isinstance(body, str):
        return []
    try:
        request = json.loads(base64.b64decode(body))
    except ValueError:
        return []
    pattern = request.get("namePattern") if isinstance(request, dict) else None
    if not isinstance(pattern, str):
        return []
    # "#" characters are replaced with digits: the first and the last VM of the pattern
    return [
        f"httpTarget.body namePattern: {p}"
        for p in {table.rule("compute-name").problem(pattern.replace("#", d)) for d in "09"}
        if p
    ]


FIELDS: dict[str, tuple[Field, ...]] = {
    "gcp:serviceaccount/account:Account": (
        Field("accountId", "service-account-id"),
        Field("displayName", "service-account-display-name"),
    ),
    "gcp:compute/instance:Instance": (
        Field("name", "compute-name", autoname=True),
        _labels("labels"),
        _labels("bootDisk.initializeParams.labels"),
        Field("metadata", key_rule="metadata-key", value_rule="metadata-value"),
    ),
    "gcp:compute/instanceTemplate:InstanceTemplate": (
        Field("namePrefix", "compute-name-prefix"),
        _labels("labels"),
        _labels("disks[].labels"),
        Field("metadata", key_rule="metadata-key", value_rule="metadata-value"),
    ),
    "gcp:compute/network:Network": (Field("name", "compute-name", autoname=True),),
    "gcp:compute/subnetwork:Subnetwork": (Field("name", "compute-name", autoname=True),),
    "gcp:compute/firewall:Firewall": (Field("name", "compute-name", autoname=True),),
    "gcp:storage/bucket:Bucket": (Field("name", "gcs-bucket-name", autoname=True), _labels("labels")),
    "gcp:storage/bucketObject:BucketObject": (Field("name", "gcs-object-name"),),
    "gcp:storage/managedFolder:ManagedFolder": (Field("name", "gcs-object-name"),),
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": (Field("managedFolder", "gcs-object-name"),),
    "gcp:projects/iAMCustomRole:IAMCustomRole": (
        Field("roleId", "custom-role-id"),
        Field("title", "custom-role-title"),
    ),
    "gcp:cloudscheduler/job:Job": (
        Field("name", "scheduler-job-name", autoname=True),
        Field("description", "scheduler-job-description"),
    ),
    "gcp:cloudfunctionsv2/function:Function": (Field("name", "function-name", autoname=True), _labels("labels")),
}

EXEMPT: dict[str, str] = {
    "gcp:storage/bucketIAMMember:BucketIAMMember": "binds an account to a bucket; its condition is checked by the run-scope tests",
    "gcp:projects/iAMMember:IAMMember": "binds an account to a role; names nothing new",
    "gcp:serviceaccount/iAMMember:IAMMember": "binds an account to another; names nothing new",
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember": "binds an account to the function; names nothing new",
}

CHECKS = {"gcp:cloudscheduler/job:Job": _bulk_insert_body}

TABLE = Table(RULES, FIELDS, EXEMPT, CHECKS, config={"bucketName": "gcs-bucket-name"})
