#!/usr/bin/env bash
# Builds fsbench, installs its man pages and bash completions, and runs it: `fsbench run`
# with its defaults unless arguments are given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo build --release --quiet
# The man pages and bash completions, made from the command line's definition, so that
# `man fsbench` and Tab work: as root for everyone, else for this user.
if [ "$(id -u)" = 0 ]; then share=/usr/local/share; else share=${XDG_DATA_HOME:-$HOME/.local/share}; fi
target/release/fsbench generate man "$share/man/man1"
mkdir -p "$share/bash-completion/completions"
target/release/fsbench generate completions bash >"$share/bash-completion/completions/fsbench"
if [ $# -eq 0 ]; then set -- run; fi
exec target/release/fsbench "$@"
