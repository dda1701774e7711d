"""Where gpubench keeps what it writes for you: one per-user state directory.

Bench workspaces (their generated stacks, records and answer pages) and the
default campaign report folders go under `$GPUBENCH_HOME`, else `~/.gpubench`,
whether gpubench runs from a checkout or from a packaged install: never inside
site-packages (not writable, lost on upgrade) and never in whatever directory a
command happens to start from. `--project-dir DIR` keeps the layout under DIR
that earlier versions used (`DIR/.gpubench/bench/`, `DIR/report/campaigns/`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_HOME", "HOME_ENV", "campaign_report_dir", "state_home"]

HOME_ENV = "GPUBENCH_HOME"
DEFAULT_HOME = "~/.gpubench"


def state_home() -> Path:
    """`$GPUBENCH_HOME` (relative to the current directory when relative), else `~/.gpubench`; absolute."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser().absolute()


def campaign_report_dir(campaign_id: str, project_dir: Path | None = None) -> Path:
    """A campaign's default report folder: `<state home>/report/campaigns/<id>`, or under `--project-dir`."""
    return Path(project_dir or state_home()) / "report" / "campaigns" / campaign_id
