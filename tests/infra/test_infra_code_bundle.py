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
    (lib / "fetch-code.sh").write_text(
        files[f"{cloud_init.LIB_DIR}/fetch-code.sh"].replace(cloud_init.LIB_DIR, str(lib))
    )
    (lib / "run.sh").write_text(files[f"{cloud_init.LIB_DIR}/run.sh"].replace(cloud_init.LIB_DIR, str(lib)))
    (lib / "event.sh").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "code.env").write_text(files[cloud_init.CODE_ENV])
    (stubs / "docker").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/docker-args\n')
    (stubs / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "sleep").write_text("#!/bin/sh\nexit 0\n")  # fetch-code.sh's retries, without the wait
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
    assert (dest / "gpubench" / "payload" / "run.py").read_bytes() == Path("payload/run.py").read_bytes()
    assert not (tmp_path / "code.tar.gz").exists()  # the archive is removed once unpacked

    # run.sh starts the public image with the bundle mounted and installs the payload extra first
    image = public_image("cuda13").image  # g5: A10G, compute capability 8.6
    proc = subprocess.run(["bash", str(lib / "run.sh"), image, str(dest)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "docker-args").read_text().splitlines()
    assert args[args.index("--entrypoint") + 1 : args.index("--entrypoint") + 3] == ["/bin/bash", image]
    assert f"{dest}:{cloud_init.BUNDLE_MOUNT}" in args
    command = args[-1]
    assert f"{lib}/install-payload.sh:{cloud_init.INSTALL_MOUNT}:ro" in args
    # the payload extra, and the cuDNN 9 TensorFlow 2.21 loads but its image lacks (infra.images)
    install = f"bash {cloud_init.INSTALL_MOUNT} {cloud_init.BUNDLE_MOUNT}/gpubench package payload"
    assert command.startswith(f"{install} tensorflow[and-cuda]==2.21.0 || ")
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


SPEC = Path(__file__).resolve().parents[2] / "examples" / "pytorch-resnet" / "workload.yaml"


def _workload_config(stack: str, spec: Path = SPEC, **more) -> dict:
    raw = {k: v for k, v in stackfiles.load_config(stack).items() if k != "gpubench:suite"}
    return {**raw, "gpubench:workload": str(spec), **more}


@pytest.fixture
def rendered_workload(catalog, s3_bucket):
    from infra.render import render

    raw = _workload_config("aws-g5-1x", **{"gpubench:results": f"s3://{s3_bucket}"})
    return render("aws-g5-1x", raw, catalog, now=NOW)


def _unit_commands(files: dict[str, str]) -> list[list[str]]:
    """The unit's fetch (ExecStartPre) and run (ExecStart) commands, split as systemd does."""
    unit = files[f"/etc/systemd/system/{cloud_init.UNIT}"]
    return [
        line.split("=", 1)[1].split()
        for line in unit.splitlines()
        if line.startswith(("ExecStartPre=/", "ExecStart="))  # not `ExecStartPre=-.../docker pull`
    ]


def test_workload_bundle_is_uploaded_beside_the_code_bundle(rendered_workload, s3_bucket):
    from infra.bundle import build_workload_bundle

    objects = {o.name: o.inputs for o in rendered_workload.of_type("aws:s3/bucketObjectv2:BucketObjectv2")}
    assert set(objects) == {"code-bundle", "workload-bundle"}
    sha = build_workload_bundle(SPEC).sha256
    assert objects["workload-bundle"]["bucket"] == s3_bucket
    assert objects["workload-bundle"]["key"] == f"code/workload-{sha}.tar.gz"
    assert objects["workload-bundle"]["source"]["sha256"] == sha  # the asset is the bundle's bytes
    # the role still reads code/* only: the workload bundle is under it, nothing wider
    policy = next(x for x in rendered_workload.of_type("aws:iam/rolePolicy:RolePolicy") if x.name == "results-access")
    assert f"arn:aws:s3:::{s3_bucket}/code/*" in policy.inputs["policy"]


def test_host_fetches_both_bundles_and_runs_the_specs_image_with_the_rendered_commands(
    rendered_workload, s3_bucket, tmp_path
):
    from infra.bundle import build_workload_bundle
    from infra.config import CLOUD_WORKLOAD_SPEC
    from payload.workloads.spec import load_spec

    files = _files(rendered_workload.user_data)
    for env_path, bundle in (
        (cloud_init.CODE_ENV, build_bundle()),
        (cloud_init.WORKLOAD_ENV, build_workload_bundle(SPEC)),
    ):
        values = dict(line.split("=", 1) for line in files[env_path].splitlines())
        assert values["CODE_SHA256"] == bundle.sha256
        _upload(s3_bucket, values["CODE_URL"].removeprefix(f"s3://{s3_bucket}/"), bundle.data)

    lib, env = _host(tmp_path, files)
    (tmp_path / "etc" / "workload.env").write_text(files[cloud_init.WORKLOAD_ENV])
    host = {  # the guest's paths, moved into the test's directory
        cloud_init.LIB_DIR: str(lib),
        cloud_init.CODE_ENV: str(tmp_path / "etc" / "code.env"),
        cloud_init.WORKLOAD_ENV: str(tmp_path / "etc" / "workload.env"),
        cloud_init.CODE_DIR: str(tmp_path / "code"),
        cloud_init.WORKLOAD_DIR: str(tmp_path / "workload"),
    }
    commands = _unit_commands(files)
    assert [c[0] for c in commands] == [
        f"{cloud_init.LIB_DIR}/{s}" for s in ("prepare-host.sh", "fetch-code.sh", "fetch-code.sh", "run.sh")
    ]
    for argv in commands[1:]:  # preparing the host: tests/infra/test_infra_dry_boot.py
        proc = subprocess.run(
            ["bash", *(host.get(a, a).replace(cloud_init.LIB_DIR, str(lib)) for a in argv)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, (argv, proc.stderr)

    # the spec lands where the container's GPUBENCH_WORKLOAD points, and hashes like the local one
    payload_env = dict(line.split("=", 1) for line in files[cloud_init.ENV_FILE].splitlines())
    assert payload_env["GPUBENCH_WORKLOAD"] == CLOUD_WORKLOAD_SPEC == f"{cloud_init.WORKLOAD_MOUNT}/workload.yaml"
    args = (tmp_path / "docker-args").read_text().splitlines()
    assert f"{tmp_path / 'workload'}:{cloud_init.WORKLOAD_MOUNT}" in args
    on_host = tmp_path / "workload" / CLOUD_WORKLOAD_SPEC.removeprefix(cloud_init.WORKLOAD_MOUNT + "/")
    assert load_spec(on_host).sha256 == load_spec(SPEC).sha256
    assert (tmp_path / "workload" / "workdir" / "train.py").read_bytes() == (SPEC.parent / "train.py").read_bytes()
    # the job's own image, not TensorFlow; the payload bundle mounted and pip-installed in it
    image = load_spec(SPEC).image
    assert args[args.index("--entrypoint") + 1 : args.index("--entrypoint") + 3] == ["/bin/bash", image]
    assert f"{tmp_path / 'code'}:{cloud_init.BUNDLE_MOUNT}" in args
    assert f"bash {cloud_init.INSTALL_MOUNT} {cloud_init.BUNDLE_MOUNT}/gpubench package payload  ||" in args[-1]
    assert "jax" not in args[-1] and "torch" not in args[-1].split("||")[0]  # no backend packages: the image has them


@pytest.mark.parametrize("pip_works", [True, False])
def test_container_start_installs_the_payload_or_says_why_not(rendered_workload, tmp_path, pip_works):
    """The command run.sh gives the container, run by bash with a fake python3: an image whose pip
    refuses the payload (Python < 3.11) stops with a message naming the image, not a traceback."""
    files = _files(rendered_workload.user_data)
    lib, env = _host(tmp_path, files)
    (tmp_path / "code").mkdir()
    (tmp_path / "code.env").write_text(files[cloud_init.CODE_ENV])
    subprocess.run(["bash", str(lib / "run.sh"), "img:1", str(tmp_path / "code")], env=env, check=True)
    # the container sees install-payload.sh at INSTALL_MOUNT; here it runs from the checkout
    script = Path(cloud_init.__file__).with_name("install-payload.sh")
    command = (tmp_path / "docker-args").read_text().splitlines()[-1].replace(cloud_init.INSTALL_MOUNT, str(script))
    fake = tmp_path / "image-bin"
    fake.mkdir()
    (fake / "python3").write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path}/python-calls\n'
        + ("exit 0\n" if pip_works else 'case "$*" in *pip*) echo "requires a different Python" >&2; exit 1;; esac\n')
    )
    (fake / "python3").chmod(0o755)
    proc = subprocess.run(
        ["bash", "-c", command], env={"PATH": f"{fake}:/usr/bin:/bin"}, capture_output=True, text=True
    )
    calls = (tmp_path / "python-calls").read_text().splitlines()
    if pip_works:
        assert proc.returncode == 0 and calls[-1] == "-m payload run"
    else:
        assert proc.returncode == 1 and len(calls) == 1  # the payload never started
        assert "could not install the payload into img:1" in proc.stderr and "python3 >= 3.11" in proc.stderr


def test_a_workload_without_an_image_runs_in_the_tensorflow_image(catalog, s3_bucket, tmp_path):
    from infra.render import render

    spec = tmp_path / "job" / "workload.yaml"
    spec.parent.mkdir()
    spec.write_text("name: plain\nrun: python -c 'print(1)'\nmetrics: [json]\n")
    r = render("aws-g5-1x", _workload_config("aws-g5-1x", spec), catalog, now=NOW)
    unit = _files(r.user_data)[f"/etc/systemd/system/{cloud_init.UNIT}"]
    tf = public_image("cuda13").image
    assert f"run.sh {tf} {cloud_init.CODE_DIR} {cloud_init.WORKLOAD_DIR}" in unit
    assert f"docker pull {tf}" in unit
