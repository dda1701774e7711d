"""Render the #cloud-config that runs the payload container once and then ends the machine.

Pure Python (no Pulumi) so preview, tests and both clouds share it. What the guest does:

1. writes /etc/gpubench/payload.env (mode 0600; no secrets: the instance role or
   service account supplies credentials) with the GPUBENCH_* variables of
   docs/CONTRACTS.md;
2. records host timeline events to /var/lib/gpubench/events.jsonl
   (instance_launch from the kernel boot time, boot_done, container_start,
   container_exit, shutdown_requested), a file the container sees at the same
   path through GPUBENCH_HOST_EVENTS;
3. schedules end-run.sh at the deadline, and `shutdown -h` after it as the last
   resort, behind the cloud-side deadline;
4. starts gpubench-payload.service: prepare-host.sh (Docker and the NVIDIA
   container toolkit, installed when missing), then `docker run --gpus all
   --network host` (host network so IMDS / the GCE metadata server are reachable;
   AWS allows it with hop limit 2), whose ExecStopPost runs end-run.sh however the
   payload ended, with OnFailure= as a second path. end-run.sh uploads the host's
   events after a failure and ends the machine the cloud's way (cloud.sh, from
   infra/<cloud>/guest.py: a GCE VM deletes itself, an EC2 instance powers off
   into termination).

With a code bundle (the default: no image to build), the unit first runs
fetch-code.sh: it copies `code/<sha256>.tar.gz` from the results bucket with the
instance's own credentials (the cloud's copy command), checks the sha256 and
unpacks it; run.sh then mounts it into the public image and installs the
payload from it before `python -m payload run`. A stack with a workload fetches
a second bundle the same way (`code/workload-<sha256>.tar.gz`: the spec and its
workdir) and run.sh mounts it at /gpubench/workload, where GPUBENCH_WORKLOAD
points; the image is then the spec's own (PyTorch, NGC, ...) when it names one.
A bundle that cannot be fetched (retried while a new grant propagates) or does
not match fails the unit, which ends the machine after a named event.
"""

from __future__ import annotations

import base64
import gzip
import importlib
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
DRIVER_WAIT_TRIES = 90  # x 10 s: how long run.sh waits for nvidia-smi before starting the container
FETCH_TRIES = 8  # fetch-code.sh: copies, 5 s apart doubling up to 60 s (about 4 min: a new grant propagating)
UPLOAD_TRIES = 3  # end-run.sh: uploads of the host's events after a failure
DEADLINE_GRACE_MIN = 10  # `shutdown -h` this long after the deadline's end-run.sh, the last resort
INSTALL_MOUNT = "/usr/local/bin/gpubench-install-payload"  # install-payload.sh inside the container
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
# In-guest deadline behind the cloud-side one: at GPUBENCH_DEADLINE end the run the cloud's way
# (end-run.sh: a GCE VM deletes itself, since a stopped VM's max_run_duration never fires), and
# halt {DEADLINE_GRACE_MIN} minutes later if that did not end the machine.
set -euo pipefail
deadline="$(sed -n 's/^GPUBENCH_DEADLINE=//p' {ENV_FILE})"
now="$(date -u +%s)"
end="$(date -u -d "$deadline" +%s)"
minutes=$(( (end - now) / 60 ))
if [ "$minutes" -lt 1 ]; then
  minutes=1
fi
systemd-run --unit gpubench-deadline --on-active="${{minutes}}m" {LIB_DIR}/end-run.sh "deadline $deadline" 1
shutdown -h "+$(( minutes + {DEADLINE_GRACE_MIN} ))" "gpubench deadline $deadline"
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
    {LIB_DIR}/event.sh gpu_driver_missing "" "nvidia-smi failed for $((tries * 10)) s"
    break
  fi
  sleep 10
done
{LIB_DIR}/event.sh container_start "" "$image"
if [ -z "$code" ]; then
  exec docker run --rm --name gpubench-payload --gpus all --network host \\
    --env-file {ENV_FILE} -v {STATE_DIR}:{STATE_DIR} "$image"
fi
# The bundle's install (code.env: CODE_INSTALL, CODE_EXTRA, CODE_BACKEND_PACKAGES), by
# install-payload.sh mounted into the container.
mode="$(sed -n 's/^CODE_INSTALL=//p' "$code.env")"
extra="$(sed -n 's/^CODE_EXTRA=//p' "$code.env")"
backend_packages="$(sed -n 's/^CODE_BACKEND_PACKAGES=//p' "$code.env")"
install="bash {INSTALL_MOUNT} {BUNDLE_MOUNT}/gpubench ${{mode:-package}} $extra $backend_packages"
# An image without python3 >= 3.11 and pip cannot run the payload: say so before the unit ends.
refused="{{ echo 'gpubench: could not install the payload into $image (see the error above): it needs python3 >= 3.11 with pip, docs/workloads.md' >&2; exit 1; }}"
mounts=(-v "$code:{BUNDLE_MOUNT}" -v "{LIB_DIR}/install-payload.sh:{INSTALL_MOUNT}:ro")
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
# A grant made by the same deployment may still be propagating (403): retry, bounded.
tries=0
delay=5
until copy "$CODE_URL" "$archive"; do
  tries=$((tries + 1))
  if [ "$tries" -ge {FETCH_TRIES} ]; then
    echo "gpubench: could not copy $CODE_URL after $tries tries; not running anything" >&2
    {LIB_DIR}/event.sh code_fetch_failed "" "$CODE_URL after $tries tries"
    exit 1
  fi
  sleep "$delay"
  delay=$((delay * 2 > 60 ? 60 : delay * 2))
done
if ! echo "$CODE_SHA256  $archive" | sha256sum --check --status -; then
  echo "gpubench: $CODE_URL does not have sha256 $CODE_SHA256; not running it" >&2
  {LIB_DIR}/event.sh code_checksum_mismatch "" "$CODE_URL"
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$archive" -C "$dest" --no-same-owner
cp "$env_file" "$dest.env"
rm -f "$archive"
"""


FINISH_SH = f"""#!/bin/bash
# Called after the payload unit stops, whatever the reason: record it and end the run.
set -uo pipefail
{LIB_DIR}/event.sh container_exit "" "result=${{SERVICE_RESULT:-unknown}} status=${{EXIT_STATUS:-unknown}}"
failed=0
if [ "${{SERVICE_RESULT:-unknown}}" != success ]; then
  failed=1
fi
exec {LIB_DIR}/end-run.sh "payload ended" "$failed"
"""

POWEROFF_SH = f"""#!/bin/bash
# OnFailure= path: end the run even if the ExecStopPost hook could not run.
set -uo pipefail
exec {LIB_DIR}/end-run.sh "payload unit failed" 1
"""

PREPARE_HOST_SH = f"""#!/bin/bash
# Make sure this host can run the payload container with its GPUs: Docker and the NVIDIA
# container toolkit, installed when the image lacks them (infra/compat.py HOSTS), then checked.
# A host that cannot be prepared records host_prepare_failed and fails the unit (end-run.sh).
set -uo pipefail
fail() {{
  echo "gpubench: $1" >&2
  {LIB_DIR}/event.sh host_prepare_failed "" "$1"
  exit 1
}}
apt=(apt-get -q -y -o DPkg::Lock::Timeout=300)
missing=()
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v nvidia-ctk >/dev/null 2>&1 || missing+=(nvidia-container-toolkit)
if [ "${{#missing[@]}}" -gt 0 ]; then
  {LIB_DIR}/event.sh host_install "" "${{missing[*]}}"
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v nvidia-ctk >/dev/null 2>&1 && ! apt-cache show nvidia-container-toolkit >/dev/null 2>&1; then
    # NVIDIA's apt repository (NVIDIA Container Toolkit, "Installing with Apt",
    # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html)
    keyring=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
    list=/etc/apt/sources.list.d/nvidia-container-toolkit.list
    if ! curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --batch --yes --dearmor -o "$keyring"; then
      fail "could not add NVIDIA's apt key for nvidia-container-toolkit"
    fi
    if ! curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list |
      sed "s#deb https://#deb [signed-by=$keyring] https://#g" >"$list"; then
      fail "could not add NVIDIA's apt repository for nvidia-container-toolkit"
    fi
  fi
  if ! "${{apt[@]}}" update || ! "${{apt[@]}}" install "${{missing[@]}}"; then
    fail "could not install ${{missing[*]}}"
  fi
fi
command -v docker >/dev/null 2>&1 || fail "docker is not installed"
command -v nvidia-ctk >/dev/null 2>&1 || fail "nvidia-container-toolkit is not installed"
if ! docker info --format '{{{{json .Runtimes}}}}' 2>/dev/null | grep -q nvidia; then
  if ! nvidia-ctk runtime configure --runtime=docker || ! systemctl restart docker; then
    fail "could not configure the NVIDIA runtime for Docker (nvidia-ctk runtime configure --runtime=docker)"
  fi
fi
docker info --format '{{{{json .Runtimes}}}}' 2>/dev/null | grep -q nvidia || fail "Docker is not running with the nvidia runtime"
{LIB_DIR}/event.sh host_ready
"""

END_RUN_SH = f"""#!/bin/bash
# The end of a run, whatever ended it: after a failure copy the host's events to the bucket (the
# payload, which carries them into its result, may never have run), then end the machine the
# cloud's way (cloud.sh: end_machine).
# usage: end-run.sh REASON FAILED (1: upload the host's events first)
set -uo pipefail
reason="$1"
failed="${{2:-1}}"
mkdir {STATE_DIR}/ending 2>/dev/null || exit 0  # once, whichever path came first
{LIB_DIR}/event.sh shutdown_requested "" "$reason"
# shellcheck source=/dev/null
. {LIB_DIR}/cloud.sh
value() {{
  sed -n "s/^$1=//p" {ENV_FILE}
}}
if [ "$failed" = 1 ]; then
  results="$(value GPUBENCH_RESULTS)"
  stack="$(value GPUBENCH_STACK)"
  launch="$(value GPUBENCH_LAUNCH_ID)"
  region="$(value AWS_DEFAULT_REGION)"
  if [ -n "$region" ]; then
    export AWS_DEFAULT_REGION="$region"
  fi
  btime="$(awk '/^btime/ {{print $2}}' /proc/stat)"
  id="$(instance_id 2>/dev/null | tr -d '\\n' | tr -c 'A-Za-z0-9.' '-')"
  # A run directory of its own, named as the payload names runs (payload.identity.make_run_id).
  run="${{launch:+$launch-}}$(date -u -d "@$btime" +%Y%m%dT%H%M%SZ)-${{id:-host}}-boot"
  url="${{results%/}}/runs/$stack/$run/events.jsonl"
  tries=0
  until upload {HOST_EVENTS} "$url"; do
    tries=$((tries + 1))
    if [ "$tries" -ge {UPLOAD_TRIES} ]; then
      echo "gpubench: could not upload the host's events to $url" >&2
      break
    fi
    sleep $((tries * 10))
  done
fi
end_machine
"""

SCRIPTS: dict[str, str] = {
    "event.sh": EVENT_SH,
    "launch.sh": LAUNCH_SH,
    "deadline.sh": DEADLINE_SH,
    "boot-deadline.sh": BOOT_DEADLINE_SH,
    "run.sh": RUN_SH,
    "finish.sh": FINISH_SH,
    "poweroff.sh": POWEROFF_SH,
    "prepare-host.sh": PREPARE_HOST_SH,
    "end-run.sh": END_RUN_SH,
}


def install_payload_sh() -> str:
    """install-payload.sh (infra/install-payload.sh; payload/Dockerfile.legacy runs the same file)."""
    return (Path(__file__).with_name("install-payload.sh")).read_text()


def guest_script(results_url: str) -> str:
    """cloud.sh: the cloud's `instance_id`, `upload` and `end_machine`, chosen by the results
    bucket's URL scheme (infra/<cloud>/guest.py); without one, power off and upload nothing."""
    cloud = clouds.of_results(results_url)
    return importlib.import_module(f"{cloud.__name__}.guest").script(LIB_DIR) if cloud else LOCAL_GUEST


LOCAL_GUEST = """#!/bin/bash
# No cloud bucket: nothing to upload to; powering off ends the machine.
instance_id() {
  hostname
}
upload() {
  return 1
}
end_machine() {
  systemctl --no-block poweroff
}
"""


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
ExecStartPre={LIB_DIR}/prepare-host.sh
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
    install: str = "package"  # install-payload.sh's mode: "package", or "requirements" (infra.images)
    backend_packages: str = ""  # e.g. jax[cuda12] for --backend jax, tensorflow[and-cuda]==... (infra.compat)
    settings: Mapping[str, str] = field(default_factory=dict)
    workload: tuple[str, str] | None = None  # (URL, sha256) of the workload bundle, if the stack runs one

    def env_text(self) -> str:
        """code.env: what fetch-code.sh fetches and how run.sh installs it."""
        return self._env(
            self.url,
            self.sha256,
            {
                "CODE_INSTALL": self.install,
                "CODE_EXTRA": self.extra,
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
            for name, body in {
                **SCRIPTS,
                "cloud.sh": guest_script(str(env.get("GPUBENCH_RESULTS", ""))),
                "install-payload.sh": install_payload_sh(),
            }.items()
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


def compressed(user_data: str) -> str:
    """`user_data` gzip-compressed, then base64-encoded, as EC2 takes it (`user_data_base64`, a launch
    template's `user_data`). EC2 accepts at most 16 KB of user data before base64 encoding
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html), and the rendered scripts
    are near that; cloud-init inflates it itself ("Content found to be gzip compressed will be
    uncompressed", https://cloudinit.readthedocs.io/en/latest/explanation/format.html). mtime=0:
    equal inputs give equal bytes, so a preview stays stable."""
    return base64.b64encode(gzip.compress(user_data.encode(), mtime=0)).decode()


def inflated(value: str) -> str:
    """The #cloud-config text of user data as the program renders it: raw, base64, or base64 of gzip."""
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return value
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
