#!/usr/bin/env bash
# deploy/lab/stop.sh - stop what deploy/lab/start.sh started, by PID file (never by name).
# Jobs are cancelled first: slurmstepd and job processes outlive a killed slurmd.
#   --purge   also delete the lab's state, logs, config and ssh keys
set -uo pipefail
LAB=${HETPILOT_LAB:-/var/tmp/hetpilot-lab}
export SLURM_CONF=$LAB/etc/slurm.conf
PURGE=0
for a in "$@"; do
  case $a in --purge) PURGE=1 ;; *) echo "usage: $0 [--purge]" >&2; exit 2 ;; esac
done

alive() {
  local pid; pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
stop_pid() {
  alive "$1" "$2" || { rm -f "$1"; return 0; }
  local pid; pid=$(cat "$1")
  echo "stopping $2 (pid $pid)"
  kill "$pid" 2>/dev/null
  for _ in $(seq 100); do alive "$1" "$2" || break; sleep 0.1; done
  if alive "$1" "$2"; then echo "  $2 still alive after 10 s: SIGKILL"; kill -9 "$pid" 2>/dev/null; fi
  rm -f "$1"
}

if [ -f "$SLURM_CONF" ] && alive "$LAB/run/slurmctld.pid" slurmctld; then
  scancel --full -u root 2>/dev/null
  for _ in $(seq 150); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
fi
for pf in "$LAB"/run/slurmd-*.pid; do [ -e "$pf" ] && stop_pid "$pf" slurmd; done
stop_pid "$LAB/run/slurmctld.pid" slurmctld
stop_pid "$LAB/run/sshd.pid" sshd
stop_pid /run/munge/munged.pid munged
# leftover slurmstepd of this lab (found through /proc, killed by pid)
for d in /proc/[0-9]*; do
  [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
  if grep -qs "$LAB" "$d/environ" || [[ "$(readlink "$d/cwd" 2>/dev/null)" == "$LAB"* ]]; then
    echo "killing leftover slurmstepd ${d#/proc/}"; kill -9 "${d#/proc/}" 2>/dev/null
  fi
done
if [ "$PURGE" = 1 ]; then
  rm -rf "$LAB"/state "$LAB"/log "$LAB"/run "$LAB"/etc "$LAB"/ssh "$LAB"/env.sh
  echo "purged $LAB"
fi
echo "lab stopped"
