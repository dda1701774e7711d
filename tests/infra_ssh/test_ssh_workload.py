"""A workload through an SSH stack: the spec and its workdir shipped over SFTP,
the PyTorch example trained on the loopback host (CPU wheel), the priced result
collected and reported; the docker runtime mounts the same files; bad keys fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from run_files import final_log_tail
from servers import require_module

from analysis.cli import main as analysis_main
from infra.bundle import build_workload_bundle
from infra.catalog import load_catalog
from infra.cli import main
from infra.config import ConfigError
from infra.ssh.config import parse_ssh_config
from infra.ssh.layout import RunLayout
from infra.ssh.runtimes import docker_plan
from payload.workloads.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
TINY = {"EPOCHS": "2", "SAMPLES": "128", "IMAGE_SIZE": "16", "WIDTH": "8", "BATCH_SIZE": "32", "OMP_NUM_THREADS": "1"}


def example_spec(tmp_path: Path) -> Path:
    wd = tmp_path / "pytorch-resnet"
    shutil.copytree(REPO / "examples" / "pytorch-resnet", wd)
    doc = yaml.safe_load((wd / "workload.yaml").read_text())
    doc["env"] = {**doc["env"], **TINY}
    (wd / "workload.yaml").write_text(yaml.safe_dump(doc))
    return wd / "workload.yaml"


def base_keys(spec: Path) -> dict:
    return {
        "gpubench:offering": "hetzner/ex51-ssd-gpu",
        "gpubench:host": "box.example.internal",
        "gpubench:results": "file:///srv/results",
        "gpubench:workload": str(spec),
    }


@pytest.mark.usefixtures("charts_described")  # about the figures: the charts are described, not drawn
def test_pytorch_workload_over_ssh_is_priced_collected_and_reported(ssh_stack, tmp_path, capsys):
    require_module("torch")
    spec = example_spec(tmp_path)
    # an owned box: priced by amortisation + electricity from its catalog row when reported
    box = "onprem/parkopedia-4x1080ti"
    stack, stacks_dir = ssh_stack(offering=box, workload=str(spec), benchmark=None, epochs=None, params=None)
    code = main(["ssh", stack, "--stacks-dir", str(stacks_dir), "--json", "--poll", "0.2", "--stop-timeout", "20"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    name = load_spec(spec).benchmark_name
    assert report["status"] == "completed" and report["payload_runs"][0]["benchmark"] == name
    (path,) = sorted((tmp_path / "bucket" / "runs" / stack).glob("*/result.json"))
    result = json.loads(path.read_text())
    assert result["status"] == "completed" and result["benchmark"]["workload"]["metrics_found"] == ["json", "mllog"]
    assert result["benchmark"]["workload"]["sha256"] == load_spec(spec).sha256  # the shipped copy hashes the same
    assert result["offering"]["id"] == box and result["offering"]["kind"] == "onprem"
    assert "GPUBENCH_METRICS" in final_log_tail(path.parent)
    assert result["metrics"]["samples_trained"] == 256
    (remote,) = [p for p in (tmp_path / "remote" / "runs" / stack).iterdir() if p.is_dir() and p.name[0] != "."]
    assert (remote / "workload" / "workdir" / "train.py").read_text() == (spec.parent / "train.py").read_text()

    out_dir = tmp_path / "report"
    assert (
        analysis_main(["collect", "--results", f"file://{tmp_path / 'bucket'}", "--table", str(out_dir), "--json"]) == 0
    )
    capsys.readouterr()
    assert analysis_main(["report", "--table", str(out_dir), "--out", str(out_dir), "--base", box, "--json"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["summary"] if r["benchmark"] == name]
    assert len(rows) == 1 and rows[0]["offering_id"] == box
    hourly = 6500 / 30 / 240 + 1.0 * 0.20  # infra/catalog/data/offerings/onprem.toml: amortisation + power
    assert rows[0]["hourly_usd"] == pytest.approx(hourly)
    assert rows[0]["train_cost_usd"] == pytest.approx(rows[0]["train_hours"] * hourly)


def test_docker_runtime_mounts_the_workload_where_clouds_put_it(tmp_path):
    spec = example_spec(tmp_path)
    cfg = parse_ssh_config(base_keys(spec), "ssh-box", load_catalog())
    assert cfg.workload == str(spec) and cfg.benchmark == ()
    plan = docker_plan(cfg, RunLayout("/home/u/.gpubench", "ssh-box", "r1"), has_gpu=True)
    argv = list(plan.payload)
    assert "/home/u/.gpubench/runs/ssh-box/r1/workload:/gpubench/workload" in argv
    command = argv[-1]  # the public image: pip-installs the payload bundle, then runs it
    assert "--workload /gpubench/workload/workload.yaml" in command and "--benchmark" not in command
    uploads = dict((remote, data) for data, remote in plan.uploads)
    remote_tar = f"/home/u/.gpubench/src/workload-{load_spec(spec).sha256[:16]}.tar.gz"
    assert uploads[remote_tar] == build_workload_bundle(spec).data  # deterministic: once per version of the job
    assert any("tar -xzf" in p and "/runs/ssh-box/r1/workload" in p for p in plan.prepare)


def test_bad_workload_keys_name_the_key(tmp_path):
    spec = example_spec(tmp_path)
    with pytest.raises(ConfigError, match="workload.*not both"):
        parse_ssh_config({**base_keys(spec), "gpubench:benchmark": "mnist-mlp"}, "ssh-box", load_catalog())
    (spec.parent / "bad.yaml").write_text("name: x\nrun: y\nmetrics: [csv]\n")
    with pytest.raises(ConfigError, match="gpubench:workload.*field 'metrics'"):
        parse_ssh_config({**base_keys(spec.parent / "bad.yaml")}, "ssh-box", load_catalog())
    with pytest.raises(ConfigError, match="or gpubench:workload"):
        parse_ssh_config(
            {k: v for k, v in base_keys(spec).items() if k != "gpubench:workload"}, "ssh-box", load_catalog()
        )


def test_docker_runtime_runs_the_workload_in_the_specs_image(tmp_path):
    from infra.images import public_image

    spec = example_spec(tmp_path)
    cfg = parse_ssh_config(base_keys(spec), "ssh-box", load_catalog())
    plan = docker_plan(cfg, RunLayout("/home/u/.gpubench", "ssh-box", "r1"), has_gpu=True)
    image = load_spec(spec).image
    assert plan.image == image and "docker pull" in plan.setup and image in plan.setup
    argv = list(plan.payload)
    assert argv[argv.index("--entrypoint") + 1 : argv.index("--entrypoint") + 3] == ["/bin/bash", image]
    command = argv[-1]  # the payload bundle pip-installed into the job's image, or a clear stop
    install = "PIP_USER=1 bash /opt/gpubench/gpubench/infra/install-payload.sh /opt/gpubench/gpubench package payload"
    assert install in command
    assert f"could not install the payload into {image}" in command and "python3 >= 3.11" in command

    (spec.parent / "bare.yaml").write_text("name: bare\nrun: python train.py\nworkdir: .\nmetrics: [json]\n")
    cfg = parse_ssh_config(base_keys(spec.parent / "bare.yaml"), "ssh-box", load_catalog())
    plan = docker_plan(cfg, RunLayout("/home/u/.gpubench", "ssh-box", "r1"), has_gpu=True)
    assert plan.image == public_image(cfg.image_generation).image  # no image in the spec: TensorFlow
    builtin = parse_ssh_config(
        {k: v for k, v in base_keys(spec).items() if k != "gpubench:workload"} | {"gpubench:benchmark": "mnist-mlp"},
        "ssh-box",
        load_catalog(),
    )
    plan = docker_plan(builtin, RunLayout("/home/u/.gpubench", "ssh-box", "r1"), has_gpu=True)
    assert plan.image == public_image(builtin.image_generation).image
