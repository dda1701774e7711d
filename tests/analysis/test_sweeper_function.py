"""The sweeper function's handlers, run from the very files the Pulumi program
packages (infra/sweeper_function.py `package`), in a separate interpreter that
sees only those files: Lambda's `handler` against moto EC2, the Cloud Run
function's `main.sweep` against the fake Compute API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

from test_sweep_aws import MOTO_AMI, aws_env  # noqa: F401  (aws_env: a fixture)
from test_sweep_aws import aws_tag_deadline as aws_deadline
from test_sweep_gcp import PROJECT, compute  # noqa: F401  (fixture)
from test_sweep_gcp import gcp_label_deadline as gcp_deadline

from infra import sweeper_function

RUN_LAMBDA = (
    "import json, infra; from infra.sweeper_function import handler; "
    "print(json.dumps({'from': infra.__file__, 'result': handler({}, None)}))"
)
RUN_CLOUD_RUN = (
    "import json, infra, main; body, status, headers = main.sweep(None); "
    "print(json.dumps({'from': infra.__file__, 'status': status, 'headers': headers, 'result': json.loads(body)}))"
)


def run_packaged(tmp_path, provider, code, env):
    for name, body in sweeper_function.package(provider).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",) and not k.startswith("GPUBENCH_")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert doc["from"] == str(tmp_path / "infra" / "__init__.py")  # the packaged copy, not the checkout
    return doc


def test_lambda_handler_sweeps_moto_ec2(aws_env, tmp_path):  # noqa: F811
    region = "ca-central-1"
    ec2 = aws_env.client("ec2", region_name=region)
    ami = ec2.describe_images(ImageIds=[MOTO_AMI])["Images"][0]["ImageId"]
    now = datetime.now(timezone.utc)

    def launch(tags):
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        return ec2.run_instances(ImageId=ami, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"][0][
            "InstanceId"
        ]

    expired = launch(
        {
            "gpubench:project": "gpubench",
            "gpubench:stack": "aws-p3-2x",
            "gpubench:expires-at": aws_deadline(now - timedelta(minutes=5)),
        }
    )
    fresh = launch(
        {
            "gpubench:project": "gpubench",
            "gpubench:stack": "aws-p3-2x",
            "gpubench:expires-at": aws_deadline(now + timedelta(hours=5)),
        }
    )
    other = launch({"Name": "prod"})
    doc = run_packaged(
        tmp_path,
        "aws",
        RUN_LAMBDA,
        {
            "GPUBENCH_SWEEP_PROVIDER": "aws",
            "GPUBENCH_SWEEP_REGIONS": region,
            "AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"],
        },
    )
    result = doc["result"]
    acted = {a["id"]: a["action"] for a in result["actions"]}
    assert result["ok"] is True and result["provider"] == "aws" and result["regions"] == [region]
    assert acted[expired] == "terminated" and acted[fresh] == "kept" and other not in acted
    states = {
        i["InstanceId"]: i["State"]["Name"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }
    assert states[expired] == "terminated" and states[fresh] == "running" and states[other] == "running"


def test_cloud_run_entry_sweeps_the_fake_compute_api(compute, tmp_path):  # noqa: F811
    now = datetime.now(timezone.utc)
    compute.add(
        "us-central1-a",
        "old",
        {
            "gpubench-project": "gpubench",
            "gpubench-stack": "gcp-t4-1x",
            "gpubench-expires-at": gcp_deadline(now - timedelta(minutes=5)),
        },
    )
    compute.add(
        "us-central1-a",
        "new",
        {
            "gpubench-project": "gpubench",
            "gpubench-stack": "gcp-t4-1x",
            "gpubench-expires-at": gcp_deadline(now + timedelta(hours=5)),
        },
    )
    compute.add("us-central1-b", "theirs", {"team": "prod"})
    env = {
        "GPUBENCH_SWEEP_PROVIDER": "gcp",
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE": compute.root,
    }
    doc = run_packaged(tmp_path, "gcp", RUN_CLOUD_RUN, env)
    assert doc["status"] == 200 and doc["headers"] == {"Content-Type": "application/json"}
    assert {a["id"]: a["action"] for a in doc["result"]["actions"]} == {"old": "terminated", "new": "kept"}
    assert compute.deleted == [("us-central1-a", "old")]

    # a failed action makes the scheduler see a failure (HTTP 500)
    compute.add(
        "us-central1-a",
        "stuck",
        {
            "gpubench-project": "gpubench",
            "gpubench-stack": "gcp-t4-1x",
            "gpubench-expires-at": gcp_deadline(now - timedelta(minutes=1)),
        },
    )
    compute.fail_delete.add("stuck")
    doc = run_packaged(tmp_path, "gcp", RUN_CLOUD_RUN, env)
    assert doc["status"] == 500 and doc["result"]["ok"] is False


def test_a_missing_provider_is_a_clear_error(monkeypatch):
    import pytest

    monkeypatch.delenv("GPUBENCH_SWEEP_PROVIDER", raising=False)
    with pytest.raises(ValueError, match="GPUBENCH_SWEEP_PROVIDER=''; set it to one of aws, gcp"):
        sweeper_function.run_sweep()
    body, status, _ = sweeper_function.http(None)
    assert status == 500 and "GPUBENCH_SWEEP_PROVIDER" in json.loads(body)["error"]
