"""What GCP's resources compute and its data sources answer, for the offline preview (infra/render.py)."""

from __future__ import annotations

from typing import Any

COMPUTE = "https://www.googleapis.com/compute/v1/projects"


def computed(typ: str, name: str, inputs: dict[str, Any], rid: str) -> dict[str, Any] | None:
    """Outputs a real provider would compute for a resource of this type; None for another cloud's."""
    auto, email = f"{name}-{rid[:7]}", f"{inputs.get('accountId')}@mock-project.iam.gserviceaccount.com"
    return {
        "gcp:serviceaccount/account:Account": {
            "email": email,
            "name": f"projects/mock-project/serviceAccounts/{email}",
        },
        "gcp:compute/instanceTemplate:InstanceTemplate": {
            "selfLink": f"{COMPUTE}/mock-project/global/instanceTemplates/{auto}"
        },
        "gcp:projects/iAMCustomRole:IAMCustomRole": {
            "name": f"projects/{inputs.get('project')}/roles/{inputs.get('roleId')}"
        },
        "gcp:cloudscheduler/job:Job": {"name": auto},
        "gcp:cloudfunctionsv2/function:Function": {
            "name": auto,
            "serviceConfig": {**(inputs.get("serviceConfig") or {}), "uri": f"https://{auto}-uc.a.run.app"},
        },
        "gcp:storage/bucketObject:BucketObject": {"name": inputs.get("name")},
        "gcp:storage/bucket:Bucket": {"name": inputs.get("name") or auto},
        "gcp:compute/instance:Instance": {"name": auto},
    }.get(typ)


def call(token: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """A data source's answer (an invoke); None for another cloud's."""
    if token == "gcp:organizations/getClientConfig:getClientConfig":
        return {
            "project": "mock-project",
            "region": "us-central1",
            "zone": "us-central1-a",
            "accessToken": "mock",
            "id": "mock",
        }
    if token == "gcp:compute/getImage:getImage":  # the newest image of a family, asked by family or `family = X`
        family = args.get("family") or str(args.get("filter", "")).partition("=")[2].strip()
        link = f"{COMPUTE}/{args.get('project')}/global/images/{family}-v20240101"
        return {"selfLink": link, "name": f"{family}-v20240101", "family": family}
    return None


def user_data_of(resource_type: str, inputs: dict[str, Any]) -> str | None:
    """The user-data an instance or instance template renders; None for another resource."""
    if resource_type in ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate"):
        return (inputs.get("metadata") or {}).get("user-data")
    return None
