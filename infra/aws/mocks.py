"""What AWS's resources compute and its data sources answer, for the offline preview (infra/render.py)."""

from __future__ import annotations

import json
from typing import Any

from infra.cloud_init import inflated
from infra.render import fake_id

ACCOUNT, REGION = "123456789012", "us-east-1"
DEFAULT_VPC = "vpc-0mockdefault"


def _arn(service: str, resource: str) -> str:
    return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{resource}"


def computed(typ: str, name: str, inputs: dict[str, Any], rid: str) -> dict[str, Any] | None:
    """Outputs a real provider would compute for a resource of this type; None for another cloud's."""
    auto = f"{name}-{rid[:7]}"
    return {
        "aws:ec2/instance:Instance": {"arn": _arn("ec2", f"instance/i-{rid}"), "publicIp": "198.51.100.7"},
        "aws:iam/role:Role": {"arn": f"arn:aws:iam::{ACCOUNT}:role/{auto}", "name": auto},
        "aws:iam/instanceProfile:InstanceProfile": {
            "name": auto,
            "arn": f"arn:aws:iam::{ACCOUNT}:instance-profile/{auto}",
        },
        "aws:ec2/launchTemplate:LaunchTemplate": {"arn": _arn("ec2", f"launch-template/lt-{rid}")},
        "aws:s3/bucket:Bucket": {"bucket": inputs.get("bucket") or auto},
        "aws:scheduler/schedule:Schedule": {"name": auto},
        "aws:ec2/keyPair:KeyPair": {"keyName": auto},
        "aws:lambda/function:Function": {"arn": _arn("lambda", f"function:{inputs.get('name') or name}")},
        "aws:cloudwatch/logGroup:LogGroup": {"arn": _arn("logs", f"log-group:{inputs.get('name')}")},
    }.get(typ)


def call(token: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """A data source's answer (an invoke); None for another cloud's."""
    # filters arrive as dicts whose key order varies between processes: sorted, the AMI id does not
    ami = "ami-0mock" + fake_id(*(json.dumps(f, sort_keys=True) for f in args.get("filters") or []))[:9]
    subnet = args.get("id")
    return {
        "aws:ec2/getAmi:getAmi": {"id": ami, "imageId": "ami-0mock", "name": "mock Deep Learning AMI"},
        # the region's default VPC (infra/aws/component.py network)
        "aws:ec2/getVpcs:getVpcs": {"id": REGION, "ids": [DEFAULT_VPC]},
        "aws:ec2/getSubnet:getSubnet": {
            "id": subnet,
            "arn": _arn("ec2", f"subnet/{subnet}"),
            "vpcId": "vpc-0mocksubnet",
            "availabilityZone": f"{REGION}a",
            "mapPublicIpOnLaunch": True,
        },
        "aws:index/getCallerIdentity:getCallerIdentity": {
            "accountId": ACCOUNT,
            "arn": f"arn:aws:iam::{ACCOUNT}:user/mock",
            "id": ACCOUNT,
            "userId": "mock",
        },
    }.get(token)


def user_data_of(resource_type: str, inputs: dict[str, Any]) -> str | None:
    """The user-data an instance resource renders, inflated; None for another resource."""
    if resource_type != "aws:ec2/instance:Instance":
        return None
    value = inputs.get("userDataBase64") or inputs.get("userData")
    return inflated(value) if isinstance(value, str) else None
