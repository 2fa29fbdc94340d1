#!/bin/bash
# The many-core figures on a machine that has no compiler, Open MPI or IOR: packed here,
# run there (as root), as the 16-core figures of the benchmarks chapter were taken.
#
#   bench/manycore.sh pack DIR        here: release builds (plain and --features mpi, both
#                                     stripped), bench/fdtree_c, IOR (IOR=path, default
#                                     ../shared/peers/ior) and Open MPI from this machine's
#                                     Debian packages (mpirun, its plugins and every library
#                                     they need but glibc's) into DIR, about 50 MiB
#   bench/manycore.sh run DIR OUT     there: the parts in PARTS (default scaling,memory,ior),
#                                     each one's output also in OUT as it comes
#
# run: a tmpfs of its own (size=1t,nr_inodes=0) for the tree scaling (bench/tree_scaling.py;
# SROUNDS, default 3, TREE, MODES, at most SCALING_S seconds, default 260), the memory to 10^8 files (bench/memory.py, io then tree
# with TREE_WORKERS, default 9, up to TREE_MAX, default 1e8) and IOR (bench/ior_compare.py,
# IROUNDS, default 5, NPS, TARGETS); BUDGET seconds (default 560) in all, the memory part
# getting what the scaling leaves less IOR_RESERVE (default 0: run IOR in a call of its own).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
D=${2:?"usage: bench/manycore.sh pack DIR | run DIR OUT"}

pack() {
    set -e
    local ior=${IOR:-$ROOT/../shared/peers/ior}
    [ -x "$ior" ] || { echo "manycore: IOR not found at $ior (IOR=path; build hpc/ior)" >&2; exit 1; }
    [ -x /usr/bin/orterun ] || { echo "manycore: Open MPI missing (scripts/install-deps.sh --tests)" >&2; exit 1; }
    mkdir -p "$D/ompi/bin" "$D/ompi/libs" "$D/ompi/lib/x86_64-linux-gnu/openmpi/lib" "$D/ompi/share"
    local built=${CARGO_TARGET_DIR:-$ROOT/target}/release/fsbench
    (cd "$ROOT" && cargo build --release --quiet && cp "$built" "$D/fsbench" \
        && cargo build --release --quiet --features mpi && cp "$built" "$D/fsbench-mpi")
    strip "$D/fsbench" "$D/fsbench-mpi"
    cc -O2 -Wall -o "$D/fdtree_c" "$ROOT/bench/fdtree.c"
    cp "$ior" "$D/ior"
    # OPAL_PREFIX relocates Debian's Open MPI: its plugins are looked for under the prefix.
    cp /usr/bin/orterun "$D/ompi/bin/mpirun"
    cp -r /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 "$D/ompi/lib/x86_64-linux-gnu/openmpi/lib/"
    cp -r /usr/share/openmpi "$D/ompi/share/"
    ldd "$D/ompi/bin/mpirun" "$D"/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
        "$D/ior" "$D/fsbench-mpi" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
        | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libgcc_s|libstdc\+\+|libresolv)\.so' \
        | while read -r lib; do cp -L "$lib" "$D/ompi/libs/"; done
    du -sh "$D"
}

run() {
    OUT=${3:?"usage: bench/manycore.sh run DIR OUT"}
    D=$(cd "$D" && pwd)
    export PYTHONUNBUFFERED=1
    local start budget parts
    start=$(date +%s) budget=${BUDGET:-560} parts=${PARTS:-scaling,memory,ior}
    left() { echo $((budget - ($(date +%s) - start))); }
    want() { [[ ",$parts," == *",$1,"* ]]; }
    say() { echo "== $* (at $(($(date +%s) - start)) s)"; }
    cp "$D/fdtree_c" "$ROOT/bench/fdtree_c"
    { uname -r; nproc; free -g | head -2; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg; } \
        | tee "$OUT/machine.txt"
    local scratch=/mnt/fsbench-manycore
    mkdir -p $scratch
    mountpoint -q $scratch || mount -t tmpfs -o size=1t,nr_inodes=0 fsbench-manycore $scratch || exit 1
    export FSBENCH=$D/fsbench PREBUILT=1 SCRATCH=$scratch
    if want scaling; then
        say scaling
        ROUNDS=${SROUNDS:-3} RAW=$OUT/scaling.json timeout "${SCALING_S:-260}" \
            python3 "$ROOT/bench/tree_scaling.py" 2>&1 | tee "$OUT/scaling.txt"
    fi
    if want memory; then
        say memory
        WORKLOADS=io timeout 60 python3 "$ROOT/bench/memory.py" 2>&1 | tee "$OUT/memory.txt"
        WORKLOADS=tree TREE_WORKERS=${TREE_WORKERS:-9} TREE_MAX=${TREE_MAX:-1e8} \
            timeout $(($(left) - ${IOR_RESERVE:-0} - 5)) python3 "$ROOT/bench/memory.py" 2>&1 \
            | tee -a "$OUT/memory.txt"
    fi
    umount $scratch
    if want ior; then
        say ior
        export PATH=$D/ompi/bin:$PATH LD_LIBRARY_PATH=$D/ompi/libs OPAL_PREFIX=$D/ompi
        IOR=$D/ior FSBENCH=$D/fsbench-mpi ROUNDS=${IROUNDS:-5} timeout $(($(left) - 5)) \
            python3 "$ROOT/bench/ior_compare.py" 2>&1 | tee "$OUT/ior.txt"
    fi
    say done
}

case $cmd in
    pack) pack ;;
    run) run "$@" ;;
    *) echo "usage: bench/manycore.sh pack DIR | run DIR OUT" >&2; exit 2 ;;
esac
