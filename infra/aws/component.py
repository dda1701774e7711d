"""AWS's Pulumi components: the results bucket, a benchmark instance with its cloud-side deadline,
a recurring launch and the leak-sweep function. docs/security.md ("Cloud security") states what
each role may do. The deadline is a `time:Offset` (pulumiverse-time): computed once, kept in state.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import NamedTuple

import pulumi
import pulumiverse_time as time

from infra import cloud_init, sweeper_function
from infra.aws.sweep import DEADLINE_SCHEDULE_PREFIX, EXPIRES_TAG, MAX_HOURS_TAG, PROJECT_TAG, STACK_TAG
from infra.aws.sweep import tags as aws_tags
from infra.cloudparts import code_copy, quietly_imported, sweeper_env
from infra.config import ConfigError, ResultsConfig, SweeperConfig
from infra.images import lookup
from infra.launch import Launch, code_uploads, guest_user_data, launch_id_of, region_of, tag_values
from infra.results_ref import journal_prefix_beside, locate
from infra.schedule_expr import parse_schedule
from infra.tags import project_id

aws = quietly_imported("pulumi_aws", "cloudwatch", "ec2", "iam", "lambda_", "s3", "scheduler")

TERMINATE_TARGET = "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"

# The guest's `copy URL FILE` for the code bundle, as the instance role: the host's AWS CLI v2 (the
# Deep Learning AMIs ship it), else AWS's CLI image, which reads the role from IMDS through the host
# network (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-docker.html).
CODE_COPY = code_copy(
    "aws", "aws s3 cp --only-show-errors", "amazon/aws-cli", "s3 cp --only-show-errors", "-e AWS_DEFAULT_REGION "
)


def _policy(*statements: dict) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def _allow(sid: str | None, action, resource, condition: dict | None = None) -> dict:
    """One Allow statement, without the keys it does not set."""
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource, "Condition": condition}
    return {k: v for k, v in statement.items() if v is not None}


def _role(parent: pulumi.Resource, names: tuple[str, str], trust, description: str, policy, tags):
    """A role trusted as `trust` says and its one inline policy."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(names[0], assume_role_policy=trust, description=description, tags=tags, opts=child)
    return role, aws.iam.RolePolicy(names[1], role=role.id, policy=policy, opts=child)


def _assume(service: str, account: str | None = None, source_arn: str | None = None) -> str:
    """Trusted by `service`; with `account` (and `source_arn`), only for that account's resource (confused deputy)."""
    statement: dict = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if account:
        statement["Condition"] = {"StringEquals": {"aws:SourceAccount": account}}
    if source_arn:
        statement["Condition"]["ArnEquals"] = {"aws:SourceArn": source_arn}
    return _policy(statement)


# A PUT must carry If-None-Match, so it creates a key and never replaces an object (S3 User
# Guide, "Enforce conditional writes on Amazon S3 buckets",
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html).
CREATE_ONLY = {"Null": {"s3:if-none-match": "false"}}


def results_policy(bucket: str, run_prefix: str, code_prefix: str | None = None, launch: str | None = None) -> str:
    """What a benchmark instance (and so its job) may do in the results bucket (docs/security.md has
    the table): create-only PutObject under its own launch's runs (all of `run_prefix` for a recurring
    stack) and journal entries; no DeleteObject (the lifecycle rule expires checkpoints); GetObject on
    checkpoints only; PutObjectTagging on its own checkpoints only (S3 PutObject: x-amz-tagging needs
    s3:PutObjectTagging; scoped so a job cannot tag another run into expiry); ListBucket on
    `run_prefix`; with `code_prefix`, GetObject on the code bundles. No multipart permission.

    Journal entries are `<stamp>-<run id>` (payload.layout.journal_key): `journal/<stack>/*-<launch>-*`. A `*`
    in an S3 object ARN also matches `/` (IAM User Guide, wildcards in resource ARNs,
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html#reference_policies_elements_resource_wildcards):
    harmless, an entry is only a hint and a collect reads only keys that parse as entries of its stack."""
    stack_objects = f"arn:aws:s3:::{bucket}/{run_prefix}"
    own = f"{stack_objects}{launch}-" if launch else stack_objects
    journal = f"arn:aws:s3:::{bucket}/{journal_prefix_beside(run_prefix)}*" + (f"-{launch}-*" if launch else "")
    code = [_allow("CodeBundlesRead", "s3:GetObject", f"arn:aws:s3:::{bucket}/{code_prefix}*")] if code_prefix else []
    return _policy(
        *code,
        _allow("OwnRunsCreateOnly", "s3:PutObject", f"{own}*", CREATE_ONLY),
        _allow("OwnJournalCreateOnly", "s3:PutObject", journal, CREATE_ONLY),
        _allow("CheckpointsRead", "s3:GetObject", f"{stack_objects}*/checkpoints/*"),
        _allow("OwnCheckpointsTag", "s3:PutObjectTagging", f"{own}*/checkpoints/*"),
        _allow(
            "StackPrefixList",
            "s3:ListBucket",
            f"arn:aws:s3:::{bucket}",
            {"StringLike": {"s3:prefix": [f"{run_prefix}*"]}},
        ),
    )


# Which AMI boots a GPU of each generation (the catalog's `image_generation`, from the GPU's compute
# capability): its NVIDIA driver must still support the GPU and be new enough for the payload container's
# CUDA. Ubuntu only: it runs cloud-init, which reads our user-data. `cuda13` (cc >= 7.5): the OSS driver AMI
# (open kernel modules: Turing and newer only). `cuda12` (cc 5.0..7.0: M60, P100, V100): the proprietary
# driver AMI (the open modules lack Maxwell-Volta). `cuda11-legacy` (cc < 5.0: K80): CUDA 11 era builds
# (driver 470, the last with Kepler), deprecated upstream, hence `include_deprecated`; `gpubench:image`
# pins an exact AMI.
AMI_OWNER = "amazon"


class AwsImage(NamedTuple):
    name_pattern: str
    include_deprecated: bool


IMAGES: dict[str, AwsImage] = {
    "cuda13": AwsImage("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *", include_deprecated=False),
    "cuda12": AwsImage(
        "Deep Learning Base Proprietary Nvidia Driver GPU AMI (Ubuntu 20.04) *", include_deprecated=True
    ),
    "cuda11-legacy": AwsImage("Deep Learning Base AMI (Ubuntu 18.04) Version *", include_deprecated=True),
}


def _ami(launch: Launch, region: str, opts: pulumi.InvokeOptions) -> str:
    """`gpubench:image`, else the newest of the generation's Deep Learning AMIs, looked up before
    anything is created: a pattern whose AMIs are all deprecated stops `pulumi up` here, with the fix."""
    if launch.cfg.image:
        return launch.cfg.image
    spec = lookup(IMAGES, "aws", launch.generation)
    try:
        return aws.ec2.get_ami(
            most_recent=True,
            owners=[AMI_OWNER],
            include_deprecated=spec.include_deprecated,
            filters=[
                {"name": "name", "values": [spec.name_pattern]},
                {"name": "architecture", "values": ["x86_64"]},
                {"name": "state", "values": ["available"]},
            ],
            opts=opts,
        ).id
    except Exception as exc:  # noqa: BLE001 - the provider's invoke error, whatever its class
        raise Missing(
            "image",
            f"no {'' if spec.include_deprecated else 'current (not deprecated) '}AMI named "
            f"{spec.name_pattern!r} from {AMI_OWNER} in {region} ({str(exc).splitlines()[0][:160]}); "
            f"set gpubench:image to an AMI you choose (`aws ec2 describe-images --owners {AMI_OWNER} "
            f"--include-deprecated --region {region} --filters 'Name=name,Values={spec.name_pattern}'`)",
        ) from None


class Missing(ConfigError, pulumi.RunError):
    """No subnet or no image to boot: raised before any resource is registered, so `pulumi up`
    creates nothing; a RunError, so Pulumi prints the message without a traceback."""


class Network(NamedTuple):
    """The VPC of the security group and the configured subnet (None: the default VPC's, EC2 picks)."""

    vpc_id: str
    subnet_id: str | None = None


def network(cfg, region: str, opts: pulumi.InvokeOptions) -> Network:
    """`gpubench:subnet` and its VPC, else the region's default VPC, looked up before anything is
    created: without either, `pulumi up` would fail with VPCIdNotSpecified midway (RunInstances: "If
    you don't have a default VPC, you must specify a subnet ID in the request",
    https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html)."""
    if cfg.subnet:
        try:
            subnet = aws.ec2.get_subnet(id=cfg.subnet, opts=opts)
        except Exception as exc:  # noqa: BLE001 - the provider's invoke error, whatever its class
            raise Missing(
                "subnet",
                f"{cfg.subnet} was not found in {region} ({str(exc).splitlines()[0][:200]}); "
                f"list the region's subnets with `aws ec2 describe-subnets --region {region}`",
            ) from None
        if cfg.zone and subnet.availability_zone != cfg.zone:
            raise Missing(
                "subnet", f"{cfg.subnet} is in {subnet.availability_zone}, not gpubench:zone {cfg.zone}; change one"
            )
        if not subnet.map_public_ip_on_launch:
            pulumi.log.warn(
                f"{cfg.subnet} gives instances no public IPv4 address: the instance reaches the image "
                "registry and the results bucket only through a NAT gateway or VPC endpoints"
            )
        return Network(subnet.vpc_id, subnet.id)
    vpcs = aws.ec2.get_vpcs(filters=[{"name": "is-default", "values": ["true"]}], opts=opts)
    if not vpcs.ids:
        raise Missing(
            "subnet",
            f"{region} has no default VPC, and no subnet is configured: set gpubench:subnet to a subnet "
            f"that reaches the internet (`pulumi config set gpubench:subnet subnet-... --stack {cfg.stack}`), "
            f"or create the default VPC (`aws ec2 create-default-vpc --region {region}`)",
        )
    return Network(vpcs.ids[0])


# Outbound only (image pull, results upload); ingress is added per stack, SSH only.
EGRESS = [
    {
        "protocol": "-1",
        "from_port": 0,
        "to_port": 0,
        "cidr_blocks": ["0.0.0.0/0"],
        "ipv6_cidr_blocks": ["::/0"],
        "description": "image pull, results upload",
    }
]
# IMDSv2 only; hop limit 2 so the payload container reaches it through docker.
IMDS = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 2}


# Spot: a one-time request, terminated on interruption (no persistent request relaunching it).
SPOT = {
    "market_type": "spot",
    "spot_options": {"spot_instance_type": "one-time", "instance_interruption_behavior": "terminate"},
}


def _instance_role(parent: pulumi.Resource, launch: Launch, results, run_prefix: str, tags, launch_id=None):
    """The instance's role (results_policy) and profile, its code bundle URL, and what must exist
    before it boots (`depends_on`: nothing else refers to them): the role's policy, the bundle."""
    cfg, child = launch.cfg, pulumi.ResourceOptions(parent=parent)
    code_prefix = results.code_prefix if launch.public else None
    role, policy = _role(
        parent,
        ("instance-role", "results-access"),
        _assume("ec2.amazonaws.com"),
        f"gpubench {cfg.stack}: payload writes its results",
        pulumi.Output.all(results.bucket, launch_id).apply(
            lambda a: results_policy(a[0], run_prefix, code_prefix, a[1])
        ),
        tags,
    )
    profile = aws.iam.InstanceProfile("instance-profile", role=role.name, tags=tags, opts=child)
    # The code bundles (infra.launch.code_uploads), kept on destroy (other stacks may share a key): their s3://
    # URLs with `#<sha256>`, space-joined ("" with a prebuilt payloadImage).
    urls, objects = [], []
    for name, prefix, (sha, path) in code_uploads(launch) if launch.public is not None else ():
        obj = aws.s3.BucketObjectv2(
            name,
            bucket=results.bucket,
            key=f"{results.code_prefix}{prefix}{sha}.tar.gz",
            source=pulumi.FileAsset(path),
            content_type="application/gzip",
            tags=tags,
            opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True),
        )
        objects.append(obj)
        urls.append(pulumi.Output.all(obj.bucket, obj.key).apply(lambda a, sha=sha: f"s3://{a[0]}/{a[1]}#{sha}"))
    return role, profile, pulumi.Output.all(*urls).apply(" ".join), [policy, *objects]


def _security_group(parent: pulumi.Resource, cfg, tags, vpc_id: str, ssh: bool = True) -> aws.ec2.SecurityGroup:
    """Outbound only; SSH in only from `gpubench:sshCidr` when set (never for a recurring stack's launches)."""
    ingress = []
    if ssh and cfg.ssh_cidr:
        family = "ipv6_cidr_blocks" if ":" in cfg.ssh_cidr else "cidr_blocks"
        ingress.append(
            {
                "protocol": "tcp",
                "from_port": 22,
                "to_port": 22,
                family: [cfg.ssh_cidr],
                "description": "SSH from gpubench:sshCidr",
            }
        )
    return aws.ec2.SecurityGroup(
        "security-group",  # Pulumi appends -<hex> to name it; EC2 refuses a name starting with "sg-"
        description=f"gpubench {cfg.stack}: no ingress" + (" except configured SSH" if ssh else ""),
        vpc_id=vpc_id,
        ingress=ingress,
        egress=EGRESS,
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def _account_id(parent) -> pulumi.Output:
    return aws.get_caller_identity_output(opts=pulumi.InvokeOptions(parent=parent)).account_id


SCHEDULE_GROUP = "default"


def _scheduled(
    parent, names, stack: str, about, account, policy, tags, expression, target, retry, region=None, **extra
):
    """An EventBridge Scheduler schedule in UTC calling `target` as a role with the one inline `policy`.
    `names`: the schedule's, the role's, the policy's; `about`: what the role and the schedule do. The role
    trusts the scheduler for this account only and, with `region`, for its schedule group only (confused deputy)."""
    group = f"arn:aws:scheduler:{region}:{{}}:schedule-group/{SCHEDULE_GROUP}" if region else None
    trust = account.apply(lambda a: _assume("scheduler.amazonaws.com", a, group and group.format(a)))
    role, allow = _role(parent, names[1:], trust, f"gpubench {stack}: EventBridge Scheduler {about[0]}", policy, tags)
    return aws.scheduler.Schedule(
        names[0],
        description=f"gpubench {stack}: {about[1]}",
        schedule_expression=expression,
        schedule_expression_timezone="UTC",
        flexible_time_window={"mode": "OFF"},
        target={**target, "role_arn": role.arn, "retry_policy": retry},
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[allow]),
        **({"group_name": SCHEDULE_GROUP} if region else {}),
        **extra,
    )


def _user_data(launch: Launch, region: str, results_url: str, code_url: str, deadline: str | None = None) -> str:
    """The guest's cloud-init, gzipped and base64-encoded (a recurring launch sets its deadline at boot)."""
    env = {"AWS_DEFAULT_REGION": region}
    return cloud_init.compressed(guest_user_data(launch, results_url, code_url, CODE_COPY, deadline, env))


def _placed(parent: pulumi.Resource, launch: Launch):
    """The launch's config, child options, region, Network and AMI (looked up before anything is created)."""
    cfg, invoke = launch.cfg, pulumi.InvokeOptions(parent=parent)
    region = region_of(cfg, launch.offering)
    return (
        cfg,
        pulumi.ResourceOptions(parent=parent),
        region,
        network(cfg, region, invoke),
        _ami(launch, region, invoke),
    )


class AwsBenchmark(pulumi.ComponentResource):
    """One GPU instance that runs the payload once and is terminated by itself or by its deadline."""

    def __init__(self, name: str, launch: Launch, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:aws:Benchmark", name, None, opts)
        cfg, child, region, net, ami = _placed(self, launch)

        deadline = time.Offset("deadline", offset_minutes=round(cfg.max_hours * 60), opts=child)
        tags = aws_tags({**tag_values(launch), "expires-at": deadline.rfc3339})
        results = locate(cfg.results_ref("aws"), self)
        run_prefix = results.run_prefix(cfg.stack)

        launch_id = deadline.rfc3339.apply(launch_id_of)  # this deployment's runs: runs/<stack>/<launch>-*
        role, profile, code_url, before_boot = _instance_role(self, launch, results, run_prefix, tags, launch_id)
        sg = _security_group(self, cfg, tags, net.vpc_id)
        key_name = None
        if cfg.ssh_public_key:
            key_name = aws.ec2.KeyPair("ssh-key", public_key=cfg.ssh_public_key, tags=tags, opts=child).key_name
        instance = aws.ec2.Instance(
            "instance",
            ami=ami,
            instance_type=launch.offering.instance_type,
            iam_instance_profile=profile.name,
            vpc_security_group_ids=[sg.id],
            subnet_id=net.subnet_id,
            availability_zone=None if net.subnet_id else cfg.zone,  # a subnet is in one zone
            key_name=key_name,
            instance_initiated_shutdown_behavior="terminate",
            instance_market_options=SPOT if cfg.market == "spot" else None,
            metadata_options=IMDS,
            root_block_device={
                "encrypted": True,
                "volume_type": "gp3",
                "volume_size": cfg.root_volume_gb,
                "delete_on_termination": True,
                "tags": tags,
            },
            user_data_base64=pulumi.Output.all(results.url, code_url, deadline.rfc3339).apply(
                lambda a: _user_data(launch, region, *a)
            ),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_boot),
        )
        # The cloud-side deadline: a one-time schedule that terminates this instance only, then deletes itself.
        schedule = _scheduled(
            self,
            ("deadline-schedule", "deadline-role", "deadline-terminate"),
            cfg.stack,
            ("terminates the instance at the deadline", f"terminate the instance {cfg.max_hours:g} h after creation"),
            _account_id(self),
            instance.arn.apply(lambda arn: _policy(_allow(None, "ec2:TerminateInstances", arn))),
            tags,
            # a one-time expression, at(yyyy-mm-ddThh:mm:ss), evaluated in UTC
            deadline.rfc3339.apply(lambda t: f"at({t.rstrip('Z').split('+')[0].split('.')[0]})"),
            {"arn": TERMINATE_TARGET, "input": instance.id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
            {"maximum_retry_attempts": 185, "maximum_event_age_in_seconds": 86400},
            action_after_completion="DELETE",
        )
        self.outputs = {
            "instanceId": instance.id,
            "deadline": deadline.rfc3339,
            "schedule": schedule.name,
            "publicIp": instance.public_ip,
            "resultsUrl": results.url,
            "runPrefix": run_prefix,
        }
        self.register_outputs(self.outputs)


def deny_insecure_transport(bucket: str) -> str:
    return _policy(
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    )


class AwsResults(pulumi.ComponentResource):
    """The private, versioned, encrypted results bucket; protected so no teardown deletes it."""

    def __init__(self, name: str, cfg: ResultsConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:aws:Results", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = aws_tags({"project": project_id(), "stack": cfg.stack})
        bucket = aws.s3.Bucket(
            "results",
            bucket=cfg.bucket_name,
            force_destroy=False,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        block = aws.s3.BucketPublicAccessBlock(
            "results-public-access-block",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketOwnershipControls(
            "results-ownership", bucket=bucket.id, rule={"object_ownership": "BucketOwnerEnforced"}, opts=child
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            "results-encryption",
            bucket=bucket.id,
            rules=[
                {"apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"}, "bucket_key_enabled": True}
            ],
            opts=child,
        )
        versioning = aws.s3.BucketVersioning(
            "results-versioning", bucket=bucket.id, versioning_configuration={"status": "Enabled"}, opts=child
        )
        aws.s3.BucketLifecycleConfiguration(
            "results-lifecycle",
            bucket=bucket.id,
            # old checkpoints (objects tagged gpubench:kind=checkpoint), old versions, stalled uploads
            rules=[
                {
                    "id": "expire-checkpoints",
                    "status": "Enabled",
                    "filter": {"tag": {"key": "gpubench:kind", "value": "checkpoint"}},
                    "expiration": {"days": cfg.checkpoint_days},
                },
                {
                    "id": "expire-noncurrent-versions",
                    "status": "Enabled",
                    "filter": {"prefix": "runs/"},
                    "noncurrent_version_expiration": {"noncurrent_days": cfg.noncurrent_days},
                },
                {
                    "id": "abort-stalled-uploads",
                    "status": "Enabled",
                    "filter": {"prefix": ""},
                    "abort_incomplete_multipart_upload": {"days_after_initiation": 7},
                },
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[versioning]),
        )
        aws.s3.BucketPolicy(
            "results-tls-only",
            bucket=bucket.id,
            policy=bucket.bucket.apply(deny_insecure_transport),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[block]),
        )
        self.outputs = {
            "bucketName": bucket.bucket,
            "resultsUrl": bucket.bucket.apply(lambda b: f"s3://{b}"),
            "region": cfg.provider_config.get("aws:region", ""),
        }
        self.register_outputs(self.outputs)


RUN_INSTANCES_TARGET = "arn:aws:scheduler:::aws-sdk:ec2:runInstances"
# Resource types RunInstances touches when launching from a template (AWS's example policies,
# "Launch templates", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ExamplePolicies_EC2.html).
# `ec2:IsLaunchTemplateResource` is true for a resource the template specifies; these are:
_RUN_RESOURCES = ("instance", "volume", "security-group", "spot-instances-request")
# The template names a subnet (and so its network interface) only when `gpubench:subnet` is set;
# otherwise EC2 picks the default VPC's default subnet and creates the interface itself, and
# neither is a launch-template resource: a statement requiring the key would deny the launch.
# They get the template condition alone (the scheduler's request overrides nothing), as does the
# template itself (whether it counts as one of its own resources is not documented).
_RUN_NETWORK = ("network-interface", "subnet")
_TAGGED_AT_LAUNCH = ("instance", "volume", "network-interface", "spot-instances-request")


def launcher_policy(region: str, account: str, template_arn: str, instance_role_arn: str) -> str:
    """The scheduler's role: RunInstances only from this template (overriding none of its resources),
    tags only at that launch, and pass only this stack's instance role, only to EC2."""

    def arns(types):
        return [f"arn:aws:ec2:{region}:{account}:{t}/*" for t in types]

    template = {"ArnEquals": {"ec2:LaunchTemplate": template_arn}}
    return _policy(
        _allow(
            "RunOnlyFromThisTemplate",
            "ec2:RunInstances",
            [f"arn:aws:ec2:{region}::image/*", *arns(_RUN_RESOURCES)],
            {**template, "Bool": {"ec2:IsLaunchTemplateResource": "true"}},
        ),
        _allow("TemplateAndNetworkOfItsLaunch", "ec2:RunInstances", [template_arn, *arns(_RUN_NETWORK)], template),
        _allow(
            "TagOnlyAtLaunch",
            "ec2:CreateTags",
            arns(_TAGGED_AT_LAUNCH),
            {"StringEquals": {"ec2:CreateAction": "RunInstances"}},
        ),
        _allow(
            "PassOnlyInstanceRole",
            "iam:PassRole",
            instance_role_arn,
            {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        ),
    )


def run_instances_input(template_id: str, tags: dict[str, str]) -> str:
    """The RunInstances request the schedule sends: one instance from the template, tagged with a run id
    (the execution id) and the scheduled time, which is also the idempotency token (a retry launches once)."""
    per_run = {
        **tags,
        TAG_RUN_ID: "<aws.scheduler.execution-id>",
        TAG_SCHEDULED: "<aws.scheduler.scheduled-time>",
    }
    tag_list = [{"Key": k, "Value": str(v)} for k, v in sorted(per_run.items())]
    return json.dumps(
        {
            "LaunchTemplate": {"LaunchTemplateId": template_id, "Version": "$Default"},
            "MinCount": 1,
            "MaxCount": 1,
            "ClientToken": "gpubench-<aws.scheduler.scheduled-time>",
            "TagSpecifications": [{"ResourceType": t, "Tags": tag_list} for t in ("instance", "volume")],
        },
        sort_keys=True,
    )


TAG_RUN_ID = "gpubench:run-id"
TAG_SCHEDULED = "gpubench:scheduled-at"


class AwsRecurring(pulumi.ComponentResource):
    """A benchmark that EventBridge Scheduler launches (RunInstances) from a launch template on a
    schedule. Each launch shuts down `maxHours` after boot (shutdown terminates); its
    `gpubench:max-hours` tag lets the leak sweep terminate it past that."""

    def __init__(self, name: str, launch: Launch, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:aws:Recurring", name, None, opts)
        cfg, child, region, net, ami = _placed(self, launch)
        schedule_expr = parse_schedule(cfg.every or "")
        # No schedule in a tag: IAM and S3 tag values refuse its '(', '*' and '?'
        # (infra/aws/rules.py); the template's and the schedule's descriptions carry it.
        tags = aws_tags({**tag_values(launch), "max-hours": f"{cfg.max_hours:g}"})
        results = locate(cfg.results_ref("aws"), self)
        run_prefix = results.run_prefix(cfg.stack)

        role, profile, code_url, before_boot = _instance_role(self, launch, results, run_prefix, tags)
        sg = _security_group(self, cfg, tags, net.vpc_id, ssh=False)
        # A configured subnet goes in the template's network interface (the security group with it);
        # without one, EC2 uses the default VPC's default subnet of the zone.
        nic = {
            "device_index": 0,
            "subnet_id": net.subnet_id,
            "security_groups": [sg.id],
            "delete_on_termination": "true",
        }
        root_volume = {"encrypted": "true", "volume_type": "gp3", "volume_size": cfg.root_volume_gb}
        template = aws.ec2.LaunchTemplate(  # created after before_boot, so no launch boots before them
            "launch-template",
            description=f"gpubench {cfg.stack}: one benchmark run, launched every {schedule_expr.text}",
            image_id=ami,
            instance_type=launch.offering.instance_type,
            iam_instance_profile={"arn": profile.arn},
            vpc_security_group_ids=None if net.subnet_id else [sg.id],
            network_interfaces=[nic] if net.subnet_id else None,
            placement={"availability_zone": cfg.zone} if cfg.zone and not net.subnet_id else None,
            instance_initiated_shutdown_behavior="terminate",
            instance_market_options=SPOT if cfg.market == "spot" else None,
            metadata_options={**IMDS, "instance_metadata_tags": "enabled"},
            block_device_mappings=[
                {"device_name": "/dev/sda1", "ebs": {**root_volume, "delete_on_termination": "true"}}
            ],
            user_data=pulumi.Output.all(results.url, code_url).apply(lambda a: _user_data(launch, region, *a)),
            tag_specifications=[{"resource_type": t, "tags": tags} for t in ("instance", "volume")],
            update_default_version=True,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_boot),
        )
        account = _account_id(self)
        schedule = _scheduled(  # RunInstances on the template (launcher_policy)
            self,
            ("launch-schedule", "launcher-role", "launcher-run-instances"),
            cfg.stack,
            ("launches the benchmark from its template", f"launch one benchmark run ({schedule_expr.text}, UTC)"),
            account,
            pulumi.Output.all(account, template.arn, role.arn).apply(lambda a: launcher_policy(region, *a)),
            tags,
            schedule_expr.aws(),
            {"arn": RUN_INSTANCES_TARGET, "input": template.id.apply(lambda t: run_instances_input(t, tags))},
            # A capacity error is not retried for a day into the next run: one short retry window.
            {"maximum_retry_attempts": 2, "maximum_event_age_in_seconds": 900},
            region,
        )
        self.outputs = {
            "launchTemplateId": template.id,
            "schedule": schedule.name,
            "every": schedule_expr.aws(),
            "maxHours": cfg.max_hours,
            "resultsUrl": results.url,
            "runPrefix": run_prefix,
        }
        self.register_outputs(self.outputs)


# The stack names this project gives AWS stacks, as IAM patterns (infra.tags.is_project_stack).
OWN_STACKS = ("aws-*", "recurring-aws-*")


def sweeper_policy(region: str, account: str, log_group_arn: str, project: str) -> str:
    """The sweeper function's role: find what is tagged (Describe/List have no resource scope),
    terminate or delete only this project's resources, delete only deadline schedules, write only
    its own log group. "This project's" is infra.sweep.ownership as IAM conditions on the global
    `aws:ResourceTag/<key>` key, which EC2 authorizes TerminateInstances and DeleteSecurityGroup on
    (IAM User Guide, "EC2: Start or stop instances based on ... resource tags"; EC2 service
    authorization reference): the project tag AND a stack tag like OWN_STACKS."""

    def ours(*present):
        return {
            "StringEquals": {f"aws:ResourceTag/{PROJECT_TAG}": project},
            "StringLike": {f"aws:ResourceTag/{STACK_TAG}": list(OWN_STACKS)},
            "Null": {f"aws:ResourceTag/{k}": "false" for k in present},
        }

    instances = f"arn:aws:ec2:{region}:{account}:instance/*"
    return _policy(
        _allow(
            "FindTaggedResources",
            ["ec2:DescribeInstances", "ec2:DescribeSecurityGroups", "scheduler:ListSchedules"],
            "*",
        ),
        _allow("TerminateOnlyProjectInstances", "ec2:TerminateInstances", instances, ours(EXPIRES_TAG)),
        _allow("TerminateOnlyRecurringLaunches", "ec2:TerminateInstances", instances, ours(MAX_HOURS_TAG)),
        _allow(
            "DeleteOnlyProjectSecurityGroups",
            "ec2:DeleteSecurityGroup",
            f"arn:aws:ec2:{region}:{account}:security-group/*",
            ours(EXPIRES_TAG),
        ),
        _allow(
            "DeleteOnlyDeadlineSchedules",
            ["scheduler:GetSchedule", "scheduler:DeleteSchedule"],
            f"arn:aws:scheduler:{region}:{account}:schedule/default/{DEADLINE_SCHEDULE_PREFIX}*",
        ),
        _allow("OwnLogGroupOnly", ["logs:CreateLogStream", "logs:PutLogEvents"], f"{log_group_arn}:*"),
    )


def lambda_function_name(stack: str) -> str:
    """`gpubench-sweeper-<stack>` in Lambda's alphabet ([a-zA-Z0-9-_], at most 64; a stack name
    may also hold '.'), with a hash of the stack when it had to change, so names stay unique."""
    name = f"gpubench-sweeper-{stack}"
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", name)
    if safe == name and len(name) <= 64:
        return name
    return f"{safe[:57]}-{hashlib.sha1(stack.encode()).hexdigest()[:6]}"


class AwsSweeper(pulumi.ComponentResource):
    """The leak sweep (infra/sweeper_function.py) as a Lambda function on an EventBridge Scheduler
    schedule, sweeping the stack's region or `gpubench:regions`."""

    def __init__(self, name: str, cfg: SweeperConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:aws:Sweeper", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        region = cfg.provider_config.get("aws:region") or "us-east-1"
        regions = ",".join(cfg.regions or (region,))
        schedule_expr = parse_schedule(cfg.every)
        tags = aws_tags({"project": project_id(), "stack": cfg.stack})
        files = sweeper_function.package("aws")
        account = _account_id(self)

        # Lambda writes to /aws/lambda/<function name>: name the function so the log
        # group (and the role's only log permission) exists before it.
        function_name = lambda_function_name(cfg.stack)
        logs = aws.cloudwatch.LogGroup(
            "logs", name=f"/aws/lambda/{function_name}", retention_in_days=30, tags=tags, opts=child
        )
        # sweeper_policy: only what this project tagged, only its own log group; the function waits for it.
        role, allow = _role(
            self,
            ("function-role", "sweep-access"),
            _assume("lambda.amazonaws.com"),
            f"gpubench {cfg.stack}: the leak sweep terminates only what this project tagged",
            pulumi.Output.all(account, logs.arn).apply(lambda a: sweeper_policy(region, a[0], a[1], project_id())),
            tags,
        )
        function = aws.lambda_.Function(
            "function",
            name=function_name,
            description=f"gpubench leak sweep ({schedule_expr.text}, UTC); source {sweeper_function.package_hash(files)[:12]}",
            role=role.arn,
            runtime="python3.12",
            handler=sweeper_function.LAMBDA_HANDLER,
            code=pulumi.AssetArchive({k: pulumi.StringAsset(v.decode()) for k, v in files.items()}),
            memory_size=128,
            timeout=sweeper_function.TIMEOUT_S,
            environment={"variables": sweeper_env("aws", cfg.dry_run, regions)},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[allow, logs]),
        )
        schedule = _scheduled(  # as a role that may invoke the function and nothing else
            self,
            ("sweep-schedule", "invoke-role", "invoke"),
            cfg.stack,
            ("invokes the sweep function", f"run the leak sweep ({schedule_expr.text}, UTC)"),
            account,
            function.arn.apply(lambda arn: _policy(_allow(None, "lambda:InvokeFunction", arn))),
            tags,
            schedule_expr.aws(),
            {"arn": function.arn, "input": "{}"},
            {"maximum_retry_attempts": 0, "maximum_event_age_in_seconds": 600},
            region,
        )
        self.outputs = {
            "function": function.name,
            "schedule": schedule.name,
            "every": schedule_expr.aws(),
            "regions": regions,
            "logGroup": logs.name,
        }
        self.register_outputs(self.outputs)


COMPONENTS = {"benchmark": AwsBenchmark, "recurring": AwsRecurring, "results": AwsResults, "sweeper": AwsSweeper}
