#!/bin/bash
# Make sure this host can run the payload container with its GPUs: Docker and the NVIDIA
# container toolkit, installed when the image lacks them (infra/compat.py HOSTS), then checked.
# A host that cannot be prepared records host_prepare_failed and fails the unit (end-run.sh).
set -uo pipefail
fail() {
  echo "gpubench: $1" >&2
  @LIB_DIR@/event.sh host_prepare_failed "" "$1"
  exit 1
}
apt=(apt-get -q -y -o DPkg::Lock::Timeout=300)
missing=()
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v nvidia-ctk >/dev/null 2>&1 || missing+=(nvidia-container-toolkit)
if [ "${#missing[@]}" -gt 0 ]; then
  @LIB_DIR@/event.sh host_install "" "${missing[*]}"
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
  if ! "${apt[@]}" update || ! "${apt[@]}" install "${missing[@]}"; then
    fail "could not install ${missing[*]}"
  fi
fi
command -v docker >/dev/null 2>&1 || fail "docker is not installed"
command -v nvidia-ctk >/dev/null 2>&1 || fail "nvidia-container-toolkit is not installed"
if ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q nvidia; then
  if ! nvidia-ctk runtime configure --runtime=docker || ! systemctl restart docker; then
    fail "could not configure the NVIDIA runtime for Docker (nvidia-ctk runtime configure --runtime=docker)"
  fi
fi
docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q nvidia || fail "Docker is not running with the nvidia runtime"
@LIB_DIR@/event.sh host_ready
