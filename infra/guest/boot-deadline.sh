#!/bin/bash
# GPUBENCH_DEADLINE=boot+<minutes>m -> RFC 3339 UTC, <minutes> after the kernel booted.
set -euo pipefail
value="$(sed -n 's/^GPUBENCH_DEADLINE=//p' @ENV_FILE@)"
case "$value" in
  boot+*m) minutes="${value#boot+}"; minutes="${minutes%m}" ;;
  *) exit 0 ;;
esac
btime="$(awk '/^btime/ {print $2}' /proc/stat)"
deadline="$(date -u -d "@$(( btime + minutes * 60 ))" +%Y-%m-%dT%H:%M:%SZ)"
sed -i "s/^GPUBENCH_DEADLINE=.*/GPUBENCH_DEADLINE=$deadline/" @ENV_FILE@
