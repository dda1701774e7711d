"""The legacy image's interpreter, Python 3.8, for the tests that run payload code under it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from servers import missing_tool


def python38() -> str | None:
    """A Python 3.8 that runs: on PATH, else pyenv's (whose shim answers 127 unless 3.8 is selected)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in [shutil.which("python3.8"), *sorted(map(str, pyenv.glob("versions/3.8*/bin/python3.8")))]:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, timeout=60).returncode == 0:
            return candidate
    return None


def require_python38() -> str:
    """Python 3.8's path; a failure under CI=true without one, else a skip."""
    interpreter = python38()
    if interpreter is None:
        missing_tool("no Python 3.8 (on PATH or in pyenv): the legacy image's Python cannot be tested")
    return interpreter
