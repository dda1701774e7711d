"""What AWS's resources compute and its data sources answer, for the offline preview (infra/render.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from infra.cloud_init import inflated
from infra.render import fake_id

ACCOUNT, REGION = "123456789012", "us-east-1"
DEFAULT_VPC = "vpc-0mockdefault"


def computed(typ: str, name: str, inputs: dict[str, Any], rid: str) -> dict[str, Any] | None:
    """Outputs a real provider would compute for a resource of this type; None for another cloud's."""
    account, region = ACCOUNT, REGION
    table: dict[str, Callable[[], dict[str, Any]]] = {
        "aws:ec2/instance:Instance": lambda: {
            "arn": f"arn:aws:ec2:{region}:{account}:instance/i-{rid}",
            "publicIp": "198.51.100.7",
        },
        "aws:iam/role:Role": lambda: {
            "arn": f"arn:aws:iam::{account}:role/{name}-{rid[:7]}",
            "name": f"{name}-{rid[:7]}",
        },
        "aws:iam/instanceProfile:InstanceProfile": lambda: {
            "name": f"{name}-{rid[:7]}",
            "arn": f"arn:aws:iam::{account}:instance-profile/{name}-{rid[:7]}",
        },
        "aws:ec2/launchTemplate:LaunchTemplate": lambda: {
            "arn": f"arn:aws:ec2:{region}:{account}:launch-template/lt-{rid}",
        },
        "aws:s3/bucket:Bucket": lambda: {"bucket": inputs.get("bucket") or f"{name}-{rid[:7]}"},
        "aws:scheduler/schedule:Schedule": lambda: {"name": f"{name}-{rid[:7]}"},
        "aws:ec2/keyPair:KeyPair": lambda: {"keyName": f"{name}-{rid[:7]}"},
        "aws:lambda/function:Function": lambda: {
            "arn": f"arn:aws:lambda:{region}:{account}:function:{inputs.get('name') or name}",
        },
        "aws:cloudwatch/logGroup:LogGroup": lambda: {
            "arn": f"arn:aws:logs:{region}:{account}:log-group:{inputs.get('name')}",
        },
    }
    return table[typ]() if typ in table else None


def call(token: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """A data source's answer (an invoke); None for another cloud's."""
    table: dict[str, Callable[[], dict[str, Any]]] = {
        "aws:ec2/getAmi:getAmi": lambda: {
            # filters arrive as dicts whose key order varies between processes: sorted, the id does not
            "id": "ami-0mock" + fake_id(*(json.dumps(f, sort_keys=True) for f in args.get("filters", [])))[:9],
            "imageId": "ami-0mock",
            "name": "mock Deep Learning AMI",
        },
        # the region's default VPC (infra/aws/component.py network)
        "aws:ec2/getVpcs:getVpcs": lambda: {"id": REGION, "ids": [DEFAULT_VPC]},
        "aws:ec2/getSubnet:getSubnet": lambda: {
            "id": args.get("id"),
            "arn": f"arn:aws:ec2:{REGION}:{ACCOUNT}:subnet/{args.get('id')}",
            "vpcId": "vpc-0mocksubnet",
            "availabilityZone": f"{REGION}a",
            "mapPublicIpOnLaunch": True,
        },
        "aws:index/getCallerIdentity:getCallerIdentity": lambda: {
            "accountId": "123456789012",
            "arn": "arn:aws:iam::123456789012:user/mock",
            "id": "123456789012",
            "userId": "mock",
        },
    }
    return table[token]() if token in table else None


def user_data_of(resource_type: str, inputs: dict[str, Any]) -> str | None:
    """The user-data an instance resource renders, inflated; None for another resource."""
    if resource_type != "aws:ec2/instance:Instance":
        return None
    value = inputs.get("userDataBase64") or inputs.get("userData")
    return inflated(value) if isinstance(value, str) else None
