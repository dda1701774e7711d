#!/bin/sh
# gpubench scheduled teardown job (teardown layers 3 and 4, docs/architecture.md):
# sweep leaked instances past their expires-at, then destroy expired stacks.
# Both steps always run; the exit status is non-zero when either failed.
#
# Environment (all optional):
#   PYTHON                     interpreter with gpubench[analysis] installed
#                              (default: .venv/bin/python of this checkout, else python3)
#   GPUBENCH_SWEEP_PROVIDERS   space-separated clouds to sweep (default: aws)
#   GPUBENCH_SWEEP_ARGS        extra `sweep` arguments, e.g. "--region us-east-1 --json"
#   GPUBENCH_TEARDOWN_ARGS     extra `teardown` arguments, e.g. "--completed --json"
set -u
cd "$(dirname "$0")/.." || exit 2

if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

status=0
for provider in ${GPUBENCH_SWEEP_PROVIDERS:-aws}; do
  # shellcheck disable=SC2086  # word splitting of the extra arguments is intended
  "$PYTHON" -m analysis sweep --yes --provider "$provider" ${GPUBENCH_SWEEP_ARGS:-} || status=1
done
# shellcheck disable=SC2086
"$PYTHON" -m analysis teardown --yes --expired ${GPUBENCH_TEARDOWN_ARGS:-} || status=1
exit "$status"
