"""Render the #cloud-config that runs the payload container once and then powers the machine off.

Pure Python (no Pulumi) so preview, tests and both clouds share it. What the guest does:

1. writes /etc/gpubench/payload.env (mode 0600; no secrets: the instance role or
   service account supplies credentials) with the GPUBENCH_* variables of
   docs/CONTRACTS.md;
2. records host timeline events to /var/lib/gpubench/events.jsonl
   (instance_launch from the kernel boot time, boot_done, container_start,
   container_exit, shutdown_requested), a file the container sees at the same
   path through GPUBENCH_HOST_EVENTS;
3. schedules `shutdown -h` at the deadline, the in-guest last resort behind the
   cloud-side deadline;
4. starts gpubench-payload.service: `docker run --gpus all --network host` (host
   network so IMDS / the GCE metadata server are reachable; AWS allows it with hop
   limit 2), whose ExecStopPost powers the machine off however the payload ended,
   with OnFailure= as a second path.

With a code bundle (the default: no image to build), the unit first runs
fetch-code.sh: it copies `code/<sha256>.tar.gz` from the results bucket with the
instance's own credentials (the cloud's copy command), checks the sha256 and
unpacks it; run.sh then mounts it into the public image and installs the
payload from it before `python -m payload run`. A stack with a workload fetches
a second bundle the same way (`code/workload-<sha256>.tar.gz`: the spec and its
workdir) and run.sh mounts it at /gpubench/workload, where GPUBENCH_WORKLOAD
points; the image is then the spec's own (PyTorch, NGC, ...) when it names one.
A bundle that cannot be fetched or does not match fails the unit, which powers
the machine off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

ENV_FILE = "/etc/gpubench/payload.env"
CODE_ENV = "/etc/gpubench/code.env"
STATE_DIR = "/var/lib/gpubench"
HOST_EVENTS = f"{STATE_DIR}/events.jsonl"
LIB_DIR = "/usr/local/lib/gpubench"
UNIT = "gpubench-payload.service"
POWEROFF_UNIT = "gpubench-poweroff.service"
DRIVER_WAIT_TRIES = 90  # x 10 s: how long run.sh waits for nvidia-smi before starting the container
CODE_DIR = "/var/lib/gpubench/code"
WORKLOAD_ENV = "/etc/gpubench/workload.env"
WORKLOAD_DIR = "/var/lib/gpubench/workload"
WORKLOAD_MOUNT = "/gpubench/workload"  # infra.config.CLOUD_WORKLOAD_SPEC is workload.yaml in it
BUNDLE_MOUNT = "/opt/gpubench"  # where the unpacked bundle is seen inside the container
_ENV_NAME = re.compile(r"^(GPUBENCH_[A-Z0-9_]+|AWS_DEFAULT_REGION)$")

EVENT_SH = f"""#!/bin/bash
# Append one host timeline event as a JSON line: gpubench-event NAME [ISO-TIME] [DETAIL]
set -euo pipefail
name="$1"
when="${{2:-}}"
detail="${{3:-}}"
if [ -z "$when" ]; then
  when="$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)"
fi
mkdir -p {STATE_DIR}
printf '{{"event": "%s", "time": "%s", "source": "host", "detail": "%s"}}\\n' \\
  "$name" "$when" "$detail" >> {HOST_EVENTS}
"""

LAUNCH_SH = f"""#!/bin/bash
# instance_launch is the kernel boot time (btime), which is earlier than cloud-init.
set -euo pipefail
btime="$(awk '/^btime/ {{print $2}}' /proc/stat)"
{LIB_DIR}/event.sh instance_launch "$(date -u -d "@$btime" +%Y-%m-%dT%H:%M:%SZ)"
"""

DEADLINE_SH = f"""#!/bin/bash
# Last resort behind the cloud-side deadline: halt the guest at GPUBENCH_DEADLINE.
set -euo pipefail
deadline="$(sed -n 's/^GPUBENCH_DEADLINE=//p' {ENV_FILE})"
now="$(date -u +%s)"
end="$(date -u -d "$deadline" +%s)"
minutes=$(( (end - now) / 60 ))
if [ "$minutes" -lt 1 ]; then
  minutes=1
fi
shutdown -h "+$minutes" "gpubench deadline $deadline"
"""

# A recurring launch's deadline is relative to its own boot (`boot+<minutes>m`):
# it becomes an absolute time before anything reads GPUBENCH_DEADLINE.
BOOT_DEADLINE_SH = f"""#!/bin/bash
# GPUBENCH_DEADLINE=boot+<minutes>m -> RFC 3339 UTC, <minutes> after the kernel booted.
set -euo pipefail
value="$(sed -n 's/^GPUBENCH_DEADLINE=//p' {ENV_FILE})"
case "$value" in
  boot+*m) minutes="${{value#boot+}}"; minutes="${{minutes%m}}" ;;
  *) exit 0 ;;
esac
btime="$(awk '/^btime/ {{print $2}}' /proc/stat)"
deadline="$(date -u -d "@$(( btime + minutes * 60 ))" +%Y-%m-%dT%H:%M:%SZ)"
sed -i "s/^GPUBENCH_DEADLINE=.*/GPUBENCH_DEADLINE=$deadline/" {ENV_FILE}
"""

RUN_SH = f"""#!/bin/bash
# Run the payload container once with every GPU; the unit's ExecStopPost handles the end.
# usage: run.sh IMAGE [CODE_DIR [WORKLOAD_DIR]]: with CODE_DIR, IMAGE is a public image (TensorFlow,
# or a workload's own) and the payload is pip-installed from the fetched bundle when the container
# starts; WORKLOAD_DIR (the unpacked workload bundle) is mounted at {WORKLOAD_MOUNT}.
set -euo pipefail
image="$1"
code="${{2:-}}"
workload="${{3:-}}"
# The NVIDIA driver may still be installing at first boot (GCP DLVM install-nvidia-driver runs
# beside cloud-init): `docker run --gpus all` would fail and power the machine off without a
# result. Wait for it, bounded; if it never comes, docker fails loudly as before.
tries=0
until nvidia-smi -L >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -gt {DRIVER_WAIT_TRIES} ]; then
    echo "gpubench: no working NVIDIA driver after $((tries * 10)) s; starting the container anyway" >&2
    break
  fi
  sleep 10
done
{LIB_DIR}/event.sh container_start "" "$image"
if [ -z "$code" ]; then
  exec docker run --rm --name gpubench-payload --gpus all --network host \\
    --env-file {ENV_FILE} -v {STATE_DIR}:{STATE_DIR} "$image"
fi
# The bundle's install command (code.env: CODE_EXTRA, CODE_PIP_FLAGS, CODE_BACKEND_PACKAGES).
extra="$(sed -n 's/^CODE_EXTRA=//p' "$code.env")"
flags="$(sed -n 's/^CODE_PIP_FLAGS=//p' "$code.env")"
backend_packages="$(sed -n 's/^CODE_BACKEND_PACKAGES=//p' "$code.env")"
install="python3 -m pip install --no-cache-dir --quiet $flags '{BUNDLE_MOUNT}/gpubench[$extra]' $backend_packages"
# An image without python3 >= 3.11 and pip cannot run the payload: say so before the unit ends.
refused="{{ echo 'gpubench: could not install the payload into $image (see the error above): it needs python3 >= 3.11 with pip, docs/workloads.md' >&2; exit 1; }}"
mounts=(-v "$code:{BUNDLE_MOUNT}")
if [ -n "$workload" ]; then
  mounts+=(-v "$workload:{WORKLOAD_MOUNT}")
fi
exec docker run --rm --name gpubench-payload --gpus all --network host \\
  --env-file {ENV_FILE} -v {STATE_DIR}:{STATE_DIR} "${{mounts[@]}}" \\
  --entrypoint /bin/bash "$image" -c "$install || $refused; exec python3 -m payload run"
"""


def fetch_code_sh(copy: str) -> str:
    """fetch-code.sh with the cloud's copy command (`copy URL FILE`, the instance's credentials)."""
    return f"""#!/bin/bash
# Fetch the payload's code bundle from the results bucket, check its sha256, unpack it.
# usage: fetch-code.sh ENV_FILE DEST_DIR (ENV_FILE: CODE_URL=, CODE_SHA256=, cloud settings)
set -euo pipefail
env_file="$1"
dest="$2"
set -a
# shellcheck source=/dev/null
. "$env_file"
set +a
{copy.strip()}
archive="$dest.tar.gz"
rm -f "$archive"
copy "$CODE_URL" "$archive"
if ! echo "$CODE_SHA256  $archive" | sha256sum --check --status -; then
  echo "gpubench: $CODE_URL does not have sha256 $CODE_SHA256; not running it" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$archive" -C "$dest" --no-same-owner
cp "$env_file" "$dest.env"
rm -f "$archive"
"""


FINISH_SH = f"""#!/bin/bash
# Called after the payload unit stops, whatever the reason: record it and power off.
set -uo pipefail
{LIB_DIR}/event.sh container_exit "" "result=${{SERVICE_RESULT:-unknown}} status=${{EXIT_STATUS:-unknown}}"
{LIB_DIR}/event.sh shutdown_requested "" "payload ended"
systemctl --no-block poweroff
"""

POWEROFF_SH = f"""#!/bin/bash
# OnFailure= path: power off even if the ExecStopPost hook could not run.
set -uo pipefail
{LIB_DIR}/event.sh shutdown_requested "" "payload unit failed" || true
systemctl --no-block poweroff
"""

SCRIPTS: dict[str, str] = {
    "event.sh": EVENT_SH,
    "launch.sh": LAUNCH_SH,
    "deadline.sh": DEADLINE_SH,
    "boot-deadline.sh": BOOT_DEADLINE_SH,
    "run.sh": RUN_SH,
    "finish.sh": FINISH_SH,
    "poweroff.sh": POWEROFF_SH,
}


def _payload_unit(image: str, code: bool, workload: bool = False) -> str:
    fetch = f"ExecStartPre={LIB_DIR}/fetch-code.sh {CODE_ENV} {CODE_DIR}\n" if code else ""
    run_args = f"{image} {CODE_DIR}" if code else image
    if code and workload:
        fetch += f"ExecStartPre={LIB_DIR}/fetch-code.sh {WORKLOAD_ENV} {WORKLOAD_DIR}\n"
        run_args += f" {WORKLOAD_DIR}"
    return f"""[Unit]
Description=gpubench payload (runs once, then powers the machine off)
Wants=network-online.target docker.service
After=network-online.target docker.service cloud-final.service
OnFailure={POWEROFF_UNIT}

[Service]
Type=simple
Restart=no
TimeoutStartSec=0
ExecStartPre=-/usr/bin/docker pull {image}
{fetch}ExecStart={LIB_DIR}/run.sh {run_args}
ExecStopPost={LIB_DIR}/finish.sh

[Install]
WantedBy=multi-user.target
"""


POWEROFF_SERVICE = f"""[Unit]
Description=gpubench: power off after a payload failure

[Service]
Type=oneshot
ExecStart={LIB_DIR}/poweroff.sh
"""


@dataclass(frozen=True)
class CodeBundle:
    """The payload source in the results bucket and how this cloud's guest copies it.

    `copy` defines a shell function `copy URL FILE` (the cloud's CLI with the
    instance's credentials); `settings` are extra KEY=value lines it may read."""

    url: str
    sha256: str
    copy: str
    extra: str = "payload"
    pip_flags: str = ""
    backend_packages: str = ""  # e.g. jax[cuda12] for --backend jax in a TensorFlow image
    settings: Mapping[str, str] = field(default_factory=dict)
    workload: tuple[str, str] | None = None  # (URL, sha256) of the workload bundle, if the stack runs one

    def env_text(self) -> str:
        """code.env: what fetch-code.sh fetches and how run.sh installs it."""
        return self._env(
            self.url,
            self.sha256,
            {
                "CODE_EXTRA": self.extra,
                "CODE_PIP_FLAGS": self.pip_flags,
                "CODE_BACKEND_PACKAGES": self.backend_packages,
            },
        )

    def workload_env_text(self) -> str:
        """workload.env: the same fetch for the workload bundle (spec + workdir)."""
        if self.workload is None:
            raise ValueError("this launch has no workload bundle")
        return self._env(*self.workload, {})

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
    """Everything the guest needs: the container image, its GPUBENCH_* environment and,
    unless the image is a prebuilt payload image, the code bundle to run in it."""

    image: str
    env: Mapping[str, str]
    code: CodeBundle | None = None


def env_file(env: Mapping[str, str]) -> str:
    """docker --env-file text: KEY=value lines, no quoting; rejects what the format cannot carry
    (line breaks and other control characters; a value wrapped in matching quotes, which newer
    Docker strips). The stack config refuses the same values earlier, naming the key."""
    from infra.config import text_problem

    lines = []
    for key in sorted(env):
        value = str(env[key])
        if not _ENV_NAME.match(key):
            raise ValueError(f"payload variable {key!r} must match GPUBENCH_[A-Z0-9_]+")
        problem = text_problem(value)
        if problem:
            raise ValueError(f"payload variable {key}={value!r} {problem}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks so the user-data reads like the files it writes."""


def _str_presenter(dumper: yaml.SafeDumper, data: str):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def boot_deadline(max_hours: float) -> str:
    """GPUBENCH_DEADLINE for a launch whose creation time is not known in advance."""
    return f"boot+{round(max_hours * 60)}m"


def render_user_data(launch: PayloadLaunch) -> str:
    """The #cloud-config text; deterministic for equal inputs (stable `pulumi preview`)."""
    from infra.config import is_image_reference

    # The image is written unquoted into the unit's ExecStart (systemd expands $ and %) and run.sh's argv.
    if not is_image_reference(launch.image):
        raise ValueError(f"bad payload image reference {launch.image!r}")
    env = dict(launch.env)
    env["GPUBENCH_HOST_EVENTS"] = HOST_EVENTS
    if "GPUBENCH_DEADLINE" not in env:
        raise ValueError("GPUBENCH_DEADLINE is required: the in-guest shutdown uses it")
    files = [
        {"path": ENV_FILE, "permissions": "0600", "owner": "root:root", "content": env_file(env)},
        *(
            {"path": f"{LIB_DIR}/{name}", "permissions": "0755", "owner": "root:root", "content": body}
            for name, body in SCRIPTS.items()
        ),
        *(
            [
                {"path": CODE_ENV, "permissions": "0600", "owner": "root:root", "content": launch.code.env_text()},
                {
                    "path": f"{LIB_DIR}/fetch-code.sh",
                    "permissions": "0755",
                    "owner": "root:root",
                    "content": fetch_code_sh(launch.code.copy),
                },
            ]
            if launch.code
            else []
        ),
        *(
            [
                {
                    "path": WORKLOAD_ENV,
                    "permissions": "0600",
                    "owner": "root:root",
                    "content": launch.code.workload_env_text(),
                }
            ]
            if launch.code and launch.code.workload
            else []
        ),
        {
            "path": f"/etc/systemd/system/{UNIT}",
            "permissions": "0644",
            "content": _payload_unit(
                launch.image, launch.code is not None, launch.code is not None and launch.code.workload is not None
            ),
        },
        {"path": f"/etc/systemd/system/{POWEROFF_UNIT}", "permissions": "0644", "content": POWEROFF_SERVICE},
    ]
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


def shell_scripts(user_data: str) -> dict[str, str]:
    """The shell scripts embedded in rendered user-data (path -> text), for shellcheck."""
    doc = yaml.safe_load(user_data)
    return {f["path"]: f["content"] for f in doc.get("write_files", []) if f["content"].startswith("#!/bin/")}
