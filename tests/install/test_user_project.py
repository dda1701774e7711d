"""A packaged install's user copy of its Pulumi project (infra.projectfiles) and the stack-file rule.

A fake install is made of folders in tmp: an empty "checkout" (so the code acts as a packaged
install) and a shipped infra/project/ with two stack files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from infra import projectfiles, stacks
from infra.workspace import project_dir
from payload.userdirs import HOME_ENV

PROGRAM = Path(projectfiles.__file__).resolve().parent


@pytest.fixture
def shipped(tmp_path, monkeypatch) -> Path:
    """The shipped project folder of a fake packaged install; the state home is tmp/home."""
    bundled = tmp_path / "site" / "infra" / "project"
    (bundled / "stacks").mkdir(parents=True)
    (bundled / "Pulumi.yaml").write_text(
        "name: gpubench\nruntime:\n  name: python\nmain: ../\nstackConfigDir: stacks\n"
    )
    for name, region in (("aws-a", "us-east-1"), ("aws-b", "eu-west-1")):
        (bundled / "stacks" / f"Pulumi.{name}.yaml").write_text(f"config:\n  aws:region: {region}\n")
    monkeypatch.setattr(projectfiles, "CHECKOUT", tmp_path / "not-a-checkout")
    monkeypatch.setattr(projectfiles, "BUNDLED", bundled)
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    return bundled


def test_project_dir_is_the_users_copy_made_once_and_said_once(shipped, tmp_path, capsys):
    project = project_dir()
    assert project == tmp_path / "home" / "project"
    assert f"created your Pulumi project in {project}" in capsys.readouterr().err
    doc = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert (project / doc["main"]).resolve() == PROGRAM and doc["stackConfigDir"] == "stacks"
    assert doc["runtime"] == {"name": "python"}  # no virtualenv: program_env puts this interpreter first
    assert sorted(p.name for p in (project / "stacks").iterdir()) == ["Pulumi.aws-a.yaml", "Pulumi.aws-b.yaml"]
    assert project_dir() == project and capsys.readouterr().err == ""


def test_a_users_file_is_never_overwritten_and_a_missing_shipped_one_is_copied_in(shipped, tmp_path):
    project = project_dir()
    mine = project / "stacks" / "Pulumi.aws-a.yaml"
    mine.write_text("config:\n  aws:region: ap-south-1\n")
    (project / "stacks" / "Pulumi.aws-b.yaml").unlink()
    (shipped / "stacks" / "Pulumi.aws-c.yaml").write_text("config:\n  aws:region: us-west-2\n")  # an upgrade
    project_dir()
    assert mine.read_text() == "config:\n  aws:region: ap-south-1\n"
    assert (project / "stacks" / "Pulumi.aws-b.yaml").is_file() and (project / "stacks" / "Pulumi.aws-c.yaml").is_file()


def test_a_pulumi_yaml_whose_program_moved_keeps_the_users_keys(shipped, tmp_path):
    project = project_dir()
    (project / "Pulumi.yaml").write_text("name: gpubench\nbackend:\n  url: file:///state\nmain: /old/site/infra\n")
    project_dir()
    doc = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert doc["backend"] == {"url": "file:///state"}
    assert (project / doc["main"]).resolve() == PROGRAM


def test_reads_take_your_copy_if_present_else_the_shipped_file(shipped, tmp_path):
    shipped_stacks = shipped / "stacks"
    assert stacks.load_config("aws-a", shipped_stacks) == {"aws:region": "us-east-1"}  # no copy yet
    mine = tmp_path / "home" / "project" / "stacks"
    mine.mkdir(parents=True)
    (mine / "Pulumi.aws-a.yaml").write_text("config:\n  aws:region: ap-south-1\n")
    (mine / "Pulumi.aws-mine.yaml").write_text("config:\n  aws:region: sa-east-1\n")
    assert stacks.load_config("aws-a", shipped_stacks) == {"aws:region": "ap-south-1"}
    assert stacks.load_config("aws-b", shipped_stacks) == {"aws:region": "eu-west-1"}
    assert stacks.stack_names(shipped_stacks) == ["aws-a", "aws-b", "aws-mine"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "Pulumi.aws-a.yaml").write_text("config:\n  aws:region: us-west-1\n")
    assert stacks.load_config("aws-a", other) == {"aws:region": "us-west-1"}  # any other folder alone


def test_a_checkout_keeps_using_itself(tmp_path, monkeypatch):
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    assert projectfiles.from_checkout()
    assert project_dir() == projectfiles.CHECKOUT
    assert projectfiles.stack_dirs(stacks.STACKS_DIR) == [stacks.STACKS_DIR]
    assert not os.path.exists(tmp_path / "home")
