"""GCP's Pulumi components: the results bucket, a benchmark VM (deleted at `max_run_duration`), a
recurring launch and the leak-sweep function; docs/security.md states what each account may do.
Each VM gets a custom network with no allow rule (GCP's implied deny-ingress; the `default` network
lets SSH in from anywhere): SSH only from `gpubench:sshCidr`. A VM deletes itself (infra/guest/gcp.sh).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import NamedTuple

import pulumi
import pulumiverse_time as time

from infra import sweeper_function
from infra.cloudparts import code_copy, quietly_imported, sweeper_env
from infra.config import ConfigError, ResultsConfig, SweeperConfig
from infra.gcp.sweep import deadline_tag, region_of_zone
from infra.gcp.sweep import tags as gcp_labels
from infra.images import lookup
from infra.launch import Launch, code_uploads, guest_user_data, launch_id_of, tag_values, zone_or_first
from infra.results_ref import journal_prefix_beside, locate
from infra.schedule_expr import parse_schedule
from infra.tags import project_id

gcp = quietly_imported(
    "pulumi_gcp",
    "cloudfunctionsv2",
    "cloudrunv2",
    "cloudscheduler",
    "compute",
    "organizations",
    "projects",
    "serviceaccount",
    "storage",
)

SUBNET_CIDR = "10.42.0.0/24"
RUNS_ROLE = "roles/storage.objectCreator"  # create only: no read, no list, no overwrite, no delete
CODE_ROLE = "roles/storage.objectViewer"
CODE_FOLDER = "code/"

# The guest's `copy URL FILE` for the code bundle, as the VM's service account: the host's gcloud (the
# Deep Learning VM images include it), else Google's CLI image, which reads the account from the
# metadata server through the host network (https://cloud.google.com/sdk/docs/downloads-docker).
CODE_COPY = code_copy(
    "gcloud",
    "gcloud --quiet storage cp",
    "gcr.io/google.com/cloudsdktool/google-cloud-cli:stable",
    "gcloud --quiet storage cp",
)


def rfc1035_stem(text: str, size: int, lead: str = "gb-") -> str:
    """`text` as the start of an RFC 1035 name (lowercase letters, digits, single '-'; at most `size`;
    ending in a letter or digit; starting with a letter, else `lead` is put first unless "")."""
    stem = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")
    if stem and lead and not stem[0].isalpha():
        stem = lead + stem
    return stem[:size].rstrip("-")


# A VM's service account may delete its own instance only: a custom role with just instances.delete
# under an IAM condition on the resource's type and name (Compute Engine instances are
# `compute.googleapis.com/Instance` named `projects/PROJECT/zones/ZONE/instances/NAME`,
# https://cloud.google.com/iam/docs/conditions-resource-attributes,
# https://cloud.google.com/iam/docs/configuring-resource-based-access).
def self_delete_grant(parent, cfg, project, zone: str, member, name, prefix: bool = False):
    """Let the VM's service account (`member`) delete its own instance `name` and nothing else
    (`prefix`: the VMs a recurring stack's bulkInsert names)."""

    def condition(project: str, name: str) -> dict:
        resource = f"projects/{project}/zones/{zone}/instances/{name}"
        test = f'resource.name.startsWith("{resource}")' if prefix else f'resource.name == "{resource}"'
        return {
            "title": "own instance only",
            "description": "a gpubench VM deletes itself at the end of its run",
            "expression": f'resource.type == "compute.googleapis.com/Instance" && {test}',
        }

    about = ("a VM deletes its own instance at the end of its run", ["compute.instances.delete"])
    grant = pulumi.Output.all(project, name).apply(lambda a: condition(*a))
    return _project_role(parent, "self-delete", cfg.stack, about, project, member, condition=grant)


def service_account_id(stack: str, kind: str = "") -> str:
    """`gb-<stack>-<hash>` for the stack's `kind` of account ("": the VM's runner), within
    infra/gcp/rules.py's service-account-id; the hash of stack and kind keeps accounts apart."""
    digest = hashlib.sha1((f"{stack}:{kind}" if kind else stack).encode()).hexdigest()[:6]
    stem = rfc1035_stem(stack, 20, lead="")  # after "gb-": a leading digit is fine
    return f"gb-{stem}-{digest}" if stem else f"gb-{digest}"


# A service account's display name and a custom role's title: at most 100 UTF-8 bytes
# (infra/gcp/rules.py); stack names are ASCII, so characters are bytes.
TITLE_MAX = 100


def _title(text: str) -> str:
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 3] + "..."


def _account(parent, name: str, stack: str, kind: str, display_name: str):
    """A service account of the stack (`kind`: service_account_id's) and its IAM member string."""
    account = gcp.serviceaccount.Account(
        name,
        account_id=service_account_id(stack, kind),
        display_name=_title(display_name),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return account, account.email.apply(lambda e: f"serviceAccount:{e}")


def _project_role(parent, name: str, stack: str, about, project, member, **grant):
    """The stack's custom role `name` (`about`: description, permissions) granted to `member` on the project."""
    child = pulumi.ResourceOptions(parent=parent)
    description, permissions = about
    role = gcp.projects.IAMCustomRole(
        f"{name}-role",
        role_id=custom_role_id(stack, name.replace("-", "")),
        title=_title(f"gpubench {stack} {name}"),
        description=description,
        permissions=permissions,
        project=project,
        opts=child,
    )
    return gcp.projects.IAMMember(f"{name}-grant", project=project, role=role.name, member=member, opts=child, **grant)


def _account_with_role(parent, name: str, stack: str, display_name: str, about, project):
    """A service account of the stack with its own custom role `name`: the account, its member, the grant."""
    account, member = _account(parent, name, stack, name, display_name)
    return account, member, _project_role(parent, name, stack, about, project, member)


# Which Deep Learning VM image family boots a GPU of each generation (as the AWS AMIs: cuda13 cc >= 7.5,
# cuda12 cc 5.0..7.0, cuda11-legacy the K80's driver 470 era). Ubuntu only: it runs cloud-init, which reads
# our user-data (GCP's Debian DLVM images do not).
IMAGE_PROJECT = "deeplearning-platform-release"


class GcpImage(NamedTuple):
    family: str
    legacy: bool = False


IMAGES: dict[str, GcpImage] = {
    "cuda13": GcpImage("common-cu129-ubuntu-2204-nvidia-580"),
    "cuda12": GcpImage("common-cu128-ubuntu-2204-nvidia-570"),
    "cuda11-legacy": GcpImage("common-cu113-ubuntu-2004", legacy=True),
}


class NoImage(ConfigError, pulumi.RunError):
    """The image family has no image to boot; raised before any resource is created, and printed
    by Pulumi without a traceback (a RunError)."""


def _image(launch: Launch, opts: pulumi.InvokeOptions) -> str:
    """`gpubench:image`, else the newest image of the generation's family, looked up before anything
    is created. `images.getFromFamily` skips deprecated images
    (https://cloud.google.com/compute/docs/reference/rest/v1/images/getFromFamily), so a legacy
    family (all deprecated, like K80's CUDA 11) is listed instead (`most_recent` over a filter)."""
    if launch.cfg.image:
        return launch.cfg.image
    spec = lookup(IMAGES, "gcp", launch.generation)
    how = {"filter": f"family = {spec.family}", "most_recent": True} if spec.legacy else {"family": spec.family}
    try:
        return gcp.compute.get_image(project=IMAGE_PROJECT, opts=opts, **how).self_link
    except Exception as exc:  # noqa: BLE001 - the provider's invoke error, whatever its class
        raise NoImage(
            "image",
            f"the image family {IMAGE_PROJECT}/{spec.family} has no image to boot "
            f"({str(exc).splitlines()[0][:200]}); set gpubench:image to an image you choose "
            f"(`gcloud compute images list --project {IMAGE_PROJECT} --show-deprecated "
            f"--filter='family~^common-cu'`), e.g. projects/{IMAGE_PROJECT}/global/images/<name>",
        ) from None


# Machine series whose only supported interface is gVNIC (third generation and later, A3 among them,
# https://cloud.google.com/compute/docs/networking/using-gvnic); the Deep Learning VM images support it.
GVNIC_SERIES = ("a3-", "a4-", "a4x-", "c3-", "c3d-", "c4-", "c4a-", "c4d-", "g4-", "h3-", "n4-", "x4-")


def own_runs_condition(bucket: str, run_prefix: str, launch: str | None) -> dict:
    """The runner's create-only condition: names under its own launch's runs (all of `run_prefix` for a
    recurring stack) and its stack's journal. Objects are `projects/_/buckets/<bucket>/objects/<name>`
    in conditions (https://cloud.google.com/iam/docs/conditions-resource-attributes; `startsWith` on a
    bucket binding is Cloud Storage's own example,
    https://cloud.google.com/storage/docs/samples/storage-add-bucket-conditional-iam-binding). The
    journal clause is per stack: the launch sits mid-name in an entry, past a prefix (harmless, an
    entry is only a hint; https://cloud.google.com/iam/docs/conditions-attribute-reference)."""
    own = f"{run_prefix}{launch}-" if launch else run_prefix
    journal = journal_prefix_beside(run_prefix)
    names = (f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/{p}")' for p in (own, journal))
    return {
        "title": "own-runs-and-journal-create-only",
        "description": f"create objects under {own} and {journal} only",
        "expression": " || ".join(names),
    }


def _runner(parent: pulumi.Resource, launch: Launch, results, run_prefix: str, launch_id=None):
    """The VM's service account, its member, its code bundle URLs and what the VM must wait for (`depends_on`:
    nothing else refers to them). The account gets objectCreator (create only: replacing needs
    storage.objects.delete) under own_runs_condition, and read on the code/ folder only; the code bundles
    (infra.launch.code_uploads) are kept on destroy: "gs://...#sha256 ..." ("" with a prebuilt payloadImage)."""
    cfg, child = launch.cfg, pulumi.ResourceOptions(parent=parent)
    account, member = _account(parent, "runner", cfg.stack, "", f"gpubench {cfg.stack} payload")
    grant = gcp.storage.BucketIAMMember(
        "results-access",
        bucket=results.bucket,
        role=RUNS_ROLE,
        member=member,
        condition=pulumi.Output.all(results.bucket, launch_id).apply(
            lambda a: own_runs_condition(a[0], run_prefix, a[1])
        ),
        opts=child,
    )
    if launch.public is None:
        return account, member, pulumi.Output.from_input(""), [grant]
    code_read = gcp.storage.ManagedFolderIamMember(
        "code-read",
        bucket=results.bucket,
        managed_folder=results.code_prefix,
        role=CODE_ROLE,
        member=member,
        opts=child,
    )
    urls, before_boot = [], [grant, code_read]
    for res_name, prefix, (sha, path) in code_uploads(launch):
        obj = gcp.storage.BucketObject(
            res_name,
            bucket=results.bucket,
            name=f"{results.code_prefix}{prefix}{sha}.tar.gz",
            source=pulumi.FileAsset(path),
            content_type="application/gzip",
            opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True),
        )
        before_boot.append(obj)
        urls.append(pulumi.Output.all(obj.bucket, obj.name).apply(lambda a, sha=sha: f"gs://{a[0]}/{a[1]}#{sha}"))
    return account, member, pulumi.Output.all(*urls).apply(" ".join), before_boot


def _network(parent: pulumi.Resource, region: str, description: str):
    """A custom network with no firewall allow rule (GCP's implied deny-ingress) and its one subnet."""
    child = pulumi.ResourceOptions(parent=parent)
    network = gcp.compute.Network("net", auto_create_subnetworks=False, description=description, opts=child)
    return network, gcp.compute.Subnetwork(
        "subnet",
        network=network.id,
        region=region,
        ip_cidr_range=SUBNET_CIDR,
        private_ip_google_access=True,
        opts=child,
    )


def _vm(launch: Launch, labels, account, subnet, user_data, ssh: bool = True) -> dict:
    """What a benchmark VM and a recurring template share. Metadata: cloud-init, the NVIDIA driver, no
    project-wide SSH keys (only `gpubench:sshPublicKey` with `ssh`: never on recurring launches). Spot or
    standard, never restarted, deleted at max_run_duration (`maxHours`): the cloud-side deadline. The
    stack's subnet, an external address (image pull, upload), gVNIC where the series requires it."""
    cfg, offering = launch.cfg, launch.offering
    metadata = {"user-data": user_data, "install-nvidia-driver": "True", "block-project-ssh-keys": "TRUE"}
    if ssh and cfg.ssh_public_key:
        metadata["ssh-keys"] = f"gpubench:{cfg.ssh_public_key}"
    nic: dict = {"subnetwork": subnet.id, "access_configs": [{}]}
    if offering.instance_type.startswith(GVNIC_SERIES):
        nic["nic_type"] = "GVNIC"
    spot = cfg.market == "spot"
    gpus = offering.accelerator_type and [{"type": offering.accelerator_type, "count": offering.accelerator_count}]
    return {
        "machine_type": offering.instance_type,
        "guest_accelerators": gpus or None,
        "scheduling": {
            "provisioning_model": "SPOT" if spot else "STANDARD",
            "preemptible": spot,
            "automatic_restart": False,
            "on_host_maintenance": "TERMINATE",
            "instance_termination_action": "DELETE",
            "max_run_duration": {"seconds": round(cfg.max_hours * 3600)},
        },
        "network_interfaces": [nic],
        "service_account": {"email": account.email, "scopes": [CLOUD_PLATFORM_SCOPE]},
        "metadata": metadata,
        "labels": labels,
    }


def _project_of(parent) -> pulumi.Output:
    return gcp.organizations.get_client_config_output(opts=pulumi.InvokeOptions(parent=parent)).project


class GcpBenchmark(pulumi.ComponentResource):
    """One GPU VM that runs the payload once; GCP deletes it at max_run_duration at the latest."""

    def __init__(self, name: str, launch: Launch, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:gcp:Benchmark", name, None, opts)
        cfg, offering = launch.cfg, launch.offering
        child = pulumi.ResourceOptions(parent=self)
        zone = zone_or_first(cfg, offering)
        region = region_of_zone(zone)
        image = _image(launch, pulumi.InvokeOptions(parent=self))  # before anything is created

        deadline = time.Offset("deadline", offset_minutes=round(cfg.max_hours * 60), opts=child)
        labels = gcp_labels({**tag_values(launch), "expires-at": deadline.rfc3339.apply(deadline_tag)})
        results = locate(cfg.results_ref("gcp"), self)
        run_prefix = results.run_prefix(cfg.stack)

        launch_id = deadline.rfc3339.apply(launch_id_of)  # this deployment's runs: runs/<stack>/<launch>-*
        account, member, code_url, before_boot = _runner(self, launch, results, run_prefix, launch_id)
        network, subnet = _network(self, region, f"gpubench {cfg.stack}: no ingress except configured SSH")
        if cfg.ssh_cidr:
            gcp.compute.Firewall(
                "ssh",
                network=network.id,
                direction="INGRESS",
                allows=[{"protocol": "tcp", "ports": ["22"]}],
                source_ranges=[cfg.ssh_cidr],
                target_service_accounts=[account.email],
                opts=child,
            )
        user_data = pulumi.Output.all(results.url, code_url, deadline.rfc3339).apply(
            lambda a: guest_user_data(launch, a[0], a[1], CODE_COPY, a[2])
        )
        instance = gcp.compute.Instance(
            "instance",
            zone=zone,
            boot_disk={
                "auto_delete": True,
                "initialize_params": {
                    "image": image,
                    "size": cfg.root_volume_gb,
                    "type": "pd-balanced",
                    "labels": labels,
                },
            },
            allow_stopping_for_update=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_boot),
            **_vm(launch, labels, account, subnet, user_data),
        )
        project = _project_of(self)
        self_delete_grant(self, cfg, project, zone, member, instance.name)
        self.outputs = {
            "instanceName": instance.name,
            "zone": zone,
            "deadline": deadline.rfc3339,
            "resultsUrl": results.url,
            "runPrefix": run_prefix,
        }
        self.register_outputs(self.outputs)


class GcpResults(pulumi.ComponentResource):
    """The private, uniform-access, versioned results bucket; protected so no teardown deletes it."""

    def __init__(self, name: str, cfg: ResultsConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:gcp:Results", name, None, opts)
        region = cfg.provider_config.get("gcp:region", "us-central1")
        bucket = gcp.storage.Bucket(
            "results",
            name=cfg.bucket_name,
            location=region.upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning={"enabled": True},
            force_destroy=False,
            lifecycle_rules=[
                {
                    "action": {"type": "Delete"},
                    "condition": {"days_since_noncurrent_time": cfg.noncurrent_days, "with_state": "ARCHIVED"},
                },
                {"action": {"type": "AbortIncompleteMultipartUpload"}, "condition": {"age": 7}},
            ],
            labels=gcp_labels({"project": project_id(), "stack": cfg.stack}),
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        # Benchmark stacks upload code bundles here and grant their VMs objectViewer on it.
        gcp.storage.ManagedFolder(
            "code-folder", bucket=bucket.name, name=CODE_FOLDER, opts=pulumi.ResourceOptions(parent=self)
        )
        self.outputs = {"bucketName": bucket.name, "resultsUrl": bucket.name.apply(lambda b: f"gs://{b}")}
        self.register_outputs(self.outputs)


# What instances.bulkInsert from an instance template needs (GCP's "Required permissions" for
# creating VMs in bulk): the VM, its disk, the template, the subnet and external address, and
# the template's metadata, labels and service account.
LAUNCHER_PERMISSIONS = (
    "compute.disks.create",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
)
# Only for a `gpubench:image` of the user's project (the Deep Learning VM families are public).
CUSTOM_IMAGE_PERMISSION = "compute.images.useReadOnly"
COMPUTE_API = "https://compute.googleapis.com/compute/v1/"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def custom_role_id(stack: str, kind: str) -> str:
    """[a-zA-Z0-9_.]{3,64}, unique per stack: a deleted custom role's id stays reserved for weeks."""
    return f"gpubench_{kind}_{hashlib.sha1(stack.encode()).hexdigest()[:10]}"


def name_pattern(stack: str) -> str:
    """bulkInsert's namePattern: a VM name (RFC 1035, <= 63) ending in one run of '#'s."""
    return f"{rfc1035_stem(stack, 40) or 'gpubench'}-########"


class GcpRecurring(pulumi.ComponentResource):
    """A benchmark that a Cloud Scheduler job launches (instances.bulkInsert, one VM, as a launcher
    account) from an instance template whose `max_run_duration` deletes each VM at its own deadline.

    The launcher holds only what bulkInsert-from-a-template needs and `actAs` on the runner; but
    `compute.instances.create` takes no condition tying it to one template (unlike AWS's
    `ec2:LaunchTemplate`), so it could create any VM in the project. It has no key. Each VM's run id
    is its name (`<stack>-NNNNNNNN`); `gpubench-max-hours` lets the sweep delete one that outlives it."""

    def __init__(self, name: str, launch: Launch, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:gcp:Recurring", name, None, opts)
        cfg = launch.cfg
        zone = zone_or_first(cfg, launch.offering)
        region = region_of_zone(zone)
        image = _image(launch, pulumi.InvokeOptions(parent=self))  # before anything is created
        schedule_expr = parse_schedule(cfg.every or "")
        results = locate(cfg.results_ref("gcp"), self)
        run_prefix = results.run_prefix(cfg.stack)
        project = _project_of(self)

        runner, runner_member, code_url, before_boot = _runner(self, launch, results, run_prefix)
        self_delete_grant(self, cfg, project, zone, runner_member, name_pattern(cfg.stack).rstrip("#"), prefix=True)
        _, subnet = _network(self, region, f"gpubench {cfg.stack}: no ingress")
        labels = gcp_labels({**tag_values(launch), "max-hours": f"{cfg.max_hours:g}"})
        user_data = pulumi.Output.all(results.url, code_url).apply(
            lambda a: guest_user_data(launch, a[0], a[1], CODE_COPY)
        )
        disk = {"source_image": image, "disk_size_gb": cfg.root_volume_gb, "disk_type": "pd-balanced", "labels": labels}
        template = gcp.compute.InstanceTemplate(  # created after what the VM needs: no launch boots before them
            "template",
            name_prefix="gpubench-",
            description=f"gpubench {cfg.stack}: one benchmark run, launched every {schedule_expr.text}",
            disks=[{"boot": True, "auto_delete": True, **disk}],
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_boot),
            **_vm(launch, labels, runner, subnet, user_data, ssh=False),
        )
        # The account Cloud Scheduler calls bulkInsert as: LAUNCHER_PERMISSIONS, actAs on the runner only.
        permissions = sorted({*LAUNCHER_PERMISSIONS, *([CUSTOM_IMAGE_PERMISSION] if cfg.image else [])})
        launcher, launcher_member, grant = _account_with_role(
            self,
            "launcher",
            cfg.stack,
            f"gpubench {cfg.stack} launcher (Cloud Scheduler)",
            ("instances.bulkInsert from the stack's instance template", permissions),
            project,
        )
        act_as = gcp.serviceaccount.IAMMember(
            "launcher-act-as-runner",
            service_account_id=runner.name,
            role="roles/iam.serviceAccountUser",
            member=launcher_member,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # One VM from the template; a stock-out creates nothing (minCount 1).
        body = {"count": "1", "minCount": "1", "namePattern": name_pattern(cfg.stack)}
        target = {
            "body": template.self_link.apply(
                lambda t: base64.b64encode(
                    json.dumps({**body, "sourceInstanceTemplate": t}, sort_keys=True).encode()
                ).decode()
            ),
            "headers": {"Content-Type": "application/json"},
            "oauth_token": {"service_account_email": launcher.email, "scope": CLOUD_PLATFORM_SCOPE},
        }
        uri = project.apply(lambda p: f"{COMPUTE_API}projects/{p}/zones/{zone}/instances/bulkInsert")
        what = "launch one benchmark run"
        job = _scheduler_job(self, "launch-job", cfg, what, schedule_expr, region, "60s", uri, target, [grant, act_as])
        self.outputs = {
            "instanceTemplate": template.self_link,
            "job": job.name,
            "every": schedule_expr.unix(),
            "maxHours": cfg.max_hours,
            "namePattern": name_pattern(cfg.stack),
            "zone": zone,
            "resultsUrl": results.url,
            "runPrefix": run_prefix,
        }
        self.register_outputs(self.outputs)


def _scheduler_job(parent, name, cfg, what, schedule_expr, region, attempt_deadline, uri, target, depends_on):
    """A Cloud Scheduler job that POSTs to `uri` on the schedule, never retried into the next slot."""
    return gcp.cloudscheduler.Job(
        name,
        description=f"gpubench {cfg.stack}: {what} ({schedule_expr.text}, UTC)",
        region=region,
        schedule=schedule_expr.unix(),
        time_zone="Etc/UTC",
        attempt_deadline=attempt_deadline,
        retry_config={"retry_count": 0},
        http_target={"uri": uri, "http_method": "POST", **target},
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )


# GCP IAM conditions cannot test a VM's labels (unlike aws:ResourceTag): the delete is project-wide,
# the sweep code checks the labels (infra/gcp/sweep.py).
SWEEPER_PERMISSIONS = ("compute.instances.delete", "compute.instances.list")


class GcpSweeper(pulumi.ComponentResource):
    """The leak sweep (infra/sweeper_function.py) as a Cloud Run function on a Cloud Scheduler job, run
    as an account that may only list and delete VMs, invoked by one that may only invoke it. The function
    is built from its source archive in a private bucket of its own."""

    def __init__(self, name: str, cfg: SweeperConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:gcp:Sweeper", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        region = cfg.provider_config.get("gcp:region") or "us-central1"
        schedule_expr = parse_schedule(cfg.every)
        project = _project_of(self)
        labels = gcp_labels({"project": project_id(), "stack": cfg.stack})
        about = ("list VMs, delete the expired ones this project labelled", sorted(SWEEPER_PERMISSIONS))
        runner, _, grant = _account_with_role(
            self, "sweeper", cfg.stack, f"gpubench {cfg.stack}: the leak sweep", about, project
        )
        files = sweeper_function.package("gcp")
        digest = sweeper_function.package_hash(files)
        source = gcp.storage.Bucket(
            "source",
            location=region.upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=True,
            labels=labels,
            opts=child,
        )
        archive = gcp.storage.BucketObject(
            "source-archive",
            bucket=source.name,
            name=f"sweeper-{digest[:16]}.zip",  # a new name per content: a code change redeploys
            source=pulumi.AssetArchive({k: pulumi.StringAsset(v.decode()) for k, v in files.items()}),
            opts=child,
        )
        env = sweeper_env("gcp", cfg.dry_run, ",".join(cfg.regions or ()))
        function = gcp.cloudfunctionsv2.Function(
            "function",
            location=region,
            description=f"gpubench leak sweep ({schedule_expr.text}, UTC); source {digest[:12]}",
            build_config={
                "runtime": "python312",
                "entry_point": sweeper_function.ENTRY_POINT,
                "source": {"storage_source": {"bucket": source.name, "object": archive.name}},
            },
            service_config={
                "service_account_email": runner.email,
                "available_memory": "256M",
                "timeout_seconds": 540,
                "max_instance_count": 1,
                "ingress_settings": "ALLOW_ALL",  # Cloud Scheduler calls from outside the VPC; IAM decides
                "all_traffic_on_latest_revision": True,
                "environment_variables": project.apply(lambda p: {**env, "GOOGLE_CLOUD_PROJECT": p}),
            },
            labels=labels,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[grant]),
        )
        invoker, member = _account(
            self, "invoker", cfg.stack, "invoker", f"gpubench {cfg.stack}: Cloud Scheduler invokes the sweep"
        )
        may_invoke = gcp.cloudrunv2.ServiceIamMember(
            "invoker-grant",
            project=project,
            location=region,
            name=function.name,
            role="roles/run.invoker",
            member=member,
            opts=child,
        )
        uri = function.service_config.uri
        target = {"oidc_token": {"service_account_email": invoker.email, "audience": uri}}
        what = "run the leak sweep"
        job = _scheduler_job(self, "sweep-job", cfg, what, schedule_expr, region, "540s", uri, target, [may_invoke])
        self.outputs = {"function": function.name, "job": job.name, "every": schedule_expr.unix(), "uri": uri}
        self.register_outputs(self.outputs)


COMPONENTS = {"benchmark": GcpBenchmark, "recurring": GcpRecurring, "results": GcpResults, "sweeper": GcpSweeper}
