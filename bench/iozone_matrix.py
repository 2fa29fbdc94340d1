#!/usr/bin/env python3
"""fsbench's IOzone matrix against IOzone 3.489 itself, cell by cell: `iozone -a -n 64k -g 16m
-i 0 -i 1 -i 2 -R` and `fsbench run -w iozone:quick,tests=0+1+2,no-drop` (the same files,
records and tests; neither drops caches, as IOzone does not) on tmpfs, alternating (IOzone
first in odd rounds), both pinned to one CPU.

IOzone is not part of fsbench. Build it from its public sources (mer-tools/iozone):
    cd src/current && make linux-AMD64
and give its path in IOZONE=/path/to/iozone. Without it this script says so and exits 0.

Per cell the median of ROUNDS (at least 5) rounds for each tool; per test the geometric mean
of the cells' ratios (fsbench ÷ IOzone), the worst cell, and the worst file-size row's
geometric mean. Targets: geometric mean >= 0.97 for every test, no row below 0.9.
"""
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
IOZONE = os.environ.get("IOZONE")
ROUNDS = max(5, int(os.environ.get("ROUNDS", "5")))
SHM = os.environ.get("SHM", "/dev/shm")
CPU = os.environ.get("CPU", "1")

# IOzone's -R report titles and fsbench's test names.
TESTS = {"Writer report": "write", "Re-writer report": "rewrite", "Reader report": "read",
         "Re-Reader report": "reread", "Random read report": "random-read",
         "Random write report": "random-write"}


def parse_excel(text):
    """IOzone's `Excel output is below:` section: {test: {(file KiB, record KiB): KiB/s}}."""
    lines = text.splitlines()
    start = lines.index("Excel output is below:")
    out, test, records = {}, None, []
    for line in lines[start + 1:]:
        if line.startswith('"') and line.endswith('"') and line.strip('"') in TESTS:
            test = TESTS[line.strip('"')]
            out[test] = {}
            continue
        if test is None or not line.strip():
            continue
        fields = line.split()
        if line.startswith(" "):
            records = [int(f.strip('"')) for f in fields]
            continue
        size = int(fields[0].strip('"'))
        for record, value in zip(records, fields[1:]):
            out[test][(size, record)] = float(value)
    return out


def run_iozone(work):
    out = subprocess.run(["taskset", "-c", CPU, IOZONE, "-a", "-n", "64k", "-g", "16m", "-i", "0", "-i", "1",
                          "-i", "2", "-R", "-f", os.path.join(work, "iozone.tmp")],
                         check=True, capture_output=True, text=True, timeout=1800, cwd=work).stdout
    return parse_excel(out)


def run_fsbench(work):
    target = os.path.join(work, "target")
    os.mkdir(target)
    out = subprocess.run(["taskset", "-c", CPU, FSBENCH, "run", "-q", "--output-format", "json", "--runs", "1",
                          "--db", os.path.join(work, "results.db"), "--dir", target,
                          "-w", "iozone:quick,tests=0+1+2,no-drop"],
                         check=True, capture_output=True, text=True, timeout=1800).stdout
    doc = json.loads(out)
    cells = {}
    for s in doc["summaries"]:
        if s["metric"] != "throughput" or not s.get("dims"):
            continue
        d = {x["name"]: x for x in s["dims"]}
        key = (d["file size"]["bytes"] // 1024, d["record size"]["bytes"] // 1024)
        cells.setdefault(d["test"]["text"], {})[key] = s["mean"]
    return cells


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    if not IOZONE or not os.access(IOZONE, os.X_OK):
        print("bench/iozone_matrix.py: set IOZONE=/path/to/iozone (build mer-tools/iozone: "
              "cd src/current && make linux-AMD64); skipped")
        return 0
    if not os.access(FSBENCH, os.X_OK):
        print("build fsbench first: cargo build --release", file=sys.stderr)
        return 1
    runs = {"iozone": [], "fsbench": []}
    for r in range(1, ROUNDS + 1):
        for tool in (["iozone", "fsbench"] if r % 2 else ["fsbench", "iozone"]):
            work = tempfile.mkdtemp(dir=SHM, prefix="iozone-matrix.")
            try:
                runs[tool].append(run_iozone(work) if tool == "iozone" else run_fsbench(work))
            finally:
                shutil.rmtree(work)
        print(f"round {r} done", file=sys.stderr)
    print(f"{ROUNDS} rounds on tmpfs, pinned to CPU {CPU}; per cell the median of each tool, "
          "ratio = fsbench ÷ IOzone")
    print(f"{'test':<14} {'cells':>5} {'geomean':>8} {'worst cell':>22} {'worst row':>18}")
    ok = True
    for test in TESTS.values():
        cells = sorted(set(runs["iozone"][0].get(test, {})) & set(runs["fsbench"][0].get(test, {})))
        ratios = {}
        for cell in cells:
            io = statistics.median(x[test][cell] for x in runs["iozone"])
            fb = statistics.median(x[test][cell] for x in runs["fsbench"])
            if io > 0 and fb > 0:
                ratios[cell] = fb / io
        if not ratios:
            print(f"{test:<14} no common cells")
            ok = False
            continue
        g = geomean(ratios.values())
        worst = min(ratios, key=ratios.get)
        rows = {}
        for (size, rec), v in ratios.items():
            rows.setdefault(size, []).append(v)
        row_means = {size: geomean(v) for size, v in rows.items()}
        worst_row = min(row_means, key=row_means.get)
        ok &= g >= 0.97 and row_means[worst_row] >= 0.9
        print(f"{test:<14} {len(ratios):>5} {g:>8.3f} {ratios[worst]:>8.3f} at {worst[0]}K/{worst[1]}K"
              f" {row_means[worst_row]:>8.3f} at {worst_row}K")
    print("targets met" if ok else "targets NOT met (geomean >= 0.97 per test, rows >= 0.9)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
