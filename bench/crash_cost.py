#!/usr/bin/env python3
"""What crash recording costs: the tree workload on a fresh ext4 loop image, plain and behind
fsbench's crash recorder (FUSE daemon, block log), in one suite: `--runs RUNS` plain runs,
then one recorded run (`crash=1`: one state checked, so the suite stays short). fsbench
reports the recorded run's phase time over the plain runs' mean as the recording's cost; this
script repeats the suite ROUNDS times and prints the median per workload. Target: <= 2.0.

Root only (mkfs, loop devices, FUSE). Needs a quiet machine: the cost is a ratio of two
timings. Environment: ROUNDS (5), RUNS (3), WORKLOADS (space-separated tree specs),
IMAGE_DIR (/var/tmp).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
RUNS = os.environ.get("RUNS", "3")
WORKLOADS = os.environ.get("WORKLOADS", "tree:small-shallow tree:small-shallow,fsync").split()
IMAGE_DIR = os.environ.get("IMAGE_DIR", "/var/tmp")


def costs_of_one_suite(work):
    """The recorded runs' costs of one suite, by workload."""
    state = os.path.join(work, "state")
    args = [FSBENCH, "--db", os.path.join(work, "results.db"), "run", "-q",
            "--output-format", "json", "--runs", RUNS, "--image-dir", IMAGE_DIR,
            "--fs", "ext4:crash=1"]
    for w in WORKLOADS:
        args += ["-w", w]
    out = subprocess.run(args, check=True, capture_output=True, text=True,
                         env={**os.environ, "FSBENCH_STATE_DIR": state}).stdout
    doc = json.loads(out)
    return {c["workload"]: c.get("cost") for c in doc["configurations"][0]["crash"]}


def main():
    if os.geteuid() != 0:
        sys.exit("crash_cost.py: needs root (mkfs, loop devices, FUSE)")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    by_workload = {}
    with tempfile.TemporaryDirectory(prefix="fsbench-crash-cost.") as work:
        for rnd in range(ROUNDS):
            for workload, cost in costs_of_one_suite(work).items():
                by_workload.setdefault(workload, []).append(cost)
                print(f"round {rnd + 1}: {workload}: {cost:.2f} x", file=sys.stderr)
            os.remove(os.path.join(work, "results.db"))
    worst = 0.0
    for workload, costs in by_workload.items():
        median = statistics.median(costs)
        worst = max(worst, median)
        spread = f"{min(costs):.2f}-{max(costs):.2f}"
        print(f"{workload}: recording costs {median:.2f} x the plain runs (median of "
              f"{len(costs)} suites, {spread}); target <= 2.0")
    sys.exit(0 if worst <= 2.0 else 1)


if __name__ == "__main__":
    main()
