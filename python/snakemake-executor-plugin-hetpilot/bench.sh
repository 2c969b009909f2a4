#!/usr/bin/env bash
# A JOBS-job Snakemake fan-out (each job one `echo`, then one gathering job) on this
# machine, twice: Snakemake's local executor with --cores CORES, then `--executor hetpilot`
# on a fresh manager with one local agent of CORES slots. Prints each wall time and CPU
# time (the local run's includes its jobs; the hetpilot run's is the scheduling Snakemake's
# alone, its jobs' CPU is summed from the manager's task measurements).
#   bench.sh BIN_DIR JOBS CORES [SNAKEMAKE_ARGS...]   (BIN_DIR: the hetpilot and
#   hetpilot-agent binaries; run in a venv with snakemake and this plugin installed;
#   SNAKEMAKE_ARGS, e.g. `--scheduler greedy`, go to both runs)
set -euo pipefail
bin=$(cd "$1" && pwd); jobs=${2:-1000}; cores=${3:-2}; shift 3 || shift $#
work=$(mktemp -d); agent=; manager=
trap 'kill $agent $manager 2>/dev/null && wait; rm -rf "$work"' EXIT
snakefile() {
  mkdir -p "$1"
  cat > "$1/Snakefile" <<SNAKE
localrules: all
rule all:
    input: expand("out/{i}.txt", i=range($jobs))
    output: "all.txt"
    shell: "cat {input} | wc -l > {output}"
rule work:
    output: "out/{i}.txt"
    shell: "echo {wildcards.i} > {output}"
SNAKE
}
wall() {
  /usr/bin/time -o "$work/time" -f "%e s wall, %U s user + %S s system CPU" "$@" >"$work/last.log" 2>&1 ||
    { cat "$work/last.log" >&2; return 1; }
  cat "$work/time"
}

snakefile "$work/local"
echo "local  --cores $cores: $(wall python -m snakemake --cores "$cores" --directory "$work/local" --snakefile "$work/local/Snakefile" "$@" all)"
test "$(cat "$work/local/all.txt")" = "$jobs"

mkdir -p "$work/data"
env -u HETPILOT_CONFIG "$bin/hetpilot" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
  >/dev/null 2>"$work/manager.log" & manager=$!
until [ -s "$work/data/manager.url" ]; do sleep 0.1; done
url=$(cat "$work/data/manager.url"); admin=$(cat "$work/data/admin.token")
token=$(curl -sf -H "Authorization: Bearer $admin" -d '{"platform":"local"}' \
  -H 'Content-Type: application/json' "$url/v1/agent-tokens" | python -c 'import json,sys; print(json.load(sys.stdin)["token"])')
mkdir -p "$work/agent"
HETPILOT_AGENT_TOKEN=$token "$bin/hetpilot-agent" --manager "$url" --platform local \
  --slots "$cores" --work-dir "$work/agent" >/dev/null 2>"$work/agent.log" & agent=$!
snakefile "$work/hp"
export HETPILOT_URL=$url HETPILOT_TOKEN=$admin
echo "hetpilot --jobs 100, $cores slots: $(wall python -m snakemake --executor hetpilot --jobs 100 --directory "$work/hp" --snakefile "$work/hp/Snakefile" "$@" all)"
test "$(cat "$work/hp/all.txt")" = "$jobs"
python - <<'PY'
from hetpilot import Client
client = Client()
apps = client.apps()
runs = [t["last"]["measurements"] for a in apps for t in client.tasks(a["app"])]
cpu = sum(m["user_cpu_ms"] + m["sys_cpu_ms"] for m in runs) / 1000
wall = sum(m["wall_ms"] for m in runs) / 1000
print(f"applications: {len(apps)}; {len(runs)} tasks: {cpu:.1f} s CPU, {wall:.1f} s wall in all")
PY
