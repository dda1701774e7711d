"""The image compatibility table (infra/images.py) against every stack in stacks/: the container
image each renders, its host image and GPU, and what the boot installs beside the payload."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from infra_matrix import BENCHMARK_STACKS, REFUSED_STACKS

from infra import cloud_init, images
from infra.aws.component import IMAGES as AWS_IMAGES
from infra.gcp.component import IMAGES as GCP_IMAGES

REPO = Path(__file__).resolve().parents[2]


def _unit_and_code_env(user_data: str) -> tuple[str, dict[str, str]]:
    files = {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}
    code_env = dict(line.split("=", 1) for line in files[cloud_init.CODE_ENV].splitlines())
    return files[f"/etc/systemd/system/{cloud_init.UNIT}"], code_env


@pytest.mark.parametrize("stack", BENCHMARK_STACKS)
def test_every_stack_renders_an_image_its_host_and_gpu_can_run(rendered, catalog, stack):
    offering, _ = catalog.cloud_stacks()[stack]
    unit, code_env = _unit_and_code_env(rendered[stack].user_data)
    start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    image = start.split()[1]
    cc = offering.gpu.compute_capability if offering.gpu else None
    assert images.problems(offering.provider, offering.image_generation, cc, image) == []
    # what the table says the image lacks is what the boot installs with the payload
    assert code_env["CODE_BACKEND_PACKAGES"] == images.FRAMEWORKS[image].boot_packages


def test_the_host_rows_are_the_images_the_clouds_boot():
    for (cloud, generation), host in images.HOSTS.items():
        chosen = {
            "aws": lambda g: AWS_IMAGES[g].name_pattern,
            "gcp": lambda g: GCP_IMAGES[g].family,
        }
        assert chosen[cloud](generation).startswith(host.image), (cloud, generation)
        assert host.source.startswith("https://")
    for image, row in images.FRAMEWORKS.items():
        assert row.source and (row.boot_packages == "") == (row.boot_gives is None), image


def test_tensorflow_2_21_without_cudnn_9_is_refused():
    """What the official image alone gives (cuDNN 8.9) is not what TensorFlow 2.18+ loads."""
    image = "tensorflow/tensorflow:2.21.0-gpu"
    bare = dataclasses.replace(images.FRAMEWORKS[image], boot_packages="", boot_gives=None)
    original = images.FRAMEWORKS[image]
    try:
        images.FRAMEWORKS[image] = bare
        found = images.problems("aws", "cuda13", "7.5", image)
    finally:
        images.FRAMEWORKS[image] = original
    assert any("loads cuDNN 9.3, the image gives 8.9" in p for p in found), found


def test_drivers_that_dropped_or_never_had_the_gpu_are_refused():
    k80_on_new_driver = dataclasses.replace(images.HOSTS[("gcp", "cuda11-legacy")], driver_branch=535)
    v100_on_open_modules = dataclasses.replace(images.HOSTS[("aws", "cuda12")], open_modules=True)
    cuda12_on_470 = dataclasses.replace(images.HOSTS[("gcp", "cuda13")], driver_branch=470)
    cases = [
        (("gcp", "cuda11-legacy"), k80_on_new_driver, "3.7", "tensorflow/tensorflow:2.11.0-gpu", "dropped Kepler"),
        (("aws", "cuda12"), v100_on_open_modules, "7.0", "tensorflow/tensorflow:2.16.1-gpu", "open kernel modules"),
        (("gcp", "cuda13"), cuda12_on_470, "8.9", "tensorflow/tensorflow:2.21.0-gpu", "470 < 525"),
    ]
    for key, host, cc, image, expected in cases:
        original = images.HOSTS[key]
        try:
            images.HOSTS[key] = host
            found = images.problems(*key, cc, image)
        finally:
            images.HOSTS[key] = original
        assert any(expected in p for p in found), (expected, found)


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "PIP_USER"])
def test_the_legacy_image_installs_the_requirements_without_building_the_project(tmp_path, as_user):
    """Python 3.8 cannot build the project (setuptools>=77 needs 3.9): install-payload.sh installs
    the payload-legacy extra's requirements and puts the source on sys.path instead; run as a user
    (an SSH host's docker runtime, PIP_USER=1), on that user's own sys.path."""
    bin_dir, site, user_site = tmp_path / "bin", tmp_path / "site", tmp_path / "home" / "site"
    bin_dir.mkdir()
    site.mkdir()
    # python3 stand-in: pip calls are recorded; sysconfig and site answer the stand-in site-packages
    (bin_dir / "python3").write_text(
        "#!/bin/bash\n"
        f'if [ "$1 $2" = "-m pip" ]; then echo "$@" > {tmp_path}/pip-args;'
        f' for a in "$@"; do if [ -f "$a" ]; then cp "$a" {tmp_path}/reqs; fi; done; exit 0; fi\n'
        f'if [ "$1" = -c ] && [[ "$2" == *getusersitepackages* ]]; then echo {user_site}; exit 0; fi\n'
        f'if [ "$1" = -c ]; then echo {site}; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    (bin_dir / "python3").chmod(0o755)
    proc = subprocess.run(
        ["bash", str(REPO / "infra" / "install-payload.sh"), str(REPO), "requirements", "payload-legacy"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", **({"PIP_USER": "1"} if as_user else {})},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    pip_args = (tmp_path / "pip-args").read_text()
    assert "-r" in pip_args and str(REPO) + "[" not in pip_args  # nothing is built
    reqs = (tmp_path / "reqs").read_text().splitlines()
    assert "pydantic>=2.6,<2.11" in reqs and len(reqs) >= 4
    assert ((user_site if as_user else site) / "gpubench-source.pth").read_text().strip() == str(REPO)
    assert not ((site if as_user else user_site) / "gpubench-source.pth").exists()
    # the K80 stacks render this mode, and payload/Dockerfile.legacy runs the same script
    dockerfile = (REPO / "payload" / "Dockerfile.legacy").read_text()
    assert "infra/install-payload.sh /opt/gpubench-src requirements payload-legacy" in dockerfile
    assert "--ignore-requires-python" not in dockerfile


def test_k80_stacks_install_requirements(rendered):
    _, code_env = _unit_and_code_env(rendered["gcp-k80-1x"].user_data)
    assert (code_env["CODE_INSTALL"], code_env["CODE_EXTRA"]) == ("requirements", "payload-legacy")


def test_blackwell_needs_a_cuda_12_8_build_and_a_570_driver():
    """No shipped TensorFlow image has native code for compute capability 10.0 (B200)."""
    found = images.problems("aws", "cuda13", "10.0", "tensorflow/tensorflow:2.21.0-gpu")
    assert any("needs CUDA 12.8+" in p and "Blackwell" in p for p in found), found
    # Hopper and Ada on the same image stay supported
    assert images.problems("aws", "cuda13", "9.0", "tensorflow/tensorflow:2.21.0-gpu") == []
    assert images.problems("gcp", "cuda13", "8.9", "tensorflow/tensorflow:2.21.0-gpu") == []
    old_driver = dataclasses.replace(images.HOSTS[("gcp", "cuda13")], driver_branch=550)
    original = images.HOSTS[("gcp", "cuda13")]
    try:
        images.HOSTS[("gcp", "cuda13")] = old_driver
        found = images.problems("gcp", "cuda13", "10.0", "tensorflow/tensorflow:2.21.0-gpu")
    finally:
        images.HOSTS[("gcp", "cuda13")] = original
    assert any("predates Blackwell (first: 570)" in p for p in found), found


def test_the_b200_stacks_are_refused_before_anything_renders(catalog):
    """Exactly the B200 stacks are refused, each with an error naming the GPU, the image and the fix."""
    from infra.config import ConfigError
    from infra.preview import preview_stack

    assert REFUSED_STACKS, "the B200 stacks are in stacks/"
    assert {catalog.cloud_stacks()[n][0].gpu_model for n in REFUSED_STACKS} == {"B200"}
    for name in REFUSED_STACKS:
        with pytest.raises(ConfigError) as err:
            preview_stack(name, catalog)
        text = str(err.value)
        assert "no supported image for B200" in text and "CUDA 12.8" in text and "payloadImage" in text, text


def test_a_workload_image_is_checked_by_the_cuda_its_row_or_tag_names():
    assert images.image_cuda("pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime") == "12.8"
    assert images.image_cuda("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime") == "12.4"
    assert images.image_cuda("tensorflow/tensorflow:2.17.0-gpu") == "12.3"  # its row: what it ships
    assert images.image_cuda("registry.example/team/job:latest") is None  # unknown: its maker chose
    assert images.image_cuda("pytorch/pytorch") is None


def _b200_stack_with(tmp_path, monkeypatch, name: str, workload: str) -> Path:
    monkeypatch.chdir(REPO)  # workload paths are relative to the project root
    text = (REPO / "stacks" / f"Pulumi.{name}.yaml").read_text(encoding="utf-8")
    (tmp_path / f"Pulumi.{name}.yaml").write_text(f"{text}  gpubench:workload: {workload}\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("name", REFUSED_STACKS)
def test_a_b200_stack_previews_with_a_cuda_12_8_workload_image_and_is_refused_with_an_older_one(
    catalog, tmp_path, monkeypatch, name
):
    from infra.config import ConfigError
    from infra.preview import preview_stack

    stacks = _b200_stack_with(tmp_path, monkeypatch, name, "examples/pytorch-resnet/workload.yaml")
    summary = preview_stack(name, catalog, stacks_dir=stacks)
    assert summary["payload_image"] == "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime"
    # a workload whose own image is a CUDA 12.3 TensorFlow build: refused, naming the image and the fix
    stacks = _b200_stack_with(tmp_path, monkeypatch, name, "examples/keras-fit/workload.yaml")
    with pytest.raises(ConfigError) as err:
        preview_stack(name, catalog, stacks_dir=stacks)
    text = str(err.value)
    assert "tensorflow/tensorflow:2.17.0-gpu: the workload's image runs on CUDA 12.3" in text, text
    assert "built with CUDA 12.8+" in text and "payloadImage" in text, text
