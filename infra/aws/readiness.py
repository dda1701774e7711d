"""Before a first real `pulumi up` on AWS: the account, each region's network, the GPU quotas, by
read-only calls; each a row {"check", "ok", "detail"} whose detail names the fix. `client(service,
region)` makes the clients (tests: moto's, and a stand-in for Service Quotas, which moto lacks)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from infra.aws.sweep import boto3_session, error_text
from infra.cloudparts import row
from infra.stacks import quota_row

# EC2 vCPU quotas by instance family and market, in vCPUs per region (Service Quotas, service
# code `ec2`; "On-Demand Instance quotas" and "Spot Instance quotas" of the EC2 User Guide,
# https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html). A new account
# often starts at 0 for G and P.
QUOTAS: dict[tuple[str, str], tuple[str, str]] = {
    ("G", "on-demand"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("G", "spot"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("P", "on-demand"): ("L-417A185B", "Running On-Demand P instances"),
    ("P", "spot"): ("L-7212CCBC", "All P Spot Instance Requests"),
    ("Standard", "on-demand"): ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    ("Standard", "spot"): ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
}
QUOTA_CLASS = {"g": "G", "vt": "G", "p": "P"}  # instance family letters -> quota class; others Standard


def quota_of(instance_type: str, market: str) -> tuple[str, str]:
    """(quota code, quota name) an instance type counts against: g4dn.xlarge on-demand -> L-DB2E81BA."""
    letters = re.match(r"[a-z]+", instance_type).group(0)
    return QUOTAS[(QUOTA_CLASS.get(letters, "Standard"), "spot" if market == "spot" else "on-demand")]


def account_check(client, region: str) -> dict:
    try:
        who = client("sts", region).get_caller_identity()
    except Exception as exc:  # noqa: BLE001 - botocore raises many kinds; each is reported
        return row(
            "aws account",
            False,
            f"credentials do not work ({error_text(exc)[:200]}): `aws configure`, `aws sso login` or "
            "AWS_PROFILE; then `aws sts get-caller-identity` should answer",
        )
    return row("aws account", True, f"{who['Account']} as {who['Arn']}")


def network_check(ec2, region: str, subnets: set[str], without_subnet: list[str]) -> dict:
    """The configured subnets exist; stacks without one have the region's default VPC."""
    name = f"aws network {region}"
    found = []
    try:
        if subnets:
            described = ec2.describe_subnets(SubnetIds=sorted(subnets))["Subnets"]
            found = [f"{s['SubnetId']} ({s['AvailabilityZone']})" for s in described]
        vpcs = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"] if without_subnet else []
    except Exception as exc:  # noqa: BLE001
        fix = "check gpubench:subnet against `aws ec2 describe-subnets --region " + region + "`"
        return row(name, False, f"{error_text(exc)[:200]}; {fix}")
    if without_subnet and not vpcs:
        return row(
            name,
            False,
            f"no default VPC, which {len(without_subnet)} stack(s) need (e.g. {without_subnet[0]}): "
            f"`aws ec2 create-default-vpc --region {region}`, or set gpubench:subnet on them",
        )
    parts = ([f"default VPC {vpcs[0]['VpcId']}"] if vpcs else []) + [f"subnet {s}" for s in found]
    return row(name, True, ", ".join(parts) or "no stack here needs one")


def quota_check(quotas, region: str, code: str, title: str, needs: list[tuple[int, str]], strict: bool) -> dict:
    """One vCPU quota against the stacks that count against it ((vCPUs, stack), smallest first).

    `strict` (stacks named by the user): every stack must fit; otherwise at least the smallest."""
    name = f"aws quota {code} {region}"
    try:
        value = float(quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except Exception as exc:  # noqa: BLE001
        return row(
            name,
            False,
            f"{title}: could not read it ({error_text(exc)[:160]}); the identity needs "
            "servicequotas:GetServiceQuota, or look in the Service Quotas console",
        )
    fix = f"`aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} --desired-value {{}} --region {region}`"
    return quota_row(name, f"{title}:", value, needs, strict, "vCPUs", fix.format)


def checks(needs: Iterable[Any], strict: bool = False, client=None) -> list[dict]:
    """Every row for these stacks (infra.stacks.StackNeed): the account once, then per region its
    network and each quota the stacks count against."""
    needs = list(needs)
    if client is None:
        session = boto3_session()
        client = lambda service, region: session.client(service, region_name=region)  # noqa: E731
    regions = sorted({n.region for n in needs}) or ["us-east-1"]
    first = account_check(client, regions[0])
    if not first["ok"]:
        return [first]
    out = [first]
    launching = [n for n in needs if n.offering is not None]
    for region in regions:
        here = [n for n in launching if n.region == region]
        subnets = {n.subnet for n in here if n.subnet}
        without = [n.stack for n in here if not n.subnet]
        out.append(network_check(client("ec2", region), region, subnets, without))
        by_quota: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for n in here:
            by_quota.setdefault(quota_of(n.offering.instance_type, n.market), []).append(
                (int(n.offering.vcpus or 0), n.stack)
            )
        quotas = client("service-quotas", region) if by_quota else None
        for (code, title), stacks in sorted(by_quota.items()):
            out.append(quota_check(quotas, region, code, title, sorted(stacks), strict))
    return out
