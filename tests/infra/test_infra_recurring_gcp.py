"""GCP recurring stacks under Pulumi mocks: Cloud Scheduler calls the Compute
API's instances.bulkInsert on an instance template that carries the benchmark
stack's user-data, labels and deadline; the launcher's custom role holds exactly
the permissions that call needs, and actAs on the benchmark's account only."""

from __future__ import annotations

import base64
import json

import pytest
import yaml
from infra_matrix import NOW

from infra import cloud_init
from infra import stacks as stackfiles
from infra.catalog import load_catalog
from infra.gcp.component import name_pattern

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
BENCH = "gcp-t4-1x-spot"
STACK = f"recurring-{BENCH}"
NEEDED = {
    "compute.disks.create",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.subnetworks.use",
    "compute.subnetworks.useExternalIp",
}


def recurring_config(**extra):
    return {
        **stackfiles.load_config(BENCH),
        "gpubench:stackType": "recurring",
        "gpubench:every": "rate(4 hours)",
        "gpubench:maxHours": 1.5,
        **extra,
    }


@pytest.fixture(scope="module")
def rendered():
    from infra.render import render

    return render(STACK, recurring_config(), load_catalog(), now=NOW)


def test_nothing_runs_until_the_job_fires(rendered):
    assert not rendered.of_type("gcp:compute/instance:Instance")
    rendered.one("gcp:compute/instanceTemplate:InstanceTemplate")
    rendered.one("gcp:cloudscheduler/job:Job")
    assert not rendered.of_type("gcp:compute/firewall:Firewall")  # implied deny-ingress: no SSH


def test_template_carries_user_data_labels_and_deadline(rendered):
    t = rendered.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs
    user_data = t["metadata"]["user-data"]
    assert rendered.user_data == user_data and user_data.startswith("#cloud-config")
    env = next(f for f in yaml.safe_load(user_data)["write_files"] if f["path"] == cloud_init.ENV_FILE)["content"]
    assert "GPUBENCH_DEADLINE=boot+90m\n" in env and f"GPUBENCH_STACK={STACK}\n" in env
    assert "GPUBENCH_MARKET=spot\n" in env
    assert "ssh-keys" not in t["metadata"] and t["metadata"]["block-project-ssh-keys"] == "TRUE"
    sched = t["scheduling"]
    assert sched["maxRunDuration"] == {"seconds": 5400}  # GCP deletes each VM 1.5 h after it starts
    assert sched["instanceTerminationAction"] == "DELETE"
    assert sched["provisioningModel"] == "SPOT" and sched["automaticRestart"] is False
    assert t["labels"]["gpubench-stack"] == STACK.replace(".", "_")
    assert t["labels"]["gpubench-max-hours"] == "1_5"
    assert "gpubench-expires-at" not in t["labels"]  # no fixed deadline: each run has its own
    assert t["disks"][0]["autoDelete"] is True and t["disks"][0]["labels"] == t["labels"]
    runner = next(a for a in rendered.of_type("gcp:serviceaccount/account:Account") if a.name == "runner")
    assert t["serviceAccount"]["email"] == f"{runner.inputs['accountId']}@mock-project.iam.gserviceaccount.com"
    assert t["guestAccelerators"][0]["count"] == 1


def test_job_bulk_inserts_one_vm_from_the_template_as_the_launcher(rendered):
    job = rendered.one("gcp:cloudscheduler/job:Job").inputs
    assert job["schedule"] == "0 */4 * * *" and job["timeZone"] == "Etc/UTC"
    assert job["region"] == "us-central1" and job["retryConfig"] == {"retryCount": 0}
    target = job["httpTarget"]
    assert target["uri"] == (
        "https://compute.googleapis.com/compute/v1/projects/mock-project/zones/us-central1-a/instances/bulkInsert"
    )
    assert target["httpMethod"] == "POST" and target["headers"] == {"Content-Type": "application/json"}
    body = json.loads(base64.b64decode(target["body"]))
    assert body["count"] == "1" and body["minCount"] == "1"
    assert body["namePattern"] == name_pattern(STACK) == "recurring-gcp-t4-1x-spot-########"
    assert body["sourceInstanceTemplate"].startswith(
        "https://www.googleapis.com/compute/v1/projects/mock-project/global/instanceTemplates/template-"
    )
    launcher = next(a for a in rendered.of_type("gcp:serviceaccount/account:Account") if a.name == "launcher")
    email = f"{launcher.inputs['accountId']}@mock-project.iam.gserviceaccount.com"
    assert target["oauthToken"] == {
        "serviceAccountEmail": email,
        "scope": "https://www.googleapis.com/auth/cloud-platform",
    }


def _named(rendered, typ: str, name: str):
    return next(r for r in rendered.of_type(typ) if r.name == name)


def test_launcher_role_is_exactly_what_bulk_insert_needs(rendered):
    role = _named(rendered, "gcp:projects/iAMCustomRole:IAMCustomRole", "launcher-role").inputs
    assert set(role["permissions"]) == NEEDED and len(role["permissions"]) == len(NEEDED)
    grant = _named(rendered, "gcp:projects/iAMMember:IAMMember", "launcher-grant").inputs
    launcher = next(a for a in rendered.of_type("gcp:serviceaccount/account:Account") if a.name == "launcher")
    member = f"serviceAccount:{launcher.inputs['accountId']}@mock-project.iam.gserviceaccount.com"
    assert grant == {
        "project": "mock-project",
        "role": f"projects/mock-project/roles/{role['roleId']}",
        "member": member,
    }
    act_as = rendered.one("gcp:serviceaccount/iAMMember:IAMMember").inputs
    runner = next(a for a in rendered.of_type("gcp:serviceaccount/account:Account") if a.name == "runner")
    assert act_as["role"] == "roles/iam.serviceAccountUser" and act_as["member"] == member
    assert act_as["serviceAccountId"].endswith(f"/{runner.inputs['accountId']}@mock-project.iam.gserviceaccount.com")
    # nothing else is granted to the launcher; the runner may only delete the stack's own VMs
    others = [m for m in rendered.of_type("gcp:projects/iAMMember:IAMMember") if m.name != "launcher-grant"]
    assert [m.name for m in others] == ["self-delete-grant"] and others[0].inputs["member"] != member
    own = _named(rendered, "gcp:projects/iAMCustomRole:IAMCustomRole", "self-delete-role").inputs
    assert own["permissions"] == ["compute.instances.delete"]
    prefix = f"projects/mock-project/zones/{rendered.exports['zone']}/instances/{rendered.exports['namePattern'].rstrip('#')}"
    assert others[0].inputs["condition"]["expression"] == (
        f'resource.type == "compute.googleapis.com/Instance" && resource.name.startsWith("{prefix}")'
    )


def test_a_custom_image_adds_only_image_read():
    from infra.render import render

    r = render(STACK, recurring_config(**{"gpubench:image": "projects/p/global/images/mine"}), load_catalog(), now=NOW)
    perms = set(_named(r, "gcp:projects/iAMCustomRole:IAMCustomRole", "launcher-role").inputs["permissions"])
    assert perms == NEEDED | {"compute.images.useReadOnly"}


def test_a_schedule_with_no_unix_form_is_refused():
    from infra.render import render
    from infra.schedule_expr import ScheduleError

    with pytest.raises(ScheduleError, match="does not divide a day"):
        render(STACK, recurring_config(**{"gpubench:every": "rate(7 hours)"}), load_catalog(), now=NOW)


def test_each_launch_fetches_the_payload_bundle_it_runs(rendered):
    """A recurring VM boots a public image: it must fetch and verify the payload's code bundle,
    like a benchmark stack's VM, and its account may read code/ and nothing wider."""
    from infra.bundle import build_bundle

    (obj,) = rendered.of_type("gcp:storage/bucketObject:BucketObject")
    sha = build_bundle().sha256
    assert obj.inputs["name"].endswith(f"code/{sha}.tar.gz")
    t = rendered.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs
    user_data = t["metadata"]["user-data"]
    assert cloud_init.CODE_ENV in user_data and sha in user_data
    grants = {
        m.inputs["managedFolder"]: m.inputs["role"]
        for m in rendered.of_type("gcp:storage/managedFolderIamMember:ManagedFolderIamMember")
    }
    assert grants[obj.inputs["name"].rsplit("/", 1)[0] + "/"] == "roles/storage.objectViewer"
