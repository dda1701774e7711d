"""Where a run lives on the host: `<remoteDir>/runs/<stack>/<run-id>/`, everything the local side
needs to pick it up again (launch record, wrapper pid = process group, log, state, a `file://` bucket);
`fetched.json` appears once the local side has uploaded the results."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from payload.timestamps import stamp

FILES = {
    "record": "run.json",  # launch record (stack, runtime, command, started_at)
    "wrapper": "run.sh",  # detached wrapper: setup, payload, state
    "setup": "setup.sh",
    "payload": "payload.sh",
    "pid": "pid",  # wrapper pid == process group id
    "log": "log",  # setup + payload output
    "state": "state.json",  # written by the wrapper when it ends
    "fetched": "fetched.json",  # written by the local side after upload
}


def new_run_id(now: float | None = None) -> str:
    """UTC time plus a random suffix: sortable, unique per launch."""
    return stamp(now) + "-" + secrets.token_hex(3)


@dataclass(frozen=True)
class RunLayout:
    root: str  # resolved remote dir, e.g. /home/me/.gpubench
    stack: str
    run_id: str

    @property
    def dir(self) -> str:
        return f"{self.root}/runs/{self.stack}/{self.run_id}"

    # the run's file:// bucket, the payload's spool, the host's events
    results = property(lambda self: f"{self.dir}/results")
    spool = property(lambda self: f"{self.dir}/spool")
    host = property(lambda self: f"{self.dir}/host")

    @property
    def container_name(self) -> str:
        return re.sub(r"[^a-zA-Z0-9_.-]", "-", f"gpubench-{self.stack}-{self.run_id}")[:120]

    def path(self, name: str) -> str:
        return f"{self.dir}/{FILES[name]}"
