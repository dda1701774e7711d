"""The detached wrapper script that runs on the host (wrapper.sh) and the scripts it runs.

POSIX sh (dash on Debian/Ubuntu). It records its own pid, which is also the
process group id because it is started with `setsid`, so the local side can
signal setup and payload together. When it ends, for any reason it can catch,
it writes `state.json`: `{"status": "exited" | "stopped", "exit_code", "phase"}`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from infra.ssh.layout import RunLayout
from infra.ssh.runtimes import Plan, shell_words


def wrapper(run: RunLayout) -> str:
    """run.sh: infra/ssh/wrapper.sh for this run's directory."""
    return Path(__file__).with_name("wrapper.sh").read_text().replace("@DIR@", shlex.quote(run.dir))


def setup_script(plan: Plan) -> str:
    return "#!/bin/sh\n# gpubench setup (runs detached before the payload)\n" + plan.setup + "\n"


def payload_script(plan: Plan) -> str:
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(plan.env.items()))
    return "#!/bin/sh\n# gpubench payload command\n" + env + "exec " + shell_words(plan.payload) + "\n"


def launch_command(run: RunLayout) -> str:
    """Start the wrapper in its own session, detached from this SSH channel."""
    d = shlex.quote(run.dir)
    return f"cd {d} && (setsid nohup sh run.sh > /dev/null 2>&1 < /dev/null &)"
