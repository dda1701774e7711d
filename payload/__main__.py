"""``python -m payload``: the container entrypoint (see payload.cli)."""

from payload.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
