"""AWS (EC2, S3, IAM, EventBridge Scheduler): the provider interface of `infra.clouds`, light enough
for the base install and the sweeper function; the other modules load when used (infra.cloudparts)."""

from __future__ import annotations

import os
import re
from typing import Any

from infra.aws.sweep import (  # noqa: F401  (the interface's tag names and deadline format live with the sweep)
    DEADLINE_SCHEDULE_PREFIX,
    EXPIRES_TAG,
    STACK_TAG,
    boto3_session,
    deadline_tag,
    format_deadline,
    is_launcher_deadline,
    session_client,
    tags,
)
from infra.aws.sweep import sweep as _sweep
from infra.cloudparts import deferred, imported, stack_region

NAME = "aws"
RESULTS_SCHEME = "s3://"
CONFIG_KEYS = ("region",)
DEFAULT_REGION = "us-east-1"
REGION_PATTERN = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d+$")
ZONE_PATTERN = re.compile(r"[a-z]{2}(?:-gov)?-[a-z]+-\d[a-z]")
# `gpubench:subnet`: an existing subnet to launch in (default: the region's default VPC).
SUBNET_PATTERN = re.compile(r"subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?", re.ASCII)

# (kind, EC2 error codes / phrases) in a failed `pulumi up` transcript; see analysis.launch_failures.
FAILURE_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("quota", ("VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded")),
    (
        "no-capacity",
        (
            "InsufficientInstanceCapacity",
            "SpotMaxPriceTooLow",
            "capacity-not-available",
            "InsufficientCapacity",
            "no Spot capacity available",
        ),
    ),
    (
        "gpu-not-in-zone",
        ("Unsupported.*(Availability Zone|instance type)", "is not supported in your requested Availability Zone"),
    ),
)


def region_of_zone(zone: str) -> str:
    """us-east-1a -> us-east-1."""
    return zone[:-1]


def stack_keys(offering: Any) -> dict[str, Any]:
    return {"aws:region": offering.regions[0]}


def stack_base(offering: Any) -> str:
    """aws-<family>-<N>x from the instance type: p3.8xlarge -> aws-p3-8x."""
    family, size = offering.instance_type.split(".", 1)
    mult = re.fullmatch(r"(\d*)xlarge", size)
    return f"aws-{family}-{(mult.group(1) or '1') + 'x' if mult else size}"


region = stack_region("aws:region", region_of_zone)
components = imported("infra.aws.component", "COMPONENTS")


def sweep_expired(regions, now, dry_run=False, project=None, **kw):
    if project:
        raise ValueError("--project is a GCP option; AWS sweeps the account of your credentials")
    return _sweep(regions, now, dry_run, **kw)


price_tables = deferred("infra.aws.prices", "price_tables")
spot_history = imported("infra.aws.prices")  # EC2 spot price history prices a spot run over its own window
account_checks = deferred("infra.aws.readiness", "checks")  # what a first real run needs of the account
preview_mocks = imported("infra.aws.mocks")  # mock answers for the offline preview (infra/render.py)
parse_offerings = deferred("infra.aws.catalog", "parse_offerings")

# Price API clients by name, for `analysis.price.refresh.Clients`.
CLIENTS = {"pricing": session_client("pricing"), "ec2": session_client("ec2")}


def credentials_status() -> dict:
    """{"ok", "detail"}: whether boto3 finds credentials (env, profile, SSO). No API call, and no
    instance-metadata probe: off an EC2 instance that would send a request to 169.254.169.254."""
    saved = os.environ.get("AWS_EC2_METADATA_DISABLED")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        session = boto3_session()
        creds = session.get_credentials()
    except ImportError:
        return {"ok": False, "detail": "boto3 not installed: pip install 'gpubench[payload]'"}
    finally:
        if saved is None:
            os.environ.pop("AWS_EC2_METADATA_DISABLED", None)
        else:
            os.environ["AWS_EC2_METADATA_DISABLED"] = saved
    if creds is None:
        return {
            "ok": False,
            "detail": "none found: `aws configure`, AWS_PROFILE or AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY (an instance role is not probed)",
        }
    return {"ok": True, "detail": f"found ({creds.method}), region {session.region_name or 'unset'}"}


IDENTITY_FIX = "`aws sso login` or `aws configure` (expired or revoked keys are refused)"


def identity() -> str:
    """STS GetCallerIdentity: the credentials are accepted, not only present (needs no permission)."""
    from botocore.config import Config  # heavy: the cloud SDK

    session = boto3_session()
    config = Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2})
    who = session.client("sts", region_name=session.region_name or DEFAULT_REGION, config=config).get_caller_identity()
    return f"STS GetCallerIdentity: {who.get('Arn')}"


# Lambda runs the handler straight from the sweep modules (infra/sweeper_function.py): nothing else.
SWEEPER_FUNCTION_FILES: dict[str, str] = {}
