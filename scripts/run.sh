#!/usr/bin/env bash
# Builds fsbench, installs its man pages and bash completions, and runs it: `fsbench run`
# with its defaults unless arguments are given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --quiet
# Where cargo put it: CARGO_TARGET_DIR or a cargo config's build.target-dir move it.
target=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
fsbench=${target:-target}/release/fsbench
# The man pages and bash completions, made from the command line's definition, so that
# `man fsbench` and Tab work: as root for everyone, else for this user (FSBENCH_SHARE_DIR
# names another place).
if [ "$(id -u)" = 0 ]; then share=/usr/local/share; else share=${XDG_DATA_HOME:-$HOME/.local/share}; fi
share=${FSBENCH_SHARE_DIR:-$share}
"$fsbench" generate man "$share/man/man1"
mkdir -p "$share/bash-completion/completions"
"$fsbench" generate completions bash >"$share/bash-completion/completions/fsbench"
if [ $# -eq 0 ]; then set -- run; fi
exec "$fsbench" "$@"
