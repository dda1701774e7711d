"""``python -m payload``: the container entrypoint (see payload.cli)."""

import sys

from payload.cli import main

if __name__ == "__main__":
    sys.exit(main())
