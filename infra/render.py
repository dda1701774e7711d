"""Render stacks offline under Pulumi's mocks (no CLI, no credentials): `program.run` as the engine runs
it, every registered resource recorded with its inputs. Mocks echo inputs plus the few computed outputs
the program reads; `now` is fixed per process, so two renders of one stack are identical.
"""

from __future__ import annotations

import asyncio
import atexit
import datetime as dt
import gc
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import settings as psettings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from infra import clouds, program
from payload.timestamps import iso

PROJECT = "gpubench"
_PROCESS_NOW = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0)


@dataclass
class ResourceRecord:
    type: str
    name: str
    custom: bool
    protect: bool
    parent: str
    inputs: dict[str, Any]
    dependencies: tuple[str, ...] = ()  # URNs it waits for (depends_on and the inputs' resources)


@dataclass
class Rendered:
    stack: str
    resources: list[ResourceRecord]
    exports: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def of_type(self, typ: str) -> list[ResourceRecord]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str) -> ResourceRecord:
        found = self.of_type(typ)
        if len(found) != 1:
            raise AssertionError(f"{self.stack}: expected one {typ}, found {len(found)}")
        return found[0]

    @property
    def user_data(self) -> str | None:
        return next((u for r in self.resources if (u := _ask("user_data_of", r.type, r.inputs)) is not None), None)


def _ask(method: str, *args: Any) -> Any:
    """The first answer (not None) of the clouds' preview mocks to `method(*args)`."""
    return next((a for c in clouds.all_clouds() if (a := getattr(c.preview_mocks(), method)(*args)) is not None), None)


def fake_id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:17]


class _Mocks(pmocks.Mocks):
    """Inputs echo back as outputs; add what real providers compute and the program reads."""

    def __init__(self, stack: str, now: dt.datetime):
        self.stack = stack
        self.now = now
        self.records: dict[str, dict[str, Any]] = {}

    def _computed(self, typ: str, name: str, inputs: dict[str, Any], rid: str) -> dict[str, Any]:
        if (found := _ask("computed", typ, name, inputs, rid)) is not None:
            return found
        if typ == "time:index/offset:Offset":
            hours = float(inputs.get("offsetHours") or 0)
            moment = self.now + dt.timedelta(minutes=float(inputs.get("offsetMinutes") or 0), hours=hours)
            return {
                "baseRfc3339": iso(self.now, seconds=True),
                "rfc3339": iso(moment, seconds=True),
                "unix": int(moment.timestamp()),
            }
        if typ == "pulumi:pulumi:StackReference":
            ref = str(inputs.get("name", ""))
            provider = ref.rsplit("/", 1)[-1].split("-", 1)[0]
            bucket = f"gpubench-results-{provider}-mock"
            scheme = clouds.get(provider).RESULTS_SCHEME if clouds.is_cloud(provider) else "file://"
            return {
                "name": ref,
                "outputs": {"bucketName": bucket, "resultsUrl": f"{scheme}{bucket}"},
                "secretOutputNames": [],
            }
        return {}

    def new_resource(self, args: pmocks.MockResourceArgs):
        rid = fake_id(self.stack, args.typ, args.name)
        outputs = {**args.inputs, **self._computed(args.typ, args.name, args.inputs, rid)}
        self.records[f"{args.typ}::{args.name}"] = dict(args.inputs)
        return f"{args.name}-{rid[:8]}", outputs

    def call(self, args: pmocks.MockCallArgs):
        if (found := _ask("call", args.token, dict(args.args))) is not None:
            return found, []
        raise KeyError(f"offline preview has no mock for {args.token}")


class _Monitor(pmocks.MockMonitor):
    """Also records what MockResourceArgs leaves out: custom/component, protect, parent."""

    def __init__(self, mocks: _Mocks):
        super().__init__(mocks)
        self.order: list[tuple[str, str, bool, bool, str, tuple[str, ...]]] = []

    def RegisterResource(self, request):
        if request.type != "pulumi:pulumi:Stack":
            deps = tuple(sorted(request.dependencies))
            self.order.append(
                (request.type, request.name, bool(request.custom), bool(request.protect), request.parent, deps)
            )
        return super().RegisterResource(request)


def _close_event_loop() -> None:
    """Close the mocks' event loops (the runtime may make several) while the interpreter is whole: at
    shutdown a loop's self-pipe may be gone and print "Exception ignored" (`preview ... | head`)."""
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        try:
            if not loop.is_running() and not loop.is_closed():
                loop.close()
        except Exception:  # noqa: BLE001 - already half gone: stay quiet at exit
            pass


def render(stack: str, raw_config: Mapping[str, Any], catalog: Any, now: dt.datetime | None = None) -> Rendered:
    """Run the Pulumi program for one stack under mocks and return what it registered."""
    atexit.unregister(_close_event_loop)  # registered once per process: only a render makes event loops
    atexit.register(_close_event_loop)
    mocks = _Mocks(stack, now or _PROCESS_NOW)
    monitor = _Monitor(mocks)
    warnings: list[str] = []  # pulumi.log warnings and errors, collected instead of printed
    quiet, collect = (lambda msg, *a: None), (lambda msg, *a: warnings.append(str(msg)))
    logger = SimpleNamespace(debug=quiet, info=quiet, warning=collect, error=collect)
    psettings.ROOT.set(None)
    pmocks.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor, logger=logger)  # type: ignore[arg-type]
    psettings.SETTINGS.rpc_manager.clear()
    psettings.SETTINGS.outputs.clear()
    holder: dict[str, Any] = {}

    async def _collect() -> None:
        outputs = program.run(raw_config, stack, catalog).outputs
        holder["exports"] = {key: await pulumi.Output.from_input(value).future() for key, value in outputs.items()}

    _sync_await(run_pulumi_func(_collect))
    resources = [
        ResourceRecord(typ, name, custom, protect, parent, _plain(mocks.records.get(f"{typ}::{name}", {})), deps)
        for typ, name, custom, protect, parent, deps in monitor.order
    ]
    # Registration order depends on the event loop; sort so output is stable run to run.
    resources.sort(key=lambda r: (r.custom, r.type, r.name))
    return Rendered(stack, resources, holder.get("exports", {}), warnings)


def _plain(value: Any) -> Any:
    """Inputs as JSON-able data (mocks may hand back tuples or Pulumi sentinels)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, pulumi.asset.FileAsset):  # the file's content decides what is uploaded
        return {"fileAsset": Path(value.path).name, "sha256": hashlib.sha256(Path(value.path).read_bytes()).hexdigest()}
    return str(value)
