#!/usr/bin/env python3
"""fsbench under MPI against mdtest at -np 1, 2 and 4 on tmpfs, the same tree per rank:
`mpirun -np N mdtest -z 3 -b 20 -I 40 -F -u` and
`mpirun -np N fsbench run -w tree:dirs=20,files=40,size=0,levels=3,stat,read`, alternating
(mdtest first in odd rounds); then the tree's `threads=N` scaling curve on this machine,
without MPI.

Both aggregate rates are Σ items ÷ the slowest rank's phase time. Per rank count and phase:
the median of ROUNDS of each tool and their ratio (fsbench ÷ mdtest). Target: >= 1.0 at every
rank count.

fsbench must be built with MPI: `cargo build --release --features mpi`. mdtest is not part
of fsbench: build hpc/ior with Debian's Open MPI (see bench/mdtest.py) and give its path in
MDTEST=. Without it only the threads curve runs. NPS=1,2,4, ROUNDS=3, BRANCH=20, ITEMS=40,
DEPTH=3, THREADS=1,2,4 and SHM=/dev/shm override the defaults.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
MDTEST = os.environ.get("MDTEST")
MPIRUN = os.environ.get("MPIRUN", "mpirun")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SHM = os.environ.get("SHM", "/dev/shm")
NPS = [int(n) for n in os.environ.get("NPS", "1,2,4").split(",")]
THREADS = [int(n) for n in os.environ.get("THREADS", "1,2,4").split(",")]
DEPTH = int(os.environ.get("DEPTH", "3"))
BRANCH = int(os.environ.get("BRANCH", "20"))
ITEMS = int(os.environ.get("ITEMS", "40"))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
TREE = f"tree:dirs={BRANCH},files={ITEMS},size=0,levels={DEPTH},stat,read"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mdtest import PHASES, parse_rates  # noqa: E402  (mdtest's output, read one way)


def mpirun(np):
    return [MPIRUN, "--oversubscribe", "-np", str(np)]


def run_mdtest(np, work):
    cmd = mpirun(np) + [MDTEST, "-z", str(DEPTH), "-b", str(BRANCH), "-I", str(ITEMS), "-F", "-u",
                        "-d", work]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=3600, env=ENV).stdout
    return parse_rates(out)


def run_fsbench(prefix, work, workload):
    target = os.path.join(work, "target")
    os.mkdir(target)
    cmd = prefix + [FSBENCH, "--db", os.path.join(work, "results.db"), "run", "-q", "--output-format",
                    "json", "--runs", "1", "--dir", target, "-w", workload]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=3600, env=ENV).stdout
    doc = json.loads(out)
    return {s["phase"]: s["mean"] for s in doc["summaries"] if s["metric"] == "rate" and not s.get("dims")}


def in_scratch(fn):
    work = tempfile.mkdtemp(dir=SHM, prefix="mdtest-mpi-bench.")
    try:
        return fn(work)
    finally:
        shutil.rmtree(work)


def compare_ranks():
    print(f"mdtest -z {DEPTH} -b {BRANCH} -I {ITEMS} -F -u per rank, tmpfs; aggregate rates (items/s), "
          f"medians of {ROUNDS} alternating rounds")
    print(f"{'np':>2} {'phase':<12} {'mdtest':>12} {'fsbench':>12} {'ratio':>7}")
    worst = None
    for np in NPS:
        runs = {"mdtest": [], "fsbench": []}
        for r in range(1, ROUNDS + 1):
            for tool in (["mdtest", "fsbench"] if r % 2 else ["fsbench", "mdtest"]):
                if tool == "mdtest":
                    runs[tool].append(in_scratch(lambda w: run_mdtest(np, w)))
                else:
                    runs[tool].append(in_scratch(lambda w: run_fsbench(mpirun(np), w, TREE)))
            print(f"np {np} round {r} done", file=sys.stderr)
        for phase in PHASES.values():
            m = statistics.median(x[phase] for x in runs["mdtest"])
            f = statistics.median(x[phase] for x in runs["fsbench"])
            worst = f / m if worst is None else min(worst, f / m)
            print(f"{np:>2} {phase:<12} {m:>12,.0f} {f:>12,.0f} {f / m:>7.3f}")
    print(f"worst ratio {worst:.3f} (target >= 1.0)")


def threads_curve():
    print(f"\ntree threads=N (no MPI), {TREE} per thread, tmpfs; rates (items/s), medians of {ROUNDS}")
    curve = {}
    for r in range(ROUNDS):
        for n in THREADS:
            rates = in_scratch(lambda w: run_fsbench([], w, f"{TREE},threads={n}"))
            curve.setdefault(n, []).append(rates)
    print(f"{'threads':>7} " + " ".join(f"{p:>12}" for p in PHASES.values()))
    for n in THREADS:
        print(f"{n:>7} " + " ".join(f"{statistics.median(x[p] for x in curve[n]):>12,.0f}"
                                    for p in PHASES.values()))


def main():
    if not os.access(FSBENCH, os.X_OK):
        print("build fsbench first: cargo build --release --features mpi", file=sys.stderr)
        return 1
    if MDTEST and os.access(MDTEST, os.X_OK):
        compare_ranks()
    else:
        print("bench/mdtest_mpi.py: set MDTEST=/path/to/mdtest for the comparison (see bench/mdtest.py); "
              "only the threads curve runs")
    threads_curve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
