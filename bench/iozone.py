#!/usr/bin/env python3
"""Throughput matrix against fio: sequential write and read of a 1 GiB file in 1 MiB records,
buffered and O_DIRECT, by fsbench's iozone workload (its write, read and pread tests) and by
fio's equivalent psync jobs, both pinned to the same CPU (CPU=N picks it), (psync engine, no preallocation, page cache invalidated before reads), on the same
filesystem in the same invocation: tmpfs, where only the tools' own costs differ (the target
is judged there), then as root a fresh ext4 loop image, where the host's cache and disk add
noise. Before
every measured step, dirty data is written back and all caches dropped (as root), the loop
image's on the host included. Runs alternate; medians of ROUNDS. Prints fsbench's throughput as a fraction of fio's. Target >= 0.98.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from common import fresh_ext4, settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
SIZE = "1G"


# Both tools run pinned to the same CPU, so neither gains or loses by migrations.
PIN = ["taskset", "-c", os.environ.get("CPU", "1")]


def fio(path, rw, direct):
    out = subprocess.run(
        PIN + ["fio", "--name=job", f"--filename={path}", f"--rw={rw}", "--bs=1M", f"--size={SIZE}",
         f"--direct={direct}", "--ioengine=psync", "--fallocate=none", "--invalidate=1",
         "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return job["write" if rw == "write" else "read"]["bw"]  # KiB/s


def fsbench(work, db, direct, test):
    """One IOzone test group (0 write, 1 read) of a 1 GiB file in 1 MiB records. For the read
    group fsbench writes the file untimed, then drops caches before reading, as IOzone does."""
    # fio's psync engine uses pwrite/pread: IOzone's pwrite and pread tests (group 9, 10) make
    # the same calls; write/read (groups 0, 1) use write/read on the file position.
    group = {"write": 0, "read": 1, "pwrite": 9, "pread": 10}[test]
    spec = f"iozone:sizes={SIZE},records=1m,tests={group}" + (",direct" if direct else "")
    out = subprocess.run(PIN + [FSBENCH, "--db", db, "run", "-q", "--output-format", "json", "--runs", "1",
                          "--no-drop-caches", "--dir", work, "-w", spec],
                         check=True, capture_output=True, text=True).stdout
    cells = json.loads(out)["runs"][0]["phases"][0]["cells"]
    return next(c["kib_per_sec"] for c in cells if c["test"] == test)


def compare(work, db, where):
    print(f"sequential 1 MiB records, {SIZE} file, on {where}; {ROUNDS} rounds, medians (KiB/s)")
    worst = 9.0
    for direct in (0, 1):
        res = {k: [] for k in ("fio write", "fio read", "fsbench write", "fsbench read", "fsbench pread")}
        for rnd in range(ROUNDS):
            def run_fio():
                path = os.path.join(work, "fio.dat")
                settle()
                res["fio write"].append(fio(path, "write", direct))
                settle()
                res["fio read"].append(fio(path, "read", direct))
                os.remove(path)

            def run_fsbench():
                settle()
                res["fsbench write"].append(fsbench(work, db, direct, "write"))
                settle()
                res["fsbench read"].append(fsbench(work, db, direct, "read"))
                settle()
                res["fsbench pread"].append(fsbench(work, db, direct, "pread"))

            for f in ([run_fio, run_fsbench] if rnd % 2 == 0 else [run_fsbench, run_fio]):
                f()
        mode = "O_DIRECT" if direct else "buffered"
        for op, ours in (("write", "write"), ("read", "read"), ("read", "pread")):
            a, b = statistics.median(res[f"fsbench {ours}"]), statistics.median(res[f"fio {op}"])
            worst = min(worst, a / b)
            print(f"{mode:9} {op:5}: fio {b:12,.0f}  fsbench {ours:6} {a:12,.0f}  ratio {a / b:.3f}")
    return worst


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    if not shutil.which("fio"):
        raise SystemExit("fio is not installed (apt-get install fio)")
    with tempfile.TemporaryDirectory(prefix="fsbench-iozone.", dir="/var/tmp") as tmp:
        db = os.path.join(tmp, "results.db")
        # tmpfs first: no device noise, so the figures compare the two tools' own costs.
        with tempfile.TemporaryDirectory(prefix="fsbench-iozone.", dir="/dev/shm") as shm:
            worst = compare(shm, db, "tmpfs (/dev/shm)")
        if os.geteuid() != 0 or os.environ.get("TMPFS_ONLY"):
            print(f"worst ratio on tmpfs: {worst:.3f} (target >= 0.98); no ext4 loop image (not root, or TMPFS_ONLY)")
            return
        with fresh_ext4(tmp, 6 << 30) as mnt:
            compare(mnt, db, "a fresh ext4 loop image (the host's page cache and disk add noise)")
        print(f"worst ratio on tmpfs: {worst:.3f} (target >= 0.98)")


if __name__ == "__main__":
    main()
