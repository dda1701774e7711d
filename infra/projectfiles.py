"""Where the project's own files are: stacks/, examples/, schedules/ and Pulumi.yaml.

In a checkout (and an editable install) they sit at the repository's root, beside the
packages. A packaged install (a wheel, `pip install .`) carries copies inside the infra
package, as infra/project/ (setup.py copies them at build time). Either way they are found
from the installed code, never from the current directory.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED", "CHECKOUT", "from_checkout", "project_path", "project_root", "user_or_shipped"]

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


def user_or_shipped(path: str | Path) -> Path:
    """A path the user gave, relative to the current directory; when nothing is there and it names
    one of the shipped examples (`examples/...`), the shipped copy, so the documented commands
    (`gpubench bench examples/keras-mnist/workload.yaml`) work from any directory."""
    given = Path(path).expanduser()
    if given.exists() or given.is_absolute() or given.parts[:1] != ("examples",):
        return given
    shipped = project_root() / given
    return shipped if shipped.exists() else given
