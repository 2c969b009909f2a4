#!/bin/bash
# One dispatch run outside cargo, for A/B comparisons of two builds under a loaded
# machine: N `/bin/true` tasks through one agent of S slots, with the manager's and the
# agent's CPU per task (utime + stime from /proc) and, with PERFSTAT=FILE, their system
# calls, context switches and task-clock from `perf stat` (tracepoints and software
# events, which work without hardware counters).
#
#   bench-tools/dispatch_cpu.sh BIN_DIR N SLOTS     # BIN_DIR holds hetpilot, hetpilot-agent
#   PERFSTAT=/tmp/ab bench-tools/dispatch_cpu.sh target/release 10000 2
#   SCRAPE=1 bench-tools/dispatch_cpu.sh target/release 10000 2   # with /metrics and the dashboard's calls every 1 s
#
# Prints one line: secs, manager and agent CPU ms per task; the perf figures go to
# FILE.agent and FILE.manager.
set -euo pipefail
BIN=$1; N=$2; S=$3
D=$(mktemp -d)
# Port 0: the manager takes a free one and writes its URL (a random port could be taken).
"$BIN/hetpilot" serve --listen "127.0.0.1:0" --lease-timeout-secs 30 --data-dir "$D" \
  >/dev/null 2>"$D/manager.log" &
MPID=$!
while [ ! -s "$D/manager.url" ]; do
  kill -0 "$MPID" 2>/dev/null || { echo "the manager ended:" >&2; cat "$D/manager.log" >&2; exit 1; }
  sleep 0.05
done
URL=$(cat "$D/manager.url"); ADMIN=$(cat "$D/admin.token")
post() { curl -s -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' -d "$2" "$URL$1"; }
TOK=$(post /v1/agent-tokens '{"platform":"local"}' | jq -r .token)
HETPILOT_AGENT_TOKEN=$TOK "$BIN/hetpilot-agent" --manager "$URL" --platform local \
  --slots "$S" --work-dir "$D/agent" 2>"$D/agent.log" &
APID=$!
while ! grep -qs registered "$D/agent.log"; do sleep 0.05; done
STATS=()
if [ -n "${PERFSTAT:-}" ]; then
  EV=raw_syscalls:sys_enter,context-switches,task-clock
  perf stat --no-inherit -p "$APID" -e $EV -o "$PERFSTAT.agent" & STATS+=($!)
  perf stat --no-inherit -p "$MPID" -e $EV -o "$PERFSTAT.manager" & STATS+=($!)
  sleep 0.3
fi
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The agent's CPU with its spawn helper's (its child `hetpilot-spawn`, if the build has one).
acpu() {
  local t; t=$(cpu "$1")
  for h in $(pgrep -P "$1" -x hetpilot-spawn); do t=$((t + $(cpu "$h"))); done
  echo "$t"
}
# SCRAPE=SECS: meanwhile, every SECS, what Prometheus and one open dashboard tab ask for
# (/metrics, then the dashboard's /v1/apps, /v1/affinity and /v1/schedule).
SCRAPER=
if [ -n "${SCRAPE:-}" ]; then
  ( while :; do
      for p in /metrics /v1/apps /v1/affinity /v1/schedule; do
        curl -s -o /dev/null -H "Authorization: Bearer $ADMIN" "$URL$p"
      done
      sleep "$SCRAPE"
    done ) &
  SCRAPER=$!
fi
M0=$(cpu $MPID); A0=$(acpu $APID); T0=$(date +%s.%N)
APP=$(post /v1/apps "{\"name\":\"t\",\"command\":\"/bin/true\",\"tasks\":{\"array\":{\"start\":0,\"end\":$((N - 1))}}}" | jq -r .app)
until [ "$(curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/apps/$APP" | jq -r '.counts.done // 0')" = "$N" ]; do
  sleep 0.02
done
T1=$(date +%s.%N); M1=$(cpu $MPID); A1=$(acpu $APID)
if [ -n "$SCRAPER" ]; then kill "$SCRAPER"; wait "$SCRAPER" 2>/dev/null || true; fi
if [ ${#STATS[@]} -gt 0 ]; then kill -INT "${STATS[@]}"; wait "${STATS[@]}" || true; fi
HZ=$(getconf CLK_TCK)
echo "n=$N slots=$S secs=$(echo "$T1 - $T0" | bc)" \
  "manager_ms_per_task=$(echo "scale=4; ($M1 - $M0) * 1000 / $HZ / $N" | bc)" \
  "agent_ms_per_task=$(echo "scale=4; ($A1 - $A0) * 1000 / $HZ / $N" | bc)"
kill -TERM $APID $MPID; wait $APID $MPID 2>/dev/null || true
rm -rf "$D"
