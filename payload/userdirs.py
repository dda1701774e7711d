"""gpubench's per-user folders, one rule: gpubench's own variable when set, else the XDG base directory
(https://specifications.freedesktop.org/basedir-spec/latest/), else its default in your home. The state
home stays `~/.gpubench`, where it always was: never site-packages, nor the directory a command starts in.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "GPUBENCH_HOME"
# kind -> (gpubench's own variable, the XDG variable, the base without it, the folder in the base)
_PLACES = {
    "cache": ("GPUBENCH_CACHE", "XDG_CACHE_HOME", "~/.cache", "gpubench"),
    "config": ("", "XDG_CONFIG_HOME", "~/.config", "gpubench"),
    "state": (HOME_ENV, "", "~", ".gpubench"),
}


def user_dir(kind: str) -> Path:
    """The per-user folder of `kind`, absolute."""
    own, xdg, base, folder = _PLACES[kind]
    if os.environ.get(own):
        return Path(os.environ[own]).expanduser().absolute()
    return Path(os.environ.get(xdg) or base).expanduser().absolute() / folder


def user_path(env: str, kind: str, name: str) -> Path:
    """`$env` when set (a file or folder put elsewhere), else `name` in user_dir(kind)."""
    return Path(os.environ[env]).expanduser().absolute() if os.environ.get(env) else user_dir(kind) / name
