#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, a build of every binary, then
# every test of every crate, including the ignored ones that need the local lab.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The end-to-end tests start the real `hetpilot` and `hetpilot-agent` binaries.
cargo build --workspace --bins
cargo test --workspace -- --include-ignored
