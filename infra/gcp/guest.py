"""What a GCE VM does at the end of a run, as shell functions for cloud-init (infra.cloud_init).

A VM that powers itself off is stopped, not deleted, and "the termination timestamp is automatically
cleared whenever a VM is stopped" (https://cloud.google.com/compute/docs/instances/limit-vm-runtime):
its disk would bill on. So it deletes itself with its service account's token from the metadata
server (https://cloud.google.com/compute/docs/metadata/predefined-metadata-keys,
https://cloud.google.com/compute/docs/access/authenticate-workloads#applications; GCE_METADATA_HOST
honoured, as Google's libraries do) through instances.delete
(https://cloud.google.com/compute/docs/reference/rest/v1/instances/delete), allowed on its own
instance only (component.self_delete_grant), and powers off if the deletion does not come.
`upload` is a create-only JSON API upload (`ifGenerationMatch=0`,
https://cloud.google.com/storage/docs/json_api/v1/objects/insert) with the same token.
"""

from __future__ import annotations

DELETE_WAIT_S = 300  # how long a VM whose deletion was accepted waits for it before powering off

SCRIPT = """#!/bin/bash
# GCE: the VM's identity and token (metadata server), a create-only upload, and self-deletion.
# Sourced by end-run.sh.
md="http://${{GCE_METADATA_HOST:-metadata.google.internal}}/computeMetadata/v1"

metadata() {{
  curl -sf --max-time 5 -H 'Metadata-Flavor: Google' "$md/$1"
}}

token() {{
  metadata instance/service-accounts/default/token | sed -n 's/.*"access_token" *: *"\\([^"]*\\)".*/\\1/p'
}}

instance_id() {{
  metadata instance/id
}}

# upload FILE gs://BUCKET/KEY: create only (ifGenerationMatch=0).
upload() {{
  local rest="${{2#gs://}}"
  local bucket="${{rest%%/*}}"
  local key="${{rest#*/}}"
  local auth
  auth="$(token)" && [ -n "$auth" ] || return 1
  curl -sf --max-time 60 -X POST -H "Authorization: Bearer $auth" -H 'Content-Type: application/octet-stream' \\
    --data-binary "@$1" \\
    "https://storage.googleapis.com/upload/storage/v1/b/$bucket/o?uploadType=media&ifGenerationMatch=0&name=${{key//\\//%2F}}" \\
    >/dev/null
}}

# Ask the Compute API to delete this VM (its service account may delete only this instance).
self_delete() {{
  local name zone project auth try
  name="$(metadata instance/name)" && zone="$(metadata instance/zone)" && project="$(metadata project/project-id)" ||
    return 1
  zone="${{zone##*/}}"
  for try in 1 2 3 4 5; do
    if auth="$(token)" && [ -n "$auth" ] &&
      curl -sf --max-time 30 -X DELETE -H "Authorization: Bearer $auth" \\
        "https://compute.googleapis.com/compute/v1/projects/$project/zones/$zone/instances/$name" >/dev/null; then
      return 0
    fi
    sleep $((try * 10))
  done
  return 1
}}

end_machine() {{
  if self_delete; then
    {lib}/event.sh self_delete_requested
    sleep {wait}
  else
    {lib}/event.sh self_delete_failed "" "powering off: the stopped VM keeps its disk until a sweep or teardown"
  fi
  systemctl --no-block poweroff
}}
"""


def script(lib_dir: str) -> str:
    """cloud.sh for a GCE VM (`lib_dir`: where event.sh is)."""
    return SCRIPT.format(lib=lib_dir, wait=DELETE_WAIT_S)
