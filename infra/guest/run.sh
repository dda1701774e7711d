#!/bin/bash
# Run the payload container once with every GPU; the unit's ExecStopPost handles the end.
# usage: run.sh IMAGE [CODE_DIR [WORKLOAD_DIR]]: with CODE_DIR, IMAGE is a public image (TensorFlow,
# or a workload's own) and the payload is pip-installed from the fetched bundle when the container
# starts; WORKLOAD_DIR (the unpacked workload bundle) is mounted at @WORKLOAD_MOUNT@.
set -euo pipefail
image="$1"
code="${2:-}"
workload="${3:-}"
# The NVIDIA driver may still be installing at first boot (GCP DLVM install-nvidia-driver runs
# beside cloud-init): `docker run --gpus all` would fail and power the machine off without a
# result. Wait for it, bounded; if it never comes, docker fails loudly as before.
tries=0
until nvidia-smi -L >/dev/null 2>&1; do
  tries=$((tries + 1))
  if [ "$tries" -gt 90 ]; then
    echo "gpubench: no working NVIDIA driver after $((tries * 10)) s; starting the container anyway" >&2
    @LIB_DIR@/event.sh gpu_driver_missing "" "nvidia-smi failed for $((tries * 10)) s"
    break
  fi
  sleep 10
done
@LIB_DIR@/event.sh container_start "" "$image"
if [ -z "$code" ]; then
  exec docker run --rm --name gpubench-payload --gpus all --network host \
    --env-file @ENV_FILE@ -v @STATE_DIR@:@STATE_DIR@ "$image"
fi
# The bundle's install (code.env: CODE_INSTALL, CODE_EXTRA, CODE_BACKEND_PACKAGES), by
# install-payload.sh mounted into the container.
mode="$(sed -n 's/^CODE_INSTALL=//p' "$code.env")"
extra="$(sed -n 's/^CODE_EXTRA=//p' "$code.env")"
backend_packages="$(sed -n 's/^CODE_BACKEND_PACKAGES=//p' "$code.env")"
install="bash @INSTALL_MOUNT@ @BUNDLE_MOUNT@/gpubench ${mode:-package} $extra $backend_packages"
# An image without python3 >= 3.11 and pip cannot run the payload: say so before the unit ends.
refused="{ echo 'gpubench: could not install the payload into $image (see the error above): it needs python3 >= 3.11 with pip, docs/workloads.md' >&2; exit 1; }"
mounts=(-v "$code:@BUNDLE_MOUNT@" -v "@LIB_DIR@/install-payload.sh:@INSTALL_MOUNT@:ro")
if [ -n "$workload" ]; then
  mounts+=(-v "$workload:@WORKLOAD_MOUNT@")
fi
exec docker run --rm --name gpubench-payload --gpus all --network host \
  --env-file @ENV_FILE@ -v @STATE_DIR@:@STATE_DIR@ "${mounts[@]}" \
  --entrypoint /bin/bash "$image" -c "$install || $refused; exec python3 -m payload run"
