"""Where the project's own files are: stacks/, examples/, schedules/ and Pulumi.yaml.

In a checkout (and an editable install) they sit at the repository's root, beside the
packages. A packaged install (a wheel, `pip install .`) carries copies inside the infra
package, as infra/project/ (setup.py copies them at build time). Either way they are found
from the installed code, never from the current directory.

A packaged install also has a user copy of its Pulumi project, `<state home>/project/`
(infra.userproject), where commands that let Pulumi write run. Reading a stack file
follows one rule: your copy if present, else the shipped one.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "BUNDLED",
    "CHECKOUT",
    "from_checkout",
    "project_path",
    "project_root",
    "stack_dirs",
    "stack_file",
    "user_or_shipped",
    "user_project_dir",
]

CHECKOUT = Path(__file__).resolve().parent.parent
BUNDLED = Path(__file__).resolve().parent / "project"
# Both must be there for a directory to be the checkout (a site-packages never has them).
_MARKERS = ("Pulumi.yaml", "stacks")


def from_checkout() -> bool:
    """Whether the code runs from a checkout (or an editable install of one), not a packaged install."""
    return all((CHECKOUT / marker).exists() for marker in _MARKERS)


def project_root() -> Path:
    """The checkout's root when the code runs from one, else the copy a packaged install carries."""
    if from_checkout():
        return CHECKOUT
    return BUNDLED if BUNDLED.is_dir() else CHECKOUT


def project_path(name: str) -> Path:
    """One of the project's files or folders, e.g. project_path("stacks")."""
    return project_root() / name


def user_project_dir() -> Path:
    """Where a packaged install keeps your copy of its Pulumi project: `<state home>/project`."""
    from infra.statedir import state_home

    return state_home() / "project"


def stack_dirs(stacks_dir: Path) -> list[Path]:
    """The folders a stack file is looked up in, first match wins: for a packaged install's shipped
    stacks/, your copy's stacks/ first (an edited file there wins); any other folder alone."""
    if from_checkout() or Path(stacks_dir) != BUNDLED / "stacks":
        return [Path(stacks_dir)]
    return [user_project_dir() / "stacks", Path(stacks_dir)]


def stack_file(name: str, stacks_dir: Path) -> Path:
    """`Pulumi.<name>.yaml` from the first of stack_dirs(stacks_dir) that has it (else the last one's path)."""
    folders = stack_dirs(stacks_dir)
    filename = f"Pulumi.{name}.yaml"
    return next((d / filename for d in folders if (d / filename).is_file()), folders[-1] / filename)


def user_or_shipped(path: str | Path) -> Path:
    """A path the user gave, relative to the current directory; when nothing is there and it names
    one of the shipped examples (`examples/...`), the shipped copy, so the documented commands
    (`gpubench bench examples/keras-mnist/workload.yaml`) work from any directory."""
    given = Path(path).expanduser()
    if given.exists() or given.is_absolute() or given.parts[:1] != ("examples",):
        return given
    shipped = project_root() / given
    return shipped if shipped.exists() else given
