#!/usr/bin/env bash
# deploy/check-no-stray-agents.sh [TARGET_DIR] [GRACE_SECS]
# Fails (exit 1, naming each) if, after GRACE_SECS (default 60) seconds, still running are:
# - a `hetpilot-agent` built in TARGET_DIR (default: this checkout's target/): a pilot
#   that outlived the test that started it;
# - a task of this checkout's tests: a process whose environment has the variables an agent
#   sets for its tasks (HETPILOT_TASK and HETPILOT_APP) and names this checkout (the
#   CARGO_MANIFEST_DIR the tests ran with, which agents pass on to tasks) or whose working
#   directory is in it: a task that outlived its agent.
# deploy/test-all.sh runs it after the tests. Processes are found through /proc (their
# executable, environment and working directory), never by name, so agents and tasks of
# other checkouts and installed ones are left alone.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
target=$(realpath -m "${1:-target}")
grace=${2:-60}

# Agents: their executable is in the target dir.
agents() {
  local d exe
  for d in /proc/[0-9]*; do
    exe=$(readlink "$d/exe" 2>/dev/null) || continue
    exe=${exe% (deleted)}
    case $exe in "$target"/*/hetpilot-agent) echo "${d#/proc/}" ;; esac
  done
}

# Tasks of this checkout (zombies are not running: their parent merely has not reaped them).
tasks() {
  local d kv env task app ours cwd state
  for d in /proc/[0-9]*; do
    { mapfile -d "" env <"$d/environ"; } 2>/dev/null || continue
    task='' app='' ours=''
    for kv in "${env[@]}"; do
      case $kv in
        HETPILOT_TASK=*) task=1 ;;
        HETPILOT_APP=*) app=1 ;;
        CARGO_MANIFEST_DIR="$root"/* | CARGO_MANIFEST_DIR="$root") ours=1 ;;
      esac
    done
    [ -n "$task" ] && [ -n "$app" ] || continue
    cwd=$(readlink "$d/cwd" 2>/dev/null)
    case $cwd in "$root" | "$root"/*) ours=1 ;; esac
    [ -n "$ours" ] || continue
    state=$(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -c1)
    [ "$state" = Z ] || echo "${d#/proc/}"
  done
}

deadline=$((SECONDS + grace))
left_agents=$(agents)
left_tasks=$(tasks)
while [ -n "$left_agents$left_tasks" ] && [ "$SECONDS" -lt "$deadline" ]; do
  sleep 1
  left_agents=$(agents)
  left_tasks=$(tasks)
done
[ -z "$left_agents$left_tasks" ] && exit 0
if [ -n "$left_agents" ]; then
  echo "error: $(echo "$left_agents" | wc -l) hetpilot-agent process(es) of $target outlived the tests:" >&2
  for pid in $left_agents; do
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
    pilot=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null \
      | grep -E '^(HETPILOT_PLATFORM|HETPILOT_PILOT|SLURM_JOB_ID)=' | tr '\n' ' ')
    echo "  pid $pid (up $(ps -o etimes= -p "$pid" | tr -d ' ') s): $cmd ${pilot:+[$pilot]}" >&2
  done
fi
if [ -n "$left_tasks" ]; then
  echo "error: $(echo "$left_tasks" | wc -l) task process(es) of $root's tests outlived their agents:" >&2
  for pid in $left_tasks; do
    cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
    task=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null \
      | grep -E '^(HETPILOT_TASK|HETPILOT_ATTEMPT)=' | tr '\n' ' ')
    cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null)
    echo "  pid $pid (up $(ps -o etimes= -p "$pid" | tr -d ' ') s, in $cwd): $cmd [$task]" >&2
  done
fi
exit 1
