#!/usr/bin/env bash
# deploy/check-no-stray-agents.sh [TARGET_DIR] [GRACE_SECS]
# Fails (exit 1, naming each) if a `hetpilot-agent` built in TARGET_DIR (default: this
# checkout's target/) is still running after GRACE_SECS (default 60) seconds: a pilot that
# outlived the test that started it. deploy/test-all.sh runs it after the tests. Processes
# are found through /proc (their executable), never by name, so agents of other checkouts
# and installed ones are left alone.
set -uo pipefail
cd "$(dirname "$0")/.."
target=$(realpath -m "${1:-target}")
grace=${2:-60}

strays() {
  local d exe
  for d in /proc/[0-9]*; do
    exe=$(readlink "$d/exe" 2>/dev/null) || continue
    exe=${exe% (deleted)}
    case $exe in "$target"/*/hetpilot-agent) echo "${d#/proc/}" ;; esac
  done
}

deadline=$((SECONDS + grace))
left=$(strays)
while [ -n "$left" ] && [ "$SECONDS" -lt "$deadline" ]; do
  sleep 1
  left=$(strays)
done
[ -z "$left" ] && exit 0
echo "error: $(echo "$left" | wc -l) hetpilot-agent process(es) of $target outlived the tests:" >&2
for pid in $left; do
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
  pilot=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null \
    | grep -E '^(HETPILOT_PLATFORM|HETPILOT_PILOT|SLURM_JOB_ID)=' | tr '\n' ' ')
  echo "  pid $pid (up $(ps -o etimes= -p "$pid" | tr -d ' ') s): $cmd ${pilot:+[$pilot]}" >&2
done
exit 1
