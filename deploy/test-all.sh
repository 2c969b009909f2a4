#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, a build of every binary, then
# every test of every crate, including the ignored ones that need the local lab.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The end-to-end tests start the real `hetpilot` and `hetpilot-agent` binaries.
cargo build --workspace --bins
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace -- --include-ignored 2>&1 | tee "$log"
# One closing line over every test binary (cargo's own last line is the doc tests').
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$log"
