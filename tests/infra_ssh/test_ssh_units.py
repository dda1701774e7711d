"""Pieces that need no SSH server: runtime plans, the wrapper script, the source bundle, run status."""

from __future__ import annotations

import io
import subprocess
import tarfile

from infra.bundle import build_bundle
from infra.catalog import load_catalog
from infra.ssh import remote
from infra.ssh.config import parse_ssh_config
from infra.ssh.layout import RunLayout, new_run_id
from infra.ssh.remote import RemoteRun
from infra.ssh.runtimes import plan_for, shell_words

RUN = RunLayout("/home/u/.gpubench", "ssh-box", "20300101T000000Z-abcdef")


def cfg(**keys):
    raw = {
        "gpubench:offering": "softlayer/bm-4xk80",
        "gpubench:host": "h",
        "gpubench:results": "gs://b",
        "gpubench:benchmark": ["resnet50"],
        "gpubench:steps": 50,
        "gpubench:gpus": 2,
        **{f"gpubench:{k}": v for k, v in keys.items()},
    }
    return parse_ssh_config(raw, "ssh-box", load_catalog())


def test_docker_plan_uses_the_cloud_image_for_the_gpu_generation_and_a_local_bucket():
    plan = plan_for(cfg(), RUN, has_gpu=True)
    words = shell_words(plan.payload)
    assert plan.image == "tensorflow/tensorflow:2.11.0-gpu"  # K80: the last TF with Kepler kernels
    digest = build_bundle().digest
    assert plan.uploads[0][1] == f"{RUN.root}/src/{digest}.tar.gz"  # the bundle, not a built image
    assert (
        f"{RUN.root}/src/{digest}:/opt/gpubench" in words
        and "/opt/gpubench/gpubench requirements payload-legacy" in words
    )
    prebuilt = plan_for(cfg(payloadImage="registry.example/gp:{generation}"), RUN, has_gpu=True)
    assert prebuilt.image == "registry.example/gp:cuda11-legacy" and not prebuilt.uploads
    assert "--gpus all" in words and '"$(id -u):$(id -g)"' in words
    assert "--results file:///gpubench/results" in words and "gs://" not in words  # no cloud credentials remotely
    assert "--steps 50" in words and "--gpus 2" in words and "--expect-gpu" in words and "--stack ssh-box" in words
    assert "docker stop" in plan.stop and RUN.container_name in plan.stop
    assert "--gpus all" not in shell_words(plan_for(cfg(expectGpu=False), RUN, has_gpu=False).payload)


def test_venv_plan_installs_the_bundle_or_reuses_an_interpreter():
    plan = plan_for(cfg(runtime="venv"), RUN, has_gpu=True)
    digest = build_bundle().digest
    assert plan.uploads[0][1] == f"{RUN.root}/src/{digest}.tar.gz"
    assert "python3 -m venv" in plan.setup and "gpubench[payload,tf]" in plan.setup
    assert plan.payload[:4] == [f"{RUN.root}/venvs/{digest}/bin/python", "-m", "payload", "run"]
    assert f"file://{RUN.results}" in plan.payload
    reuse = plan_for(cfg(runtime="venv", remotePython="/opt/tf/bin/python"), RUN, has_gpu=True)
    assert reuse.setup == "true" and reuse.payload[0] == "/opt/tf/bin/python"
    assert reuse.env["PYTHONPATH"] == f"{RUN.root}/src/{digest}/gpubench"
    # a workload's own environments live under remoteDir; beside a reused interpreter they see its frameworks
    assert plan.env["GPUBENCH_JOB_ENVS"] == reuse.env["GPUBENCH_JOB_ENVS"] == f"{RUN.root}/envs"
    assert reuse.env["GPUBENCH_JOB_SITE_PACKAGES"] == "1" and "GPUBENCH_JOB_SITE_PACKAGES" not in plan.env


def test_bundle_is_deterministic_and_holds_the_payload_and_catalog():
    a, b = build_bundle(), build_bundle()
    assert a.data == b.data and a.digest == b.digest
    names = tarfile.open(fileobj=io.BytesIO(a.data)).getnames()
    assert "gpubench/pyproject.toml" in names and "gpubench/payload/cli.py" in names
    assert any(n.startswith("gpubench/infra/catalog/data/") for n in names)
    assert not any("__pycache__" in n or n.startswith("gpubench/infra/aws") for n in names)


def test_wrapper_script_is_valid_posix_sh(tmp_path):
    (tmp_path / "run.sh").write_text(remote.wrapper(RUN))
    assert subprocess.run(["sh", "-n", str(tmp_path / "run.sh")]).returncode == 0
    assert "cd /home/u/.gpubench/runs/ssh-box/20300101T000000Z-abcdef" in remote.wrapper(RUN)
    assert (
        remote.payload_script(plan_for(cfg(runtime="venv", remotePython="/p"), RUN, True))
        .splitlines()[-1]
        .startswith("exec /p -m payload run")
    )


def test_run_status_from_the_wrapper_state():
    def status(state, alive=False):
        return RemoteRun(RUN, state=state, alive=alive).status

    assert status(None, alive=True) == "running"
    assert status(None) == "lost"
    assert status({"status": "exited", "exit_code": 0, "phase": "payload"}) == "completed"
    assert status({"status": "exited", "exit_code": 4, "phase": "payload"}) == "completed"
    assert status({"status": "exited", "exit_code": 75, "phase": "payload"}) == "interrupted"
    assert status({"status": "exited", "exit_code": 1, "phase": "setup"}) == "failed"
    assert status({"status": "stopped", "exit_code": 143, "phase": "payload"}) == "interrupted"
    assert new_run_id(0).startswith("19700101T000000Z-")


def test_missing_sshd_fails_under_ci(monkeypatch):
    import pytest
    from sshd_server import require_tool

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_tool("/nonexistent/sshd", "sshd")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        require_tool(None, "sshd")
