#!/usr/bin/env bash
# The documents: README.md stays short (at most 300 lines; the rest is the user guide), and
# the user guide in docs/ builds with MkDocs in strict mode, which fails on a broken link.
# MkDocs comes from PyPI into a virtual environment under the build directory, made once
# and reused. Usage: deploy/check-docs.sh [BUILD_DIR] (default: $CARGO_TARGET_DIR or target).
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_README_LINES=300
MKDOCS_VERSION=1.6.1
build=${1:-${CARGO_TARGET_DIR:-target}}

lines=$(wc -l < README.md)
if [ "$lines" -gt "$MAX_README_LINES" ]; then
  echo "README.md has $lines lines (at most $MAX_README_LINES): move text into the user guide in docs/" >&2
  exit 1
fi

venv="$build/docs-venv"
if ! "$venv/bin/mkdocs" --version 2>/dev/null | grep -q "version $MKDOCS_VERSION "; then
  rm -rf "$venv"
  if ! python3 -c 'import ensurepip' 2>/dev/null; then
    # Debian splits venv's pip bootstrap into python3-venv.
    if [ "$(id -u)" -ne 0 ]; then
      echo "python3 -m venv needs the python3-venv package: apt-get install python3-venv" >&2
      exit 1
    fi
    apt_venv() {
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends python3-venv >/dev/null
    }
    apt_venv 2>/dev/null || { apt-get -o DPkg::Lock::Timeout=300 update -qq && apt_venv; }
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mkdocs==$MKDOCS_VERSION"
fi
"$venv/bin/mkdocs" build --strict --quiet --site-dir "$(realpath -m "$build/book")"
echo "docs: README.md $lines lines; user guide built in $build/book"
