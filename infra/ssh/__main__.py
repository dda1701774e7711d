"""`python -m infra.ssh STACK ...`: the same command as `python -m infra ssh STACK ...`, error boundary included."""

import sys

from infra.cli import main

sys.exit(main(["ssh", *sys.argv[1:]]))
