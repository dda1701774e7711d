#!/bin/bash
# Append one host timeline event as a JSON line: gpubench-event NAME [ISO-TIME] [DETAIL]
set -euo pipefail
name="$1"
when="${2:-}"
detail="${3:-}"
if [ -z "$when" ]; then
  when="$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)"
fi
mkdir -p @STATE_DIR@
printf '{"event": "%s", "time": "%s", "source": "host", "detail": "%s"}\n' \
  "$name" "$when" "$detail" >> @HOST_EVENTS@
