"""What the cloud folders (infra/aws/, infra/gcp/) do the same way, written once.

Light (the standard library, infra.sweep and infra.tags): the provider interfaces and the sweep modules
import it, and the sweeper function ships it (infra/sweeper_function.py MODULES).
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from infra import sweep as common
from infra.sweep import Action
from infra.tags import MAX_HOURS_KEY, PROJECT_ENV, PROJECT_KEY, project_id, recurring_deadline


def imported(module: str, attr: str | None = None) -> Callable[[], Any]:
    """A function that imports `module` when called and returns it (or its `attr`): the interface
    stays light for the base install and the sweeper function, the part it names loads Pulumi,
    a cloud SDK or the catalog only when used."""
    return lambda: getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)


def deferred(module: str, attr: str) -> Callable[..., Any]:
    """`module.attr(...)`, the module imported at the call (see `imported`)."""
    return lambda *args, **kwargs: imported(module, attr)()(*args, **kwargs)


def quietly_imported(package: str, *modules: str):
    """`package` (a Pulumi provider SDK, which loads its modules lazily) with `modules` loaded now,
    their deprecation notices for resources we do not use silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for module in modules:
            importlib.import_module(f"{package}.{module}")
    return importlib.import_module(package)


def code_copy(cli: str, host: str, image: str, in_image: str, env: str = "") -> str:
    """The guest's `copy URL FILE` for the code bundle, as the machine's own identity: the host's `cli`
    (`host`: its copy command) when present, else the cloud's CLI image (`in_image`: the same command
    there), which reads the identity from the metadata server through the host network."""
    return f"""
copy() {{
  if command -v {cli} >/dev/null 2>&1; then
    {host} "$1" "$2"
  else
    dir="$(dirname "$2")"
    docker run --rm --network host {env}-v "$dir:$dir" {image} \\
      {in_image} "$1" "$2"
  fi
}}
"""


def stack_region(key: str, region_of_zone: Callable[[str], str]) -> Callable[..., str | None]:
    """The interface's `region(provider_config, zone)`: the stack's `key` (`aws:region`), else the zone's."""

    def region(provider_config: Mapping[str, str], zone: str | None) -> str | None:
        return provider_config.get(key) or (region_of_zone(zone) if zone else None)

    return region


def row(check: str, ok: bool, detail: str) -> dict:
    """One readiness finding (infra/<cloud>/readiness.py); a failed one's detail names the fix."""
    return {"check": check, "ok": ok, "detail": detail}


def sweeper_env(cloud: str, dry_run: bool, regions: str = "") -> dict[str, str]:
    """The sweeper function's settings (infra.sweeper_function.run_sweep reads them); it sweeps only
    this project's resources (infra.sweep.ownership)."""
    env = {"GPUBENCH_SWEEP_PROVIDER": cloud, "GPUBENCH_SWEEP_DRY_RUN": str(dry_run).lower(), PROJECT_ENV: project_id()}
    return {**env, "GPUBENCH_SWEEP_REGIONS": regions} if regions else env


@dataclass(frozen=True)
class Marks:
    """A cloud's tag or label keys (`prefix` + an infra.tags key), how it encodes a string value,
    and the exact deadline form its launcher writes: what makes a resource provably ours."""

    cloud: str
    prefix: str
    deadline_form: re.Pattern
    format_deadline: Callable[[datetime], str]
    encode: Callable[[str], str] = str

    def key(self, name: str) -> str:
        return self.prefix + name

    def tags(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {self.prefix + k: (self.encode(v) if isinstance(v, str) else v) for k, v in values.items()}

    def is_launcher_deadline(self, text: Any) -> bool:
        """Only the exact form the launcher writes counts as ours."""
        return isinstance(text, str) and self.deadline_form.fullmatch(text) is not None

    def owner(self, project: str | None = None) -> common.Owner:
        """This deployment's ownership marks: the stack key, the project key = the project id."""
        return common.Owner(self.cloud, self.key("stack"), self.key(PROJECT_KEY), project or project_id())

    def classify(self, tags: Mapping[str, Any], now: datetime, mine: common.Owner | None = None) -> tuple[str, str]:
        """('expired' | 'kept' | 'left-alone', reason) by infra.sweep.classify's rule."""
        return common.classify(
            tags,
            now,
            owner=mine or self.owner(),
            expires_key=self.key("expires-at"),
            is_launcher_deadline=self.is_launcher_deadline,
        )


@dataclass(frozen=True)
class SweepRun:
    """One sweep on one cloud: when, whether for real, whose resources, and how an instance goes
    (`act(where, id)`: terminate or delete it); every verdict becomes an infra.sweep.Action."""

    marks: Marks
    now: datetime
    dry_run: bool
    mine: common.Owner
    act: Callable[[str, str], Any]
    error_of: Callable[[BaseException], str] = str
    log: Callable[[str], None] = lambda line: None

    def action(self, kind: str, where: str, rid: str, action: str, tags=None, reason="", error=None) -> Action:
        tags = tags or {}
        stack, expires = tags.get(self.marks.key("stack")), tags.get(self.marks.key("expires-at"))
        return Action(self.marks.cloud, where, kind, rid, action, stack, expires, reason, error)

    def decide(self, kind: str, where: str, rid: str, verdict: str, tags, reason: str, act=None, verb="terminate"):
        """The Action of a resource judged `verdict` (infra.sweep.carry_out; `act`: other than the instance's)."""
        tags = tags or {}
        action, error = common.carry_out(
            verdict, self.dry_run, act or partial(self.act, where, rid), self.error_of, verb
        )
        if action == "terminated":
            self.log(f"[{self.marks.cloud} {where}] terminated {rid} ({tags.get(self.marks.key('stack'))}, {reason})")
        return self.action(kind, where, rid, action, tags, reason, error)

    def recurring(self, where: str, rid: str, tags: Mapping[str, Any], launched: datetime | None) -> Action:
        """A recurring launch (a max-hours mark, no expires-at): expired at launch + max-hours + grace."""
        key = self.marks.key(MAX_HOURS_KEY)
        foreign = common.ownership(tags, self.mine)
        if foreign:
            return self.action("instance", where, rid, "left-alone", tags, foreign)
        deadline = recurring_deadline(launched, tags.get(key, "")) if launched else None
        if deadline is None:
            reason = f"no readable launch time or launcher max-hours ({key}={tags.get(key)!r}): never guessed"
            return self.action("instance", where, rid, "skipped", tags, reason)
        reason = f"recurring launch at {launched.isoformat()} + {key} {tags[key]} + grace"
        done = self.decide("instance", where, rid, "expired" if deadline <= self.now else "kept", tags, reason)
        done.expires_at = self.marks.format_deadline(deadline)
        return done
