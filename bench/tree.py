#!/usr/bin/env python3
"""Tree workload overhead: fsbench's fdtree phases next to bench/fdtree.c, which makes the same
system calls in the same order without any measurement, on tmpfs (/dev/shm), where the
filesystem is as fast as it gets and any overhead of fsbench shows.

Runs alternate (C first in odd rounds, fsbench first in even ones), with caches dropped before
each when root. Per phase it prints fsbench's rate as a fraction of the C program's, from the
median and from the best (minimum) time of ROUNDS runs: kernel interference only ever adds
time, so the best times compare the two programs' own costs most directly. It also compares
user CPU time (fsbench's bookkeeping shows there) and fsbench's peak memory for a tiny and a
large tree, which must not differ. Target: fsbench/C >= 0.95 in every phase.
"""
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

from common import settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "9"))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
C_BIN = os.path.join(ROOT, "bench/fdtree_c")
# The article's small-shallow tree (file phases dominate) and a directory-heavy tree whose
# directory phases last long enough on tmpfs to be measured.
TREES = [(20, 40, 1, 3), (90, 1, 1, 3)]
PHASES = ["dir-create", "file-create", "file-remove", "dir-remove"]
FDTREE_LINE = re.compile(r"^(DIRECTORY|FILE) (CREATE|REMOVE) TIME IN, OUT, TOTAL\s*= ([\d.]+), ([\d.]+), ([\d.]+)")


def timed(cmd):
    """Runs cmd; returns its stdout and the user CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return out, resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def run_c(tree, work):
    out, user = timed([C_BIN, *map(str, tree), work])
    return {l.split()[0]: float(l.split()[1]) for l in out.splitlines()}, user


def run_fsbench(tree, work):
    d, f, s, l = map(str, tree)
    out, user = timed([FSBENCH, "fdtree", "-d", d, "-f", f, "-s", s, "-l", l, "-o", work])
    times = {}
    for line in out.splitlines():
        m = FDTREE_LINE.match(line)
        if m:
            kind = "dir" if m.group(1) == "DIRECTORY" else "file"
            times[f"{kind}-{m.group(2).lower()}"] = float(m.group(5))
    return times, user


def peak_rss_kib(cmd):
    code = "import resource,subprocess,sys;subprocess.run(sys.argv[1:],check=True,capture_output=True);" \
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    return int(subprocess.run([sys.executable, "-c", code, *cmd], check=True, capture_output=True, text=True).stdout)


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    subprocess.run(["gcc", "-O2", "-Wall", "-o", C_BIN, os.path.join(ROOT, "bench/fdtree.c")], check=True)
    with tempfile.TemporaryDirectory(prefix="fsbench-bench.", dir="/dev/shm") as work:
        times = defaultdict(list)
        user = defaultdict(list)
        for tree in TREES:
            for rnd in range(ROUNDS):
                order = [("c", run_c), ("fsbench", run_fsbench)]
                for tool, fn in order if rnd % 2 == 0 else order[::-1]:
                    settle()
                    phases, cpu = fn(tree, work)
                    user[(tree, tool)].append(cpu)
                    for p in PHASES:
                        times[(tree, p, tool)].append(phases[p])
        print(f"{ROUNDS} rounds per tree on tmpfs; ratio = fsbench rate / C rate (same units, inverse time ratio)")
        print(f"{'tree -d -f -s -l':17} {'phase':12} {'C med s':>8} {'fsb med s':>9} {'ratio med':>9} "
              f"{'C min s':>8} {'fsb min s':>9} {'ratio min':>9}")
        worst = None
        for tree in TREES:
            name = " ".join(map(str, tree))
            for p in PHASES:
                c, f = times[(tree, p, "c")], times[(tree, p, "fsbench")]
                cm, fm, cb, fb = statistics.median(c), statistics.median(f), min(c), min(f)
                if cm < 0.5:
                    print(f"{name:17} {p:12} {cm:8.4f} {fm:9.4f} {'too short: excluded':>39}")
                    continue
                worst = min(worst or 9, cb / fb)
                print(f"{name:17} {p:12} {cm:8.4f} {fm:9.4f} {cm / fm:9.3f} {cb:8.4f} {fb:9.4f} {cb / fb:9.3f}")
            cu, fu = statistics.median(user[(tree, "c")]), statistics.median(user[(tree, "fsbench")])
            print(f"{name:17} user CPU, median of whole runs: C {cu:.3f} s, fsbench {fu:.3f} s")
        print(f"worst phase ratio (best times): {worst:.3f}  (target >= 0.95)")
        small = peak_rss_kib([FSBENCH, "fdtree", "-d", "5", "-f", "5", "-s", "1", "-l", "2", "-o", work])
        large = peak_rss_kib([FSBENCH, "fdtree", "-d", "90", "-f", "1", "-s", "1", "-l", "3", "-o", work])
        print(f"peak RSS: {small} KiB for a 31-directory tree, {large} KiB for a 737,191-directory tree")


if __name__ == "__main__":
    main()
