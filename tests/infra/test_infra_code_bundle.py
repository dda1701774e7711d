"""The code bundle path of a cloud stack, run on a simulated host against moto S3.

The user-data is rendered under Pulumi mocks; the test uploads the bundle where
the stack's BucketObjectv2 would, then runs the rendered fetch-code.sh and
run.sh exactly as written (only run.sh's library directory is moved into the
test's temporary directory) with the AWS CLI on PATH and `docker` stubbed.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import boto3
import pytest
import yaml
from infra_matrix import NOW
from servers import find_tool

from infra import cloud_init
from infra import stacks as stackfiles
from infra.bundle import build_bundle
from infra.images import public_image


@pytest.fixture
def rendered_with_bucket(catalog, s3_bucket):
    from infra.render import render

    raw = {**stackfiles.load_config("aws-g5-1x"), "gpubench:results": f"s3://{s3_bucket}"}
    return render("aws-g5-1x", raw, catalog, now=NOW)


def _files(user_data: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}


def _host(tmp_path: Path, files: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """Write the rendered scripts to a fake host; PATH: stubs, then the AWS CLI, then the system."""
    lib = tmp_path / "lib"
    stubs = tmp_path / "stubs"
    lib.mkdir()
    stubs.mkdir()
    (lib / "fetch-code.sh").write_text(files[f"{cloud_init.LIB_DIR}/fetch-code.sh"])
    (lib / "run.sh").write_text(files[f"{cloud_init.LIB_DIR}/run.sh"].replace(cloud_init.LIB_DIR, str(lib)))
    (lib / "event.sh").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "code.env").write_text(files[cloud_init.CODE_ENV])
    (stubs / "docker").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/docker-args\n')
    (stubs / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    for p in [*lib.iterdir(), *stubs.iterdir()]:
        p.chmod(0o755)
    aws = Path(find_tool("aws", "pip install awscli")).parent
    env = {
        "PATH": f"{stubs}:{aws}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        **{k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")},
    }
    return lib, env


def _upload(bucket: str, key: str, data: bytes) -> None:
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=bucket, Key=key, Body=data)


def test_host_fetches_checks_and_runs_the_bundle_with_the_rendered_commands(rendered_with_bucket, s3_bucket, tmp_path):
    files = _files(rendered_with_bucket.user_data)
    code_env = dict(line.split("=", 1) for line in files[cloud_init.CODE_ENV].splitlines())
    bundle = build_bundle()
    assert code_env["CODE_SHA256"] == bundle.sha256
    key = code_env["CODE_URL"].removeprefix(f"s3://{s3_bucket}/")
    assert key == f"code/{bundle.sha256}.tar.gz"
    _upload(s3_bucket, key, bundle.data)  # what the stack's BucketObjectv2 uploads

    lib, env = _host(tmp_path, files)
    dest = tmp_path / "code"
    proc = subprocess.run(
        ["bash", str(lib / "fetch-code.sh"), str(tmp_path / "etc" / "code.env"), str(dest)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "docker-args").exists()  # the host's AWS CLI fetched it, no container needed
    assert (dest / "gpubench" / "pyproject.toml").is_file()
    assert (dest / "gpubench" / "payload" / "runner.py").read_bytes() == Path("payload/runner.py").read_bytes()
    assert not (tmp_path / "code.tar.gz").exists()  # the archive is removed once unpacked

    # run.sh starts the public image with the bundle mounted and installs the payload extra first
    image = public_image("cuda13").image  # g5: A10G, compute capability 8.6
    proc = subprocess.run(["bash", str(lib / "run.sh"), image, str(dest)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "docker-args").read_text().splitlines()
    assert args[args.index("--entrypoint") + 1 : args.index("--entrypoint") + 3] == ["/bin/bash", image]
    assert f"{dest}:{cloud_init.BUNDLE_MOUNT}" in args
    command = args[-1]
    assert f"pip install --no-cache-dir --quiet  '{cloud_init.BUNDLE_MOUNT}/gpubench[payload]'" in command
    assert command.endswith("; exit 1; }; exec python3 -m payload run")
    assert f"{cloud_init.ENV_FILE}" in args and "--gpus" in args


def test_a_bundle_that_does_not_match_its_hash_is_not_unpacked(rendered_with_bucket, s3_bucket, tmp_path):
    files = _files(rendered_with_bucket.user_data)
    code_env = dict(line.split("=", 1) for line in files[cloud_init.CODE_ENV].splitlines())
    key = code_env["CODE_URL"].removeprefix(f"s3://{s3_bucket}/")
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(__file__, arcname="gpubench/payload/__main__.py")
    _upload(s3_bucket, key, evil.read_bytes())

    lib, env = _host(tmp_path, files)
    proc = subprocess.run(
        ["bash", str(lib / "fetch-code.sh"), str(tmp_path / "etc" / "code.env"), str(tmp_path / "code")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert f"does not have sha256 {code_env['CODE_SHA256']}" in proc.stderr
    assert not (tmp_path / "code").exists()


def test_missing_bundle_fails_the_fetch(rendered_with_bucket, tmp_path):
    lib, env = _host(tmp_path, _files(rendered_with_bucket.user_data))
    proc = subprocess.run(
        ["bash", str(lib / "fetch-code.sh"), str(tmp_path / "etc" / "code.env"), str(tmp_path / "code")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and not (tmp_path / "code").exists()


def test_prebuilt_payload_image_needs_no_bundle(catalog):
    from infra.render import render

    raw = {**stackfiles.load_config("aws-g5-1x"), "gpubench:payloadImage": "registry.example/gpubench:{generation}"}
    r = render("aws-g5-1x", raw, catalog, now=NOW)
    assert "registry.example/gpubench:cuda13" in r.user_data
    assert cloud_init.CODE_ENV not in r.user_data and not r.of_type("aws:s3/bucketObjectv2:BucketObjectv2")
    assert (
        "code/"
        not in next(x for x in r.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "results-access").inputs[
            "policy"
        ]
    )
