#!/bin/bash
# In-guest deadline behind the cloud-side one: at GPUBENCH_DEADLINE end the run the cloud's way
# (end-run.sh: a GCE VM deletes itself, since a stopped VM's max_run_duration never fires), and
# halt 10 minutes later if that did not end the machine.
set -euo pipefail
deadline="$(sed -n 's/^GPUBENCH_DEADLINE=//p' @ENV_FILE@)"
now="$(date -u +%s)"
end="$(date -u -d "$deadline" +%s)"
minutes=$(( (end - now) / 60 ))
if [ "$minutes" -lt 1 ]; then
  minutes=1
fi
systemd-run --unit gpubench-deadline --on-active="${minutes}m" @LIB_DIR@/end-run.sh "deadline $deadline" 1
shutdown -h "+$(( minutes + 10 ))" "gpubench deadline $deadline"
