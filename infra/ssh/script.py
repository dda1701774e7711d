"""The detached wrapper script that runs on the host.

POSIX sh (dash on Debian/Ubuntu). It records its own pid, which is also the
process group id because it is started with `setsid`, so the local side can
signal setup and payload together. When it ends, for any reason it can catch,
it writes `state.json`: `{"status": "exited" | "stopped", "exit_code", "phase"}`.
"""

from __future__ import annotations

import shlex

from infra.ssh.layout import RunLayout
from infra.ssh.runtimes import Plan, shell_words

WRAPPER = r"""#!/bin/sh
# gpubench SSH run wrapper, written by `python -m infra ssh`. Safe to read; do not edit.
cd {dir} || exit 1
echo $$ > pid.tmp && mv pid.tmp pid
stopped=0
child=
trap 'stopped=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
now() {{ t=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ); case $t in *N*) date -u +%Y-%m-%dT%H:%M:%SZ ;; *) echo "$t" ;; esac; }}
event() {{ printf '{{"event": "%s", "time": "%s"}}\n' "$1" "$(now)" >> host/events.jsonl; }}
finish() {{
  printf '{{"status": "%s", "exit_code": %s, "phase": "%s", "finished_at": "%s"}}\n' "$1" "$2" "$3" "$(now)" > state.json.tmp
  mv state.json.tmp state.json
  exit 0
}}
step() {{
  phase=$1; shift
  "$@" >> log 2>&1 < /dev/null &
  child=$!
  # wait returns early when a trapped signal arrives; wait again until the child is gone
  while :; do wait "$child"; rc=$?; kill -0 "$child" 2>/dev/null || break; done
  child=
  [ "$stopped" = 1 ] && finish stopped "$rc" "$phase"
  [ "$rc" = 0 ] || finish exited "$rc" "$phase"
}}
event ssh_run_start
step setup sh setup.sh
event payload_start
step payload sh payload.sh
event payload_end
finish exited 0 payload
"""


def wrapper(run: RunLayout) -> str:
    return WRAPPER.format(dir=shlex.quote(run.dir))


def setup_script(plan: Plan) -> str:
    return "#!/bin/sh\n# gpubench setup (runs detached before the payload)\n" + plan.setup + "\n"


def payload_script(plan: Plan) -> str:
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(plan.env.items()))
    return "#!/bin/sh\n# gpubench payload command\n" + env + "exec " + shell_words(plan.payload) + "\n"


def launch_command(run: RunLayout) -> str:
    """Start the wrapper in its own session, detached from this SSH channel."""
    d = shlex.quote(run.dir)
    return f"cd {d} && (setsid nohup sh run.sh > /dev/null 2>&1 < /dev/null &)"
