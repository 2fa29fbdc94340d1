#!/usr/bin/env bash
# Installs the Debian packages fsbench needs (with --tests: also what the test suite needs).
# Does nothing when not root or not on Debian: tests that need a missing tool then skip and say so.
set -euo pipefail
# strace: `fsbench capture` records a program's calls with it where its bpf tracer cannot
# run; clang (and libbpf-dev's headers, below): the build compiles that tracer's BPF program
# (crates/capture-bpf), which records the calls without stopping the program (without them
# fsbench still builds, and capture falls back to strace); man: `man fsbench` reads the pages
# scripts/run.sh installs.
tools=(mkfs.ext4:e2fsprogs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs losetup:mount mount:mount blkid:util-linux
    strace:strace clang:clang man:man-db)
if [ "${1:-}" = "--tests" ]; then
    # setpriv: the not-root tests; sfdisk and partx: the partition test; unshare: the PID
    # namespace test; chromium: the HTML report test; tar, zstd, xz, bzip2 and lzop: the
    # archive comparison with GNU tar (lzop also reads .lzo archives for fsbench itself); scipy: statistics checks; mpirun, mpicc (Open MPI's headers
    # and libraries) and libclang (bindgen): the build with --features mpi and its tests;
    # strace: the MPI tests slow a rank with it and read the names a rank opened;
    # mkntfs and ntfs-3g: the ntfs test; zfs-fuse, zpool and zfs: the zfs test; stress-ng:
    # the background-load tests; sqlite3 and git: programs captured and replayed; fio: the
    # io workload's tests and bench/fio_compare.py; setfacl: an ACL captured with its file
    # and made again by the replay.
    tools+=(setpriv:util-linux gcc:gcc python3:python3 chromium:chromium tar:tar zstd:zstd
        xz:xz-utils bzip2:bzip2 lzop:lzop
        sfdisk:fdisk partx:util-linux unshare:util-linux mpirun:openmpi-bin
        mpicc:libopenmpi-dev mkntfs:ntfs-3g ntfs-3g:ntfs-3g
        zfs-fuse:zfs-fuse zpool:zfs-fuse zfs:zfs-fuse stress-ng:stress-ng pkill:procps
        sqlite3:sqlite3 git:git fio:fio setfacl:acl)
fi
# mdbook builds and tests the book (docs/). Debian has no package of it; crates.io's is built
# once into cargo's bin directory (about 3.5 minutes on 2 cores, without the `serve` and `watch`
# features nobody uses in CI), pinned so that every machine builds the same book. Cargo needs
# no root, so this comes before the Debian part.
mdbook_version=0.5.4
if [ "${1:-}" = "--tests" ] && command -v cargo >/dev/null &&
    [ "$(mdbook --version 2>/dev/null)" != "mdbook v$mdbook_version" ]; then
    echo "install-deps: building mdbook $mdbook_version (cargo install)" >&2
    cargo install --quiet --locked --version "$mdbook_version" --no-default-features \
        --features search mdbook
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install-deps: not root on Debian; skipping package installation" >&2
    exit 0
fi
missing=()
for pair in "${tools[@]}"; do
    tool=${pair%%:*}
    package=${pair##*:}
    if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null; then
        missing+=("$package")
    fi
done
# Debian's python3-scipy serves /usr/bin/python3, which the test uses when the python3 on
# PATH (a pyenv, say) has no scipy.
if [ "${1:-}" = "--tests" ] && ! python3 -c 'import scipy' 2>/dev/null &&
    ! /usr/bin/python3 -c 'import scipy' 2>/dev/null; then
    missing+=(python3-scipy)
fi
# fio's log parsers and fio-plot (below) need pandas and a venv: Debian's packages.
if [ "${1:-}" = "--tests" ] && ! /usr/bin/python3 -c 'import pandas' 2>/dev/null; then
    missing+=(python3-pandas)
fi
if [ "${1:-}" = "--tests" ] && ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    missing+=(python3-venv)
fi
# PMDK's libraries for fio's pmemblk and libpmem engines (tests/it/fio_pmem.rs), which fsbench
# loads when a job needs them: Debian's fio depends on both, so they come with it; a fio from
# elsewhere on PATH would not bring them.
if [ "${1:-}" = "--tests" ]; then
    for lib in libpmem:libpmem1 libpmemblk:libpmemblk1; do
        if ! PATH="$PATH:/usr/sbin:/sbin" ldconfig -p 2>/dev/null | grep -q "${lib%%:*}\.so\.1 "; then
            missing+=("${lib##*:}")
        fi
    done
fi
# Bash loads the completions scripts/run.sh installs through bash-completion, which has no
# command to look for.
if [ ! -f /usr/share/bash-completion/bash_completion ]; then
    missing+=(bash-completion)
fi
# The BPF program includes libbpf's bpf_helpers.h; libbpf-dev has no command to look for.
if [ ! -f /usr/include/bpf/bpf_helpers.h ]; then
    missing+=(libbpf-dev)
fi
# bindgen (the mpi crate's build) loads libclang and needs clang's own headers (stddef.h),
# which libclang-dev brings; it has no command to look for.
if [ "${1:-}" = "--tests" ] && ! dpkg-query -W -f='${Status}' libclang-dev 2>/dev/null |
    grep -q 'ok installed'; then
    missing+=(libclang-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    # The package starts its daemon as a service; fsbench starts its own per zfs run and
    # refuses to share zfs-fuse's one control socket with another.
    if [[ " ${missing[*]} " == *" zfs-fuse "* ]]; then
        systemctl disable --now zfs-fuse.service 2>/dev/null ||
            /etc/init.d/zfs-fuse stop 2>/dev/null || true
    fi
fi

[ "${1:-}" = "--tests" ] || exit 0
# What the tests of fio's outputs run on fsbench's files (tests/it/fio_out.rs), under
# /usr/local/lib/fsbench-tests. fio's log parsers (tools/fiologparser.py and
# tools/hist/fiologparser_hist.py) are in no binary package: they are copied out of Debian's
# source package of bookworm's fio, which apt fetches and checks against Debian's signed
# index through a source list of its own (the machine's lists are left as they are).
tests_dir=/usr/local/lib/fsbench-tests
fio_tools=$tests_dir/fio-tools
if [ ! -f "$fio_tools/fiologparser_hist.py" ]; then
    echo "install-deps: copying fio's log parsers from Debian's fio source package" >&2
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    mkdir -p "$scratch/parts" "$scratch/lists/partial"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        >"$scratch/parts/fio-src.sources"
    apt_src=(-qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$scratch/parts"
        -o "Dir::State::Lists=$scratch/lists")
    apt-get "${apt_src[@]}" update
    (cd "$scratch" && apt-get "${apt_src[@]}" source --download-only fio >/dev/null 2>&1)
    tar -xzf "$scratch"/fio_*.orig.tar.gz -C "$scratch" --wildcards \
        '*/tools/fiologparser.py' '*/tools/hist/fiologparser_hist.py'
    mkdir -p "$fio_tools"
    cp "$scratch"/fio-*/tools/fiologparser.py "$scratch"/fio-*/tools/hist/fiologparser_hist.py \
        "$fio_tools/"
fi
# fio-plot reads fio's JSON: PyPI's, pinned, in a venv of its own (Debian 12's python refuses
# pip outside one, PEP 668, and the venv leaves Debian's packages as they are).
fio_plot_version=1.1.21
fio_plot=$tests_dir/fio-plot
if [ "$("$fio_plot/bin/pip" show fio-plot 2>/dev/null | sed -n 's/^Version: //p')" != "$fio_plot_version" ]; then
    echo "install-deps: installing fio-plot $fio_plot_version in $fio_plot" >&2
    /usr/bin/python3 -m venv "$fio_plot"
    "$fio_plot/bin/pip" install --quiet --disable-pip-version-check "fio-plot==$fio_plot_version"
fi
# The bpf tracer's tests read the kernel's tracepoint formats: a fresh machine may not have
# tracefs mounted (its absence skipped 20 tests on one).
if ! [ -e /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
        echo "install-deps: cannot mount tracefs on /sys/kernel/tracing: the bpf tracer's tests will skip" >&2
fi
