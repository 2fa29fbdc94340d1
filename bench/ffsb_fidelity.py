#!/usr/bin/env python3
"""fsbench's FFSB figures against FFSB 6.0-RC1's own, on the same profiles, on tmpfs, in one
invocation, alternating (FFSB first in odd rounds). Two profiles: the seed's large-write
profile scaled down (8 threads creating 64 MiB files with 64 KiB writes) and a mixed one
(read, write, create, delete and stat weights on a 2,000-file set).

FFSB is not part of fsbench. Build it from its public sources (jrsantos/FFSB):
    ./configure && make
and give its path in FFSB=/path/to/ffsb. Without it this script says so and exits 0.

FFSB 6.0-RC1's write operation adds the whole file's size to the bytes it reports (a
regression), so its printed write throughput is inflated; the real figure is rebuilt from its
transactions (each one `write_blocksize` bytes) and compared. Per round and profile it prints
fsbench ÷ FFSB for read and write throughput and Trans/sec, and both tools' % Trans and
% Op Weight; at the end the medians. Targets: throughput and Trans/sec within ±5%; % Op
Weight within binomial bounds (4 standard deviations).

A third program runs in the same rotation: bench/ffsb_plain.c, FFSB's operations with the
system calls FFSB makes and nothing else (no statistics, one mutex around the file table).
Where fsbench and FFSB differ, fsbench ÷ plain and FFSB ÷ plain say which of the two sits
further from the system calls' own rate.

On a VM whose kernel hands freed memory back to the host at once (free page reporting,
/sys/module/page_reporting), each run's tmpfs pages are faulted in again on the host and a
run's speed depends on what ran before it; the script says so and how to defer the
reporting while it runs.
"""
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
C_BIN = os.path.join(ROOT, "bench/ffsb_plain")
FFSB = os.environ.get("FFSB")
ROUNDS = int(os.environ.get("ROUNDS", "5"))
SECONDS = int(os.environ.get("SECONDS_PER_RUN", "4"))
SHM = os.environ.get("SHM", "/dev/shm")
ONLY = os.environ.get("PROFILES", "seed-scaled,mixed").split(",")

PROFILES = {
    "seed-scaled": ("""time = {time}
[filesystem]
	location = {dir}
	num_files = 0
	num_dirs = 0
	min_filesize = 64m
	max_filesize = 64m
[end]
[threadgroup]
	num_threads = 8
	write_size = 65536
	write_blocksize = 65536
	create_weight = 1
[end]
""", {"write_blocksize": 65536,
       # bench/ffsb_plain.c's arguments after DIR: threads, files, dirs, min, max, read
       # size and block, write size and block, weights of read write create delete stat.
       "plain": [8, 0, 0, 64 << 20, 64 << 20, 0, 65536, 65536, 65536, 0, 0, 1, 0, 0]}),
    "mixed": ("""time = {time}
[filesystem]
	location = {dir}
	num_files = 2000
	num_dirs = 10
	min_filesize = 64k
	max_filesize = 256k
[end]
[threadgroup]
	num_threads = 4
	read_weight = 4
	write_weight = 2
	create_weight = 1
	delete_weight = 1
	stat_weight = 2
	read_size = 64k
	read_blocksize = 4k
	write_size = 32k
	write_blocksize = 4k
[end]
""", {"write_blocksize": 4096,
       "plain": [4, 2000, 10, 64 << 10, 256 << 10, 64 << 10, 4096, 32 << 10, 4096, 4, 2, 1, 1, 2]}),
}

ROW = re.compile(r"^\s*(\S+) :\s+(\d+)\t\s*([\d.]+)\t\s*([\d.]+)%\t\t\s*([\d.]+)%\t\s+(\S+)$")
SIZE = re.compile(r"^([\d.e+]+)(B|KB|MB|GB)/sec$")
UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def mib_per_sec(text):
    m = SIZE.match(text)
    return float(m.group(1)) * UNITS[m.group(2)] / (1 << 20) if m else None


def parse_ffsb_total(out):
    """The `Total Results` block of FFSB's output: rows by op, Trans/sec, throughputs, run time."""
    lines = out.splitlines()
    start = max(i for i, l in enumerate(lines) if l == "Total Results")
    rows = {}
    for l in lines[start + 4:]:
        m = ROW.match(l)
        if not m:
            break
        rows[m.group(1)] = {"tx": int(m.group(2)), "tx/s": float(m.group(3)), "trans": float(m.group(4)),
                            "weight": float(m.group(5)), "throughput": mib_per_sec(m.group(6))}
    tps = next(float(l.split()[0]) for l in lines[start:] if l.endswith("Transactions per Second"))
    took = next(float(l.split()[2]) for l in lines if l.startswith("Benchmark took"))
    read = next((mib_per_sec(l.split(": ")[1]) for l in lines[start:] if l.startswith("Read Throughput")), 0.0)
    write = next((mib_per_sec(l.split(": ")[1]) for l in lines[start:] if l.startswith("Write Throughput")), 0.0)
    return rows, tps, took, read, write


def run_ffsb(profile, settings, work):
    path = os.path.join(work, "profile.ffsb")
    data = os.path.join(work, "data")
    os.mkdir(data)
    with open(path, "w") as f:
        f.write(profile.format(time=SECONDS, dir=data))
    out = subprocess.run([FFSB, path], check=True, capture_output=True, text=True, timeout=SECONDS * 20 + 120).stdout
    rows, tps, took, read, write = parse_ffsb_total(out)
    # The write operation's printed bytes are whole file sizes: rebuild them from its calls.
    if "write" in rows:
        real = rows["write"]["tx"] * settings["write_blocksize"] / (1 << 20) / took
        write = write - rows["write"]["throughput"] + real
    return {"rows": rows, "tps": tps, "read": read, "write": write}


def run_fsbench(profile, work):
    path = os.path.join(work, "profile.ffsb")
    with open(path, "w") as f:
        f.write(profile.format(time=SECONDS, dir=work))
    target = os.path.join(work, "target")
    os.mkdir(target)
    out = subprocess.run([FSBENCH, "ffsb", path, "--dir", target, "--runs", "1", "-q", "--output-format", "json",
                          "--db", os.path.join(work, "results.db")],
                         check=True, capture_output=True, text=True, timeout=SECONDS * 20 + 120).stdout
    doc = json.loads(out)
    figures = {s["metric"]: s["mean"] for s in doc["summaries"] if s["phase"] == "run" and not s.get("dims")}
    rows = {}
    for name in ["read", "write", "create", "delete", "stat"]:
        if f"{name} transactions" in figures:
            rows[name] = {"tx": figures[f"{name} transactions"], "tx/s": figures[f"{name} tx/s"],
                          "trans": figures[f"{name} % trans"], "weight": figures[f"{name} % op weight"]}
    return {"rows": rows, "tps": figures["transactions/s"], "read": figures.get("read throughput", 0.0),
            "write": figures.get("write throughput", 0.0)}


def executions(rows):
    """Operations run, from an op whose transactions are one per call (stat or delete)."""
    for op in ["stat", "delete"]:
        if op in rows and rows[op]["weight"] > 0:
            return rows[op]["tx"] / (rows[op]["weight"] / 100)
    return None


def run_plain(settings, work):
    out = subprocess.run([C_BIN, work, str(settings["plain"][0]), str(SECONDS), *map(str, settings["plain"][1:])],
                         check=True, capture_output=True, text=True, timeout=SECONDS * 20 + 120).stdout
    return {"tps": float(out.split()[-1])}


def page_reporting_warning():
    """A warning when freed memory goes back to the host within a second (see above)."""
    params = "/sys/module/page_reporting/parameters"
    try:
        with open(os.path.join(params, "min_free_ms")) as f:
            delay = int(f.read())
        with open(os.path.join(params, "max_waiting_mib")) as f:
            waiting = int(f.read())
    except (OSError, ValueError):
        return None
    if delay >= 1000:
        return None
    return (f"free page reporting hands freed memory to the host after {delay} ms: a run's speed depends on "
            f"what ran before it; defer it while this runs with `echo 60000 > {params}/min_free_ms; "
            f"echo 20000 > {params}/max_waiting_mib` (and put back {delay} and {waiting} after)")


def main():
    warning = page_reporting_warning()
    if warning:
        print(f"bench/ffsb_fidelity.py: {warning}", file=sys.stderr)
    if not FFSB or not os.access(FFSB, os.X_OK):
        print("bench/ffsb_fidelity.py: set FFSB=/path/to/ffsb (build jrsantos/FFSB: ./configure && make); skipped")
        return 0
    if not os.access(FSBENCH, os.X_OK):
        print("build fsbench first: cargo build --release", file=sys.stderr)
        return 1
    subprocess.run(["gcc", "-O2", "-Wall", "-pthread", "-o", C_BIN, os.path.join(ROOT, "bench/ffsb_plain.c")],
                   check=True)
    chosen = {name: p for name, p in PROFILES.items() if name in ONLY}
    ratios = {name: {"read": [], "write": [], "tps": [], "fsbench/plain": [], "ffsb/plain": []}
              for name in chosen}
    tools = ["ffsb", "fsbench", "plain"]
    for r in range(1, ROUNDS + 1):
        for name, (profile, settings) in chosen.items():
            results = {}
            # Each tool goes first, second and third in turn.
            for tool in tools[r % 3:] + tools[:r % 3]:
                work = tempfile.mkdtemp(dir=SHM, prefix="ffsb-fidelity.")
                try:
                    subprocess.run(["sync"], check=True)
                    if tool == "ffsb":
                        results[tool] = run_ffsb(profile, settings, work)
                    elif tool == "fsbench":
                        results[tool] = run_fsbench(profile, work)
                    else:
                        results[tool] = run_plain(settings, work)
                finally:
                    shutil.rmtree(work)
            f, b, c = results["ffsb"], results["fsbench"], results["plain"]
            line = [f"round {r} {name}:"]
            for key in ["read", "write", "tps"]:
                if f[key] > 0:
                    ratios[name][key].append(b[key] / f[key])
                    line.append(f"{key} {b[key]:.1f}/{f[key]:.1f}={b[key] / f[key]:.3f}")
            ratios[name]["fsbench/plain"].append(b["tps"] / c["tps"])
            ratios[name]["ffsb/plain"].append(f["tps"] / c["tps"])
            line.append(f"plain {c['tps']:.1f}: fsbench {b['tps'] / c['tps']:.3f} ffsb {f['tps'] / c['tps']:.3f}")
            print(" ".join(line))
            n_f, n_b = executions(f["rows"]), executions(b["rows"])
            for op in f["rows"]:
                fo, bo = f["rows"][op], b["rows"].get(op, {"trans": 0.0, "weight": 0.0})
                bound = ""
                if n_f and n_b:
                    p = (fo["weight"] + bo["weight"]) / 200
                    sd = 100 * math.sqrt(p * (1 - p) * (1 / n_f + 1 / n_b))
                    bound = f" (|Δ| {abs(fo['weight'] - bo['weight']):.3f} vs 4σ {4 * sd:.3f})"
                print(f"    {op:>8}: % Trans ffsb {fo['trans']:7.3f} fsbench {bo['trans']:7.3f}; "
                      f"% Op Weight ffsb {fo['weight']:7.3f} fsbench {bo['weight']:7.3f}{bound}")
    print("\nmedians (write corrected for FFSB's whole-file count; tps = Trans/sec):")
    for name, keys in ratios.items():
        parts = [f"{k} {statistics.median(v):.3f}" for k, v in keys.items() if v]
        print(f"  {name}: fsbench/ffsb " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
