#!/bin/bash
# The peak RSS that `hetpilot report` shows for /bin/true and for a task that allocates
# 200 MiB, with the agent's own peak beside them (a task's peak must be its own,
# not floored at the agent's).
#
#   bench-tools/peak_rss.sh BIN_DIR      # BIN_DIR holds hetpilot, hetpilot-agent, hp-mem
set -euo pipefail
BIN=$1
D=$(mktemp -d)
PORT=$((20000 + RANDOM % 20000))
"$BIN/hetpilot" serve --listen "127.0.0.1:$PORT" --data-dir "$D" >/dev/null 2>"$D/manager.log" &
MPID=$!
while [ ! -s "$D/manager.url" ]; do sleep 0.05; done
export HETPILOT_URL; HETPILOT_URL=$(cat "$D/manager.url")
export HETPILOT_TOKEN; HETPILOT_TOKEN=$(cat "$D/admin.token")
TOK=$("$BIN/hetpilot" token agent --platform local 2>/dev/null)
HETPILOT_AGENT_TOKEN=$TOK "$BIN/hetpilot-agent" --manager "$HETPILOT_URL" --platform local \
  --slots 1 --work-dir "$D/agent" 2>"$D/agent.log" &
APID=$!
"$BIN/hetpilot" submit --array 1-3 -- /bin/true >/dev/null
"$BIN/hetpilot" submit --array 1-1 -- "$BIN/hp-mem" 200 1 >/dev/null
"$BIN/hetpilot" wait 1 >/dev/null
"$BIN/hetpilot" wait 2 >/dev/null
echo "agent $(grep VmHWM "/proc/$APID/status")"
echo "/bin/true: $("$BIN/hetpilot" report 1 | tail -1)"
echo "hp-mem 200: $("$BIN/hetpilot" report 2 | tail -1)"
kill $APID $MPID
wait 2>/dev/null || true
rm -rf "$D"
