"""Which framework versions the job's own interpreter has: what actually ran, not what an image would have.

A short child process of the job's ``python3`` reads package metadata and torch's CUDA build from
``torch/version.py``, importing no framework (a fraction of a second)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

# result.software key -> the importable module whose installed distribution carries the version
FRAMEWORKS = {"torch": "torch", "tensorflow": "tensorflow", "keras": "keras", "jax": "jax", "jaxlib": "jaxlib"}
TIMEOUT_SECONDS = 20.0

_PROBE = r"""
import importlib.metadata as md, importlib.util as iu, json, os, re, sys
mods = json.loads(sys.argv[1])
dists = md.packages_distributions()
out = {}
for key, mod in mods.items():
    try:
        spec = iu.find_spec(mod)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        continue
    names = dists.get(mod) or [mod]
    version = None
    for name in names:
        try:
            version = md.version(name)
            break
        except md.PackageNotFoundError:
            continue
    out[key] = version
    if mod == "torch" and spec.origin:
        try:
            text = open(os.path.join(os.path.dirname(spec.origin), "version.py")).read()
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
            out["torch_cuda_build"] = m.group(1) if m else None
        except OSError:
            pass
print(json.dumps(out))
"""


def _interpreter(env: dict) -> str | None:
    path = env.get("PATH", os.defpath)
    return shutil.which("python3", path=path) or shutil.which("python", path=path)


def job_frameworks(env: dict, cwd: str | None = None) -> tuple[dict, str | None]:
    """({software key: version}, interpreter) for the frameworks the job's `python3` can import.

    Frameworks it cannot import are left out; ({}, None) when there is no interpreter or it fails."""
    python = _interpreter(env)
    if python is None:
        return {}, None
    try:
        done = subprocess.run(
            [python, "-c", _PROBE, json.dumps(FRAMEWORKS)],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        found = None
    if not isinstance(found, dict):
        return {}, python
    return {k: v for k, v in found.items() if v is None or isinstance(v, str)}, python
