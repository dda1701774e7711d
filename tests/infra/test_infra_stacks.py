"""The stack matrix: stacks/ is current, regeneration keeps user keys, stale and orphaned files are found."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra import stacks as stackfiles

REPO = Path(__file__).resolve().parents[2]


def test_stacks_check_passes_on_checked_in_files():
    proc = subprocess.run(
        [sys.executable, "-m", "infra", "stacks", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_matrix_covers_every_cloud_offering_and_market(catalog):
    names = {s.name for s in stackfiles.matrix(catalog)}
    for o in catalog.offerings():
        if o.kind == "cloud" and o.provider in ("aws", "gcp"):
            assert {o.stack_name(m) for m in o.markets} <= names
    assert {"aws-results", "gcp-results", "aws-p3-8x", "aws-p3-8x-spot"} <= names
    assert set(stackfiles.stack_names()) == names


def test_write_keeps_user_keys_and_check_finds_problems(catalog, tmp_path):
    for f in stackfiles.STACKS_DIR.glob("Pulumi.*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    assert stackfiles.check(catalog, tmp_path) == []
    path = tmp_path / "Pulumi.gcp-v100-1x.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["gcp:project"] = "my-project"
    doc["config"]["gpubench:offering"] = "gcp/wrong"
    path.write_text(stackfiles.HEADER + yaml.safe_dump(doc))
    (tmp_path / "Pulumi.aws-p3-8x.yaml").unlink()
    (tmp_path / "Pulumi.aws-gone-1x.yaml").write_text(stackfiles.HEADER + "config: {}\n")
    (tmp_path / "Pulumi.my-own.yaml").write_text("config: {}\n")
    problems = stackfiles.check(catalog, tmp_path)
    assert "stale Pulumi.gcp-v100-1x.yaml" in problems and "missing Pulumi.aws-p3-8x.yaml" in problems
    assert any(p.startswith("orphaned Pulumi.aws-gone-1x.yaml") for p in problems)
    assert not any("my-own" in p for p in problems)
    stackfiles.write(catalog, tmp_path)
    assert stackfiles.check(catalog, tmp_path) == []
    config = yaml.safe_load(path.read_text())["config"]
    assert config["gcp:project"] == "my-project" and config["gpubench:offering"] == "gcp/n1-standard-8+1xv100"
    assert (tmp_path / "Pulumi.my-own.yaml").exists() and not (tmp_path / "Pulumi.aws-gone-1x.yaml").exists()


def test_ssh_stacks_share_stacks_dir_but_not_the_matrix():
    ssh = stackfiles.ssh_stack_names()
    assert {"ssh-hetzner-ex51", "ssh-onprem-parkopedia"} <= set(ssh)
    assert not set(ssh) & set(stackfiles.stack_names())


def test_a_broken_stack_file_names_the_file_and_line(tmp_path):
    """A YAML error or a `config:` that is not a mapping is a StackFileError naming where, never a traceback."""
    from infra.stacks import StackFileError, load_config

    (tmp_path / "Pulumi.aws-x.yaml").write_text("config:\n  gpubench:offering: aws/g4dn.xlarge\n  bad: [unclosed\n")
    with pytest.raises(StackFileError, match=r"Pulumi\.aws-x\.yaml:\d+: not valid YAML"):
        load_config("aws-x", tmp_path)
    (tmp_path / "Pulumi.aws-y.yaml").write_text("config:\n  - a list, not keys\n")
    with pytest.raises(StackFileError, match="mapping"):
        load_config("aws-y", tmp_path)


def test_gpubench_reports_a_broken_stack_file_with_exit_2(tmp_path, capsys, monkeypatch):
    import infra.projectfiles
    import infra.stacks as stackfiles
    from analysis.cli import main

    (tmp_path / "Pulumi.aws-x.yaml").write_text("config: {gpubench:offering: [\n")
    monkeypatch.setattr(infra.projectfiles, "STACKS_DIR", tmp_path)
    monkeypatch.setattr(stackfiles.load_config, "__defaults__", (tmp_path,))
    assert main(["plan", "aws-x"]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.aws-x.yaml:" in err and "not valid YAML" in err and "Traceback" not in err
