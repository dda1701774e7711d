"""Build hook: a packaged install (a wheel, `pip install .`) carries the project's own files.

stacks/, examples/, schedules/ and Pulumi.yaml live at the repository's root, beside the
packages, where a checkout and an editable install find them. A wheel has no root, so the
build copies them into the infra package as infra/project/; infra.projectfiles finds them
in either place. Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("stacks", "examples", "schedules", "Pulumi.yaml")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


class BuildWithProjectFiles(build_py):
    """build_py, then copy the project's files under <build>/infra/project/ (not for editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the checkout's own files are found in place
        target = Path(self.build_lib) / "infra" / "project"
        for name in PROJECT_FILES:
            source, dest = ROOT / name, target / name
            if source.is_dir():
                shutil.copytree(source, dest, ignore=SKIP, dirs_exist_ok=True)
            elif source.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": BuildWithProjectFiles})
