"""Every stack in stacks/, rendered under Pulumi mocks: the resources and the safety properties each must have."""

from __future__ import annotations

import importlib
import inspect
import json
import re

import pytest
from infra_matrix import AWS_STACKS, BENCHMARK_STACKS, GCP_STACKS, NOW, STACK_NAMES

from infra.launch import launch_id_of
from payload.identity import launch_prefix

WORLD = {"0.0.0.0/0", "::/0"}
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AWS_BENCHMARK_TYPES = {
    "gpubench:aws:Benchmark": 1,
    "time:index/offset:Offset": 1,
    "aws:iam/role:Role": 2,
    "aws:iam/rolePolicy:RolePolicy": 2,
    "aws:iam/instanceProfile:InstanceProfile": 1,
    "aws:ec2/securityGroup:SecurityGroup": 1,
    "aws:ec2/instance:Instance": 1,
    "aws:scheduler/schedule:Schedule": 1,
    "aws:s3/bucketObjectv2:BucketObjectv2": 1,  # the code bundle
}
GCP_BENCHMARK_TYPES = {
    "gpubench:gcp:Benchmark": 1,
    "time:index/offset:Offset": 1,
    "gcp:serviceaccount/account:Account": 1,
    "gcp:storage/bucketIAMMember:BucketIAMMember": 1,  # create-only on this launch's runs
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": 1,  # read-only on code/
    "gcp:storage/bucketObject:BucketObject": 1,  # the code bundle
    "gcp:compute/network:Network": 1,
    "gcp:compute/subnetwork:Subnetwork": 1,
    "gcp:compute/instance:Instance": 1,
}


def _counts(r) -> dict[str, int]:
    out: dict[str, int] = {}
    for res in r.resources:
        out[res.type] = out.get(res.type, 0) + 1
    return out


def _policy(res) -> dict:
    return json.loads(res.inputs["policy"])


def _cls_for(typ: str):
    """The SDK class of an engine type token, e.g. aws:ec2/instance:Instance -> pulumi_aws.ec2.Instance."""
    pkg, mod_path, name = typ.split(":")
    module = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "time": "pulumiverse_time"}.get(pkg)
    if module is None:
        return None
    sub = mod_path.split("/")[0]
    mod = importlib.import_module(module if sub == "index" else f"{module}.{sub}")
    return getattr(mod, name, None)


def _accepts(typ: str, arg: str) -> bool:
    cls = _cls_for(typ)
    return cls is not None and arg in inspect.signature(cls._internal_init).parameters


def test_matrix_is_rendered(rendered):
    assert len(STACK_NAMES) >= 60 and set(rendered) == set(STACK_NAMES)
    assert {"aws-results", "gcp-results", "aws-p3-8x", "aws-p3-8x-spot"} <= set(STACK_NAMES)


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_aws_benchmark_stack(rendered, catalog, stack):
    r = rendered[stack]
    offering, market = catalog.cloud_stacks()[stack]
    counts = _counts(r)
    for typ, n in AWS_BENCHMARK_TYPES.items():
        assert counts.get(typ, 0) == n, f"{stack}: {typ}"
    inst = r.one("aws:ec2/instance:Instance").inputs
    assert inst["instanceType"] == offering.instance_type
    assert inst["instanceInitiatedShutdownBehavior"] == "terminate"
    # IMDSv2 required, hop limit 2 so the container reaches IMDS through docker
    assert inst["metadataOptions"]["httpTokens"] == "required"
    assert inst["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert inst["rootBlockDevice"]["encrypted"] is True and inst["rootBlockDevice"]["deleteOnTermination"] is True
    if market == "spot":
        assert inst["instanceMarketOptions"] == {
            "marketType": "spot",
            "spotOptions": {"spotInstanceType": "one-time", "instanceInterruptionBehavior": "terminate"},
        }
    else:
        assert not inst.get("instanceMarketOptions")

    # no ingress at all by default; egress only
    sg = r.one("aws:ec2/securityGroup:SecurityGroup").inputs
    assert sg["ingress"] == []

    # least privilege: objects under runs/<stack>/ only; listing only that prefix;
    # the code bundles under code/ readable (GetObject only) and nothing wider
    access = _policy(next(x for x in r.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "results-access"))
    prefix = f"runs/{stack}/"
    bucket = "gpubench-results-aws-mock"  # the results stack's bucket under mocks
    code = [st for st in access["Statement"] if st.get("Sid") == "CodeBundlesRead"]
    assert code == [
        {
            "Sid": "CodeBundlesRead",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/code/*",
        }
    ]
    others = [st for st in access["Statement"] if st.get("Sid") != "CodeBundlesRead"]
    assert not any("code/" in json.dumps(st) for st in others)
    bundle = r.one("aws:s3/bucketObjectv2:BucketObjectv2").inputs
    assert bundle["bucket"] == bucket and bundle["key"] == f"code/{bundle['source']['sha256']}.tar.gz"
    assert f"CODE_URL=s3://{bucket}/{bundle['key']}" in r.user_data
    # per-run write scope: create-only (If-None-Match required) under this deployment's own runs,
    # runs/<stack>/<launch>-*, where the launch id is the deadline's and heads every run id it writes
    deadline = re.search(r"GPUBENCH_DEADLINE=(\S+)", r.user_data)[1]
    launch = re.search(r"GPUBENCH_LAUNCH_ID=(\S+)", r.user_data)[1]
    assert launch == launch_id_of(deadline) and launch_prefix(launch) == f"{launch}-"
    own = f"arn:aws:s3:::{bucket}/{prefix}{launch}-"
    by_sid = {st["Sid"]: st for st in others}
    assert set(by_sid) == {
        "OwnRunsCreateOnly",
        "OwnJournalCreateOnly",
        "CheckpointsRead",
        "OwnCheckpointsTag",
        "StackPrefixList",
    }
    assert by_sid["OwnRunsCreateOnly"] == {
        "Sid": "OwnRunsCreateOnly",
        "Effect": "Allow",
        "Action": "s3:PutObject",
        "Resource": f"{own}*",
        "Condition": {"Null": {"s3:if-none-match": "false"}},
    }
    # the results journal: create-only, this launch's entries (<stamp>-<launch>-...) of this stack only
    assert by_sid["OwnJournalCreateOnly"] == {
        "Sid": "OwnJournalCreateOnly",
        "Effect": "Allow",
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{bucket}/journal/{stack}/*-{launch}-*",
        "Condition": {"Null": {"s3:if-none-match": "false"}},
    }
    for st in others:
        assert "*" not in json.dumps(st["Action"]) and st["Effect"] == "Allow"
        if st["Sid"] == "OwnJournalCreateOnly":
            continue  # asserted whole above: the one statement outside runs/<stack>/
        if st["Action"] == "s3:ListBucket":
            assert st["Condition"] == {"StringLike": {"s3:prefix": [prefix + "*"]}}
            assert not st["Resource"].endswith("*")
        else:
            assert st["Action"] in ("s3:PutObject", "s3:PutObjectTagging", "s3:GetObject")
            assert st["Resource"].startswith(f"arn:aws:s3:::{bucket}/{prefix}")
    # nothing deletes: not a result, not a checkpoint (superseded ones expire by the lifecycle rule)
    assert not any("Delete" in json.dumps(st) for st in access["Statement"])
    # reading: checkpoints only (the completed-run lookup); tagging: this launch's checkpoints only,
    # so no run reads another's results or tags one for the checkpoint expiry rule
    granted = {
        a: [st["Resource"] for st in others if st["Action"] == a] for a in ("s3:GetObject", "s3:PutObjectTagging")
    }
    assert granted == {
        "s3:GetObject": [f"arn:aws:s3:::{bucket}/{prefix}*/checkpoints/*"],
        "s3:PutObjectTagging": [f"{own}*/checkpoints/*"],
    }
    assert not any("Multipart" in json.dumps(st["Action"]) for st in others)

    # the deadline: one-time at(), universal target terminateInstances on this instance only, self-deleting
    sched = r.one("aws:scheduler/schedule:Schedule").inputs
    assert sched["scheduleExpression"].startswith("at(") and sched["scheduleExpressionTimezone"] == "UTC"
    assert sched["actionAfterCompletion"] == "DELETE"
    assert sched["flexibleTimeWindow"] == {"mode": "OFF"}
    assert sched["target"]["arn"] == "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances"
    assert list(json.loads(sched["target"]["input"])) == ["InstanceIds"]
    roles = {x.name: x.inputs for x in r.of_type("aws:iam/role:Role")}
    trust = json.loads(roles["deadline-role"]["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"} and "aws:SourceAccount" in json.dumps(trust)
    term = _policy(next(x for x in r.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "deadline-terminate"))
    assert term["Statement"] == [
        {"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": term["Statement"][0]["Resource"]}
    ]
    assert ":instance/i-" in term["Statement"][0]["Resource"]
    ec2_trust = json.loads(roles["instance-role"]["assumeRolePolicy"])["Statement"][0]
    assert ec2_trust["Principal"] == {"Service": "ec2.amazonaws.com"}


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_aws_deadline_is_max_hours_after_creation(rendered, stack):
    r = rendered[stack]
    hours = r.one("time:index/offset:Offset").inputs["offsetMinutes"] / 60
    sched = r.one("aws:scheduler/schedule:Schedule").inputs["scheduleExpression"]
    import datetime as dt

    at = dt.datetime.fromisoformat(sched[3:-1]).replace(tzinfo=dt.timezone.utc)
    assert at - NOW == dt.timedelta(hours=hours)
    assert r.exports["deadline"] == at.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_gcp_benchmark_stack(rendered, catalog, stack):
    r = rendered[stack]
    offering, market = catalog.cloud_stacks()[stack]
    counts = _counts(r)
    for typ, n in GCP_BENCHMARK_TYPES.items():
        assert counts.get(typ, 0) == n, f"{stack}: {typ}"
    inst = r.one("gcp:compute/instance:Instance").inputs
    assert inst["machineType"] == offering.instance_type
    assert inst["zone"] in offering.zones
    sched = inst["scheduling"]
    assert sched["onHostMaintenance"] == "TERMINATE" and sched["automaticRestart"] is False
    assert sched["instanceTerminationAction"] == "DELETE"
    hours = r.one("time:index/offset:Offset").inputs["offsetMinutes"] / 60
    assert sched["maxRunDuration"]["seconds"] == hours * 3600
    if market == "spot":
        assert sched["provisioningModel"] == "SPOT" and sched["preemptible"] is True
    else:
        assert sched["provisioningModel"] == "STANDARD" and sched["preemptible"] is False
    if offering.accelerator_type:
        assert inst["guestAccelerators"] == [{"type": offering.accelerator_type, "count": offering.accelerator_count}]
    else:
        assert not inst.get("guestAccelerators")
    image = inst["bootDisk"]["initializeParams"]["image"]
    assert "/projects/deeplearning-platform-release/" in image and "ubuntu" in image
    assert inst["metadata"]["install-nvidia-driver"] == "True"
    assert inst["metadata"]["user-data"].startswith("#cloud-config\n")

    # custom network: not `default`, no firewall allowing ingress unless sshCidr is set
    assert r.one("gcp:compute/network:Network").inputs["autoCreateSubnetworks"] is False
    assert "default" not in json.dumps(inst["networkInterfaces"])
    assert r.of_type("gcp:compute/firewall:Firewall") == []

    # service account: create-only on this deployment's own runs (objectCreator under a condition
    # on the object name), read-only on code/, nothing else
    email = r.one("gcp:serviceaccount/account:Account").inputs["accountId"]
    assert inst["serviceAccount"]["email"].startswith(email + "@")
    member = f"serviceAccount:{inst['serviceAccount']['email']}"
    launch = re.search(r"GPUBENCH_LAUNCH_ID=(\S+)", r.user_data)[1]
    assert launch == launch_id_of(re.search(r"GPUBENCH_DEADLINE=(\S+)", r.user_data)[1])
    (runs,) = [g.inputs for g in r.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")]
    bucket = runs["bucket"]
    assert runs["role"] == "roles/storage.objectCreator" and runs["member"] == member
    assert runs["condition"]["expression"] == (
        f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/runs/{stack}/{launch}-")'
        f' || resource.name.startsWith("projects/_/buckets/{bucket}/objects/journal/{stack}/")'
    )
    assert r.of_type("gcp:storage/managedFolder:ManagedFolder") == []
    grants = [g.inputs for g in r.of_type("gcp:storage/managedFolderIamMember:ManagedFolderIamMember")]
    assert grants == [
        {"bucket": bucket, "member": member, "role": "roles/storage.objectViewer", "managedFolder": "code/"}
    ]
    bundle = r.one("gcp:storage/bucketObject:BucketObject").inputs
    assert bundle["name"] == f"code/{bundle['source']['sha256']}.tar.gz"
    assert f"CODE_URL=gs://{bundle['bucket']}/{bundle['name']}" in r.user_data


@pytest.mark.parametrize("stack", BENCHMARK_STACKS)
def test_tags_and_labels_everywhere(rendered, catalog, stack):
    r = rendered[stack]
    offering, market = catalog.cloud_stacks()[stack]
    aws = stack.startswith("aws-")
    field, sep = ("tags", ":") if aws else ("labels", "-")
    keys = {f"gpubench{sep}{k}" for k in ("stack", "offering", "market", "hourly-usd", "expires-at")}
    taggable = [x for x in r.resources if x.custom and _accepts(x.type, field)]
    assert taggable, stack
    for res in taggable:
        values = res.inputs.get(field) or {}
        assert keys <= set(values), f"{stack}: {res.type} {res.name} lacks {sorted(keys - set(values))}"
        assert values[f"gpubench{sep}stack"] == stack
        assert values[f"gpubench{sep}market"] == market
        if not aws:
            assert all(k.islower() and ":" not in k for k in values)
            assert all(set(v) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-") for v in values.values())
    if aws:
        inst = r.one("aws:ec2/instance:Instance").inputs
        assert keys <= set(inst["rootBlockDevice"]["tags"])
        assert inst["tags"]["gpubench:offering"] == offering.id
    else:
        inst = r.one("gcp:compute/instance:Instance").inputs
        assert keys <= set(inst["bootDisk"]["initializeParams"]["labels"])


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_no_ingress_open_to_the_world(rendered, stack):
    for res in rendered[stack].resources:
        if res.type == "aws:ec2/securityGroup:SecurityGroup":
            for rule in res.inputs.get("ingress", []):
                assert not WORLD & set(rule.get("cidrBlocks", []) + rule.get("ipv6CidrBlocks", []))
        if res.type == "gcp:compute/firewall:Firewall" and res.inputs.get("direction", "INGRESS") == "INGRESS":
            if res.inputs.get("allows"):
                assert not WORLD & set(res.inputs.get("sourceRanges", []))


def test_aws_results_stack(rendered):
    r = rendered["aws-results"]
    bucket = r.one("aws:s3/bucket:Bucket")
    assert bucket.protect is True and bucket.inputs["forceDestroy"] is False
    pab = r.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock").inputs
    assert all(
        pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    sse = r.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration").inputs
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] in ("AES256", "aws:kms")
    assert r.one("aws:s3/bucketVersioning:BucketVersioning").inputs["versioningConfiguration"]["status"] == "Enabled"
    rules = {
        x["id"]: x for x in r.one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration").inputs["rules"]
    }
    assert rules["expire-checkpoints"]["filter"]["tag"] == {"key": "gpubench:kind", "value": "checkpoint"}
    assert r.exports["resultsUrl"].startswith("s3://") and r.exports["bucketName"]


def test_gcp_results_stack(rendered):
    r = rendered["gcp-results"]
    bucket = r.one("gcp:storage/bucket:Bucket")
    assert bucket.protect is True
    b = bucket.inputs
    assert b["uniformBucketLevelAccess"] is True and b["publicAccessPrevention"] == "enforced"
    assert b["versioning"] == {"enabled": True} and b["lifecycleRules"] and b["forceDestroy"] is False
    assert r.exports["resultsUrl"].startswith("gs://")


def test_legacy_k80_gets_legacy_images(rendered):
    k80 = [n for n in BENCHMARK_STACKS if "-p2-" in n or "-k80-" in n]
    assert k80
    for name in k80:
        r = rendered[name]
        assert "tensorflow/tensorflow:2.11.0-gpu" in r.user_data  # the last TF with Kepler (sm_35) kernels
        assert "CODE_EXTRA=payload-legacy" in r.user_data
        if name.startswith("gcp-"):
            assert (
                "common-cu113" in r.one("gcp:compute/instance:Instance").inputs["bootDisk"]["initializeParams"]["image"]
            )


def test_rendering_twice_gives_identical_inputs(rendered, catalog):
    from infra import stacks as stackfiles
    from infra.render import render

    for name in ("aws-p3-8x-spot", "gcp-v100-1x", "aws-results"):
        again = render(name, stackfiles.load_config(name), catalog, now=NOW)
        assert [(x.type, x.name, x.inputs) for x in again.resources] == [
            (x.type, x.name, x.inputs) for x in rendered[name].resources
        ]


def test_ssh_cidr_opens_only_port_22_from_it(catalog):
    from infra import stacks as stackfiles
    from infra.render import render

    for name, typ in (
        ("aws-g4dn-1x", "aws:ec2/securityGroup:SecurityGroup"),
        ("gcp-t4-1x", "gcp:compute/firewall:Firewall"),
    ):
        raw = {**stackfiles.load_config(name), "gpubench:sshCidr": "203.0.113.7/32"}
        r = render(name, raw, catalog, now=NOW)
        if typ.startswith("aws"):
            (rule,) = r.one(typ).inputs["ingress"]
            assert (rule["fromPort"], rule["toPort"], rule["protocol"], rule["cidrBlocks"]) == (
                22,
                22,
                "tcp",
                ["203.0.113.7/32"],
            )
        else:
            fw = r.one(typ).inputs
            assert fw["sourceRanges"] == ["203.0.113.7/32"] and fw["allows"] == [{"protocol": "tcp", "ports": ["22"]}]


def test_explicit_results_bucket_scopes_policy_to_its_prefix(catalog):
    from infra import stacks as stackfiles
    from infra.render import render

    raw = {**stackfiles.load_config("aws-g5-1x"), "gpubench:results": "s3://team-bucket/bench"}
    r = render("aws-g5-1x", raw, catalog, now=NOW)
    access = json.loads(
        next(x for x in r.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "results-access").inputs["policy"]
    )
    resources = {st.get("Sid"): st["Resource"] for st in access["Statement"]}
    launch = re.search(r"GPUBENCH_LAUNCH_ID=(\S+)", r.user_data)[1]
    assert resources["OwnRunsCreateOnly"] == f"arn:aws:s3:::team-bucket/bench/runs/aws-g5-1x/{launch}-*"
    assert resources["OwnJournalCreateOnly"] == f"arn:aws:s3:::team-bucket/bench/journal/aws-g5-1x/*-{launch}-*"
    assert resources["StackPrefixList"] == "arn:aws:s3:::team-bucket"
    assert resources["CodeBundlesRead"] == "arn:aws:s3:::team-bucket/bench/code/*"
    bundle = r.one("aws:s3/bucketObjectv2:BucketObjectv2").inputs
    assert bundle["bucket"] == "team-bucket" and bundle["key"].startswith("bench/code/")
    assert "GPUBENCH_RESULTS=s3://team-bucket/bench" in r.user_data


def test_pulumi_entry_point_runs_the_program_by_path(tmp_path):
    """What the language host does for `main: infra/`: configure a monitor, set PULUMI_CONFIG, run the dir."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    script = r"""
import json, os, runpy, sys, yaml
from infra import render
from pulumi.runtime import mocks as pm, settings as ps
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
cfg = yaml.safe_load(open(sys.argv[1] + "/stacks/Pulumi.gcp-t4-1x-spot.yaml"))["config"]
os.environ["PULUMI_CONFIG"] = json.dumps({k: str(v) for k, v in cfg.items()})
m = render._Mocks("gcp-t4-1x-spot", render._PROCESS_NOW)
mon = render._Monitor(m)
pm.set_mocks(m, project="gpubench", stack="gcp-t4-1x-spot", preview=False, monitor=mon)
_sync_await(run_pulumi_func(lambda: runpy.run_path(sys.argv[1] + "/infra", run_name="__main__")))
print(json.dumps(sorted({t for t, *_ in mon.order})))
"""
    proc = subprocess.run([sys.executable, "-c", script, str(repo)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "gcp:compute/instance:Instance" in json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "stack,typ,key",
    [
        ("aws-g5-1x", "aws:s3/bucketObjectv2:BucketObjectv2", "key"),
        ("gcp-v100-1x", "gcp:storage/bucketObject:BucketObject", "name"),
    ],
)
def test_workload_stack_uploads_its_workload_bundle_under_code(catalog, stack, typ, key):
    from pathlib import Path

    from infra import stacks as stackfiles
    from infra.bundle import build_workload_bundle
    from infra.render import render

    spec = Path(__file__).resolve().parents[2] / "examples" / "pytorch-resnet" / "workload.yaml"
    raw = {k: v for k, v in stackfiles.load_config(stack).items() if k != "gpubench:suite"}
    r = render(stack, {**raw, "gpubench:workload": str(spec)}, catalog, now=NOW)
    objects = {o.name: o.inputs for o in r.of_type(typ)}
    sha = build_workload_bundle(spec).sha256
    assert set(objects) == {"code-bundle", "workload-bundle"}
    assert objects["workload-bundle"][key] == f"code/workload-{sha}.tar.gz"
    assert objects["workload-bundle"]["bucket"] == objects["code-bundle"]["bucket"]
    assert f"workload-{sha}.tar.gz" in r.user_data
