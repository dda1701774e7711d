"""Build hook: a packaged install (a wheel, `pip install .`) carries the project's own files.

stacks/, examples/, schedules/, Pulumi.yaml and the packaging files (pyproject.toml,
README.md: the code bundle a launch ships to hosts needs them, infra/bundle.py) live at
the repository's root, beside the packages, where a checkout and an editable install find
them. A wheel has no root, so the build copies them into the infra package as
infra/project/; infra.projectfiles finds them in either place. The copied Pulumi.yaml runs
the installed program (`main: ../`, the infra package) with the interpreter found on PATH
(a packaged install has no checkout .venv). Everything else is in pyproject.toml.
"""

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("stacks", "examples", "schedules", "Pulumi.yaml", "pyproject.toml", "README.md")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
# Pulumi.yaml lines the packaged copy changes: (pattern, replacement); each must match once.
PACKAGED_PULUMI = (
    (re.compile(r"^main: .*$", re.M), "main: ../"),
    (re.compile(r"^ *virtualenv: .*\n", re.M), ""),
)


def packaged_pulumi_yaml(text):
    """The checkout's Pulumi.yaml for infra/project/: its program is the installed infra package."""
    for pattern, replacement in PACKAGED_PULUMI:
        text, count = pattern.subn(replacement, text)
        if count != 1:
            raise SystemExit(f"Pulumi.yaml: expected one line matching {pattern.pattern!r}, found {count}")
    return text


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
        pulumi = target / "Pulumi.yaml"
        pulumi.write_text(packaged_pulumi_yaml(pulumi.read_text()))


setup(cmdclass={"build_py": BuildWithProjectFiles})
