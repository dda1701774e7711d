"""Render the #cloud-config that runs the payload container once and then ends the machine (pure
Python: preview, tests and both clouds share it): the GPUBENCH_* env file (docs/CONTRACTS.md; 0600, no
secrets), infra/guest/'s scripts and the payload unit, whose ExecStopPost and OnFailure= end the run
however it ended. The boot step by step: docs/clouds.md, "What the boot does".
"""

from __future__ import annotations

import base64
import gzip
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from infra import clouds
from infra.config import is_image_reference, text_problem

ENV_FILE = "/etc/gpubench/payload.env"
CODE_ENV = "/etc/gpubench/code.env"
STATE_DIR = "/var/lib/gpubench"
HOST_EVENTS = f"{STATE_DIR}/events.jsonl"
LIB_DIR = "/usr/local/lib/gpubench"
UNIT = "gpubench-payload.service"
POWEROFF_UNIT = "gpubench-poweroff.service"
FETCH_TRIES = 8  # fetch-code.sh: copies, 5 s apart doubling up to 60 s (about 4 min: a new grant propagating)
INSTALL_MOUNT = "/usr/local/bin/gpubench-install-payload"  # install-payload.sh inside the container
CODE_DIR = "/var/lib/gpubench/code"
WORKLOAD_ENV = "/etc/gpubench/workload.env"
WORKLOAD_DIR = "/var/lib/gpubench/workload"
WORKLOAD_MOUNT = "/gpubench/workload"  # infra.config.CLOUD_WORKLOAD_SPEC is workload.yaml in it
BUNDLE_MOUNT = "/opt/gpubench"  # where the unpacked bundle is seen inside the container
_ENV_NAME = re.compile(r"^(GPUBENCH_[A-Z0-9_]+|AWS_DEFAULT_REGION)$")

# infra/guest/'s scripts (shellcheck-clean as rendered) and units; @NAME@ placeholders: the constants above.
GUEST_DIR = Path(__file__).with_name("guest")
SCRIPTS = (
    "event.sh launch.sh deadline.sh boot-deadline.sh run.sh finish.sh poweroff.sh prepare-host.sh end-run.sh".split()
)
_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


def guest_file(name: str, **values: str) -> str:
    """infra/guest/`name`, its @NAME@ placeholders filled from this module's constants (or `values`)."""
    known = {**globals(), **values}
    return _PLACEHOLDER.sub(lambda m: str(known[m[1]]), (GUEST_DIR / name).read_text())


def _file(path: str, content: str, permissions: str = "0755", owner: str | None = "root:root") -> dict:
    """One write_files entry (cloud-init's module: path, permissions, owner, content)."""
    return {"path": path, "permissions": permissions, **({"owner": owner} if owner else {}), "content": content}


@dataclass(frozen=True)
class CodeBundle:
    """The payload source in the results bucket; `copy` defines the shell function `copy URL FILE` (the
    cloud's CLI), `settings` are extra KEY=value lines it may read."""

    url: str
    sha256: str
    copy: str
    extra: str = "payload"
    install: str = "package"  # install-payload.sh's mode: "package", or "requirements" (infra.images)
    backend_packages: str = ""  # e.g. jax[cuda12] for --backend jax, tensorflow[and-cuda]==... (infra.images)
    settings: Mapping[str, str] = field(default_factory=dict)
    workload: tuple[str, str] | None = None  # (URL, sha256) of the workload bundle, if the stack runs one

    def env_texts(self) -> dict[str, str]:
        """code.env (what fetch-code.sh fetches and how run.sh installs it), and workload.env, the same
        fetch for the workload bundle (spec + workdir), by path."""
        install = dict(CODE_INSTALL=self.install, CODE_EXTRA=self.extra, CODE_BACKEND_PACKAGES=self.backend_packages)
        texts = {CODE_ENV: self._env(self.url, self.sha256, install)}
        return {**texts, WORKLOAD_ENV: self._env(*self.workload, {})} if self.workload else texts

    def _env(self, url: str, sha256: str, install: Mapping[str, str]) -> str:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise ValueError(f"code bundle sha256 {sha256!r} is not 64 hex digits")
        values = {"CODE_URL": url, "CODE_SHA256": sha256, **install, **self.settings}
        for key, value in values.items():
            if not re.fullmatch(r"[A-Za-z0-9_./:+@=,\[\]-]*", value) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
                raise ValueError(f"code setting {key}={value!r} has characters the env file cannot carry")
        return "".join(f"{k}={v}\n" for k, v in values.items())


@dataclass(frozen=True)
class PayloadLaunch:
    """The container image, its GPUBENCH_* environment and (unless a prebuilt payload image) the code bundle."""

    image: str
    env: Mapping[str, str]
    code: CodeBundle | None = None


def env_file(env: Mapping[str, str]) -> str:
    """docker --env-file text (KEY=value lines, no quoting); refuses what it cannot carry (text_problem),
    as the stack config does earlier, naming the key."""
    lines = []
    for key in sorted(env):
        value = str(env[key])
        if not _ENV_NAME.match(key):
            raise ValueError(f"payload variable {key!r} must match GPUBENCH_[A-Z0-9_]+")
        if problem := text_problem(value):
            raise ValueError(f"payload variable {key}={value!r} {problem}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks so the user-data reads like the files it writes."""


_Dumper.add_representer(
    str,
    lambda dumper, data: dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None),
)


def boot_deadline(max_hours: float) -> str:
    """GPUBENCH_DEADLINE for a launch whose creation time is not known in advance."""
    return f"boot+{round(max_hours * 60)}m"


def render_user_data(launch: PayloadLaunch) -> str:
    """The #cloud-config text; deterministic for equal inputs (stable `pulumi preview`)."""
    # The image is written unquoted into the unit's ExecStart (systemd expands $ and %) and run.sh's argv.
    if not is_image_reference(launch.image):
        raise ValueError(f"bad payload image reference {launch.image!r}")
    env = dict(launch.env)
    env["GPUBENCH_HOST_EVENTS"] = HOST_EVENTS
    if "GPUBENCH_DEADLINE" not in env:
        raise ValueError("GPUBENCH_DEADLINE is required: the in-guest shutdown uses it")
    code = launch.code
    scripts = {name: guest_file(name) for name in SCRIPTS}
    # cloud.sh: `instance_id`, `upload` and `end_machine` of the results bucket's cloud (guest/<cloud>.sh)
    cloud = clouds.of_results(str(env.get("GPUBENCH_RESULTS", "")))
    scripts["cloud.sh"] = guest_file(f"{cloud.NAME if cloud else 'local'}.sh")
    # infra/install-payload.sh: payload/Dockerfile.legacy runs the same file
    scripts["install-payload.sh"] = Path(__file__).with_name("install-payload.sh").read_text()
    files = [_file(ENV_FILE, env_file(env), "0600"), *(_file(f"{LIB_DIR}/{n}", body) for n, body in scripts.items())]
    envs = code.env_texts() if code else {}  # code.env, then workload.env: the bundles fetched before the run
    folders = {CODE_ENV: CODE_DIR, WORKLOAD_ENV: WORKLOAD_DIR}
    for path, text in envs.items():
        files.append(_file(path, text, "0600"))
        if path == CODE_ENV:
            files.append(_file(f"{LIB_DIR}/fetch-code.sh", guest_file("fetch-code.sh", COPY=code.copy.strip())))
    fetch = "".join(f"ExecStartPre={LIB_DIR}/fetch-code.sh {env} {folders[env]}\n" for env in envs)
    unit = guest_file(UNIT, IMAGE=launch.image, FETCH=fetch, RUN_ARGS=" ".join([launch.image, *map(folders.get, envs)]))
    units = {UNIT: unit, POWEROFF_UNIT: guest_file(POWEROFF_UNIT)}
    files += [_file(f"/etc/systemd/system/{name}", text, "0644", owner=None) for name, text in units.items()]
    doc = {
        "write_files": files,
        "runcmd": [
            [f"{LIB_DIR}/launch.sh"],
            [f"{LIB_DIR}/boot-deadline.sh"],
            [f"{LIB_DIR}/deadline.sh"],
            [f"{LIB_DIR}/event.sh", "boot_done"],
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "--no-block", UNIT],
        ],
    }
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
    return "#cloud-config\n" + body


def compressed(user_data: str) -> str:
    """`user_data` gzipped and base64-encoded, as EC2 takes it: at most 16 KB before base64
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html), which the scripts are near;
    cloud-init inflates it (https://cloudinit.readthedocs.io/en/latest/explanation/format.html).
    mtime=0: equal inputs, equal bytes (a stable preview)."""
    return base64.b64encode(gzip.compress(user_data.encode(), mtime=0)).decode()


def inflated(value: str) -> str:
    """The #cloud-config text of user data as the program renders it: raw, base64, or base64 of gzip."""
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return value
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
