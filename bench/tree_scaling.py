#!/usr/bin/env python3
"""Many-core scaling of the tree workload: `tree:threads=N` with its workers as processes
(`workers=processes`, the default) and as threads (`workers=threads`), each next to N
independent processes of bench/fdtree.c making the same system calls on a tree of their own
each (the same shape per worker and per process), starting every phase together, on tmpfs
(/dev/shm), where the filesystem is as fast as it gets and any bottleneck of fsbench's own
shows.

N runs over 1, 2, 4, ... up to the machine's cores, plus the counts in EXTRA (or the first
argument), e.g. `EXTRA=8,16` to oversubscribe a small machine; COUNTS=4,8 runs those alone.
MODES=processes (or threads) runs one mode alone. Per N, ROUNDS rounds rotate which program
goes first. Prints, per mode, phase and N, fsbench's rate as a fraction of the C processes'
from the median times (and from the best times: interference only adds time). Target: >= 0.95
in every phase at every count for processes; the threads' table says what sharing one process
costs.

TREE=DIRS,FILES,SIZE,LEVELS sets each thread's tree (default 30,2,1,3: 27,931 directories
and 55,862 files of 4 KiB, about 300 MB of tmpfs per thread, so that the directory phases
last long enough to measure); the workload runs with `stat`, so a file-stat phase too.

PREBUILT=1 uses target/release/fsbench and bench/fdtree_c as they are (built elsewhere, e.g.
for a machine with no compiler: `cargo build --release` and
`cc -O2 -o bench/fdtree_c bench/fdtree.c` here, then carry both). SCRATCH names the tmpfs
directory to work in (default /dev/shm). RAW=FILE also writes every round's (seconds, units)
per count, phase and program there, as JSON.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

from common import settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
C_BIN = os.path.join(ROOT, "bench/fdtree_c")
TREE = [int(v) for v in os.environ.get("TREE", "30,2,1,3").split(",")]
PHASES = ["dir-create", "file-create", "file-stat", "file-remove", "dir-remove"]
MODES = [m for m in os.environ.get("MODES", "processes,threads").split(",") if m]


def counts():
    """1, 2, 4, ... up to the cores, and the extra counts asked for."""
    cores = os.cpu_count() or 1
    found = {1 << i for i in range(cores.bit_length()) if 1 << i <= cores} | {cores}
    if os.environ.get("COUNTS"):
        return sorted({int(n) for n in os.environ["COUNTS"].split(",") if n})
    extra = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EXTRA", "")
    found |= {int(n) for n in extra.split(",") if n}
    return sorted(found)


def run_processes(n, work):
    """Per phase: (seconds, units) of n processes of the C program."""
    out = subprocess.run([C_BIN, *map(str, TREE), work, str(n), "stat"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    return {l.split()[0]: (float(l.split()[1]), int(l.split()[2])) for l in out.splitlines()}


def run_fsbench(n, work, db, mode):
    """Per phase: (seconds, units) of fsbench's tree workload on n workers of `mode`."""
    d, f, s, l = TREE
    spec = f"tree:dirs={d},files={f},size={s},levels={l},stat,threads={n},workers={mode}"
    out = subprocess.run([FSBENCH, "--db", db, "run", "--dir", work, "-w", spec, "--runs", "1", "-q",
                          "--purpose", "scaling bench", "--output-format", "json"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    phases = json.loads(out)["runs"][0]["phases"]
    return {p["name"]: (p["elapsed_ns"] / 1e9, p["ops"]) for p in phases}


def main():
    if os.environ.get("PREBUILT") != "1":
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        subprocess.run(["cc", "-O2", "-Wall", "-o", C_BIN, os.path.join(ROOT, "bench/fdtree.c")], check=True)
    threads = counts()
    times = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="fsbench-scaling.", dir=os.environ.get("SCRATCH", "/dev/shm")) as work:
        db = os.path.join(work, "results.db")
        tree_dir = os.path.join(work, "trees")
        os.mkdir(tree_dir)
        for done, n in enumerate(threads):
            for rnd in range(ROUNDS):
                order = [("C", run_processes)] + [
                    (mode, lambda n, w, mode=mode: run_fsbench(n, w, db, mode)) for mode in MODES]
                shift = rnd % len(order)
                for tool, fn in order[shift:] + order[:shift]:
                    settle()
                    for phase, (secs, units) in fn(n, tree_dir).items():
                        times[(n, phase, tool)].append((secs, units))
            # The table so far, so that a long run shows its counts as they come.
            report(threads[:done + 1], times)
            if os.environ.get("RAW"):
                with open(os.environ["RAW"], "w") as f:
                    json.dump([[n, phase, tool, runs] for (n, phase, tool), runs in times.items()], f)


def report(threads, times):
    cores = os.cpu_count()
    print(f"tree {','.join(map(str, TREE))} (dirs,files,size,levels) per worker / process, with stat, on tmpfs; "
          f"{cores} cores; {ROUNDS} rounds, rotated")
    print("fsbench rate ÷ N independent C processes' rate, from median times (best times in brackets)")
    for mode in MODES:
        print(f"workers={mode}")
        print(f"{'phase':12}" + "".join(f"{f'N={n}':>15}" for n in threads))
        worst = None
        for phase in PHASES:
            cells = []
            for n in threads:
                c, f = times[(n, phase, "C")], times[(n, phase, mode)]
                if c[0][1] != f[0][1]:
                    sys.exit(f"{phase} at {n}: {c[0][1]} units by the processes, {f[0][1]} by fsbench")
                cs, fs = [t for t, _ in c], [t for t, _ in f]
                med, best = statistics.median(cs) / statistics.median(fs), min(cs) / min(fs)
                worst = min(worst or 9, med)
                cells.append(f"{med:.3f} ({best:.3f})")
            print(f"{phase:12}" + "".join(f"{c:>15}" for c in cells))
        target = "  (target >= 0.95)" if mode == "processes" else ""
        print(f"worst ratio (medians), {mode}: {worst:.3f}{target}")
    over = [n for n in threads if n > cores]
    if over:
        print(f"counts over {cores} cores ({', '.join(map(str, over))}) are oversubscribed")
    print(flush=True)


if __name__ == "__main__":
    main()
