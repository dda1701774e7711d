"""What a real account needs that mocks do not enforce: the grants and the code bundle exist
before an instance boots, the network is stated (a configured subnet, or the default VPC looked
up with a clear error before anything is created), A3 gets gVNIC, and a legacy image family
whose images are all deprecated is still found."""

from __future__ import annotations

import pytest
from infra_matrix import NOW

from infra import stacks as stackfiles
from infra.catalog import load_catalog
from infra.config import ConfigError, parse_config

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class _NotFound(Exception):
    """How a provider's failed invoke reaches the program: a gRPC error from the monitor."""

    def __init__(self, details: str):
        self._details = details

    def code(self):
        import grpc

        return grpc.StatusCode.UNKNOWN

    def details(self):
        return self._details


def _grpc_error(details: str):
    import grpc

    return type("NotFound", (_NotFound, grpc.RpcError), {})(details)


def _render(stack, config):
    from infra.render import render

    return render(stack, config, load_catalog(), now=NOW)


def _recurring(bench, every, **extra):
    return {**stackfiles.load_config(bench), "gpubench:stackType": "recurring", "gpubench:every": every, **extra}


def _waits_for(record, *names) -> set[str]:
    """Which of `names` (logical names) the resource depends on."""
    return {n for n in names if any(d.endswith(f"::{n}") for d in record.dependencies)}


@pytest.mark.parametrize(
    "stack, config, typ, grants",
    [
        ("aws-g4dn-1x", None, "aws:ec2/instance:Instance", ("results-access", "code-bundle")),
        (
            "recurring-aws-g4dn-1x",
            _recurring("aws-g4dn-1x", "rate(1 day)"),
            "aws:ec2/launchTemplate:LaunchTemplate",
            ("results-access", "code-bundle"),
        ),
        ("gcp-t4-1x", None, "gcp:compute/instance:Instance", ("results-access", "code-read", "code-bundle")),
        (
            "recurring-gcp-t4-1x",
            _recurring("gcp-t4-1x", "0 3 * * *"),
            "gcp:compute/instanceTemplate:InstanceTemplate",
            ("results-access", "code-read", "code-bundle"),
        ),
    ],
)
def test_an_instance_waits_for_its_grants_and_its_code(stack, config, typ, grants):
    rendered = _render(stack, config or stackfiles.load_config(stack))
    assert _waits_for(rendered.one(typ), *grants) == set(grants)


def test_a_workload_stack_waits_for_its_workload_bundle_too():
    from pathlib import Path

    task = Path(__file__).resolve().parents[2] / "examples" / "keras-mnist" / "workload.yaml"
    config = {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:workload": str(task)}
    config.pop("gpubench:suite", None)
    instance = _render("aws-g4dn-1x", config).one("aws:ec2/instance:Instance")
    assert _waits_for(instance, "workload-bundle") == {"workload-bundle"}


def test_the_default_vpc_is_looked_up_and_named():
    from infra.aws.mocks import DEFAULT_VPC

    rendered = _render("aws-g4dn-1x", stackfiles.load_config("aws-g4dn-1x"))
    assert rendered.one("aws:ec2/securityGroup:SecurityGroup").inputs["vpcId"] == DEFAULT_VPC
    assert "subnetId" not in rendered.one("aws:ec2/instance:Instance").inputs  # EC2's default subnet


@pytest.mark.parametrize("recurring", [False, True])
def test_a_configured_subnet_places_the_instance_and_its_security_group(recurring):
    subnet = "subnet-0123456789abcdef0"
    config = {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:subnet": subnet}
    if recurring:
        config = {**config, "gpubench:stackType": "recurring", "gpubench:every": "rate(1 day)"}
    rendered = _render("recurring-aws-g4dn-1x" if recurring else "aws-g4dn-1x", config)
    assert rendered.one("aws:ec2/securityGroup:SecurityGroup").inputs["vpcId"] == "vpc-0mocksubnet"
    if recurring:
        lt = rendered.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
        (nic,) = lt["networkInterfaces"]
        assert nic["subnetId"] == subnet and nic["deviceIndex"] == 0 and len(nic["securityGroups"]) == 1
        assert "vpcSecurityGroupIds" not in lt  # EC2 refuses both forms in one template
    else:
        instance = rendered.one("aws:ec2/instance:Instance").inputs
        assert instance["subnetId"] == subnet and "availabilityZone" not in instance


@pytest.fixture
def registered(monkeypatch):
    """The custom resources a render registers, even one that fails."""
    from infra import render

    seen: list[str] = []
    original = render._Monitor.RegisterResource

    def record(self, request):
        if request.custom:
            seen.append(request.type)
        return original(self, request)

    monkeypatch.setattr(render._Monitor, "RegisterResource", record)
    return seen


@pytest.mark.parametrize("recurring", [False, True])
def test_no_default_vpc_stops_before_anything_is_created(monkeypatch, registered, recurring):
    from infra.aws import mocks

    real = mocks.call
    monkeypatch.setattr(mocks, "call", lambda token, args: {"ids": []} if "getVpcs" in token else real(token, args))
    config = _recurring("aws-g4dn-1x", "rate(1 day)") if recurring else stackfiles.load_config("aws-g4dn-1x")
    with pytest.raises(Exception, match="us-east-1 has no default VPC") as caught:
        _render("aws-g4dn-1x", config)
    assert "gpubench:subnet" in str(caught.value) and "aws ec2 create-default-vpc --region us-east-1" in str(
        caught.value
    )
    import pulumi

    assert isinstance(caught.value, pulumi.RunError)  # Pulumi prints it without a traceback
    assert registered == []


def test_a_subnet_outside_the_configured_zone_is_refused():
    config = {**stackfiles.load_config("aws-g4dn-1x"), "gpubench:subnet": "subnet-0123456789abcdef0"}
    with pytest.raises(ConfigError, match="is in us-east-1a, not gpubench:zone us-east-1b"):
        _render("aws-g4dn-1x", {**config, "gpubench:zone": "us-east-1b"})


@pytest.mark.parametrize(
    "stack, subnet, message",
    [
        ("aws-g4dn-1x", "sub-123", "is not a aws subnet id"),
        ("gcp-t4-1x", "subnet-0123456789abcdef0", "gcp stacks create their own network"),
    ],
)
def test_subnet_config_is_checked_before_launch(stack, subnet, message):
    from infra.launch import resolve

    cfg = parse_config({**stackfiles.load_config(stack), "gpubench:subnet": subnet}, stack)
    with pytest.raises(ConfigError, match=message):
        resolve(cfg, load_catalog())


def test_a3_gets_gvnic_and_others_keep_the_default(rendered):
    a3 = rendered["gcp-h100-8x"].one("gcp:compute/instance:Instance").inputs
    assert a3["machineType"].startswith("a3-") and a3["networkInterfaces"][0]["nicType"] == "GVNIC"
    n1 = rendered["gcp-t4-1x"].one("gcp:compute/instance:Instance").inputs
    assert "nicType" not in n1["networkInterfaces"][0]
    template = _render("recurring-gcp-h100-8x", _recurring("gcp-h100-8x", "0 3 * * *"))
    assert (
        template.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs["networkInterfaces"][0]["nicType"]
        == "GVNIC"
    )


def test_a_legacy_family_is_found_among_deprecated_images_and_a_current_one_by_family(monkeypatch):
    from infra.gcp import mocks

    asked = []
    real = mocks.call
    monkeypatch.setattr(mocks, "call", lambda token, args: asked.append(dict(args)) or real(token, args))
    _render("gcp-k80-1x", stackfiles.load_config("gcp-k80-1x"))
    _render("gcp-t4-1x", stackfiles.load_config("gcp-t4-1x"))
    images = [a for a in asked if "filter" in a or "family" in a]
    assert images[0]["filter"] == "family = common-cu113-ubuntu-2004" and images[0]["mostRecent"] is True
    assert images[1]["family"].startswith("common-cu12") and "filter" not in images[1]


def test_a_family_with_nothing_to_boot_names_the_fix(monkeypatch, registered):
    from infra.gcp import mocks

    real = mocks.call

    def no_image(token, args):
        if "getImage" in token:
            raise _grpc_error(
                "The resource 'projects/deeplearning-platform-release/global/images/family/x' was not found"
            )
        return real(token, args)

    monkeypatch.setattr(mocks, "call", no_image)
    with pytest.raises(ConfigError, match="has no image to boot.*set gpubench:image"):
        _render("gcp-t4-1x", stackfiles.load_config("gcp-t4-1x"))
    assert registered == []  # nothing was created


def test_no_current_ami_stops_before_anything_is_created(monkeypatch, registered):
    from infra.aws import mocks

    real = mocks.call

    def no_ami(token, args):
        if "getAmi" in token:
            raise _grpc_error("Your query returned no results. Please change your search criteria and try again.")
        return real(token, args)

    monkeypatch.setattr(mocks, "call", no_ami)
    with pytest.raises(ConfigError, match="no current \\(not deprecated\\) AMI named .*set gpubench:image") as caught:
        _render("aws-g4dn-1x", stackfiles.load_config("aws-g4dn-1x"))
    assert "--include-deprecated --region us-east-1" in str(caught.value)
    assert registered == []
