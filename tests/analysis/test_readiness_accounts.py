"""`gpubench check aws|gcp`: what a first real run needs of the account, against moto (STS, EC2)
and stand-ins for what moto lacks (EC2 quotas in Service Quotas, GCP's Service Usage and Compute
quota APIs, the Pulumi CLI's login)."""

from __future__ import annotations

import json
import os
import stat

import pytest
from servers import require_module

from analysis.readiness import account_checks, pulumi_login_check, verdict


@pytest.fixture
def aws_env(monkeypatch):
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    moto = require_module("moto")  # a missing moto fails under CI=true, as every missing tool does
    with moto.mock_aws():
        yield


class Quotas:
    """Service Quotas for EC2 (moto serves VPC quotas only): the values of an account."""

    def __init__(self, values: dict[str, float]):
        self.values = values
        self.asked: list[str] = []

    def get_service_quota(self, ServiceCode, QuotaCode):  # noqa: N803 - boto3's argument names
        self.asked.append(QuotaCode)
        if QuotaCode not in self.values:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "GetServiceQuota")
        return {"Quota": {"QuotaCode": QuotaCode, "Value": self.values[QuotaCode]}}


def clients(quotas: Quotas):
    import boto3

    return lambda service, region: quotas if service == "service-quotas" else boto3.client(service, region_name=region)


def rows(found):
    return {r["check"]: r for r in found}


def test_aws_account_network_and_quotas_of_the_named_stacks(aws_env):
    quotas = Quotas({"L-DB2E81BA": 8, "L-417A185B": 0})
    found = rows(account_checks("aws", ["aws-g4dn-1x", "aws-g4dn-2x", "aws-p4d-24x"], client=clients(quotas)))
    assert found["aws account"]["ok"] and found["aws account"]["detail"].startswith("123456789012 as arn:aws:")
    assert found["aws network us-east-1"]["ok"] and "default VPC vpc-" in found["aws network us-east-1"]["detail"]
    g, p = found["aws quota L-DB2E81BA us-east-1"], found["aws quota L-417A185B us-east-1"]
    assert g["ok"] and "fits 2 of 2 stacks (largest aws-g4dn-2x, 8 vCPUs)" in g["detail"]
    assert not p["ok"] and "aws-p4d-24x needs 96" in p["detail"]
    assert "request-service-quota-increase --service-code ec2 --quota-code L-417A185B --desired-value 96" in p["detail"]
    assert all(r["for"] == "aws" for r in found.values())
    assert verdict(list(found.values()), ["aws"], ["aws", "gcp"])[1] == ["aws"]  # P quota missing: not ready


def test_aws_spot_stacks_count_against_the_spot_quota(aws_env):
    quotas = Quotas({"L-3819A6DF": 4})
    found = rows(account_checks("aws", ["aws-g4dn-1x-spot"], client=clients(quotas)))
    assert quotas.asked == ["L-3819A6DF"] and found["aws quota L-3819A6DF us-east-1"]["ok"]


def test_without_a_selection_the_smallest_stack_of_each_quota_must_fit(aws_env):
    quotas = Quotas({"L-DB2E81BA": 4, "L-3819A6DF": 4, "L-417A185B": 2, "L-7212CCBC": 2})
    found = rows(account_checks("aws", client=clients(quotas)))
    g = found["aws quota L-DB2E81BA us-east-1"]
    assert g["ok"] and "needs 192" in g["detail"]  # g5.48xlarge does not fit, the 1x ones do
    assert not found["aws quota L-417A185B us-east-1"]["ok"]  # no P stack fits 2 vCPUs (p2.xlarge has 4)
    assert "aws-p3" not in json.dumps(found)  # retired offerings are left out unless named


def test_a_region_without_a_default_vpc_names_the_fix(aws_env):
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]:
        ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    for igw in ec2.describe_internet_gateways()["InternetGateways"]:
        ec2.detach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=vpc)
        ec2.delete_internet_gateway(InternetGatewayId=igw["InternetGatewayId"])
    ec2.delete_vpc(VpcId=vpc)
    net = rows(account_checks("aws", ["aws-g4dn-1x"], client=clients(Quotas({"L-DB2E81BA": 4}))))[
        "aws network us-east-1"
    ]
    assert not net["ok"] and "aws ec2 create-default-vpc --region us-east-1" in net["detail"]
    assert "gpubench:subnet" in net["detail"]


def _stacks_with(tmp_path, name: str, extra: dict) -> str:
    import yaml

    from infra import stacks as stackfiles

    config = {**stackfiles.load_config(name), **extra}
    (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    return str(tmp_path)


def test_a_configured_subnet_is_found_or_named(aws_env, tmp_path):
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    from pathlib import Path

    quotas = Quotas({"L-DB2E81BA": 4})
    folder = Path(_stacks_with(tmp_path, "aws-g4dn-1x", {"gpubench:subnet": subnet}))
    net = rows(account_checks("aws", ["aws-g4dn-1x"], stacks_dir=folder, client=clients(quotas)))[
        "aws network us-east-1"
    ]
    assert net["ok"] and f"subnet {subnet} (us-east-1a)" in net["detail"] and "default VPC" not in net["detail"]
    _stacks_with(tmp_path, "aws-g4dn-1x", {"gpubench:subnet": "subnet-0123456789abcdef0"})
    net = rows(account_checks("aws", ["aws-g4dn-1x"], stacks_dir=folder, client=clients(quotas)))[
        "aws network us-east-1"
    ]
    assert not net["ok"] and "InvalidSubnetID.NotFound" in net["detail"]


def test_credentials_that_do_not_work_stop_at_the_first_row(monkeypatch):
    from botocore.exceptions import NoCredentialsError

    def no_credentials(service, region):
        raise NoCredentialsError()

    found = account_checks("aws", ["aws-g4dn-1x"], client=no_credentials)
    assert [r["check"] for r in found] == ["aws account"]
    assert not found[0]["ok"] and "aws configure" in found[0]["detail"]


def test_an_unreadable_quota_says_which_permission(aws_env):
    found = rows(account_checks("aws", ["aws-g4dn-1x"], client=clients(Quotas({}))))
    q = found["aws quota L-DB2E81BA us-east-1"]
    assert not q["ok"] and "servicequotas:GetServiceQuota" in q["detail"] and "AccessDeniedException" in q["detail"]


def test_a_pattern_that_matches_nothing_is_a_usage_error():
    from payload.exitcodes import UsageError

    with pytest.raises(UsageError, match="no aws stack matches nope-"):
        account_checks("aws", ["nope-*"], client=lambda s, r: None)


# --- GCP, against a stand-in of its REST APIs ---------------------------------------------------


class Response:
    def __init__(self, url, status, body):
        self.url, self.status_code, self._body = url, status, body
        self.request = type("Request", (), {"method": "GET"})()
        self.content = json.dumps(body).encode()
        self.text = self.content.decode()

    def json(self):
        return self._body


class GcpApis:
    """Service Usage services.list and Compute projects.get / regions.get for one project."""

    def __init__(self, apis, region_quotas, all_regions=8.0, project="my-proj"):
        self.apis, self.region_quotas, self.all_regions, self.project = apis, region_quotas, all_regions, project

    def get(self, url, params=None, timeout=None):
        if url.endswith(f"projects/{self.project}/services"):
            return Response(url, 200, {"services": [{"config": {"name": a}} for a in self.apis]})
        if url.endswith(f"projects/{self.project}"):
            return Response(url, 200, {"quotas": [{"metric": "GPUS_ALL_REGIONS", "limit": self.all_regions}]})
        if "/regions/" in url and self.project in url:
            region = url.rsplit("/", 1)[-1]
            quotas = [{"metric": m, "limit": v} for m, v in self.region_quotas.get(region, {}).items()]
            return Response(url, 200, {"quotas": quotas})
        return Response(url, 403, {"error": {"message": f"Permission denied on {url}"}})


def test_gcp_project_apis_and_regional_gpu_quotas(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj")
    apis = GcpApis(["compute.googleapis.com", "storage.googleapis.com"], {"us-central1": {"NVIDIA_T4_GPUS": 1}})
    found = rows(account_checks("gcp", ["gcp-t4-1x", "gcp-t4-2x", "gcp-t4-1x-spot"], http=apis, root="https://c/"))
    assert found["gcp project"]["ok"]
    missing = found["gcp apis my-proj"]
    assert not missing["ok"] and "gcloud services enable iam.googleapis.com --project my-proj" in missing["detail"]
    t4 = found["gcp quota NVIDIA_T4_GPUS us-central1"]
    assert not t4["ok"] and "gcp-t4-2x needs 2" in t4["detail"] and "metric NVIDIA_T4_GPUS" in t4["detail"]
    spot = found["gcp quota PREEMPTIBLE_NVIDIA_T4_GPUS us-central1"]
    assert not spot["ok"] and "limit 0 GPUs" in spot["detail"]
    assert found["gcp quota GPUS_ALL_REGIONS"]["ok"]


def test_gcp_unreadable_quotas_are_failed_rows_not_errors(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj")

    class QuotasDenied(GcpApis):
        """Answers the project check once, then refuses every quota read."""

        project_reads = 0

        def get(self, url, params=None, timeout=None):
            self.project_reads += url.endswith("projects/my-proj")
            if "/regions/" in url or self.project_reads > 1:
                return Response(url, 403, {"error": {"message": "quota read denied"}})
            return super().get(url, params, timeout)

    found = rows(
        account_checks("gcp", ["gcp-t4-1x"], http=QuotasDenied(["compute.googleapis.com"], {}), root="https://c/")
    )
    region = found["gcp quota us-central1"]
    assert (
        not region["ok"] and "could not read the region's quotas" in region["detail"] and "denied" in region["detail"]
    )
    everywhere = found["gcp quota GPUS_ALL_REGIONS"]
    assert not everywhere["ok"] and "could not read it" in everywhere["detail"]


def test_gcp_built_in_gpu_machine_types_count_against_their_own_metric(monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj")
    from infra import stacks as stackfiles
    from infra.catalog import load_catalog
    from infra.gcp.readiness import gpu_metric

    catalog = load_catalog()
    offering = catalog.get(stackfiles.load_config("gcp-h100-8x")["gpubench:offering"])
    assert gpu_metric(offering, "on-demand") == "NVIDIA_H100_GPUS"
    assert gpu_metric(offering, "spot") == "PREEMPTIBLE_NVIDIA_H100_GPUS"
    # today's GPUs: each machine family counts against its own metric
    metrics = {
        "gcp/a2-ultragpu-1g": "NVIDIA_A100_80GB_GPUS",
        "gcp/a3-megagpu-8g": "NVIDIA_H100_MEGA_GPUS",
        "gcp/a3-ultragpu-8g": "NVIDIA_H200_GPUS",
        "gcp/a4-highgpu-8g": "NVIDIA_B200_GPUS",
    }
    assert {oid: gpu_metric(catalog.get(oid), "on-demand") for oid in metrics} == metrics
    apis = GcpApis(
        sorted({a for v in __import__("infra.gcp.readiness").gcp.readiness.REQUIRED_APIS.values() for a in v}), {}
    )
    found = rows(account_checks("gcp", ["gcp-h100-8x"], http=apis, root="https://c/"))
    assert found["gcp apis my-proj"]["ok"]
    region = offering.zones[0].rsplit("-", 1)[0]
    assert not found[f"gcp quota NVIDIA_H100_GPUS {region}"]["ok"]


def test_gcp_without_a_project_or_with_a_refusing_one(monkeypatch):
    for name in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")
    found = account_checks("gcp", ["gcp-t4-1x"], http=GcpApis([], {}), root="https://c/")
    assert [r["check"] for r in found] == ["gcp project"] and "gcp:project" in found[0]["detail"]
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "other-proj")
    found = account_checks("gcp", ["gcp-t4-1x"], http=GcpApis([], {}), root="https://c/")
    assert not found[0]["ok"] and "HTTP 403" in found[0]["detail"] and "application-default login" in found[0]["detail"]


# --- the Pulumi backend -------------------------------------------------------------------------


def _fake_pulumi(tmp_path, stdout: str, stderr: str, code: int):
    exe = tmp_path / "pulumi"
    exe.write_text(f"#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s' '{stderr}' >&2\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(tmp_path)


def test_backend_check_reads_pulumi_whoami(tmp_path, monkeypatch):
    folder = _fake_pulumi(tmp_path, "User: alice\nOrganizations: alice\nBackend URL: s3://my-state\n", "", 0)
    monkeypatch.setenv("PATH", folder + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "")  # a self-managed backend's stacks need one
    found = pulumi_login_check()
    assert found == {"check": "pulumi login", "ok": True, "detail": "logged in to s3://my-state as alice"}


def test_backend_check_when_logged_out_names_the_login(tmp_path, monkeypatch):
    folder = _fake_pulumi(tmp_path, "", "error: PULUMI_ACCESS_TOKEN must be set for login", 255)
    monkeypatch.setenv("PATH", folder + os.pathsep + "/usr/bin:/bin")
    found = pulumi_login_check()
    assert not found["ok"] and "PULUMI_ACCESS_TOKEN" in found["detail"] and "pulumi login s3://" in found["detail"]
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not pulumi_login_check()["ok"]


def test_the_backend_is_needed_by_every_cloud_asked():
    checks = [
        {"check": "pulumi CLI", "ok": True},
        {"check": "extra [infra]", "ok": True},
        {"check": "aws credentials", "ok": True},
        {"check": "gcp credentials", "ok": True},
        {"check": "pulumi login", "ok": False, "for": "clouds"},
    ]
    assert verdict(checks, ["aws"], ["aws", "gcp"]) == ([], ["aws"])
    checks[-1]["ok"] = True
    assert verdict(checks, ["aws", "gcp"], ["aws", "gcp"]) == (["aws", "gcp"], [])


def test_check_stack_without_a_cloud_is_a_usage_error():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "analysis", "check", "--stack", "aws-g4dn-*"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "name the cloud, without --offline" in out.stderr
    assert "Traceback" not in out.stderr


def test_needs_of_stacks_not_yet_written_are_checked_strictly(aws_env):
    """A bench's probes have no stack file yet: their needs are handed in, and each must fit."""
    from infra.catalog import load_catalog
    from infra.stacks import StackNeed

    offering = load_catalog().get("aws/g5.xlarge")
    need = StackNeed("aws-g5-1x-b5f3a9c", "benchmark", "us-east-1", offering, "spot")
    found = rows(account_checks("aws", needs=[need], client=clients(Quotas({"L-3819A6DF": 2}))))
    assert not found["aws quota L-3819A6DF us-east-1"]["ok"]
    assert "aws-g5-1x-b5f3a9c needs 4" in found["aws quota L-3819A6DF us-east-1"]["detail"]
