#!/usr/bin/env bash
# deploy/lab/start.sh - bring up the local batch-system lab, idempotently, on one Debian 12
# host without systemd (run as root):
#   * munged, a Slurm 22.05 cluster on 127.0.0.1 with five slurmd pretending to be nodes:
#       partition debug (default) = n1 (8 CPUs), small = n2,n3 (2 CPUs each), big = n4 (32 CPUs),
#       gpu = n5 (4 CPUs, Gres=gpu:2)
#   * n5's two "GPUs": character devices $HETPILOT_LAB/dev/nvidia0,1 (195,N like the real
#     driver's) that gres.conf names, so Slurm itself grants them and sets
#     CUDA_VISIBLE_DEVICES; and a fake `nvidia-smi` ($HETPILOT_LAB/gpu/bin, put on a pilot's
#     PATH by profiles/platforms/lab-gpu.toml) that reports two devices
#   * the PBS/TORQUE layer: Debian's qsub/qstat/qdel wrappers, spank_pbs and a TaskProlog
#     that sets PBS_NODEFILE & co.
#   * an sshd on 127.0.0.1:$LAB_SSH_PORT with key-only root login (the "login host")
#   * bubblewrap, for the agent's task sandbox (`--sandbox bwrap`) and its tests
# Exits 0 only when every node is idle, a smoke job completed and ssh works.
#
# Knobs: HETPILOT_LAB (state root, default /var/tmp/hetpilot-lab), LAB_SSH_PORT (2222),
# CARGO_TARGET_DIR (where the agent binary is found, default <repo>/target).
# It writes $HETPILOT_LAB/manager.toml, a manager configuration whose platforms are the
# lab's Slurm partitions, and $HETPILOT_LAB/env.sh, which exports HETPILOT_CONFIG (that
# file, unless HETPILOT_CONFIG is already set) and exactly the variables the lab profiles (profiles/platforms/lab-*.toml) use.
# Afterwards: `. $HETPILOT_LAB/env.sh`. Teardown: deploy/lab/stop.sh.
# $HETPILOT_LAB/ssh/known_hosts lists the lab sshd's host key (as [127.0.0.1]:PORT and
# [localhost]:PORT), so the lab is used with strict host-key checking.
set -euo pipefail

LAB=${HETPILOT_LAB:-/var/tmp/hetpilot-lab}
SSH_PORT=${LAB_SSH_PORT:-2222}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
# The release agent (what the README builds), else a debug one if only that exists.
AGENT=$TARGET/release/hetpilot-agent
[ -x "$AGENT" ] || [ ! -x "$TARGET/debug/hetpilot-agent" ] || AGENT=$TARGET/debug/hetpilot-agent
CONF=$LAB/etc/slurm.conf
export SLURM_CONF=$CONF
T0=$(date +%s%N)
log() { printf '[lab %5dms] %s\n' $(( ($(date +%s%N) - T0) / 1000000 )) "$*"; }
die() { log "FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "the lab runs daemons as root: run me as root"

# alive PIDFILE COMM: a live, non-zombie process named COMM has the pid in PIDFILE
alive() {
  local pid; pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
stop_pid() {
  alive "$1" "$2" || return 0
  kill "$(cat "$1")" 2>/dev/null || true
  for _ in $(seq 100); do alive "$1" "$2" || return 0; sleep 0.1; done
  die "$2 (pid $(cat "$1")) does not stop"
}
# wait_for SECONDS COMMAND...: poll COMMAND every 0.1 s until it succeeds or time runs out
wait_for() {
  local end=$(( $(date +%s) + $1 )); shift
  until "$@"; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.1; done
}

# ------------------------------------------------------------------ packages
# chromium + chromium-driver: the dashboard's browser test (tests/tests/dashboard_browser.rs)
# openmpi-bin: the parallel-task MPI test (tests/tests/parallel_lab.rs, `mpirun.openmpi`)
PKGS="munge slurmctld slurmd slurm-client slurm-wlm-torque openssh-server openssh-client libssl-dev pkg-config bubblewrap chromium chromium-driver openmpi-bin"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing:$missing"
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then   # postinst must not start daemons (ssh on :22 ...)
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      --no-install-recommends $missing >/dev/null
  }
  # the package lists may be missing or stale: update once, only if the install fails
  apt_install 2>/dev/null || { apt-get -o DPkg::Lock::Timeout=300 update -qq && apt_install; } \
    || die "apt-get install$missing failed"
  [ "$made_policy" = 0 ] || rm -f /usr/sbin/policy-rc.d
  log "packages installed"
fi

# Open MPI takes over `mpirun`/`mpiexec` (higher priority); the lab's stay Slurm's torque
# wrappers, as before it was installed (its tests call `mpirun.openmpi`).
if [ -x /usr/bin/mpiexec.slurm ] && [ "$(readlink -f /usr/bin/mpirun)" != /usr/bin/mpiexec.slurm ]; then
  update-alternatives --quiet --set mpirun /usr/bin/mpiexec.slurm
fi

mkdir -p "$LAB"/{etc,state/ctld,state/d,state/pbs,log,run,ssh,pilots,manager,dev,gpu/bin}
chmod 700 "$LAB/ssh" "$LAB/pilots" "$LAB/manager"

# ------------------------------------------------------------------ munge
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
if [ ! -s /etc/munge/munge.key ]; then
  mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key
fi
mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
if ! munge_ok; then
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged
  wait_for 10 munge_ok || die "munged does not answer"
fi

# ------------------------------------------------------------------ slurm config
H=$(hostname -s)
NODES=(n1 n2 n3 n4 n5)
NEW=$(cat <<EOF
# generated by deploy/lab/start.sh
ClusterName=lab
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CommunicationParameters=NoInAddrAny
StateSaveLocation=$LAB/state/ctld
SlurmdSpoolDir=$LAB/state/d/%n
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd-%n.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
# cgroup proctrack fails on this kernel setup; config_overrides lets 2 cores pose as 8+
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
# end states of jobs gone from squeue/qstat: sacct -c
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB/log/jobcomp.txt
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
GresTypes=gpu
KillWait=5
PlugStackConfig=$LAB/etc/plugstack.conf
TaskProlog=$LAB/etc/taskprolog.sh
NodeName=n1 NodeHostname=$H NodeAddr=127.0.0.1 Port=17001 CPUs=8 RealMemory=8192
NodeName=n[2-3] NodeHostname=$H NodeAddr=127.0.0.1 Port=[17002-17003] CPUs=2 RealMemory=4096
NodeName=n4 NodeHostname=$H NodeAddr=127.0.0.1 Port=17004 CPUs=32 RealMemory=16384
NodeName=n5 NodeHostname=$H NodeAddr=127.0.0.1 Port=17005 CPUs=4 RealMemory=4096 Gres=gpu:2
PartitionName=debug Nodes=n1 Default=YES MaxTime=INFINITE State=UP
PartitionName=small Nodes=n[2-3] MaxTime=INFINITE State=UP
PartitionName=big Nodes=n4 MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=n5 MaxTime=INFINITE State=UP
EOF
)
# n5's GPUs: device nodes like the NVIDIA driver's (major 195), which gres.conf hands out.
for i in 0 1; do
  dev=$LAB/dev/nvidia$i
  [ -c "$dev" ] || { rm -f "$dev"; mknod -m 666 "$dev" c 195 "$i"; }
done
NEWGRES="NodeName=n5 Name=gpu File=$LAB/dev/nvidia[0-1]"
# A fake nvidia-smi for the lab's pilots: two devices, whatever the job was granted (as
# the real one, which ignores CUDA_VISIBLE_DEVICES). Answers `-L` and
# `--query-gpu=FIELDS --format=csv[,noheader][,nounits]`.
cat > "$LAB/gpu/bin/nvidia-smi" <<'EOF'
#!/bin/sh
# generated by deploy/lab/start.sh: the lab's fake nvidia-smi (two devices)
field() { # field NAME INDEX UNITS
  case "$1" in
    index) echo "$2" ;;
    uuid|gpu_uuid) echo "GPU-1ab0d000-0000-4000-8000-00000000000$2" ;;
    name|gpu_name) echo "NVIDIA Lab Fake 16GB" ;;
    memory.total) if [ "$3" = 1 ]; then echo 16384; else echo "16384 MiB"; fi ;;
    memory.used) if [ "$3" = 1 ]; then echo 0; else echo "0 MiB"; fi ;;
    pci.bus_id) echo "00000000:0$2:00.0" ;;
    driver_version) echo "550.54.15" ;;
    *) echo "Field \"$1\" is not a valid field to query." >&2; exit 2 ;;
  esac
}
query="" header=1 units=0
for a in "$@"; do
  case "$a" in
    -L|--list-gpus) for i in 0 1; do echo "GPU $i: $(field name "$i" 0) (UUID: $(field uuid "$i" 0))"; done; exit 0 ;;
    --query-gpu=*) query=${a#--query-gpu=} ;;
    --format=*) case "$a" in *noheader*) header=0;; esac; case "$a" in *nounits*) units=1;; esac ;;
  esac
done
[ -n "$query" ] || { echo "lab fake nvidia-smi: use -L or --query-gpu=... --format=csv" >&2; exit 2; }
fields=$(echo "$query" | tr ',' ' ')
[ "$header" = 0 ] || echo "$query" | sed 's/,/, /g'
for i in 0 1; do
  line=""
  for f in $fields; do v=$(field "$f" "$i" "$units") || exit 2; line="${line:+$line, }$v"; done
  echo "$line"
done
EOF
chmod 755 "$LAB/gpu/bin/nvidia-smi"
echo "required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pbs.so" > "$LAB/etc/plugstack.conf"
# TaskProlog: every "export NAME=VALUE" it prints enters the task's environment.
cat > "$LAB/etc/taskprolog.sh" <<EOF
#!/bin/sh
[ -n "\$SLURM_JOB_ID" ] || exit 0
f=$LAB/state/pbs/nodefile.\$SLURM_JOB_ID
if [ ! -s "\$f" ]; then
  # TORQUE style: one line per task slot; SLURM_TASKS_PER_NODE looks like "3,1" or "2(x2)"
  scontrol show hostnames "\$SLURM_JOB_NODELIST" > "\$f.h" 2>/dev/null
  echo "\${SLURM_TASKS_PER_NODE:-1}" | tr ',' '\n' | while read c; do
    n=\${c%%(*}; r=1; case "\$c" in *x*) r=\${c#*x}; r=\${r%)};; esac
    i=0; while [ \$i -lt \$r ]; do echo \$n; i=\$((i+1)); done
  done > "\$f.c"
  paste "\$f.h" "\$f.c" | while read h n; do
    i=0; while [ \$i -lt \${n:-1} ]; do echo \$h; i=\$((i+1)); done
  done > "\$f.tmp"
  mv "\$f.tmp" "\$f"; rm -f "\$f.h" "\$f.c"
fi
echo "export PBS_NODEFILE=\$f"
echo "export PBS_ENVIRONMENT=PBS_BATCH"
echo "export PBS_O_HOST=\$SLURM_SUBMIT_HOST"
echo "export PBS_QUEUE=\$SLURM_JOB_PARTITION"
EOF
chmod 755 "$LAB/etc/taskprolog.sh"

conf_changed=0
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$NEW" ]; then
  conf_changed=1
  printf '%s\n' "$NEW" > "$CONF"
fi
if [ ! -f "$LAB/etc/gres.conf" ] || [ "$(cat "$LAB/etc/gres.conf")" != "$NEWGRES" ]; then
  conf_changed=1
  printf '%s\n' "$NEWGRES" > "$LAB/etc/gres.conf"
fi

# env.sh exports what the lab profiles use (${VAR} in profiles/platforms/lab-*.toml; a
# test in manager/src/provision/catalog.rs keeps the two in step), the manager's
# configuration and Slurm's. HETPILOT_CONFIG is set only when unset, so sourcing env.sh keeps
# a configuration of one's own (the lab's is $LAB/manager.toml).
cat > "$LAB/env.sh" <<EOF
# generated by deploy/lab/start.sh: \`. $LAB/env.sh\` to use the lab from a shell.
export HETPILOT_LAB=$LAB
export SLURM_CONF=$CONF
# HETPILOT_CONFIG is kept when already set; unset it first to use the lab's manager.toml.
export HETPILOT_CONFIG=\${HETPILOT_CONFIG:-$LAB/manager.toml}
export HETPILOT_AGENT_BINARY=\${HETPILOT_AGENT_BINARY:-$AGENT}
export HETPILOT_LAB_DIR=$LAB/pilots
export HETPILOT_LAB_KEY=$LAB/ssh/id_ed25519
export HETPILOT_LAB_KNOWN_HOSTS=$LAB/ssh/known_hosts
export HETPILOT_LAB_GPU_BIN=$LAB/gpu/bin
export LAB_SSH_PORT=$SSH_PORT
LAB_SSH_OPTS="-p $SSH_PORT -i $LAB/ssh/id_ed25519 -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$LAB/ssh/known_hosts -o LogLevel=ERROR"
EOF

# A ready manager configuration for the lab (rewritten on every start).
cat > "$LAB/manager.toml" <<EOF
# generated by deploy/lab/start.sh (rewritten on every start): a manager for the local lab.
# After \`. $LAB/env.sh\` (HETPILOT_CONFIG names this file):
#   hetpilot platforms check     # asks Slurm about each partition
#   hetpilot serve &             # pilots are submitted once work waits
#   hetpilot submit --array 1-200 -- sleep 1; hetpilot status; hetpilot pilots
listen = "127.0.0.1:8470"
data_dir = "$LAB/manager"
[provision]
interval_secs = 2
backoff_base_secs = 2
backoff_max_secs = 60
# The lab's Slurm partitions; lab-pbs, lab-torque, lab-ssh and lab-ssh-slurm (same
# directory) share their nodes and can be added the same way, and so can lab-gpu (the
# partition gpu: node n5 with two fake GPUs).
[[platforms]]
name = "lab-debug"
profile = "$REPO/profiles/platforms/lab-debug.toml"
[[platforms]]
name = "lab-small"
profile = "$REPO/profiles/platforms/lab-small.toml"
[[platforms]]
name = "lab-big"
profile = "$REPO/profiles/platforms/lab-big.toml"
EOF

# ------------------------------------------------------------------ slurm daemons
if [ "$conf_changed" = 1 ]; then
  for n in "${NODES[@]}"; do stop_pid "$LAB/run/slurmd-$n.pid" slurmd; done
  stop_pid "$LAB/run/slurmctld.pid" slurmctld
  rm -rf "$LAB"/state/ctld/*
  # Job ids start again without the controller's state: the TORQUE node files cached by
  # job id would then belong to other jobs.
  rm -f "$LAB"/state/pbs/nodefile.*
  log "slurm.conf written"
fi
if ! alive "$LAB/run/slurmctld.pid" slurmctld; then
  log "starting slurmctld"
  slurmctld -f "$CONF" || die "slurmctld failed (see $LAB/log/slurmctld.log)"
fi
ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
wait_for 15 ctld_up || die "slurmctld does not answer (see $LAB/log/slurmctld.log)"
for n in "${NODES[@]}"; do
  mkdir -p "$LAB/state/d/$n"
  if ! alive "$LAB/run/slurmd-$n.pid" slurmd; then
    log "starting slurmd $n"
    slurmd -f "$CONF" -N "$n" || die "slurmd $n failed (see $LAB/log/slurmd-$n.log)"
  fi
done

# ------------------------------------------------------------------ sshd
[ -s "$LAB/ssh/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$LAB/ssh/ssh_host_ed25519_key"
[ -s "$LAB/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C hetpilot-lab -f "$LAB/ssh/id_ed25519"
cp "$LAB/ssh/id_ed25519.pub" "$LAB/ssh/authorized_keys"
chmod 600 "$LAB/ssh/authorized_keys"
# Clients check the lab host's key strictly: list it under the names they use.
host_key=$(cut -d' ' -f1,2 "$LAB/ssh/ssh_host_ed25519_key.pub")
printf '[127.0.0.1]:%s %s\n[localhost]:%s %s\n' "$SSH_PORT" "$host_key" "$SSH_PORT" "$host_key" \
  > "$LAB/ssh/known_hosts.new"
chmod 600 "$LAB/ssh/known_hosts.new"
mv "$LAB/ssh/known_hosts.new" "$LAB/ssh/known_hosts"
NEWSSHD=$(cat <<EOF
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $LAB/ssh/ssh_host_ed25519_key
PidFile $LAB/run/sshd.pid
AuthorizedKeysFile $LAB/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv SLURM_CONF=$CONF
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
)
if [ ! -f "$LAB/ssh/sshd_config" ] || [ "$(cat "$LAB/ssh/sshd_config")" != "$NEWSSHD" ]; then
  printf '%s\n' "$NEWSSHD" > "$LAB/ssh/sshd_config"
  stop_pid "$LAB/run/sshd.pid" sshd
fi
mkdir -p /run/sshd && chmod 755 /run/sshd
if ! alive "$LAB/run/sshd.pid" sshd; then
  log "starting sshd on 127.0.0.1:$SSH_PORT"
  /usr/sbin/sshd -t -f "$LAB/ssh/sshd_config" || die "bad sshd_config"
  /usr/sbin/sshd -f "$LAB/ssh/sshd_config" -E "$LAB/log/sshd.log" || die "sshd failed (see $LAB/log/sshd.log)"
fi

# ------------------------------------------------------------------ health checks
all_idle() { [ "$(sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')" = "idle " ]; }
wait_for 20 all_idle || { sinfo -N >&2; die "nodes are not all idle (see $LAB/log/slurmd-*.log)"; }
log "nodes idle: $(sinfo -h -N -o '%N' | sort -u | tr '\n' ' ')"

jid=$(cd "$LAB/state" && sbatch --parsable -o /dev/null -t 1 \
      --wrap 'test -n "$PBS_JOBID" && test -s "$PBS_NODEFILE"' 2>&1) || die "smoke submit failed: $jid"
job_state() { scontrol show job -o "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
job_done() { case "$(job_state)" in PENDING|RUNNING|CONFIGURING|COMPLETING|"") return 1;; esac; }
wait_for 30 job_done || die "smoke job $jid did not finish (state '$(job_state)')"
[ "$(job_state)" = COMPLETED ] || die "smoke job $jid ended as $(job_state) (see $LAB/log/slurmd-n1.log)"
log "smoke job $jid COMPLETED"
# The gpu partition: Slurm grants n5's two devices and says so in CUDA_VISIBLE_DEVICES.
gjid=$(cd "$LAB/state" && sbatch --parsable -o /dev/null -t 1 -p gpu --gres=gpu:2 \
       --export=ALL,PATH="$LAB/gpu/bin:$PATH" \
       --wrap 'test "$CUDA_VISIBLE_DEVICES" = 0,1 && test "$(nvidia-smi -L | wc -l)" = 2' \
       2>&1) || die "gpu smoke submit failed: $gjid"
gjob_state() { scontrol show job -o "$gjid" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
gjob_done() { case "$(gjob_state)" in PENDING|RUNNING|CONFIGURING|COMPLETING|"") return 1;; esac; }
wait_for 30 gjob_done || die "gpu smoke job $gjid did not finish (state '$(gjob_state)')"
[ "$(gjob_state)" = COMPLETED ] || die "gpu smoke job $gjid ended as $(gjob_state) (see $LAB/log/slurmd-n5.log)"
log "gpu smoke job $gjid COMPLETED (CUDA_VISIBLE_DEVICES=0,1 from gres.conf)"
wait_for 10 all_idle || die "nodes did not return to idle after the smoke job"

# shellcheck disable=SC1091
. "$LAB/env.sh"
ssh_ok() { [ "$(ssh $LAB_SSH_OPTS root@127.0.0.1 'echo ssh-ok' 2>/dev/null)" = ssh-ok ]; }
wait_for 10 ssh_ok || die "ssh root@127.0.0.1:$SSH_PORT fails (see $LAB/log/sshd.log)"
log "ssh ok (root@127.0.0.1:$SSH_PORT, key $HETPILOT_LAB_KEY)"
log "lab ready: . $LAB/env.sh"
