"""What GCP's resources compute and its data sources answer, for the offline preview (infra/render.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def computed(typ: str, name: str, inputs: dict[str, Any], rid: str) -> dict[str, Any] | None:
    """Outputs a real provider would compute for a resource of this type; None for another cloud's."""
    table: dict[str, Callable[[], dict[str, Any]]] = {
        "gcp:serviceaccount/account:Account": lambda: {
            "email": f"{inputs.get('accountId')}@mock-project.iam.gserviceaccount.com",
            "name": f"projects/mock-project/serviceAccounts/{inputs.get('accountId')}@mock-project.iam.gserviceaccount.com",
        },
        "gcp:compute/instanceTemplate:InstanceTemplate": lambda: {
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/mock-project/global/instanceTemplates/{name}-{rid[:7]}",
        },
        "gcp:projects/iAMCustomRole:IAMCustomRole": lambda: {
            "name": f"projects/{inputs.get('project')}/roles/{inputs.get('roleId')}"
        },
        "gcp:cloudscheduler/job:Job": lambda: {"name": f"{name}-{rid[:7]}"},
        "gcp:cloudfunctionsv2/function:Function": lambda: {
            "name": f"{name}-{rid[:7]}",
            "serviceConfig": {
                **(inputs.get("serviceConfig") or {}),
                "uri": f"https://{name}-{rid[:7]}-uc.a.run.app",
            },
        },
        "gcp:storage/bucketObject:BucketObject": lambda: {"name": inputs.get("name")},
        "gcp:storage/bucket:Bucket": lambda: {"name": inputs.get("name") or f"{name}-{rid[:7]}"},
        "gcp:compute/instance:Instance": lambda: {"name": f"{name}-{rid[:7]}"},
    }
    return table[typ]() if typ in table else None


def _image(args: dict[str, Any]) -> dict[str, Any]:
    """The newest image of a family, asked by family or by a `family = X` filter."""
    family = args.get("family") or str(args.get("filter", "")).partition("=")[2].strip()
    return {
        "selfLink": f"https://www.googleapis.com/compute/v1/projects/{args.get('project')}/global/images/{family}-v20240101",
        "name": f"{family}-v20240101",
        "family": family,
    }


def call(token: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """A data source's answer (an invoke); None for another cloud's."""
    table: dict[str, Callable[[], dict[str, Any]]] = {
        "gcp:organizations/getClientConfig:getClientConfig": lambda: {
            "project": "mock-project",
            "region": "us-central1",
            "zone": "us-central1-a",
            "accessToken": "mock",
            "id": "mock",
        },
        "gcp:compute/getImage:getImage": lambda: _image(args),
    }
    return table[token]() if token in table else None


def user_data_of(resource_type: str, inputs: dict[str, Any]) -> str | None:
    """The user-data an instance or instance template renders; None for another resource."""
    if resource_type in ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"):
        return (inputs.get("metadata") or {}).get("user-data")
    return None
