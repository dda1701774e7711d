"""GCP: the results bucket stack and one benchmark stack (Spot or standard VM with a run deadline).

Security posture of a benchmark stack:
- a dedicated service account with `roles/storage.objectUser` on a managed folder
  `runs/<stack>/` of the results bucket and nothing else: it can write, overwrite
  (state.json, an interrupted result.json), list (to find a checkpoint to resume
  from) and delete superseded checkpoints there, and cannot touch any other
  object. A bucket-level grant with an IAM condition on `resource.name` cannot do
  this: listing is checked against the bucket, and objectCreator cannot overwrite.
  The folder is force-destroyed with the stack; the objects in it stay;
- `roles/storage.objectViewer` (read only) on the managed folder `code/`, which the
  results stack creates and where benchmark stacks upload the payload's code bundle
  (`code/<sha256>.tar.gz`, content-addressed, kept on `pulumi destroy` since other
  stacks may run the same bundle);
- a custom network with no firewall allow rule, so GCP's implied deny-ingress applies
  (the `default` network lets SSH in from anywhere); SSH only from `gpubench:sshCidr`;
- `on_host_maintenance = TERMINATE`, no automatic restart; spot stacks use
  `provisioning_model = SPOT` with DELETE; every stack has `max_run_duration`
  (`maxHours`) with `instance_termination_action = DELETE`: the cloud-side deadline;
- a Deep Learning VM image family matched to the GPU generation (infra/images.py),
  with `install-nvidia-driver=True`; cloud-init reads the `user-data` metadata key.

Labels mirror the AWS tags. GCP label keys and values allow only lowercase letters,
digits, '-' and '_', so `gpubench:stack` becomes `gpubench-stack` and values are
lowercased with other characters mapped to '_' (see infra.gcp.label_value);
`gpubench-expires-at` holds the deadline in ISO 8601 basic form (`20240501t120000z`).

A guest power-off stops (not deletes) a GCP VM; the stopped VM's disk is what keeps
billing until `python -m analysis teardown` (or the sweep) deletes it.
"""

from __future__ import annotations

import hashlib
import warnings

import pulumi

with warnings.catch_warnings():  # the SDK's own deprecation notices for resources we do not use
    warnings.simplefilter("ignore", DeprecationWarning)
    import pulumi_gcp.compute
    import pulumi_gcp.serviceaccount
    import pulumi_gcp.storage  # noqa: F401

import pulumi_gcp as gcp
import pulumiverse_time as time

from infra import cloud_init
from infra.config import ResultsConfig
from infra.gcp import deadline_tag, images
from infra.gcp import tags as gcp_labels
from infra.launch import Launch, bundle_file, code_bundle, payload_env, tag_values, zone_or_first
from infra.results_ref import locate

SUBNET_CIDR = "10.42.0.0/24"
FOLDER_ROLE = "roles/storage.objectUser"
CODE_ROLE = "roles/storage.objectViewer"
CODE_FOLDER = "code/"

# The guest's `copy URL FILE` for the code bundle, with the VM's service account. The
# Google Cloud CLI on the host when present (the Deep Learning VM images include it), else
# Google's own CLI image (https://cloud.google.com/sdk/docs/downloads-docker), which reads the
# service account from the metadata server through the host network.
CODE_COPY = """
copy() {
  if command -v gcloud >/dev/null 2>&1; then
    gcloud --quiet storage cp "$1" "$2"
  else
    dir="$(dirname "$2")"
    docker run --rm --network host -v "$dir:$dir" gcr.io/google.com/cloudsdktool/google-cloud-cli:stable \\
      gcloud --quiet storage cp "$1" "$2"
  fi
}
"""


def service_account_id(stack: str) -> str:
    """6-30 chars of [a-z0-9-], starting with a letter; a hash keeps long stack names unique."""
    digest = hashlib.sha1(stack.encode()).hexdigest()[:6]
    return f"gb-{stack[:20].rstrip('-')}-{digest}"


def _image(launch: Launch, opts: pulumi.InvokeOptions) -> pulumi.Output:
    if launch.cfg.image:
        return pulumi.Output.from_input(launch.cfg.image)
    spec = images.image_for(launch.generation)
    return gcp.compute.get_image_output(family=spec.family, project=images.IMAGE_PROJECT, opts=opts).self_link


class GcpBenchmark(pulumi.ComponentResource):
    """One GPU VM that runs the payload once; GCP deletes it at max_run_duration at the latest."""

    def __init__(self, name: str, launch: Launch, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpubench:gcp:Benchmark", name, None, opts)
        cfg, offering = launch.cfg, launch.offering
        child = pulumi.ResourceOptions(parent=self)
        zone = zone_or_first(cfg, offering)
        region = zone.rsplit("-", 1)[0]

        deadline = time.Offset("deadline", offset_minutes=round(cfg.max_hours * 60), opts=child)
        labels = gcp_labels({**tag_values(launch), "expires-at": deadline.rfc3339.apply(deadline_tag)})
        results = locate(cfg.results_ref("gcp"), self)
        run_prefix = results.run_prefix(cfg.stack)

        account = gcp.serviceaccount.Account(
            "runner", account_id=service_account_id(cfg.stack), display_name=f"gpubench {cfg.stack} payload", opts=child
        )
        member = account.email.apply(lambda e: f"serviceAccount:{e}")
        # force_destroy: `pulumi destroy` removes the folder's IAM scope, never the results in it
        folder = gcp.storage.ManagedFolder(
            "results-folder", bucket=results.bucket, name=run_prefix, force_destroy=True, opts=child
        )
        gcp.storage.ManagedFolderIamMember(
            "results-access",
            bucket=results.bucket,
            managed_folder=folder.name,
            role=FOLDER_ROLE,
            member=member,
            opts=child,
        )
        code_url = pulumi.Output.from_input("")
        if launch.public is not None:
            gcp.storage.ManagedFolderIamMember(
                "code-read",
                bucket=results.bucket,
                managed_folder=results.code_prefix,
                role=CODE_ROLE,
                member=member,
                opts=child,
            )
            sha, path = bundle_file()
            obj = gcp.storage.BucketObject(
                "code-bundle",
                bucket=results.bucket,
                name=f"{results.code_prefix}{sha}.tar.gz",
                source=pulumi.FileAsset(path),
                content_type="application/gzip",
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            )
            code_url = pulumi.Output.all(obj.bucket, obj.name).apply(lambda a: f"gs://{a[0]}/{a[1]}#{sha}")

        network = gcp.compute.Network(
            "net",
            auto_create_subnetworks=False,
            description=f"gpubench {cfg.stack}: no ingress except configured SSH",
            opts=child,
        )
        subnet = gcp.compute.Subnetwork(
            "subnet",
            network=network.id,
            region=region,
            ip_cidr_range=SUBNET_CIDR,
            private_ip_google_access=True,
            opts=child,
        )
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

        env = pulumi.Output.all(results.url, deadline.rfc3339).apply(lambda a: payload_env(launch, a[0], a[1]))

        def guest_code(url_and_sha: str):
            if not url_and_sha:
                return None
            url, _, digest = url_and_sha.partition("#")
            return code_bundle(launch, url, digest, CODE_COPY)

        user_data = pulumi.Output.all(env, code_url).apply(
            lambda a: cloud_init.render_user_data(cloud_init.PayloadLaunch(launch.image, a[0], guest_code(a[1])))
        )
        metadata = {"user-data": user_data, "install-nvidia-driver": "True", "block-project-ssh-keys": "TRUE"}
        if cfg.ssh_public_key:
            metadata["ssh-keys"] = f"gpubench:{cfg.ssh_public_key}"

        spot = cfg.market == "spot"
        scheduling = {
            "provisioning_model": "SPOT" if spot else "STANDARD",
            "preemptible": spot,
            "automatic_restart": False,
            "on_host_maintenance": "TERMINATE",
            "instance_termination_action": "DELETE",
            "max_run_duration": {"seconds": round(cfg.max_hours * 3600)},
        }
        accelerators = None
        if offering.accelerator_type:
            accelerators = [{"type": offering.accelerator_type, "count": offering.accelerator_count}]
        instance = gcp.compute.Instance(
            "instance",
            machine_type=offering.instance_type,
            zone=zone,
            boot_disk={
                "auto_delete": True,
                "initialize_params": {
                    "image": _image(launch, pulumi.InvokeOptions(parent=self)),
                    "size": cfg.root_volume_gb,
                    "type": "pd-balanced",
                    "labels": labels,
                },
            },
            guest_accelerators=accelerators,
            scheduling=scheduling,
            network_interfaces=[{"subnetwork": subnet.id, "access_configs": [{}]}],
            service_account={"email": account.email, "scopes": ["https://www.googleapis.com/auth/cloud-platform"]},
            metadata=metadata,
            labels=labels,
            allow_stopping_for_update=True,
            opts=child,
        )
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
            labels=gcp_labels({"stack": cfg.stack}),
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        # Benchmark stacks upload code bundles here and grant their VMs objectViewer on it.
        gcp.storage.ManagedFolder(
            "code-folder", bucket=bucket.name, name=CODE_FOLDER, opts=pulumi.ResourceOptions(parent=self)
        )
        self.outputs = {"bucketName": bucket.name, "resultsUrl": bucket.name.apply(lambda b: f"gs://{b}")}
        self.register_outputs(self.outputs)
