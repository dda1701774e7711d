#!/bin/bash
# GCE: the VM's identity and token (metadata server), a create-only upload, and self-deletion.
# Sourced by end-run.sh.
md="http://${GCE_METADATA_HOST:-metadata.google.internal}/computeMetadata/v1"

metadata() {
  curl -sf --max-time 5 -H 'Metadata-Flavor: Google' "$md/$1"
}

token() {
  metadata instance/service-accounts/default/token | sed -n 's/.*"access_token" *: *"\([^"]*\)".*/\1/p'
}

instance_id() {
  metadata instance/id
}

# upload FILE gs://BUCKET/KEY: create only (ifGenerationMatch=0).
upload() {
  local rest="${2#gs://}"
  local bucket="${rest%%/*}"
  local key="${rest#*/}"
  local auth
  auth="$(token)" && [ -n "$auth" ] || return 1
  curl -sf --max-time 60 -X POST -H "Authorization: Bearer $auth" -H 'Content-Type: application/octet-stream' \
    --data-binary "@$1" \
    "https://storage.googleapis.com/upload/storage/v1/b/$bucket/o?uploadType=media&ifGenerationMatch=0&name=${key//\//%2F}" \
    >/dev/null
}

# Ask the Compute API to delete this VM (its service account may delete only this instance).
self_delete() {
  local name zone project auth try
  name="$(metadata instance/name)" && zone="$(metadata instance/zone)" && project="$(metadata project/project-id)" ||
    return 1
  zone="${zone##*/}"
  for try in 1 2 3 4 5; do
    if auth="$(token)" && [ -n "$auth" ] &&
      curl -sf --max-time 30 -X DELETE -H "Authorization: Bearer $auth" \
        "https://compute.googleapis.com/compute/v1/projects/$project/zones/$zone/instances/$name" >/dev/null; then
      return 0
    fi
    sleep $((try * 10))
  done
  return 1
}

end_machine() {
  if self_delete; then
    @LIB_DIR@/event.sh self_delete_requested
    sleep 300
  else
    @LIB_DIR@/event.sh self_delete_failed "" "powering off: the stopped VM keeps its disk until a sweep or teardown"
  fi
  systemctl --no-block poweroff
}
