#!/bin/bash
# Called after the payload unit stops, whatever the reason: record it and end the run.
set -uo pipefail
@LIB_DIR@/event.sh container_exit "" "result=${SERVICE_RESULT:-unknown} status=${EXIT_STATUS:-unknown}"
failed=0
if [ "${SERVICE_RESULT:-unknown}" != success ]; then
  failed=1
fi
exec @LIB_DIR@/end-run.sh "payload ended" "$failed"
