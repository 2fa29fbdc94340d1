#!/usr/bin/env bash
# Builds fsbench and runs it: `fsbench run` with its defaults unless arguments are given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --quiet
# Where cargo put it: CARGO_TARGET_DIR or a cargo config's build.target-dir move it.
target=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if [ $# -eq 0 ]; then set -- run; fi
exec "${target:-target}/release/fsbench" "$@"
