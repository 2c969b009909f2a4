#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, the documents, lints, a build of every binary, then
# every test of every crate, including the ignored ones that need the local lab (Slurm
# with the TORQUE/PBS qsub wrappers and an sshd on 127.0.0.1:2222, see deploy/lab/),
# which this script starts first and stops at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
# README.md at most 300 lines, and the user guide (MkDocs, docs/) builds with every link whole.
deploy/check-docs.sh
cargo clippy --workspace --all-targets -- -D warnings
# The pure crates stay pure: no async runtime, database, HTTP, TLS or SSH crate in their trees.
for pure in hetpilot-core hetpilot-protocol; do
  impure=$(cargo tree -p "$pure" -e normal --prefix none \
    | sed 's/ v[0-9].*//' | sort -u | grep -xE 'tokio|rusqlite|reqwest|axum|hyper|ssh2|rustls' || true)
  if [ -n "$impure" ]; then
    echo "$pure depends on I/O crates: $impure (cargo tree -p $pure -i NAME)" >&2
    exit 1
  fi
done
# What a site installs holds no research code: no plotters, no simulators (hetpilot-research).
for shipped in hetpilot-core hetpilot-manager hetpilot-agent; do
  research=$(cargo tree -p "$shipped" -e normal --prefix none \
    | sed 's/ v[0-9].*//' | sort -u | grep -xE 'plotters|hetpilot-research' || true)
  if [ -n "$research" ]; then
    echo "$shipped depends on research crates: $research (cargo tree -p $shipped -i NAME)" >&2
    exit 1
  fi
done
# The end-to-end tests start the real `hetpilot`, `hetpilot-agent` and `hetpilot-research`
# binaries.
cargo build --workspace --bins

export HETPILOT_LAB=${HETPILOT_LAB:-/var/tmp/hetpilot-lab}
log=$(mktemp)
cleanup() {
  rm -f "$log"
  deploy/lab/stop.sh >/dev/null || echo "warning: deploy/lab/stop.sh failed" >&2
}
trap cleanup EXIT
deploy/lab/start.sh
# shellcheck disable=SC1091
. "$HETPILOT_LAB/env.sh"    # SLURM_CONF, LAB_SSH_PORT, the lab profiles' variables
# Tests configure their own managers (the lab's manager.toml is for people).
unset HETPILOT_CONFIG

status=0
# Every test binary runs, also after one failed: the count at the end is of all of them.
cargo test --workspace --no-fail-fast -- --include-ignored 2>&1 | tee "$log" || status=$?
# The Python client's tests (python/), with the Snakemake executor plugin running real
# workflows, against the binaries just built, in a venv of their own.
venv="${CARGO_TARGET_DIR:-target}/python-venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet ./python ./python/snakemake-executor-plugin-hetpilot pytest \
  'snakemake>=9,<10'
HETPILOT_BIN_DIR="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)" \
  "$venv/bin/python" -m pytest -q python/tests || status=1
# One closing line over every test binary (cargo's own last line is the doc tests').
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$log"
# No pilot outlives its test, passed or failed: every agent built here must be gone (a
# minute's grace for Slurm to finish cancelling); else fail, naming each with its command
# line and pilot.
deploy/check-no-stray-agents.sh "${CARGO_TARGET_DIR:-target}" 60 || status=1
exit "$status"
