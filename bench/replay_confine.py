#!/usr/bin/env python3
"""What confinement costs the replay: every replayed name is resolved beneath the run's
directory by the kernel (openat2 RESOLVE_BENEATH) into a descriptor, and the call made on it,
where a trace without symlinks used to name its paths from the directory in one call. A
synthetic trace of path calls on nested names (lstat, stat, chmod, utimens, open+close,
mkdir+rmdir, rename there and back) from THREADS threads is replayed RUNS times by each
binary given (`fsbench capture --replay`, fast, into a directory on /dev/shm); the median
calls/s of each, and the ratio to the first.

    bench/replay_confine.py OLD_FSBENCH NEW_FSBENCH      (release builds; a quiet machine)
    CALLS=2000 RUNS=1 bench/replay_confine.py target/debug/fsbench      (a smoke run)
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

CALLS = int(os.environ.get("CALLS", "200000"))
RUNS = int(os.environ.get("RUNS", "5"))
THREADS = int(os.environ.get("THREADS", "4"))
DEPTH = 4


def trace_text():
    """The initial state (DEPTH levels of directories, a file in each leaf) and the calls."""
    lines = ["fsbench-trace 1", "root\t/bench"]
    leaves = []
    for t in range(THREADS):
        path = f"t{t}"
        lines.append(f"d\t{path}")
        for level in range(DEPTH):
            path += f"/d{level}"
            lines.append(f"d\t{path}")
        lines.append(f"f\t{path}/f\t4096")
        leaves.append(path)
    lines.append("calls")
    rounds = [
        ["stat\t0\t0\t-1\t-1\t0\t-1\t{f}\t-"],
        ["stat\t0\t0\t-1\t-1\t1\t-1\t{f}\t-"],
        ["chmod\t0\t0\t-1\t-1\t420\t-1\t{f}\t-"],
        ["utimens\t0\t0\t-1\t-1\t1\t-1\t{f}\t-"],
        ["open\t3\t0\t-1\t3\t0\t0\t{f}\t-", "close\t0\t0\t3\t-1\t0\t-1\t{f}\t-"],
        ["mkdir\t0\t0\t-1\t-1\t493\t-1\t{d}/m\t-", "rmdir\t0\t0\t-1\t-1\t0\t-1\t{d}/m\t-"],
        ["rename\t0\t0\t-1\t-1\t0\t-1\t{f}\t{d}/g", "rename\t0\t0\t-1\t-1\t0\t-1\t{d}/g\t{f}"],
    ]
    made, i = 0, 0
    while made < CALLS:
        for call in rounds[i // THREADS % len(rounds)]:
            t = i % THREADS
            line = call.format(f=f"{leaves[t]}/f", d=leaves[t])
            lines.append(f"{t}\t{made}\t1\t{line}")
            made += 1
        i += 1
    lines.append(f"end\t{made}\t0")
    return "\n".join(lines) + "\n", made


def replay(fsbench, trace, work):
    """Calls per second of one replay into a fresh directory."""
    target = tempfile.mkdtemp(dir=work)
    out = subprocess.run([fsbench, "capture", "--replay", trace, "-C", target],
                         check=True, capture_output=True, text=True).stdout
    subprocess.run(["rm", "-rf", target], check=True)
    m = re.search(r"replayed ([\d,]+) calls in ([\d.]+) s", out)
    return int(m.group(1).replace(",", "")) / float(m.group(2))


def main():
    binaries = sys.argv[1:]
    if not binaries:
        sys.exit(__doc__)
    text, made = trace_text()
    with tempfile.TemporaryDirectory(dir="/dev/shm") as work:
        trace = os.path.join(work, "bench.trace")
        subprocess.run(["zstd", "-q", "-o", trace], input=text.encode(), check=True)
        print(f"{made} calls of {THREADS} threads on names {DEPTH + 2} deep, {RUNS} runs each")
        first = None
        for fsbench in binaries:
            rates = [replay(fsbench, trace, work) for _ in range(RUNS)]
            median = statistics.median(rates)
            first = first or median
            spread = f"{min(rates):,.0f}–{max(rates):,.0f}"
            print(f"{fsbench}: {median:,.0f} calls/s (runs {spread}), {median / first:.2f} × the first")


if __name__ == "__main__":
    main()
