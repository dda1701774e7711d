"""The Pulumi Automation API boundary: one adapter (`PulumiWorkspace`) for launch, campaigns, teardown
and sweep; tests swap in a fake of `StackBackend` and `StackHandle`."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from infra import projectfiles
from infra.projectfiles import ensure_user_project, from_checkout, project_root
from infra.stacks import load_config
from payload import exitcodes
from payload.yamlfile import YamlFileError, read_yaml


class PulumiMissing(exitcodes.GpubenchError, RuntimeError):
    """The Pulumi CLI is not installed; the Automation API only drives it."""

    exit_code = exitcodes.MISSING

    def __init__(self, detail: str = "no `pulumi` on PATH"):
        super().__init__(
            f"the Pulumi CLI is not installed ({detail}); gpubench runs it to launch and destroy stacks "
            "(up, bench's cloud probes, campaigns, teardown). To fix, install it with `curl -fsSL "
            "https://get.pulumi.com | sh` (or `brew install pulumi`; then put ~/.pulumi/bin on PATH and run "
            "`pulumi login`), or see https://www.pulumi.com/docs/install/"
        )


class ProjectNotFound(exitcodes.GpubenchError, RuntimeError):
    """No Pulumi.yaml in the project's files or at the given directory."""

    exit_code = exitcodes.USAGE


def project_dir(start: Path | None = None) -> Path:
    """The directory of the Pulumi.yaml Pulumi runs in: the checkout's, or a packaged install's user copy
    (infra.projectfiles); with `start`, the nearest at or above it."""
    if start is None and not from_checkout() and (projectfiles.BUNDLED / "Pulumi.yaml").is_file():
        return ensure_user_project()
    here = Path(start).resolve() if start else project_root()
    for folder in [here, *here.parents] if start else [here]:
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise ProjectNotFound(
        f"no Pulumi.yaml in {here}{' or above' if start else ''}; pass --project-dir pointing at a gpubench "
        "checkout, or reinstall gpubench (a packaged install carries it in infra/project/)"
    )


def stack_config(name: str, work_dir: Path) -> dict[str, Any]:
    """The `config:` of stacks/Pulumi.<name>.yaml ({} when absent), read from the file: offline, never edited."""
    try:
        return load_config(name, work_dir / "stacks")
    except FileNotFoundError:
        return {}


def config_value(config: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """`gpubench:<key>` (or a bare key) from a stack config mapping."""
    for full in (f"gpubench:{key}", key):
        if full in config and config[full] is not None:
            return config[full]
    return default


def output_value(outputs: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    """First present output among `names`, unwrapped from OutputValue."""
    for name in names:
        if name in outputs:
            value = getattr(outputs[name], "value", outputs[name])
            if value not in (None, ""):
                return value
    return None


def program_env(work_dir: Path) -> dict[str, str]:
    """Environment for the Pulumi CLI over `work_dir`: a project naming no virtualenv runs the first `python3`
    on PATH, so this interpreter's directory goes first ({} when it names one, or has no Pulumi.yaml)."""
    try:
        doc = read_yaml(Path(work_dir) / "Pulumi.yaml")
    except (OSError, YamlFileError):
        return {}
    runtime = doc.get("runtime") if isinstance(doc, dict) else None
    options = runtime.get("options") if isinstance(runtime, dict) else None
    if isinstance(options, dict) and options.get("virtualenv"):
        return {}
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def cli_context() -> tuple[Path, dict[str, str]]:
    """(directory, environment) to run the Pulumi CLI on the project in, from any directory."""
    project = project_dir()
    return project, {**os.environ, **program_env(project)}


def is_stack_not_found(exc: BaseException) -> bool:
    """StackNotFoundError from the Automation API (or a fake's exception of that name)."""
    return any(cls.__name__ == "StackNotFoundError" for cls in type(exc).__mro__) or "no stack named" in str(exc)


def error_text(exc: BaseException, limit: int = 2000) -> str:
    """A CommandError's message is the whole CLI transcript; keep its tail, which says why."""
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= limit else "..." + text[-limit:]


WorkspaceFactory = Callable[[Path], Any]


# --- stack handles for launching (campaigns) and teardown ---------------------------


class StackHandle(Protocol):
    def up(self, on_output: Callable[[str], None] | None = None) -> Any: ...
    def destroy(self, on_output: Callable[[str], None] | None = None) -> Any: ...
    def outputs(self) -> dict[str, Any]: ...  # name -> OutputValue-like (.value)
    def history(self, page_size: int | None = None) -> list[Any]: ...  # each: .kind, .start_time, .result
    def set_config(self, key: str, value: str) -> None: ...
    def get_config(self, key: str) -> str | None: ...


class StackBackend(Protocol):
    def select_stack(self, name: str) -> StackHandle: ...  # StackNotFoundError(-like) when absent
    def list_stacks(self) -> list[Any]: ...  # each: .name, .resource_count, .last_update
    def remove_stack(self, name: str) -> None: ...


def plain(value: Any) -> Any:
    """An Automation API OutputValue (or a plain value) as its value."""
    return getattr(value, "value", value)


def plain_outputs(outputs: Any) -> dict[str, Any]:
    return {k: plain(v) for k, v in dict(outputs or {}).items()}


def _automation():
    """`pulumi.automation`, loaded when a stack is driven (this module is imported without it)."""
    import pulumi.automation as auto  # heavy: pulumi, the infra extra

    return auto


class _PulumiStack:
    """auto.Stack (up, destroy, outputs, history as they are) with string config values."""

    def __init__(self, stack: Any):
        self._stack = stack

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stack, name)

    def set_config(self, key: str, value: str) -> None:
        self._stack.set_config(key, _automation().ConfigValue(value=str(value)))

    def get_config(self, key: str) -> str | None:
        try:
            return self._stack.get_config(key).value
        except Exception:  # noqa: BLE001 - CommandError when the key is unset
            return None


class PulumiWorkspace:
    """The project's stacks through `pulumi.automation` (needs the CLI); `create` lets select_stack make a
    stack the backend lacks (a first launch); teardown never creates."""

    def __init__(self, work_dir: Path, create: bool = True):
        if shutil.which("pulumi") is None:
            raise PulumiMissing()
        self.work_dir, self.create, self._ws = Path(work_dir), create, None
        if not create:
            self._workspace()  # teardown: a missing CLI fails now, before any decision

    def _workspace(self):
        if self._ws is not None:
            return self._ws
        try:
            self._ws = _automation().LocalWorkspace(work_dir=str(self.work_dir), **self._env())
        except FileNotFoundError as exc:  # the CLI vanished between which() and exec
            raise PulumiMissing(f"{exc.filename or 'pulumi'} not found") from exc
        return self._ws

    def _env(self) -> dict[str, Any]:
        env = program_env(self.work_dir)
        return {"env_vars": env} if env else {}

    def select_stack(self, name: str) -> _PulumiStack:
        auto = _automation()
        if self.create:
            env = self._env()
            opts = {"opts": auto.LocalWorkspaceOptions(**env)} if env else {}
            return _PulumiStack(auto.create_or_select_stack(stack_name=name, work_dir=str(self.work_dir), **opts))
        return _PulumiStack(auto.Stack.select(name, self._workspace()))

    def list_stacks(self):
        return self._workspace().list_stacks()

    def remove_stack(self, name: str) -> None:
        """`pulumi stack rm` of an emptied stack (refused while it holds resources); its stack file stays."""
        self._workspace().remove_stack(name, preserve_config=True)


BackendFactory = Callable[[Path], StackBackend]
pulumi_backend: BackendFactory = PulumiWorkspace  # launches create a stack the backend lacks
local_workspace = partial(PulumiWorkspace, create=False)  # teardown: existing stacks only
