#!/usr/bin/env python3
"""fsbench's personalities against filebench 1.5-alpha3 itself, with the same workload files:
fileserver, varmail, webserver, webproxy and oltp, scaled to finish well under a minute each,
on tmpfs and on ext4 and xfs loop images (fresh for every run, direct-I/O loop devices for
both tools), alternating which tool runs first, ROUNDS rounds.

For each personality the file is written once by `fsbench filebench --personality ... --dump`
and given to both: filebench runs it as `setarch $(uname -m) -R $FILEBENCH -f FILE` (with
ASLR on its workers crash at start-up); fsbench as `fsbench filebench FILE --fs FS --runs 1
--no-drop-caches` (filebench neither syncs nor drops caches after its pre-allocation).

It prints, per personality and filesystem, each tool's median ops/s over the rounds (its IO
Summary's), fsbench ÷ filebench, and whether filebench completed ("could not obtain a file"
ends its run without an IO Summary, and it still exits 0); then each tool's order of the
filesystems per personality by medians, and its verdict on each pair of filesystems: one
ahead when every round of it beat every round of the other, a tie when their rounds overlap.
The tools agree unless one ranks a pair one way and the other the other way; it exits 1 on
such a contradiction, a ratio under 0.95 or unequal calls.

With STRACE=1 (the default) it first counts, once per personality on tmpfs, the system calls
the worker threads of each tool make (strace -f -ff; the threads that made directories, the
pre-allocation's, are left out) per flowop run, by call: those counts do not depend on the
machine's load, and must be equal (unlink/unlinkat, stat/newfstatat and mkdir/mkdirat are
the same call). futex and the memory calls are not compared (they depend on contention).

filebench is not part of fsbench: FILEBENCH=/path/to/filebench (built from filebench/filebench
22620e6 with its libraries in /usr/local/lib/filebench). Without it this script says so and
exits 0. Root is needed for the loop images and tmpfs mounts.

    FILEBENCH=/usr/local/bin/filebench python3 bench/filebench_compare.py
Environment: ROUNDS (3), SECONDS_PER_RUN (20), FILESYSTEMS (tmpfs,ext4,xfs), PERSONALITIES
(fileserver,varmail,webserver,webproxy,oltp), STRACE (1), IMAGE_SIZE (4G), FSBENCH
(target/release/fsbench), WORK (/var/tmp), SCALE_<PERSONALITY> (its parameters instead of
the bench's, e.g. SCALE_OLTP=nthreads=10,filesize=64m).
"""
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FILEBENCH = os.environ.get("FILEBENCH")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SECONDS = int(os.environ.get("SECONDS_PER_RUN", "20"))
FILESYSTEMS = os.environ.get("FILESYSTEMS", "tmpfs,ext4,xfs").split(",")
PERSONALITIES = os.environ.get("PERSONALITIES", "fileserver,varmail,webserver,webproxy,oltp").split(",")
STRACE = os.environ.get("STRACE", "1") == "1"
IMAGE_SIZE = os.environ.get("IMAGE_SIZE", "4G")
WORK = os.environ.get("WORK", "/var/tmp")

# Scaled so that each run's set fits in memory and a run ends within a minute.
SCALE = {
    "fileserver": "nfiles=2000,nthreads=16",
    "varmail": "nfiles=1000,nthreads=16",
    "webserver": "nfiles=1000,nthreads=32",
    "webproxy": "nfiles=2000,nthreads=32",
    "oltp": "nthreads=40,filesize=64m",
}

# Calls compared, with the *at() names fsbench uses mapped to filebench's.
SAME = {"unlinkat": "unlink", "mkdirat": "mkdir", "newfstatat": "stat", "statx": "stat", "openat": "open", "fstat": "stat"}
FILE_CALLS = {"open", "close", "read", "write", "pread64", "pwrite64", "lseek", "fsync", "fdatasync",
              "unlink", "stat", "mkdir", "fadvise64", "io_submit", "io_getevents"}


def workload_file(name, seconds):
    scale = os.environ.get(f"SCALE_{name.upper()}", SCALE[name])
    spec = f"{name},{scale},runtime={seconds}"
    out = subprocess.run([FSBENCH, "filebench", "--personality", spec, "--dump"], check=True, capture_output=True, text=True)
    return out.stdout


def with_dir(text, d):
    return re.sub(r"^set \$dir=.*$", f"set $dir={d}", text, count=1, flags=re.M)


def sh(*cmd, **kw):
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True, **kw)


class Fresh:
    """A fresh filesystem mounted in `tmp/mnt` for one filebench run: tmpfs, or ext4/xfs on a
    sparse loop image with a direct-I/O loop device (as fsbench makes them)."""

    def __init__(self, fs, tmp):
        self.fs, self.tmp = fs, tmp
        self.mnt = os.path.join(tmp, "mnt")
        self.image = os.path.join(tmp, "fs.img")
        self.loop = None

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        if self.fs == "tmpfs":
            sh("mount", "-t", "tmpfs", "tmpfs", self.mnt)
            return self.mnt
        sh("truncate", "-s", IMAGE_SIZE, self.image)
        self.loop = sh("losetup", "--find", "--show", "--direct-io=on", self.image).stdout.strip()
        sh(f"mkfs.{self.fs}", *(["-q", "-F"] if self.fs == "ext4" else ["-q", "-f"]), self.loop)
        sh("mount", self.loop, self.mnt)
        return self.mnt

    def __exit__(self, *exc):
        subprocess.run(["umount", self.mnt])
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop])
            os.remove(self.image)


def run_filebench(text, fs, tmp, strace_dir=None):
    """(ops/s or None, why not, the breakdown's counts by flowop)."""
    with Fresh(fs, tmp) as mnt:
        path = os.path.join(tmp, "workload.f")
        with open(path, "w") as f:
            f.write(with_dir(text, mnt))
        cmd = ["setarch", os.uname().machine, "-R", FILEBENCH, "-f", path]
        if strace_dir:
            cmd = ["strace", "-f", "-ff", "-qq", "-o", os.path.join(strace_dir, "t")] + cmd
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS * 4 + 300)
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+(\d+)ops ", out.stdout, re.M)}
    m = re.search(r"IO Summary:\s+(\d+) ops ([\d.]+) ops/s", out.stdout)
    if not m:
        said = out.stdout + out.stderr
        why = "stopped early: could not obtain a file" if "could not obtain a file" in said else "no IO Summary: " + " / ".join(said.strip().splitlines()[-2:])
        return None, why, counts
    return float(m.group(2)), "", counts


def run_fsbench(text, fs, tmp, strace_dir=None):
    path = os.path.join(tmp, "workload.f")
    with open(path, "w") as f:
        f.write(text)
    cmd = [FSBENCH, "--db", os.path.join(tmp, "results.db"), "filebench", path, "--runs", "1", "-q",
           "--no-drop-caches", "--output-format", "json"]
    cmd += ["--dir", os.path.join(tmp, "mnt")] if strace_dir else ["--fs", fs, "--image-dir", tmp, "--image-size", IMAGE_SIZE]
    if strace_dir:
        cmd = ["strace", "-f", "-ff", "-qq", "-o", os.path.join(strace_dir, "t")] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS * 4 + 300)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:], {}
    doc = json.loads(out.stdout)
    run = next(p for p in doc["runs"][0]["phases"] if p["name"] == "run")
    ops_s = next(f["value"] for f in run["figures"] if f["name"] == "ops/s" and not f.get("dims"))
    counts = {f["dims"][0]["text"]: int(f["value"]) for f in run["figures"] if f["name"] == "flowop ops"}
    return ops_s, "", counts


def worker_calls(strace_dir, sets):
    """Calls of each worker thread, by name: the threads that open files of the sets and
    made no directory (the pre-allocation did)."""
    threads = []
    opens_a_set = re.compile(r'^open(at)?\(.*"[^"]*\b(' + "|".join(sets) + r')/')
    for name in os.listdir(strace_dir):
        with open(os.path.join(strace_dir, name), errors="replace") as f:
            lines = f.read().splitlines()
        names = [m.group(1) for m in (re.match(r"^(\w+)\(", l) for l in lines) if m]
        if any(n in ("mkdir", "mkdirat") for n in names) or not any(opens_a_set.match(l) for l in lines):
            continue
        calls = collections.Counter(SAME.get(n, n) for n in names)
        threads.append(collections.Counter({k: v for k, v in calls.items() if k in FILE_CALLS}))
    return threads


def aio_writes(strace_dir):
    """pwrite64 calls of the threads that make no pread64: POSIX AIO's helper threads make
    the aiowrites' (fsbench's results database, SQLite, reads and writes with both)."""
    n = 0
    for name in os.listdir(strace_dir):
        with open(os.path.join(strace_dir, name), errors="replace") as f:
            lines = f.read().splitlines()
        if not any(l.startswith("pread64(") for l in lines):
            n += sum(1 for l in lines if l.startswith("pwrite64("))
    return n


def syscall_check():
    print("== system calls per flowop run, worker threads, tmpfs ==")
    ok = True
    for name in PERSONALITIES:
        text = workload_file(name, 10 if name == "oltp" else 4)
        sets = re.findall(r"^define (?:fileset|file) name=([\w-]+)", text, re.M)
        per = {}
        for tool, run in (("filebench", run_filebench), ("fsbench", run_fsbench)):
            with tempfile.TemporaryDirectory(dir=WORK) as tmp, tempfile.TemporaryDirectory(dir=WORK) as trace:
                if tool == "fsbench":
                    os.makedirs(os.path.join(tmp, "mnt"))
                    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", os.path.join(tmp, "mnt")], check=True)
                try:
                    _, why, counts = run(text, "tmpfs", tmp, strace_dir=trace)
                finally:
                    if tool == "fsbench":
                        subprocess.run(["umount", os.path.join(tmp, "mnt")])
                runs = sum(counts.values())
                if not runs:
                    print(f"  {name}: {tool} gave no counts ({why})")
                    per[tool] = None
                    continue
                threads = worker_calls(trace, sets)
                if name == "oltp":
                    # Its flowops differ by process, and how often each runs depends on the
                    # machine: its reads and writes are compared per read and per aiowrite,
                    # less the opens that count as their runs (a slot's first use).
                    readers = [t for t in threads if t["pread64"]]
                    reads = counts.get("shadowread", 0) - sum(t["open"] for t in readers)
                    writes = counts.get("lg-write", 0) + counts.get("dbwrite-a", 0)
                    writes -= sum(t["open"] for t in threads if not t["pread64"])
                    per[tool] = {"pread64 a read": sum(t["pread64"] for t in readers) / max(reads, 1),
                                 "pwrite64 an aiowrite": aio_writes(trace) / max(writes, 1)}
                else:
                    calls = sum(threads, collections.Counter())
                    per[tool] = {k: v / runs for k, v in calls.items()}
        if None in per.values():
            ok = False
            continue
        keys = sorted(set(per["filebench"]) | set(per["fsbench"]))
        row = ", ".join(f"{k} {per['filebench'].get(k, 0):.3f}/{per['fsbench'].get(k, 0):.3f}" for k in keys)
        # oltp's writes are glibc's helper threads', and filebench counts its aiowrites only
        # within its stats window (its dbwr threads' first pass runs before it opens):
        # only the reads are held to equality there.
        gated = ["pread64 a read"] if name == "oltp" else keys
        total = [sum(per[t].get(k, 0) for k in gated) for t in ("filebench", "fsbench")]
        same = abs(total[1] - total[0]) <= 0.03 * total[0]
        ok &= same
        print(f"  {name}: {total[0]:.3f} vs {total[1]:.3f} calls a flowop run {'EQUAL' if same else 'DIFFERENT'} "
              f"(filebench/fsbench: {row})")
    return ok


def main():
    if not FILEBENCH or not os.access(FILEBENCH, os.X_OK):
        print("FILEBENCH=/path/to/filebench is not set: nothing to compare (see the docstring)")
        return 0
    if os.geteuid() != 0:
        print("needs root (tmpfs mounts and loop images)")
        return 1
    if not os.access(FSBENCH, os.X_OK):
        print(f"{FSBENCH} is missing: cargo build --release")
        return 1
    good = syscall_check() if STRACE else True
    results = collections.defaultdict(lambda: collections.defaultdict(list))
    failed = collections.Counter()
    texts = {n: workload_file(n, SECONDS) for n in PERSONALITIES}
    for rnd in range(ROUNDS):
        for name in PERSONALITIES:
            for fs in FILESYSTEMS:
                order = [("filebench", run_filebench), ("fsbench", run_fsbench)]
                for tool, run in order if rnd % 2 == 0 else order[::-1]:
                    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
                        ops, why, _ = run(texts[name], fs, tmp)
                    if ops is None:
                        failed[(name, fs, tool, str(why))] += 1
                    else:
                        results[(name, fs)][tool].append(ops)
                    print(f"round {rnd + 1} {name} {fs} {tool}: {ops if ops is not None else why}", flush=True)
    print("\n== ops/s, median over rounds ==")
    print(f"{'personality':<12} {'fs':<6} {'filebench':>11} {'fsbench':>11} {'ratio':>6}")
    for name in PERSONALITIES:
        for fs in FILESYSTEMS:
            r = results[(name, fs)]
            fb = statistics.median(r["filebench"]) if r["filebench"] else None
            fx = statistics.median(r["fsbench"]) if r["fsbench"] else None
            ratio = f"{fx / fb:.2f}" if fb and fx else "-"
            if fb and fx and fx < 0.95 * fb:
                good = False
            print(f"{name:<12} {fs:<6} {fb or 0:>11.0f} {fx or 0:>11.0f} {ratio:>6}")
    for (name, fs, tool, why), n in sorted(failed.items()):
        print(f"  {tool} did not complete {name} on {fs} in {n} of {ROUNDS} rounds: {why}")
    print("\n== filesystems, fastest first (by medians) ==")
    for name in PERSONALITIES:
        # Only the filesystems where both completed a run.
        both = [fs for fs in FILESYSTEMS if results[(name, fs)]["filebench"] and results[(name, fs)]["fsbench"]]
        orders = {}
        for tool in ("filebench", "fsbench"):
            med = {fs: statistics.median(results[(name, fs)][tool]) for fs in both}
            orders[tool] = sorted(med, key=med.get, reverse=True)
        print(f"{name:<12} filebench {' > '.join(orders['filebench'])}; fsbench {' > '.join(orders['fsbench'])}"
              f" {'SAME' if orders['filebench'] == orders['fsbench'] else 'DIFFERENT'}")
        good &= pairs_agree(name, both, results)
    return 0 if good else 1


def told_apart(a, b):
    """'>' or '<' when every round of `a` beat every round of `b` (or the reverse), '~' when
    their ranges overlap: with 3 to 5 rounds no test is finer, and a median order inside the
    spread is a coin toss."""
    if min(a) > max(b):
        return ">"
    if max(a) < min(b):
        return "<"
    return "~"


def pairs_agree(name, both, results):
    """The verdict per pair of filesystems, each tool's; the tools disagree when one ranks a
    pair one way and the other the other way. A pair only one tool tells apart is named."""
    agree = True
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            says = {t: told_apart(results[(name, a)][t], results[(name, b)][t]) for t in ("filebench", "fsbench")}
            clash = "~" not in says.values() and says["filebench"] != says["fsbench"]
            agree &= not clash
            word = "CONTRADICT" if clash else ("agree" if says["filebench"] == says["fsbench"] else "one tool only")
            print(f"  {name} {a} vs {b}: filebench {a} {says['filebench']} {b}, fsbench {a} {says['fsbench']} {b}: {word}")
    return agree

    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
