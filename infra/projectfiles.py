"""Where the project's own files are (stacks/, examples/, schedules/, Pulumi.yaml): a checkout's root, or
the copy a packaged install carries as infra/project/ (setup.py), never the current directory; the stacks
there, and stack names (globs included) checked against them.

Pulumi writes beside its project (a stack's `encryptionsalt`, a zone retry), so a packaged install runs
on a user copy, `<state home>/project/` (`ensure_user_project`): its Pulumi.yaml runs the installed
program, its stacks/ starts as the shipped files and is never overwritten; a stack file is read from
your copy if present, else the shipped one.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from payload.exitcodes import UsageError, did_you_mean
from payload.userdirs import user_dir
from payload.yamlfile import read_yaml

CHECKOUT = Path(__file__).resolve().parent.parent
BUNDLED = Path(__file__).resolve().parent / "project"
# Both must be there for a directory to be the checkout (a site-packages never has them).
_MARKERS = ("Pulumi.yaml", "stacks")


def from_checkout() -> bool:
    """Whether the code runs from a checkout (or an editable install of one)."""
    return all((CHECKOUT / marker).exists() for marker in _MARKERS)


def project_root() -> Path:
    """The checkout's root when the code runs from one, else the copy a packaged install carries."""
    if from_checkout():
        return CHECKOUT
    return BUNDLED if BUNDLED.is_dir() else CHECKOUT


STACKS_DIR = project_root() / "stacks"  # the checkout's, or the copy a packaged install carries
# SSH stacks (`python -m infra ssh`, docs/ssh.md) share stacks/ but are not Pulumi
# programs: their names start with this prefix and the matrix never touches them.
SSH_PREFIX = "ssh-"


def user_project_dir() -> Path:
    """A packaged install's user copy of its Pulumi project."""
    return user_dir("state") / "project"


def stack_dirs(stacks_dir: Path) -> list[Path]:
    """Where a stack file is looked up, first match wins: your copy's stacks/ before the shipped ones."""
    if from_checkout() or Path(stacks_dir) != BUNDLED / "stacks":
        return [Path(stacks_dir)]
    return [user_project_dir() / "stacks", Path(stacks_dir)]


def stack_file(name: str, stacks_dir: Path) -> Path:
    """`Pulumi.<name>.yaml` from the first of stack_dirs(stacks_dir) that has it (else the last one's path)."""
    folders = stack_dirs(stacks_dir)
    filename = f"Pulumi.{name}.yaml"
    return next((d / filename for d in folders if (d / filename).is_file()), folders[-1] / filename)


def _all_names(stacks_dir: Path) -> list[str]:
    files = (p for folder in stack_dirs(stacks_dir) for p in folder.glob("Pulumi.*.yaml"))
    return sorted({p.name[len("Pulumi.") : -len(".yaml")] for p in files})


def stack_names(stacks_dir: Path = STACKS_DIR) -> list[str]:
    """The Pulumi stacks in stacks/ (SSH stacks excluded)."""
    return [n for n in _all_names(stacks_dir) if not n.startswith(SSH_PREFIX)]


def ssh_stack_names(stacks_dir: Path = STACKS_DIR) -> list[str]:
    return [n for n in _all_names(stacks_dir) if n.startswith(SSH_PREFIX)]


def known_stacks(stacks_dir=None) -> list[str]:
    """Every stack with a file in stacks/ (cloud, results and SSH stacks)."""
    folder = STACKS_DIR if stacks_dir is None else stacks_dir
    return stack_names(folder) + ssh_stack_names(folder)


GLOB_CHARS = frozenset("*?[")


def expand_stacks(patterns: Sequence[str], known: Sequence[str], where: str = "stacks/") -> list[str]:
    """Stack names as given, globs expanded over `known`; a UsageError for any that names nothing (checked
    before any tool is looked for: a typo is named as one, not as a missing Pulumi CLI)."""
    chosen: dict[str, None] = {}
    for pattern in patterns:
        hits = fnmatch.filter(known, pattern) if GLOB_CHARS & set(pattern) else [pattern] * (pattern in known)
        if not hits:
            raise UsageError(
                f"stack {pattern!r} matches no stack in {where}.{did_you_mean(pattern, known)} "
                "List them with `gpubench stacks --list`."
            )
        for name in sorted(hits):
            chosen.setdefault(name)
    return list(chosen)


def user_or_shipped(path: str | Path) -> Path:
    """A path the user gave; when nothing is there and it names `examples/...`, the shipped copy (the
    documented commands work from any directory)."""
    given = Path(path).expanduser()
    if given.exists() or given.is_absolute() or given.parts[:1] != ("examples",):
        return given
    shipped = project_root() / given
    return shipped if shipped.exists() else given


def ensure_user_project() -> Path:
    """The user copy, made or brought up to date (nothing overwritten); its creation is said on stderr."""
    project = user_project_dir()
    target = project / "Pulumi.yaml"
    created = not target.is_file()
    (project / "stacks").mkdir(parents=True, exist_ok=True)
    # The shipped Pulumi.yaml, `main` at the installed program; an existing one keeps the user's other keys.
    main = os.path.relpath(Path(__file__).resolve().parent, project)  # the installed `infra` program
    doc = read_yaml(BUNDLED / "Pulumi.yaml" if created else target) or {}
    if created or doc.get("main") != main:
        doc |= {"main": main, "stackConfigDir": "stacks"}
        target.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    for shipped in sorted((BUNDLED / "stacks").glob("Pulumi.*.yaml")):  # never one the user already has
        if not (project / "stacks" / shipped.name).exists():
            shutil.copyfile(shipped, project / "stacks" / shipped.name)
    if created:
        print(
            f"gpubench: created your Pulumi project in {project} (stack files copied from the install; "
            "edit them there, `gpubench up` and campaigns use them)",
            file=sys.stderr,
        )
    return project
