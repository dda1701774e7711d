"""A packaged install's own Pulumi project for you: `<state home>/project/`.

Pulumi writes per-stack files beside its project (an `encryptionsalt` when a stack is
first created, a campaign's zone retry, `gpubench stacks` regenerating them), so `up`,
`destroy`, `refresh`, campaigns, teardown and `stacks` must not run on the copy inside
site-packages (read-only, lost on upgrade). They run on this user copy instead: its
Pulumi.yaml runs the installed program, and its stacks/ starts as the shipped stack
files. A file you already have there is never overwritten; a shipped stack file you
lack is copied in when the project is next used. A checkout keeps using itself.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import yaml

from infra.projectfiles import BUNDLED, user_project_dir
from payload.yamlfile import read_yaml

__all__ = ["ensure_user_project", "program_main"]


def program_main(project: Path) -> str:
    """The installed program (the `infra` package) as a path relative to `project`, as Pulumi.yaml wants it."""
    return os.path.relpath(Path(__file__).resolve().parent, project)


def _write_pulumi_yaml(project: Path) -> None:
    """The shipped Pulumi.yaml with `main` pointing at the installed program; an existing one keeps every
    other key the user set and only has a `main` that no longer reaches the installed program replaced."""
    target = project / "Pulumi.yaml"
    main = program_main(project)
    source = target if target.is_file() else BUNDLED / "Pulumi.yaml"
    doc = read_yaml(source) or {}
    if source == target and doc.get("main") == main:
        return
    doc["main"] = main
    doc["stackConfigDir"] = "stacks"
    target.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _copy_missing_stacks(project: Path) -> None:
    """Every shipped stack file the user copy lacks; never one the user already has."""
    mine = project / "stacks"
    mine.mkdir(parents=True, exist_ok=True)
    for shipped in sorted((BUNDLED / "stacks").glob("Pulumi.*.yaml")):
        if not (mine / shipped.name).exists():
            shutil.copyfile(shipped, mine / shipped.name)


def ensure_user_project() -> Path:
    """The user copy, made (and brought up to date without overwriting anything) before a command that
    lets Pulumi write runs on it. Its first creation is said in one line on stderr."""
    project = user_project_dir()
    created = not (project / "Pulumi.yaml").is_file()
    project.mkdir(parents=True, exist_ok=True)
    _write_pulumi_yaml(project)
    _copy_missing_stacks(project)
    if created:
        print(
            f"gpubench: created your Pulumi project in {project} (stack files copied from the install; "
            "edit them there, `gpubench up` and campaigns use them)",
            file=sys.stderr,
        )
    return project
