#!/bin/sh
# gpubench SSH run wrapper, written by `python -m infra ssh`. Safe to read; do not edit.
cd @DIR@ || exit 1
echo $$ > pid.tmp && mv pid.tmp pid
stopped=0
child=
trap 'stopped=1; [ -n "$child" ] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
now() { t=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ); case $t in *N*) date -u +%Y-%m-%dT%H:%M:%SZ ;; *) echo "$t" ;; esac; }
event() { printf '{"event": "%s", "time": "%s"}\n' "$1" "$(now)" >> host/events.jsonl; }
finish() {
  printf '{"status": "%s", "exit_code": %s, "phase": "%s", "finished_at": "%s"}\n' "$1" "$2" "$3" "$(now)" > state.json.tmp
  mv state.json.tmp state.json
  exit 0
}
step() {
  phase=$1; shift
  "$@" >> log 2>&1 < /dev/null &
  child=$!
  # wait returns early when a trapped signal arrives; wait again until the child is gone
  while :; do wait "$child"; rc=$?; kill -0 "$child" 2>/dev/null || break; done
  child=
  [ "$stopped" = 1 ] && finish stopped "$rc" "$phase"
  [ "$rc" = 0 ] || finish exited "$rc" "$phase"
}
event ssh_run_start
step setup sh setup.sh
event payload_start
step payload sh payload.sh
event payload_end
finish exited 0 payload
