#!/usr/bin/env python3
"""Archive workload against the standard tools: fsbench's extractor next to `tar -xf` of the
same archive file, and fsbench's removal next to `rm -rf` of the same tree, on the same
filesystem in the same invocation. Filesystems: tmpfs (/dev/shm), and as root also a fresh
ext4 on a loop image. Runs alternate; medians of ROUNDS runs; caches synced and dropped
before each run when root. Prints fsbench's rate as a fraction of the tool's. Target: >= 1.0.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import fresh_ext4, settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
PRESET = os.environ.get("PRESET", "seed-1pct")
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
IS_ROOT = os.geteuid() == 0


def timed(cmd):
    settle()
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def fsbench_phases(tarball, target):
    """fsbench's own extract and remove times (its phase clocks), in seconds."""
    settle()
    out = subprocess.run([FSBENCH, "archive", "extract", tarball, "-C", target, "--remove"],
                         check=True, capture_output=True, text=True).stdout
    records = json.loads(out)
    return records[0]["elapsed_ns"] / 1e9, records[1]["elapsed_ns"] / 1e9, records[0]["ops"]


def bench(fs_name, base, tarball):
    work = tempfile.mkdtemp(prefix="fsbench-bench.", dir=base)
    try:
        ext = {"tar": [], "fsbench": []}
        rm = {"rm": [], "fsbench": []}
        entries = 0
        for rnd in range(ROUNDS):
            order = ["tools", "fsbench"] if rnd % 2 == 0 else ["fsbench", "tools"]
            for who in order:
                target = os.path.join(work, "t")
                os.mkdir(target)
                if who == "tools":
                    ext["tar"].append(timed(["tar", "-xf", tarball, "-C", target]))
                    rm["rm"].append(timed(["rm", "-rf", target]))
                else:
                    e, r, entries = fsbench_phases(tarball, target)
                    ext["fsbench"].append(e)
                    rm["fsbench"].append(r)
                    os.rmdir(target)
        te, fe = statistics.median(ext["tar"]), statistics.median(ext["fsbench"])
        tr, fr = statistics.median(rm["rm"]), statistics.median(rm["fsbench"])
        print(f"{fs_name:6} extract: tar -xf {te:7.3f} s, fsbench {fe:7.3f} s ({entries / fe:10,.0f} entries/s): ratio {te / fe:.3f}")
        print(f"{fs_name:6} remove:  rm -rf  {tr:7.3f} s, fsbench {fr:7.3f} s ({entries / fr:10,.0f} entries/s): ratio {tr / fr:.3f}")
        return min(te / fe, tr / fr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory(prefix="fsbench-archive.", dir="/var/tmp") as tmp:
        tarball = os.path.join(tmp, "backuppc.tar")
        subprocess.run([FSBENCH, "archive", "generate", PRESET, "-o", tarball], check=True)
        print(f"archive: {PRESET}, {os.path.getsize(tarball) >> 20} MiB; {ROUNDS} rounds, medians; the tools timed as whole processes")
        worst = bench("tmpfs", "/dev/shm", tarball)
        if IS_ROOT:
            with fresh_ext4(tmp) as mnt:
                worst = min(worst, bench("ext4", mnt, tarball))
        print(f"worst ratio: {worst:.3f} (target >= 1.0)")


if __name__ == "__main__":
    main()
