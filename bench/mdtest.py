#!/usr/bin/env python3
"""fsbench's tree (with mdtest's stat and read phases) against mdtest itself, one rank, on
tmpfs, the same tree: `mdtest -z 3 -b 20 -I 40 -F -u` (depth 3, 20 directories per
directory, 40 files in each of the 8,421 directories: 336,840 empty files) and
`fsbench run -w tree:dirs=20,files=40,size=0,levels=3,stat,read`, alternating (mdtest first in
odd rounds), both pinned to one CPU.

mdtest is not part of fsbench. Build it from its public sources (hpc/ior) with Debian's Open
MPI (`apt-get install libopenmpi-dev openmpi-bin autoconf automake`):
    ./bootstrap && ./configure && make
and give its path in MDTEST=/path/to/src/mdtest (MPIRUN=mpirun by default; as root the
script sets OMPI_ALLOW_RUN_AS_ROOT). Without it this script says so and exits 0.

mdtest's rate is items ÷ phase time, as fsbench's. Phases compared: file creation, stat, read
and removal (fsbench's file-create, file-stat, file-read, file-remove) and tree creation and
removal (dir-create, dir-remove). Per phase the median of ROUNDS of each tool and their ratio
(fsbench ÷ mdtest). Target: >= 1.0 in every phase.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
MDTEST = os.environ.get("MDTEST")
MPIRUN = os.environ.get("MPIRUN", "mpirun")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
SHM = os.environ.get("SHM", "/dev/shm")
CPU = os.environ.get("CPU", "1")
DEPTH, BRANCH, ITEMS = 3, 20, 40

PHASES = {"File creation": "file-create", "File stat": "file-stat", "File read": "file-read",
          "File removal": "file-remove", "Tree creation": "dir-create", "Tree removal": "dir-remove"}
ROW = re.compile(r"^\s+(File creation|File stat|File read|File removal|Tree creation|Tree removal)\s+([\d.]+)")


def run_mdtest(work):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [MPIRUN, "--oversubscribe", "-np", "1", "taskset", "-c", CPU, MDTEST, "-z", str(DEPTH), "-b",
           str(BRANCH), "-I", str(ITEMS), "-F", "-u", "-d", work]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800, env=env).stdout
    return parse_rates(out)


def parse_rates(out):
    """mdtest's summary rows (their max column): {fsbench phase: items/s}."""
    rates = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rates[PHASES[m.group(1)]] = float(m.group(2))
    return rates


def run_fsbench(work):
    target = os.path.join(work, "target")
    os.mkdir(target)
    out = subprocess.run(["taskset", "-c", CPU, FSBENCH, "run", "-q", "--output-format", "json", "--runs", "1",
                          "--db", os.path.join(work, "results.db"), "--dir", target, "-w",
                          f"tree:dirs={BRANCH},files={ITEMS},size=0,levels={DEPTH},stat,read"],
                         check=True, capture_output=True, text=True, timeout=1800).stdout
    doc = json.loads(out)
    return {s["phase"]: s["mean"] for s in doc["summaries"] if s["metric"] == "rate" and not s.get("dims")}


def main():
    if not MDTEST or not os.access(MDTEST, os.X_OK):
        print("bench/mdtest.py: set MDTEST=/path/to/mdtest (build hpc/ior with Open MPI: "
              "./bootstrap && ./configure && make); skipped")
        return 0
    if not os.access(FSBENCH, os.X_OK):
        print("build fsbench first: cargo build --release", file=sys.stderr)
        return 1
    runs = {"mdtest": [], "fsbench": []}
    for r in range(1, ROUNDS + 1):
        for tool in (["mdtest", "fsbench"] if r % 2 else ["fsbench", "mdtest"]):
            work = tempfile.mkdtemp(dir=SHM, prefix="mdtest-bench.")
            try:
                runs[tool].append(run_mdtest(work) if tool == "mdtest" else run_fsbench(work))
            finally:
                shutil.rmtree(work)
        print(f"round {r} done", file=sys.stderr)
    print(f"mdtest -z {DEPTH} -b {BRANCH} -I {ITEMS} -F -u, 1 rank, tmpfs, pinned to CPU {CPU}; "
          f"medians of {ROUNDS} rounds (items/s)")
    print(f"{'phase':<12} {'mdtest':>12} {'fsbench':>12} {'ratio':>7}")
    worst = None
    for phase in PHASES.values():
        m = statistics.median(x[phase] for x in runs["mdtest"])
        f = statistics.median(x[phase] for x in runs["fsbench"])
        ratio = f / m
        worst = ratio if worst is None else min(worst, ratio)
        print(f"{phase:<12} {m:>12,.0f} {f:>12,.0f} {ratio:>7.3f}")
    print(f"worst ratio {worst:.3f} (target >= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
