#!/usr/bin/env python3
"""IOR's aggregate bandwidth next to fsbench's io workload under MPI, the same work on both:
`mpirun -np N ior -a POSIX -w -r -e -C -t 1m -b 256m [-F]` (each rank writes its 256 MiB block
in 1 MiB transfers into a file it creates, fsyncs and closes it, then reads a block back),
file per process (-F) and one shared file (each rank its own block, rank after rank), for
N = 1, 2, 4, on tmpfs and on a fresh ext4 loop image.

fsbench does the same under `mpirun -np N`: the write is
`io:rw=write,bs=1m,size=256m,create-on-open,end-fsync` (the file created by the timed open,
written, fsynced at the end, closed), the read `io:rw=read,bs=1m,size=256m,invalidate=0`
(the block written untimed beforehand, read from the page cache as IOR's read after its
write is), with `--shared-dir` for the shared file (each rank's block at rank × 256 MiB, as
IOR's) and `--no-drop-caches` (IOR drops none). IOR's -C makes each rank read another rank's
block; on one node that changes whose block a rank reads, not the work, and fsbench's ranks
read their own.

The aggregate is IOR's on both sides: Σ bytes ÷ (the latest rank's close − the earliest rank's
open), IOR's `bwMiB` (ReduceIterResults in ior.c: the minimum of the open-start timers and the
maximum of the close-stop timers over the ranks), and fsbench's `bandwidth-ior` figure (Σ bytes
÷ (latest phase end − earliest phase start) over the ranks, each rank's phase from before its
jobs open their files to after they close them). Per N, layout, target and direction, ROUNDS
rounds alternate which tool goes first; the table gives the medians and fsbench ÷ IOR.
Target: >= 0.95 everywhere.

Needs root (the ext4 image, caches), Open MPI's mpirun, IOR (IOR=path, default
../shared/peers/ior) and fsbench built with MPI (`cargo build --release --features mpi`;
PREBUILT=1 uses target/release/fsbench as it is). NPS=1,2,4, BLOCK=256m, ROUNDS=3,
TARGETS=tmpfs,ext4 and LAYOUTS=fpp,shared choose less (e.g. for a smoke run); DIRECT_IO=0
puts the ext4 image's loop device on the host's page cache (the default bypasses it). The
image is written whole before mkfs (and mkfs told not to discard, which would punch it out
again): on a sparse one, a write to a part not written before
also allocates the host's blocks, so the first tool to reach a part ran slower (four 256 MiB
writes in a row on a fresh image: 1.4-1.7 GiB/s, the next four 2.0-2.7, whichever tool made
them). The table gives each cell's range over the rounds beside the medians.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

from common import fresh_ext4

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
IOR = os.environ.get("IOR") or next(
    (p for p in (os.path.join(ROOT, up, "shared", "peers", "ior") for up in ("..", "../.."))
     if os.path.exists(p)), "ior")
NPS = [int(n) for n in os.environ.get("NPS", "1,2,4").split(",") if n]
BLOCK = os.environ.get("BLOCK", "256m")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
TARGETS = [t for t in os.environ.get("TARGETS", "tmpfs,ext4").split(",") if t]
# The loop device writes to the disk, not into the host's page cache, whose state made a
# 1 GiB write with its fsync range from 370 to 2,636 MiB/s between runs.
DIRECT_IO = os.environ.get("DIRECT_IO", "1") == "1"
LAYOUTS = [l for l in os.environ.get("LAYOUTS", "fpp,shared").split(",") if l]
MIB = 1 << 20


def mpirun(n):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return ["mpirun", "--oversubscribe", "-np", str(n)], env


def run_ior(n, layout, work):
    """IOR's write and read bandwidth (MiB/s), from its JSON summary."""
    cmd, env = mpirun(n)
    cmd += [IOR, "-a", "POSIX", "-w", "-r", "-e", "-C", "-t", "1m", "-b", BLOCK, "-i", "1",
            "-o", os.path.join(work, "ior.file"), "-O", "summaryFormat=JSON"]
    if layout == "fpp":
        cmd.append("-F")
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=1200).stdout
    results = json.loads(out[out.index("{"):])["tests"][0]["Results"]
    flat = [r for group in results for r in (group if isinstance(group, list) else [group])]
    return {r["access"]: r["bwMiB"] for r in flat}


def run_fsbench(n, layout, work, db):
    """fsbench's write and read bandwidth (MiB/s): each io workload's `bandwidth-ior`."""
    cmd, env = mpirun(n)
    cmd += [FSBENCH, "--db", db, "run", "-q", "--output-format", "json", "--runs", "1",
            "--no-drop-caches", "--purpose", "IOR comparison", "--dir", work,
            "-w", f"io:rw=write,bs=1m,size={BLOCK},create-on-open,end-fsync",
            "-w", f"io:rw=read,bs=1m,size={BLOCK},invalidate=0"]
    if layout == "shared":
        cmd.append("--shared-dir")
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=1200).stdout
    found = {}
    for run in json.loads(out)["runs"]:
        io = next(p for p in run["phases"] if p["name"] == "io")
        bw = next(f["value"] for f in io["figures"] if f["name"] == "bandwidth-ior" and not f.get("dims"))
        found["write" if run["workload"].startswith("io:write") else "read"] = bw * 1024 / MIB
    return found


def measure(target, mnt, times, db):
    for n in NPS:
        for layout in LAYOUTS:
            for rnd in range(ROUNDS):
                tools = [("IOR", run_ior), ("fsbench", lambda n, l, w: run_fsbench(n, l, w, db))]
                for tool, fn in tools if rnd % 2 == 0 else tools[::-1]:
                    work = tempfile.mkdtemp(prefix="ior-compare.", dir=mnt)
                    try:
                        subprocess.run(["sync"], check=True)
                        for access, bw in fn(n, layout, work).items():
                            times[(target, layout, n, access, tool)].append(bw)
                    finally:
                        subprocess.run(["rm", "-rf", work], check=True)
        report(times)


def report(times):
    print(f"aggregate bandwidth, MiB/s (medians of {ROUNDS} rounds): -t 1m -b {BLOCK}, -e, -C; "
          f"{os.cpu_count()} cores")
    print(f"{'target':7}{'layout':8}{'N':>3}{'access':>8}{'IOR':>11}{'fsbench':>11}{'ratio':>8}  range IOR / fsbench")
    worst = None
    for (target, layout, n, access, tool) in sorted(times):
        if tool != "IOR" or (target, layout, n, access, "fsbench") not in times:
            continue
        ior_all, fsb_all = times[(target, layout, n, access, "IOR")], times[(target, layout, n, access, "fsbench")]
        ior, fsb = statistics.median(ior_all), statistics.median(fsb_all)
        worst = min(worst or 9, fsb / ior)
        spread = f"{min(ior_all):.0f}-{max(ior_all):.0f} / {min(fsb_all):.0f}-{max(fsb_all):.0f}"
        print(f"{target:7}{layout:8}{n:>3}{access:>8}{ior:>11.0f}{fsb:>11.0f}{fsb / ior:>8.3f}  {spread}")
    if worst is not None:
        print(f"worst ratio: {worst:.3f}  (target >= 0.95)", flush=True)


def main():
    if os.geteuid() != 0:
        sys.exit("ior_compare.py needs root (an ext4 loop image, mpirun as root)")
    if os.environ.get("PREBUILT") != "1":
        subprocess.run(["cargo", "build", "--release", "--quiet", "--features", "mpi"], cwd=ROOT, check=True)
    times = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="ior-compare-db.") as dbdir:
        db = os.path.join(dbdir, "results.db")
        if "tmpfs" in TARGETS:
            measure("tmpfs", "/dev/shm", times, db)
        if "ext4" in TARGETS:
            with tempfile.TemporaryDirectory(prefix="ior-compare.", dir="/var/tmp") as tmp, \
                    fresh_ext4(tmp, size=8 << 30, direct_io=DIRECT_IO, written=True) as mnt:
                measure("ext4", mnt, times, db)


if __name__ == "__main__":
    main()
