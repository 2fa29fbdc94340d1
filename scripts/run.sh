#!/usr/bin/env bash
# Builds fsbench and runs it: `fsbench run` with its defaults unless arguments are given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --quiet
if [ $# -eq 0 ]; then set -- run; fi
exec target/release/fsbench "$@"
