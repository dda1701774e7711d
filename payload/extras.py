"""Which pip extra brings which library (pyproject.toml): a command that needs a missing one says what to install."""

from __future__ import annotations

import importlib
import importlib.util

from payload import exitcodes

# top-level module -> the gpubench extra that installs it
PROVIDED_BY = {
    "pulumi": "infra",
    "pulumi_aws": "infra",
    "pulumi_gcp": "infra",
    "pulumiverse_time": "infra",
    "fabric": "infra",
    "pandas": "analysis",
    "pyarrow": "analysis",
    "matplotlib": "analysis",
    "jinja2": "analysis",
    "jsonschema_rs": "analysis",
    "deltalake": "analysis",
    "obstore": "analysis",
    "google.auth": "analysis",
    "google": "payload",
    "boto3": "payload",
    "google.cloud.storage": "payload",
    "tensorflow": "tf",
}


def extra_of(module: str) -> str | None:
    """The extra that installs `module` (or the package it is in), None when no extra does."""
    parts = module.split(".")
    found = [".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in PROVIDED_BY]
    return PROVIDED_BY[found[0]] if found else None


class MissingExtra(exitcodes.GpubenchError, ImportError):
    """A library of an extra that is not installed."""

    exit_code = exitcodes.MISSING

    def __init__(self, module: str, needed_for: str):
        self.module = module
        self.extra = extra_of(module) or "dev"
        super().__init__(
            f"{needed_for} needs {module}, which the base install leaves out. Install it with "
            f"`pip install 'gpubench[{self.extra}]'` (or `make setup` for everything)"
        )


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(*modules: str, needed_for: str) -> None:
    """MissingExtra naming the extra of the first module that is not installed."""
    for module in modules:
        if not installed(module):
            raise MissingExtra(module, needed_for)
