"""The Pulumi Automation API boundary, behind a small interface tests can replace.

A backend hands out stack handles:

    backend.select_stack(name) -> handle     # creates the stack in the backend when new
    backend.list_stacks() -> [summary with .name, .resource_count]
    handle.up(on_output=callback) -> result with .outputs {name: value or OutputValue}
    handle.destroy(on_output=callback)
    handle.outputs() -> {name: value or OutputValue}
    handle.history(page_size=...) -> [entry with .kind, .start_time]
    handle.set_config(key, value: str), handle.get_config(key) -> str | None

The same object serves analysis.teardown as its workspace (list_stacks /
select_stack / outputs / history / destroy), so teardown runs through whichever
backend launched the campaign.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol


class StackHandle(Protocol):
    def up(self, on_output: Callable[[str], None] | None = None) -> Any: ...
    def destroy(self, on_output: Callable[[str], None] | None = None) -> Any: ...
    def outputs(self) -> dict[str, Any]: ...
    def history(self, page_size: int | None = None) -> list[Any]: ...
    def set_config(self, key: str, value: str) -> None: ...
    def get_config(self, key: str) -> str | None: ...


class StackBackend(Protocol):
    def select_stack(self, name: str) -> StackHandle: ...
    def list_stacks(self) -> list[Any]: ...


def plain(value: Any) -> Any:
    """An Automation API OutputValue (or a plain value) as its value."""
    return getattr(value, "value", value)


def plain_outputs(outputs: Any) -> dict[str, Any]:
    return {k: plain(v) for k, v in dict(outputs or {}).items()}


class _PulumiStack:
    """auto.Stack with string config values (ConfigValue wrapping done here)."""

    def __init__(self, stack: Any):
        self._stack = stack

    def up(self, on_output=None):
        return self._stack.up(on_output=on_output)

    def destroy(self, on_output=None, **kw):
        return self._stack.destroy(on_output=on_output, **kw)

    def outputs(self):
        return self._stack.outputs()

    def history(self, page_size=None, page=None):
        return self._stack.history(page_size=page_size, page=page)

    def set_config(self, key: str, value: str) -> None:
        import pulumi.automation as auto

        self._stack.set_config(key, auto.ConfigValue(value=str(value)))

    def get_config(self, key: str) -> str | None:
        try:
            return self._stack.get_config(key).value
        except Exception:  # noqa: BLE001 - CommandError when the key is unset
            return None


class PulumiBackend:
    """The project's stacks through `pulumi.automation` (needs the Pulumi CLI on PATH)."""

    def __init__(self, work_dir: Path):
        from analysis.pulumi_ws import require_cli

        require_cli()  # raises PulumiMissing with how to install it
        self.work_dir = Path(work_dir)

    def select_stack(self, name: str) -> _PulumiStack:
        import pulumi.automation as auto

        # create_or_select: the first campaign on a stack also `pulumi stack init`s it.
        return _PulumiStack(auto.create_or_select_stack(stack_name=name, work_dir=str(self.work_dir)))

    def list_stacks(self):
        import pulumi.automation as auto

        return auto.LocalWorkspace(work_dir=str(self.work_dir)).list_stacks()


BackendFactory = Callable[[Path], StackBackend]


def pulumi_backend(work_dir: Path) -> StackBackend:
    return PulumiBackend(work_dir)
