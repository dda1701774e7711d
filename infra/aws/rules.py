"""AWS's documented rules for what a stack renders (names, tags, keys), and where each resource holds them.
Each rule carries the page that states it (read 2026-11); infra/provider_rules.py applies the table. A resource
type the program creates must appear in FIELDS or EXEMPT (the matrix test fails otherwise).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from infra.provider_rules import Field, Rule, Table

IAM_API = "https://docs.aws.amazon.com/IAM/latest/APIReference"
IAM_GUIDE = "https://docs.aws.amazon.com/IAM/latest/UserGuide"
EC2_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference"
LAMBDA_API = "https://docs.aws.amazon.com/lambda/latest/api"
SCHEDULER_API = "https://docs.aws.amazon.com/scheduler/latest/APIReference"
_IAM_NAME = re.compile(r"[\w+=,.@-]+", re.ASCII)
# EC2's own rules for names and descriptions of security groups and their rules.
_SG_TEXT = re.compile(r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]*")
_SG_SAYS = "up to 255 of a-z A-Z 0-9 spaces ._-:/()#,@[]+=&;{}!$*"
TAGGING_GUIDE = "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html"
EC2_TAGS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions"


def _tag_rules(name: str, what: str, source: str, chars: tuple[str, str], extra: str) -> dict[str, Rule]:
    r"""`<name>-key` (1-128, not `aws:`) and `<name>-value` (0-256) over \p{L}\p{Z}\p{N} and `extra`."""
    unicode = {"categories": ("L", "Z", "N"), "extra": extra}
    return {
        f"{name}-key": Rule(
            f"{what} key", source, f"{chars[0]}, 1-128 characters", 128, 1, **unicode, forbidden_prefixes=("aws:",)
        ),
        f"{name}-value": Rule(f"{what} value", source, f"{chars[1]}, 0-256 characters", 256, **unicode),
    }


def _iam_name(what: str, action: str, max_len: int) -> Rule:
    return Rule(what, f"{IAM_API}/{action}.html", f"[\\w+=,.@-]+, 1-{max_len}", max_len, 1, pattern=_IAM_NAME)


_IAM_TAG = "[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]"
_OTHER_TAG = "letters, numbers, spaces and + - = . _ : / @"
RULES: dict[str, Rule] = {
    **_tag_rules("iam-tag", "IAM tag", f"{IAM_API}/API_Tag.html", (f"{_IAM_TAG}+", f"{_IAM_TAG}*"), "_.:/=+-@"),
    # Tags of other services (S3 buckets and objects, Lambda, CloudWatch Logs): "letters,
    # numbers, and spaces representable in UTF-8, and the following characters: + - = . _ : / @".
    **_tag_rules("tag", "tag", TAGGING_GUIDE, (_OTHER_TAG, _OTHER_TAG), "+-=._:/@"),
    # EC2 allows any character in a tag, but an instance whose tags are in its metadata (the
    # recurring launch template turns that on) takes keys of "letters (a-z, A-Z), numbers (0-9),
    # and + - = . , _ : @", no spaces, no '/', not '.', '..' or '_index'.
    "ec2-tag-key": Rule(
        "EC2 instance tag key (tags in instance metadata)",
        EC2_TAGS,
        "a-z, A-Z, 0-9 and + - = . , _ : @, 1-128 characters",
        128,
        1,
        pattern=re.compile(r"[A-Za-z0-9+\-=.,_:@]+"),
        forbidden_prefixes=("aws:",),
        forbidden=(".", "..", "_index"),
    ),
    "ec2-tag-value": Rule("EC2 tag value", EC2_TAGS, "any characters, 0-256", 256),
    "iam-role-name": _iam_name("IAM role name", "API_CreateRole", 64),
    "iam-profile-name": _iam_name("IAM instance profile name", "API_CreateInstanceProfile", 128),
    "iam-policy-name": _iam_name("IAM inline policy name", "API_PutRolePolicy", 128),
    "iam-description": Rule(
        "IAM role description",
        f"{IAM_API}/API_CreateRole.html",
        "[\\u0009\\u000A\\u000D\\u0020-\\u007E\\u00A1-\\u00FF]*, 0-1000",
        1000,
        pattern=re.compile("[\u0009\u000a\u000d\u0020-\u007e\u00a1-\u00ff]*"),
    ),
    "sg-name": Rule(
        "security group name",
        f"{EC2_API}/API_CreateSecurityGroup.html",
        f"{_SG_SAYS}, not starting with sg-",
        255,
        1,
        pattern=_SG_TEXT,
        forbidden_prefixes=("sg-",),
    ),
    "sg-description": Rule(
        "security group (or rule) description",
        f"{EC2_API}/API_CreateSecurityGroup.html",
        _SG_SAYS,
        255,
        pattern=_SG_TEXT,
    ),
    "launch-template-name": Rule(
        "launch template name",
        f"{EC2_API}/API_CreateLaunchTemplate.html",
        "[a-zA-Z0-9().\\-/_]+, 3-128",
        128,
        3,
        pattern=re.compile(r"[a-zA-Z0-9().\-/_]+"),
    ),
    "launch-template-description": Rule(
        "launch template version description",
        f"{EC2_API}/API_CreateLaunchTemplate.html",
        "VersionDescription: up to 255 characters",
        255,
    ),
    "key-pair-name": Rule(
        "key pair name",
        f"{EC2_API}/API_ImportKeyPair.html",
        "up to 255 ASCII characters",
        255,
        1,
        pattern=re.compile(r"[\x20-\x7e]+"),
    ),
    "s3-object-key": Rule(
        "S3 object key",
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html",
        "up to 1024 bytes of UTF-8; the safe characters are letters, digits and ! - _ . * ' ( ) /",
        1024,
        1,
        pattern=re.compile(r"[A-Za-z0-9!\-_.*'()/]+"),
        bytes_utf8=True,
    ),
    "s3-bucket-name": Rule(
        "S3 bucket name",
        "https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html",
        "3-63 of a-z 0-9 . -, starting and ending with a letter or number, not xn--, sthree-, amzn-s3-demo-",
        63,
        3,
        pattern=re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"),
        forbidden_prefixes=("xn--", "sthree-", "amzn-s3-demo-"),
    ),
    "lambda-function-name": Rule(
        "Lambda function name",
        f"{LAMBDA_API}/API_CreateFunction.html",
        "[a-zA-Z0-9-_]+, 1-64",
        64,
        1,
        pattern=re.compile(r"[a-zA-Z0-9\-_]+"),
    ),
    "lambda-description": Rule(
        "Lambda function description", f"{LAMBDA_API}/API_CreateFunction.html", "0-256 characters", 256
    ),
    "lambda-env-key": Rule(
        "Lambda environment variable name",
        f"{LAMBDA_API}/API_Environment.html",
        "[a-zA-Z]([a-zA-Z0-9_])+",
        1024,
        2,
        pattern=re.compile(r"[a-zA-Z][a-zA-Z0-9_]+"),
    ),
    "log-group-name": Rule(
        "CloudWatch Logs log group name",
        "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html",
        "[\\.\\-_/#A-Za-z0-9]+, 1-512",
        512,
        1,
        pattern=re.compile(r"[.\-_/#A-Za-z0-9]+"),
    ),
    "schedule-name": Rule(
        "EventBridge Scheduler schedule or group name",
        f"{SCHEDULER_API}/API_CreateSchedule.html",
        "^[0-9a-zA-Z-_.]+$, 1-64",
        64,
        1,
        pattern=re.compile(r"[0-9a-zA-Z\-_.]+"),
    ),
    "schedule-description": Rule(
        "EventBridge Scheduler schedule description",
        f"{SCHEDULER_API}/API_CreateSchedule.html",
        "0-512 characters",
        512,
    ),
    "schedule-input": Rule(
        "EventBridge Scheduler target input",
        f"{SCHEDULER_API}/API_Target.html",
        "Input: at least 1 character; the whole request is at most 256 KB",
        262144,
        1,
        bytes_utf8=True,
    ),
    # IAM quotas: "Role trust policy length: 2,048 characters"; "Inline policy size for roles:
    # 10,240 characters" (IAM does not count white space; these count it, so they err safe).
    "iam-trust-policy": Rule(
        "IAM role trust policy", f"{IAM_GUIDE}/reference_iam-quotas.html", "at most 2,048 characters", 2048, 1
    ),
    "iam-inline-policy": Rule(
        "IAM inline role policy",
        f"{IAM_GUIDE}/reference_iam-quotas.html",
        "at most 10,240 characters for a role's inline policies",
        10240,
        1,
    ),
    # Sid: "supports ASCII uppercase letters (A-Z), lowercase letters (a-z), and numbers (0-9)".
    "iam-sid": Rule(
        "IAM policy statement id",
        f"{IAM_GUIDE}/reference_policies_elements_sid.html",
        "A-Z, a-z, 0-9",
        10240,
        pattern=re.compile(r"[A-Za-z0-9]*"),
    ),
    # "User data is limited to 16 KB, in raw form, before it is base64-encoded."
    "user-data": Rule(
        "EC2 user data",
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html",
        "at most 16 KB before base64 encoding",
        16384,
        bytes_utf8=True,
    ),
}

# Limits on the number of tags.
IAM_TAG_LIMIT = (50, f"{IAM_API}/API_CreateRole.html: Tags, at most 50")
EC2_TAG_LIMIT = (50, f"{EC2_TAGS}: at most 50 tags per resource")
S3_OBJECT_TAG_LIMIT = (10, "https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-tagging.html: up to 10 tags")


def _tags(path: str, kind: str, limit: tuple[int, str]) -> Field:
    return Field(path, key_rule=f"{kind}-key", value_rule=f"{kind}-value", max_items=limit[0], items_rule=limit[1])


IAM_TAGS = _tags("tags", "iam-tag", IAM_TAG_LIMIT)
EC2_INSTANCE_TAGS = _tags("tags", "ec2-tag", EC2_TAG_LIMIT)
OTHER_TAGS = _tags("tags", "tag", EC2_TAG_LIMIT)


def _policy_sids(table: Table, inputs: Mapping[str, Any]) -> list[str]:
    """The statement ids inside a policy document (a JSON string input)."""
    try:
        statements = json.loads(inputs.get("policy") or "{}").get("Statement", [])
    except (ValueError, AttributeError):
        return []
    problems = (table.rule("iam-sid").problem(st["Sid"]) for st in statements if isinstance(st, dict) and "Sid" in st)
    return [f"policy: {p}" for p in problems if p]


def _user_data(table: Table, inputs: Mapping[str, Any]) -> list[str]:
    text = inputs.get("userDataBase64") or inputs.get("userData")
    if not isinstance(text, str):
        return []
    try:  # as EC2 counts it, before base64: the template and `userDataBase64` hold it encoded (gzip inside)
        raw = base64.b64decode(text, validate=True)
    except ValueError:  # `userData`: raw
        raw = text.encode()
    problem = table.rule("user-data").problem(raw)
    return [f"userData: {problem}"] if problem else []


# What the scheduler substitutes for its context attributes: a sample of each, so the tags
# the RunInstances input names are checked as EC2 will see them.
SCHEDULER_CONTEXT = {
    "<aws.scheduler.execution-id>": "d1b5a3f4-6a7e-4c4e-9a8b-1f2e3d4c5b6a",
    "<aws.scheduler.scheduled-time>": "2030-01-02T03:04:00Z",
}


def _schedule_input(table: Table, inputs: Mapping[str, Any]) -> list[str]:
    """The RunInstances request a recurring schedule sends: its tags are instance tags."""
    body = (inputs.get("target") or {}).get("input")
    if not isinstance(body, str):
        return []
    out = [f"target.input: {p}" for p in [table.rule("schedule-input").problem(body)] if p]
    for placeholder, sample in SCHEDULER_CONTEXT.items():
        body = body.replace(placeholder, sample)
    try:
        request = json.loads(body)
    except ValueError:
        return out
    for spec in request.get("TagSpecifications", []) if isinstance(request, dict) else []:
        for tag in spec.get("Tags", []):
            for rule, text in (("ec2-tag-key", tag.get("Key")), ("ec2-tag-value", tag.get("Value"))):
                problem = table.rule(rule).problem(text)
                if problem:
                    out.append(f"target.input TagSpecifications: {problem}")
    return out


FIELDS: dict[str, tuple[Field, ...]] = {
    "aws:iam/role:Role": (
        Field("name", "iam-role-name", autoname=True),
        Field("description", "iam-description"),
        Field("assumeRolePolicy", "iam-trust-policy"),
        IAM_TAGS,
    ),
    "aws:iam/instanceProfile:InstanceProfile": (Field("name", "iam-profile-name", autoname=True), IAM_TAGS),
    "aws:iam/rolePolicy:RolePolicy": (
        Field("name", "iam-policy-name", autoname=True),
        Field("policy", "iam-inline-policy"),
    ),
    "aws:ec2/securityGroup:SecurityGroup": (
        Field("name", "sg-name", autoname=True),
        Field("description", "sg-description"),
        Field("ingress[].description", "sg-description"),
        Field("egress[].description", "sg-description"),
        EC2_INSTANCE_TAGS,
    ),
    "aws:ec2/instance:Instance": (
        EC2_INSTANCE_TAGS,
        _tags("rootBlockDevice.tags", "ec2-tag", EC2_TAG_LIMIT),
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        Field("name", "launch-template-name", autoname=True),
        Field("description", "launch-template-description"),
        EC2_INSTANCE_TAGS,
        _tags("tagSpecifications[].tags", "ec2-tag", EC2_TAG_LIMIT),
    ),
    "aws:ec2/keyPair:KeyPair": (Field("keyName", "key-pair-name", autoname=True), EC2_INSTANCE_TAGS),
    "aws:s3/bucketObjectv2:BucketObjectv2": (
        Field("key", "s3-object-key"),
        _tags("tags", "tag", S3_OBJECT_TAG_LIMIT),
    ),
    "aws:s3/bucket:Bucket": (Field("bucket", "s3-bucket-name", autoname=True), OTHER_TAGS),
    "aws:lambda/function:Function": (
        Field("name", "lambda-function-name", autoname=True),
        Field("description", "lambda-description"),
        Field("environment.variables", key_rule="lambda-env-key"),
        OTHER_TAGS,
    ),
    "aws:cloudwatch/logGroup:LogGroup": (Field("name", "log-group-name", autoname=True), OTHER_TAGS),
    "aws:scheduler/schedule:Schedule": (
        Field("name", "schedule-name", autoname=True),
        Field("groupName", "schedule-name"),
        Field("description", "schedule-description"),
    ),
}

EXEMPT: dict[str, str] = {
    t: "configures the bucket it names; renders no name, tag or key of its own"
    for t in (
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
        "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketVersioning:BucketVersioning",
    )
}

CHECKS = {
    "aws:iam/rolePolicy:RolePolicy": _policy_sids,
    "aws:ec2/instance:Instance": _user_data,
    "aws:ec2/launchTemplate:LaunchTemplate": _user_data,
    "aws:scheduler/schedule:Schedule": _schedule_input,
}

TABLE = Table(RULES, FIELDS, EXEMPT, CHECKS, config={"bucketName": "s3-bucket-name"})
