#!/bin/bash
# Fetch the payload's code bundle from the results bucket, check its sha256, unpack it.
# usage: fetch-code.sh ENV_FILE DEST_DIR (ENV_FILE: CODE_URL=, CODE_SHA256=, cloud settings)
set -euo pipefail
env_file="$1"
dest="$2"
set -a
# shellcheck source=/dev/null
. "$env_file"
set +a
@COPY@
archive="$dest.tar.gz"
rm -f "$archive"
# A grant made by the same deployment may still be propagating (403): retry, bounded.
tries=0
delay=5
until copy "$CODE_URL" "$archive"; do
  tries=$((tries + 1))
  if [ "$tries" -ge @FETCH_TRIES@ ]; then
    echo "gpubench: could not copy $CODE_URL after $tries tries; not running anything" >&2
    @LIB_DIR@/event.sh code_fetch_failed "" "$CODE_URL after $tries tries"
    exit 1
  fi
  sleep "$delay"
  delay=$((delay * 2 > 60 ? 60 : delay * 2))
done
if ! echo "$CODE_SHA256  $archive" | sha256sum --check --status -; then
  echo "gpubench: $CODE_URL does not have sha256 $CODE_SHA256; not running it" >&2
  @LIB_DIR@/event.sh code_checksum_mismatch "" "$CODE_URL"
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$archive" -C "$dest" --no-same-owner
cp "$env_file" "$dest.env"
rm -f "$archive"
