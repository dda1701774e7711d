#!/bin/bash
# instance_launch is the kernel boot time (btime), which is earlier than cloud-init.
set -euo pipefail
btime="$(awk '/^btime/ {print $2}' /proc/stat)"
@LIB_DIR@/event.sh instance_launch "$(date -u -d "@$btime" +%Y-%m-%dT%H:%M:%SZ)"
