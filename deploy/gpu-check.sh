#!/usr/bin/env bash
# The real-GPU check: on a machine with NVIDIA GPUs (and their driver), starts a manager
# and agents on 127.0.0.1 from the given binaries and checks, end to end, that
#   1. the agent's detection (NVML) matches `nvidia-smi --query-gpu=name,memory.total,uuid`
#      (the comparison is the agent's own, unit-tested: `hetpilot-agent gpus --check-nvidia-smi`);
#   2. each `--gpus 1` task's environment names exactly its own device, a different one per
#      task, and a CPU-only task sees none;
#   3. under `--sandbox bwrap` a task's /dev holds only its device's file (plus the
#      driver's control files), and nvidia-smi inside the sandbox lists only that GPU;
#   4. `--gpus 0.5` tasks, two per device, run together and share the devices two by two;
#   5. where python3 has PyTorch with CUDA, a real CUDA program in a `--gpus 1` task (in the
#      sandbox when bwrap is there) sees exactly one device, its own by UUID, and computes
#      on it, while a CPU-only task's CUDA sees no device.
# It ends with one verdict line: `GPU CHECK PASS ...` or `GPU CHECK FAIL: reason`.
#
# Usage: deploy/gpu-check.sh [--rehearse] PATH/TO/hetpilot PATH/TO/hetpilot-agent
# (build them with `cargo build --release --bins` on a machine of the same architecture).
# `--rehearse` runs the same steps where there is no GPU, against a fake `nvidia-smi` on
# PATH (the test suite does, so the check keeps up with the CLI): detection may come from
# nvidia-smi instead of NVML, the sandbox case is skipped (there are no device files), and
# the verdict says REHEARSAL.
set -uo pipefail

rehearse=false
if [ "${1:-}" = --rehearse ]; then
    rehearse=true
    shift
fi

fail() {
    local log
    # What the manager and agents said last, before the work dir goes: the reason is often there.
    for log in "${work:-/nonexistent}"/*.log; do
        [ -f "$log" ] || continue
        echo "--- last lines of $(basename "$log")"
        tail -5 "$log"
    done
    echo "GPU CHECK FAIL: $*"
    exit 1
}

[ $# -eq 2 ] || fail "usage: $0 [--rehearse] PATH/TO/hetpilot PATH/TO/hetpilot-agent"
hetpilot=$(realpath "$1") || fail "no manager binary at $1"
agent=$(realpath "$2") || fail "no agent binary at $2"
if [ ! -x "$hetpilot" ] || [ ! -x "$agent" ]; then fail "$1 and $2 must be executable"; fi
command -v nvidia-smi >/dev/null || fail "nvidia-smi is not on PATH: this check needs an NVIDIA GPU and its driver"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The batch system's grant does not apply here: the check uses every GPU of the machine.
unset CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES SLURM_JOB_GPUS SLURM_STEP_GPUS PBS_GPUFILE

# 1. Detection, compared with nvidia-smi by the agent itself.
"$agent" gpus --check-nvidia-smi >"$work/gpus" 2>"$work/gpus.err" ||
    fail "detection differs from nvidia-smi: $(grep -E 'difference|error' "$work/gpus.err" | tr '\n' ';')"
$rehearse || grep -q "from nvml" "$work/gpus.err" ||
    fail "the agent did not use NVML ($(tr '\n' ' ' <"$work/gpus.err"))"
uuids=()
nodes=()
while read -r _index uuid vendor node _rest; do
    [ "$vendor" = nvidia ] || continue
    uuids+=("$uuid")
    nodes+=("$node")
done <"$work/gpus"
n=${#uuids[@]}
[ "$n" -gt 0 ] || fail "the agent found no NVIDIA GPU"
echo "detection: $n GPU(s) match nvidia-smi: ${uuids[*]}"

# The manager, on a port unlikely to be taken (it says so in its log if it is).
mkdir -p "$work/manager"
port=$((20000 + RANDOM % 20000))
"$hetpilot" serve --listen "127.0.0.1:$port" --data-dir "$work/manager" >"$work/manager.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
    [ -s "$work/manager/manager.url" ] && [ -s "$work/manager/admin.token" ] && break
    sleep 0.1
done
[ -s "$work/manager/manager.url" ] || fail "the manager did not start: $(tail -3 "$work/manager.log")"
HETPILOT_URL=$(cat "$work/manager/manager.url")
HETPILOT_TOKEN=$(cat "$work/manager/admin.token")
export HETPILOT_URL HETPILOT_TOKEN

# start_agent NAME SLOTS [FLAGS...]: an agent of platform `local` with its own work dir,
# once it has registered its GPUs (the manager refuses GPU work no agent offers GPUs for).
start_agent() {
    local name=$1 slots=$2
    shift 2
    local token
    token=$("$hetpilot" token agent --platform local 2>/dev/null) || fail "cannot make an agent token"
    mkdir -p "$work/$name"
    HETPILOT_AGENT_TOKEN=$token "$agent" --manager "$HETPILOT_URL" --platform local \
        --slots "$slots" --work-dir "$work/$name" "$@" 2>"$work/$name.log" &
    pids+=($!)
    for _ in $(seq 300); do
        # `hetpilot agents` is a table whose STATE and GPUS ("2 (0 in use)") columns are
        # found by their headers.
        "$hetpilot" agents 2>/dev/null |
            awk -v n="$n" '
                NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "STATE") s = i; if ($i == "GPUS") g = i }; next }
                s && g && $s == "active" && $g == n { found = 1 }
                END { exit !found }' && return
        sleep 0.1
    done
    fail "agent $name did not register its $n GPU(s): $(tail -3 "$work/$name.log" | tr '\n' ' ')"
}

# stop_last_agent: stops the agent started last, so the next case gets a fresh one.
stop_last_agent() {
    local last=$((${#pids[@]} - 1))
    kill "${pids[$last]}" 2>/dev/null
    wait "${pids[$last]}" 2>/dev/null
    unset "pids[$last]"
}

# value KEY FILE: the value of a `KEY=VALUE` line a task printed.
value() {
    grep -m1 "^$1=" "$2" | cut -d= -f2-
}

# task_outputs AGENT_DIR: the stdout files of the tasks that agent ran.
task_outputs() {
    find "$work/$1" -name 'task-*.out' | sort
}

# submit ARGS...: submits and waits; fails the check if the application failed.
submit() {
    "$hetpilot" submit --wait "$@" >"$work/submit.out" 2>&1 ||
        fail "submit ${*:1:3} failed: $(tail -3 "$work/submit.out" | tr '\n' ' ')"
}

# The task's own shell expands these, not this one.
# shellcheck disable=SC2016
show='echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; echo HETPILOT_GPUS=$HETPILOT_GPUS; echo HETPILOT_GPU_SHARE=$HETPILOT_GPU_SHARE; echo DEV=$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " "); echo SMI=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | tr "\n" " ")'

# 2. One whole GPU per task, all at once: each sees exactly one device, none the same.
start_agent whole "$n"
submit --gpus 1 --array "0-$((n - 1))" -- sh -c "$show"
seen=()
for out in $(task_outputs whole); do
    cvd=$(value CUDA_VISIBLE_DEVICES "$out")
    [[ " ${uuids[*]} " == *" $cvd "* ]] || fail "a gpus=1 task saw CUDA_VISIBLE_DEVICES='$cvd', not one of the GPUs"
    [[ " ${seen[*]} " != *" $cvd "* ]] || fail "two gpus=1 tasks both saw $cvd"
    seen+=("$cvd")
done
[ "${#seen[@]}" -eq "$n" ] || fail "$n gpus=1 tasks, ${#seen[@]} reports"
submit --array 0-0 -- sh -c "$show"
cpu_out=$(task_outputs whole | while read -r f; do grep -q '^HETPILOT_GPUS=$' "$f" && echo "$f"; done | head -1)
if [ -z "$cpu_out" ] || [ -n "$(value CUDA_VISIBLE_DEVICES "$cpu_out")" ]; then
    fail "a CPU-only task saw a GPU"
fi
stop_last_agent
echo "binding: $n gpus=1 task(s) each saw their own device; a CPU task saw none"

# 3. The same under bubblewrap: the sandbox's /dev has only the task's device file.
sandbox="bwrap not installed: sandbox case skipped"
if $rehearse; then
    sandbox="rehearsal: sandbox case skipped"
elif command -v bwrap >/dev/null; then
    start_agent sandboxed "$n" --sandbox bwrap
    submit --gpus 1 --array "0-$((n - 1))" -- sh -c "$show"
    count=0
    for out in $(task_outputs sandboxed); do
        cvd=$(value CUDA_VISIBLE_DEVICES "$out")
        dev=$(value DEV "$out")
        smi=$(value SMI "$out")
        for i in "${!uuids[@]}"; do
            [ "${uuids[$i]}" = "$cvd" ] || continue
            [ "$dev" = "$(basename "${nodes[$i]}")" ] ||
                fail "a sandboxed task of $cvd saw device files '$dev', not only ${nodes[$i]}"
            [ "$smi" = "$cvd" ] || fail "nvidia-smi in the sandbox of $cvd listed '$smi'"
            count=$((count + 1))
        done
    done
    [ "$count" -eq "$n" ] || fail "$n sandboxed gpus=1 tasks, $count matched their device"
    stop_last_agent
    sandbox="bwrap: each sandbox held only its device"
fi
echo "sandbox: $sandbox"

# 4. Fractions: two gpus=0.5 tasks per device, all running together, two per device.
mkdir -p "$work/half"
tasks=$((2 * n))
start_agent fractions "$tasks"
submit --gpus 0.5 --array "0-$((tasks - 1))" -- sh -c "touch $work/half/\$HETPILOT_INDEX; i=0; while [ \$(ls $work/half | wc -l) -lt $tasks ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i+1)); done; echo TOGETHER=\$(ls $work/half | wc -l); $show"
for uuid in "${uuids[@]}"; do
    shares=$(for out in $(task_outputs fractions); do
        [ "$(value CUDA_VISIBLE_DEVICES "$out")" = "$uuid" ] && value HETPILOT_GPU_SHARE "$out"
    done | tr '\n' ' ')
    [ "$shares" = "0.5 0.5 " ] || fail "$uuid was shared by tasks with shares '$shares', not two of 0.5"
done
for out in $(task_outputs fractions); do
    [ "$(value TOGETHER "$out")" = "$tasks" ] || fail "the gpus=0.5 tasks did not all run together"
done
stop_last_agent
echo "fractions: $tasks gpus=0.5 tasks ran together, two per device"

# 5. CUDA itself honours the binding: the runtime, not only the environment, sees one device.
cuda="no python3 with CUDA-enabled PyTorch: CUDA case skipped"
if $rehearse; then cuda="rehearsal: CUDA case skipped"; fi
python=$(command -v python3)
if ! $rehearse && [ -n "$python" ] &&
    "$python" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    flags=()
    if command -v bwrap >/dev/null; then flags=(--sandbox bwrap); fi
    start_agent cuda "$n" "${flags[@]}"
    program='import os, torch
p = torch.cuda.get_device_properties(0)
x = torch.ones(1024, 1024, device="cuda")
print("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", ""))
print("CUDA_COUNT=%d" % torch.cuda.device_count())
print("CUDA_UUID=GPU-%s" % p.uuid)
print("CUDA_SUM=%d" % int((x @ x).sum().item()))'
    submit --gpus 1 --array "0-$((n - 1))" -- "$python" -c "$program"
    submit --array 0-0 -- "$python" -c 'import torch; print("CUDA_CPU_COUNT=%d" % torch.cuda.device_count())'
    count=0
    for out in $(task_outputs cuda); do
        if grep -q '^CUDA_CPU_COUNT=' "$out"; then
            [ "$(value CUDA_CPU_COUNT "$out")" = 0 ] || fail "a CPU-only task's CUDA saw $(value CUDA_CPU_COUNT "$out") device(s)"
            continue
        fi
        cvd=$(value CUDA_VISIBLE_DEVICES "$out")
        [ "$(value CUDA_COUNT "$out")" = 1 ] || fail "the CUDA runtime of a gpus=1 task saw $(value CUDA_COUNT "$out") devices"
        [ "$(value CUDA_UUID "$out")" = "$cvd" ] || fail "a task granted $cvd computed on $(value CUDA_UUID "$out")"
        [ "$(value CUDA_SUM "$out")" = 1073741824 ] || fail "a CUDA product on $cvd summed to '$(value CUDA_SUM "$out")'"
        count=$((count + 1))
    done
    [ "$count" -eq "$n" ] || fail "$n CUDA tasks, $count reported their device"
    stop_last_agent
    cuda="CUDA (PyTorch${flags[*]:+, bwrap}): each task computed on its own device only"
fi
echo "cuda: $cuda"

verdict="GPU CHECK PASS"
if $rehearse; then verdict="GPU CHECK REHEARSAL PASS"; fi
echo "$verdict: $n GPU(s) detected as nvidia-smi lists them; tasks bound one per device; $sandbox; $tasks half-GPU tasks shared them two by two; $cuda"
