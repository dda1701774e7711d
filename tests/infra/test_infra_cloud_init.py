"""User-data of every stack: valid for `cloud-init schema`, shell clean for shellcheck, and doing what it must."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess

import pytest
import yaml
from infra_matrix import BENCHMARK_STACKS, require_tool, shell_scripts

from infra import cloud_init
from infra.images import public_image

CONTRACT_VARS = {
    "GPUBENCH_BENCHMARK",
    "GPUBENCH_RESULTS",
    "GPUBENCH_STACK",
    "GPUBENCH_OFFERING",
    "GPUBENCH_MARKET",
    "GPUBENCH_PRECISION",
    "GPUBENCH_EXPECT_GPU",
    "GPUBENCH_HOST_EVENTS",
    "GPUBENCH_DEADLINE",
}

# One interpreter validates every document with cloud-init's own schema code (the CLI
# costs ~1 s per call); one CLI call below proves the command itself accepts ours.
VALIDATE_ALL = r"""
import json, sys, yaml
from cloudinit.config.schema import get_schema, validate_cloudconfig_schema
schema = get_schema()
bad = {}
for path in sys.argv[1:]:
    try:
        validate_cloudconfig_schema(yaml.safe_load(open(path)), schema, strict=True)
    except Exception as exc:
        bad[path] = str(exc)
print(json.dumps(bad))
"""


@pytest.fixture(scope="module")
def user_data_files(rendered, tmp_path_factory):
    out = tmp_path_factory.mktemp("user-data")
    files = {}
    for name in BENCHMARK_STACKS:
        text = rendered[name].user_data
        assert text and text.startswith("#cloud-config\n"), name
        path = out / f"{name}.yaml"
        path.write_text(text)
        files[name] = path
    return files


def test_cloud_init_schema_cli_accepts_user_data(user_data_files):
    exe = require_tool("cloud-init")
    for name in ("aws-p3-8x-spot", "gcp-v100-1x"):
        proc = subprocess.run(
            [exe, "schema", "--config-file", str(user_data_files[name])], capture_output=True, text=True
        )
        assert proc.returncode == 0 and "Valid" in proc.stdout, proc.stdout + proc.stderr


def test_every_stack_user_data_is_valid_cloud_config(user_data_files):
    exe = require_tool("cloud-init")
    python = open(exe).readline().removeprefix("#!").strip().split()[0]
    proc = subprocess.run(
        [python, "-c", VALIDATE_ALL, *map(str, user_data_files.values())], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {}


def test_every_stack_shell_is_shellcheck_clean(rendered, tmp_path):
    exe = require_tool("shellcheck")
    scripts = {}
    for name in BENCHMARK_STACKS:
        for path, text in shell_scripts(rendered[name].user_data).items():
            scripts[hashlib.sha1(text.encode()).hexdigest()] = (f"{name}:{path}", text)
    assert len(scripts) >= 5
    files = []
    for digest, (_label, text) in scripts.items():
        f = tmp_path / f"{digest}.sh"
        f.write_text(text)
        files.append(str(f))
    proc = subprocess.run([exe, "--severity=style", *files], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("stack", BENCHMARK_STACKS)
def test_user_data_contract(rendered, catalog, stack):
    doc = yaml.safe_load(rendered[stack].user_data)
    files = {f["path"]: f for f in doc["write_files"]}
    env_file = files[cloud_init.ENV_FILE]
    assert env_file["permissions"] == "0600"
    env = dict(line.split("=", 1) for line in env_file["content"].splitlines())
    assert CONTRACT_VARS <= set(env), sorted(CONTRACT_VARS - set(env))
    offering, market = catalog.cloud_stacks()[stack]
    assert (env["GPUBENCH_STACK"], env["GPUBENCH_OFFERING"], env["GPUBENCH_MARKET"]) == (stack, offering.id, market)
    assert env["GPUBENCH_HOST_EVENTS"] == cloud_init.HOST_EVENTS
    assert env["GPUBENCH_EXPECT_GPU"] == "1"
    assert not any(s in env_file["content"].lower() for s in ("secret", "password", "aws_access_key", "private_key"))
    unit = files[f"/etc/systemd/system/{cloud_init.UNIT}"]["content"]
    assert "ExecStopPost=" in unit and f"OnFailure={cloud_init.POWEROFF_UNIT}" in unit
    run = files[f"{cloud_init.LIB_DIR}/run.sh"]["content"]
    assert "--gpus all" in run and "--network host" in run and f"--env-file {cloud_init.ENV_FILE}" in run
    assert f"{cloud_init.STATE_DIR}:{cloud_init.STATE_DIR}" in run
    # no payloadImage: the official TensorFlow image of the GPU's generation runs the fetched bundle
    assert f"run.sh {public_image(offering.image_generation).image} {cloud_init.CODE_DIR}" in unit
    assert f"ExecStartPre={cloud_init.LIB_DIR}/fetch-code.sh {cloud_init.CODE_ENV} {cloud_init.CODE_DIR}" in unit
    code_env = dict(line.split("=", 1) for line in files[cloud_init.CODE_ENV]["content"].splitlines())
    assert re.fullmatch(r"(s3|gs)://[^/]+/code/[0-9a-f]{64}\.tar\.gz", code_env["CODE_URL"])
    assert code_env["CODE_URL"].endswith(code_env["CODE_SHA256"] + ".tar.gz")
    for event in ("instance_launch", "boot_done", "container_start", "container_exit", "shutdown_requested"):
        assert event in rendered[stack].user_data, event
    assert "shutdown -h" in files[f"{cloud_init.LIB_DIR}/deadline.sh"]["content"]
    assert ["systemctl", "enable", "--now", "--no-block", cloud_init.UNIT] in doc["runcmd"]


def test_env_file_rejects_what_docker_cannot_carry():
    with pytest.raises(ValueError, match="newline"):
        cloud_init.env_file({"GPUBENCH_STACK": "a\nb"})
    with pytest.raises(ValueError, match="GPUBENCH_"):
        cloud_init.env_file({"SECRET_TOKEN": "x"})
    with pytest.raises(ValueError, match="GPUBENCH_DEADLINE"):
        cloud_init.render_user_data(cloud_init.PayloadLaunch("img:tag", {"GPUBENCH_STACK": "s"}))


def test_run_sh_waits_for_the_nvidia_driver_before_starting_the_container(tmp_path):
    """GCP DLVM images install the driver at first boot beside cloud-init: the container must not
    start (and fail `--gpus all`, powering the VM off without a result) before nvidia-smi works."""
    text = cloud_init.guest_file("run.sh").replace(cloud_init.LIB_DIR, str(tmp_path))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fakes = {
        "event.sh": "#!/bin/sh\nexit 0\n",
        "bin/nvidia-smi": f"#!/bin/sh\nn=$(cat {tmp_path}/calls 2>/dev/null || echo 0)\nn=$((n + 1))\n"
        f"echo $n > {tmp_path}/calls\n[ $n -ge 3 ]\n",
        "bin/sleep": "#!/bin/sh\nexit 0\n",
        "bin/docker": f'#!/bin/sh\ncat {tmp_path}/calls > {tmp_path}/calls-at-docker\necho "$@" > {tmp_path}/docker-args\n',
    }
    for rel, body in {**fakes, "run.sh": text}.items():
        (tmp_path / rel).write_text(body)
        (tmp_path / rel).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    proc = subprocess.run(
        ["bash", str(tmp_path / "run.sh"), "img:tag"], env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls-at-docker").read_text().strip() == "3"  # docker ran only once nvidia-smi worked
    assert "--gpus all" in (tmp_path / "docker-args").read_text()


@pytest.mark.parametrize("stack", ["aws-g5-1x", "gcp-v100-1x"])
def test_workload_user_data_is_valid_and_shellcheck_clean(catalog, stack, tmp_path):
    """A workload stack's user-data (second fetch, the spec's image, the workload mount)."""
    from pathlib import Path

    from infra_matrix import NOW

    from infra import stacks as stackfiles
    from infra.render import render

    spec = Path(__file__).resolve().parents[2] / "examples" / "pytorch-resnet" / "workload.yaml"
    raw = {k: v for k, v in stackfiles.load_config(stack).items() if k != "gpubench:suite"}
    text = render(stack, {**raw, "gpubench:workload": str(spec)}, catalog, now=NOW).user_data
    files = {f["path"]: f["content"] for f in yaml.safe_load(text)["write_files"]}
    unit = files[f"/etc/systemd/system/{cloud_init.UNIT}"]
    assert f"fetch-code.sh {cloud_init.WORKLOAD_ENV} {cloud_init.WORKLOAD_DIR}" in unit
    assert (
        f"run.sh pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime {cloud_init.CODE_DIR} {cloud_init.WORKLOAD_DIR}" in unit
    )
    assert re.search(r"CODE_URL=(s3|gs)://[^/]+/code/workload-[0-9a-f]{64}\.tar\.gz", files[cloud_init.WORKLOAD_ENV])

    path = tmp_path / "user-data.yaml"
    path.write_text(text)
    proc = subprocess.run(
        [require_tool("cloud-init"), "schema", "--config-file", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "Valid" in proc.stdout, proc.stdout + proc.stderr
    scripts = []
    for i, body in enumerate(shell_scripts(text).values()):
        (tmp_path / f"{i}.sh").write_text(body)
        scripts.append(str(tmp_path / f"{i}.sh"))
    proc = subprocess.run([require_tool("shellcheck"), "--severity=style", *scripts], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_builtin_stacks_fetch_no_workload(rendered):
    for name in BENCHMARK_STACKS:
        assert cloud_init.WORKLOAD_ENV not in rendered[name].user_data, name


def test_aws_user_data_travels_gzip_compressed_and_reads_back_the_same():
    """EC2 takes 16 KB of raw user data; the rendered scripts are past that, gzip brings them far under it."""
    text = cloud_init.render_user_data(
        cloud_init.PayloadLaunch("tensorflow/tensorflow:2.21.0-gpu", {"GPUBENCH_DEADLINE": "2030-01-01T00:00:00Z"})
    )
    packed = cloud_init.compressed(text)
    assert packed == cloud_init.compressed(text)  # no timestamp inside: a preview stays stable
    assert cloud_init.inflated(packed) == text and cloud_init.inflated(text) == text
    assert len(base64.b64decode(packed)) < min(16384, len(text.encode()))
