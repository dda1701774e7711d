#!/bin/sh
# One occurrence of a recurring gpubench campaign: a new campaign id, launch, wait, collect,
# tear down, report. Called by the systemd timer and usable from cron.
#
#   schedules/campaign/run.sh [SCHEDULE_FILE]     (default: schedules/campaign/weekly-spot.yaml)
#
# Environment (optional):
#   PYTHON                  interpreter with gpubench[infra,analysis] installed
#                           (default: .venv/bin/python of this checkout, else python3)
#   GPUBENCH_CAMPAIGN_ARGS  extra `campaign run` arguments, e.g. "--json"
set -u
cd "$(dirname "$0")/../.." || exit 2

if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
schedule="${1:-schedules/campaign/weekly-spot.yaml}"
# shellcheck disable=SC2086  # word splitting of the extra arguments is intended
exec "$PYTHON" -m analysis campaign run --schedule "$schedule" ${GPUBENCH_CAMPAIGN_ARGS:-}
