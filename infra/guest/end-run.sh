#!/bin/bash
# The end of a run, whatever ended it: after a failure copy the host's events to the bucket (the
# payload, which carries them into its result, may never have run), then end the machine the
# cloud's way (cloud.sh: end_machine).
# usage: end-run.sh REASON FAILED (1: upload the host's events first)
set -uo pipefail
reason="$1"
failed="${2:-1}"
mkdir @STATE_DIR@/ending 2>/dev/null || exit 0  # once, whichever path came first
@LIB_DIR@/event.sh shutdown_requested "" "$reason"
# shellcheck source=/dev/null
. @LIB_DIR@/cloud.sh
value() {
  sed -n "s/^$1=//p" @ENV_FILE@
}
if [ "$failed" = 1 ]; then
  results="$(value GPUBENCH_RESULTS)"
  stack="$(value GPUBENCH_STACK)"
  launch="$(value GPUBENCH_LAUNCH_ID)"
  region="$(value AWS_DEFAULT_REGION)"
  if [ -n "$region" ]; then
    export AWS_DEFAULT_REGION="$region"
  fi
  btime="$(awk '/^btime/ {print $2}' /proc/stat)"
  id="$(instance_id 2>/dev/null | tr -d '\n' | tr -c 'A-Za-z0-9.' '-')"
  # A run directory of its own, named as the payload names runs (payload.identity.make_run_id).
  run="${launch:+$launch-}$(date -u -d "@$btime" +%Y%m%dT%H%M%SZ)-${id:-host}-boot"
  url="${results%/}/runs/$stack/$run/events.jsonl"
  tries=0
  until upload @HOST_EVENTS@ "$url"; do
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ]; then
      echo "gpubench: could not upload the host's events to $url" >&2
      break
    fi
    sleep $((tries * 10))
  done
fi
end_machine
