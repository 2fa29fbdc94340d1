#!/usr/bin/env bash
# The whole test suite: installs what the tests need (as root on Debian), then checks
# formatting and lints, builds and checks the book, and runs every test. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
if ! command -v cargo >/dev/null; then
    echo "test.sh: cargo not found; install Rust (https://rustup.rs) first" >&2
    exit 1
fi
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy --workspace --all-targets --features fsbench/mpi --quiet -- -D warnings
# The book: mdbook's own checks (a chapter SUMMARY.md names must exist), every relative link
# and anchor resolved, and its Rust examples compiled and run (code blocks in other languages
# are marked so and not run). The command lines in its shell examples are parsed by a unit
# test of the CLI.
PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
mdbook build docs
python3 scripts/check-links.py
mdbook test docs
# Every spawned process in the tests has its own time limit; this is the backstop, so that CI
# fails instead of hanging whatever a test does (the whole suite, MPI part included, took
# 9 min 18 s here with warm builds).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The integration tests' runs check their images (sparse, up to 8.8 GiB) against the free
# space of /var/tmp, where their scratch directories are: with less, those runs are refused
# and a dozen tests fail. Said at once, once the tests are built, rather than test by test.
timeout --kill-after=60 45m cargo test --workspace --all-targets --no-run --quiet
need_gib=10
free_gib=$(df --output=avail -BG /var/tmp | tail -n 1 | tr -dc 0-9)
if ((free_gib < need_gib)); then
    echo "test.sh: the tests need ${need_gib} GiB free in /var/tmp; it has ${free_gib} GiB" >&2
    exit 1
fi
timeout --kill-after=60 45m cargo test --workspace --all-targets 2>&1 | tee "$log"
# With MPI built in: its unit tests and the tests that run `mpirun -np 4` (about a minute
# more, most of it the build).
timeout --kill-after=60 15m cargo test --workspace --features fsbench/mpi --lib 2>&1 | tee -a "$log"
timeout --kill-after=60 15m cargo test --features fsbench/mpi --test it -- mpi:: mpi_signals:: launcher:: 2>&1 |
    tee -a "$log"
# A test that cannot run says SKIPPED on stderr. CI runs as root with everything installed,
# so a skip there is a failure; elsewhere the skips are listed once more at the end.
if grep -q '^SKIPPED ' "$log"; then
    echo "test.sh: skipped tests:" >&2
    grep '^SKIPPED ' "$log" >&2
    if [[ -n "${CI:-}" ]]; then
        echo "test.sh: CI must run every test" >&2
        exit 1
    fi
fi
