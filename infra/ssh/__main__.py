"""`python -m infra.ssh STACK ...`: the same command as `python -m infra ssh STACK ...`."""

import sys

from infra.ssh.cli import main

sys.exit(main())
