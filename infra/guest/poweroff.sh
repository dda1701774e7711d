#!/bin/bash
# OnFailure= path: end the run even if the ExecStopPost hook could not run.
set -uo pipefail
exec @LIB_DIR@/end-run.sh "payload unit failed" 1
