#!/usr/bin/env python3
"""fsbench's peak memory against the size of the work: one `fsbench run` per workload and
size on tmpfs (/dev/shm), its peak resident set (the largest of fsbench's process and its
worker processes, getrusage's ru_maxrss of the children) printed beside the work's size.
Target: under 64 MiB at every size: fsbench's memory must not grow with the work.

The workloads and sizes:
- tree: empty files (`bytes=0`) in trees of 10^4 up to TREE_MAX files (default 10^7: about
  6 GiB of tmpfs; 10^8 needs about 60 GiB), one worker, or TREE_WORKERS worker processes
  with a tree of that shape each (the size counts the files of all of them: TREE_WORKERS=9
  reaches 10^8 files with trees of 11.1 million, where one worker alone would take hours);
- ffsb: the file set of FFSB's large-write profile, `threads=N` files (one per thread);
- io: `nrfiles` files of 4 KiB each (`size` = 4 KiB × files), written by one job, up to the
  most it accepts (65,536), with `openfiles=1024` where the open-file limit is lower (the
  job then opens and closes its files as it goes, as fio's does);
- replay: a trace whose initial state holds N files, captured by `fsbench capture` from a root
  of N empty files in 100 directories, from 10^3 up to REPLAY_MAX (default 10^6; the
  initial state and the tree left are read as streams, so any number is taken);
- capture: `fsbench capture -- true` itself in such a root, the same sizes, with each tracer
  that runs here (strace; bpf where it can load: root, a kernel with BTF), its peak against
  the root's entries (the initial state and the tree left are written as they are walked);
  bpf's rows are not held to the target: its ring buffer alone is over it;
- archive: the generated presets, up to `seed-10pct` (over a million entries);
- copies: io's `numjobs` (16, 64, 128 worker processes reading for 3 s): not the work's
  size but its workers', whose figures the phase's process gathers.

SIZES=small runs the smallest size of each alone (a smoke run); WORKLOADS=tree,io picks
workloads. FSBENCH names the binary (a debug build's will do: it is used as it is); without
it target/release/fsbench, built first unless PREBUILT=1. Needs root for nothing; tmpfs must
hold the largest tree (and, for replay, twice its largest initial state).
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
SCRATCH = os.environ.get("SCRATCH", "/dev/shm")
TREE_MAX = int(float(os.environ.get("TREE_MAX", "1e7")))
TREE_WORKERS = int(os.environ.get("TREE_WORKERS", "1"))
REPLAY_MAX = int(float(os.environ.get("REPLAY_MAX", "1e6")))
SMALL = os.environ.get("SIZES") == "small"
WORKLOADS = [w for w in os.environ.get("WORKLOADS", "tree,ffsb,io,replay,capture,archive,copies").split(",") if w]
LIMIT_MIB = 64


def peak_rss_kib(cmd):
    """Runs cmd in a fresh Python child; the peak RSS of the largest of its descendants."""
    probe = ("import resource, subprocess, sys; "
             "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
             "sys.stderr.write(r.stderr.decode()[-2000:]) if r.returncode else None; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
             "sys.exit(r.returncode)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True,
                         timeout=6 * 3600)
    if out.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return int(out.stdout.split()[-1])


def run(spec, db):
    work = tempfile.mkdtemp(prefix="memory.", dir=SCRATCH)
    try:
        return peak_rss_kib([FSBENCH, "--db", db, "run", "--dir", work, "-w", spec, "--runs", "1",
                             "-q", "--no-drop-caches", "--purpose", "memory bench"])
    finally:
        subprocess.run(["rm", "-rf", work], check=True)


def tree_sizes():
    """(files, spec): 10 files per directory, directories 10 wide, deep enough for the count."""
    sizes, levels = [], 2
    while True:
        # fdtree's count: 1 + 10 + ... + 10^levels directories, 10 files in each.
        files = 10 * (10 ** (levels + 1) - 1) // 9 * TREE_WORKERS
        if files > TREE_MAX * 1.2:
            return sizes
        sizes.append((files, f"tree:dirs=10,files=10,size=1,levels={levels},bytes=0,threads={TREE_WORKERS}"))
        levels += 1


def io_files(n):
    """io's spec for a job of n files, and its row's description: with `openfiles=1024`
    where n files open at once are more than the open-file limit allows (the job opens
    and closes them as fio's does)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    spec = f"io:rw=write,bs=4k,size={4 * n}k,nrfiles={n}"
    if n + 100 > soft:
        return f"{n:,} files, openfiles=1,024 (RLIMIT_NOFILE {soft:,})", spec + ",openfiles=1024"
    return f"{n:,} files", spec


def capture_root(n, tmp, tracer=None):
    """`fsbench capture -- true` (with `tracer`, or the default) in a root of n empty files in
    100 directories, made for it and removed after: the trace and capture's peak RSS (KiB)."""
    root = os.path.join(tmp, f"root.{n}")
    for d in range(100):
        os.makedirs(os.path.join(root, f"d{d}"))
    for i in range(n):
        open(os.path.join(root, f"d{i % 100}", f"f{i}"), "w").close()
    trace = os.path.join(tmp, f"state.{n}.trace")
    chosen = ["--tracer", tracer] if tracer else []
    try:
        kib = peak_rss_kib([FSBENCH, "capture", *chosen, "--root", root, "-o", trace, "--", "true"])
    finally:
        subprocess.run(["rm", "-rf", root], check=True)
    return trace, kib


def replay_trace(n, tmp):
    """A trace whose initial state is n empty files in 100 directories."""
    return capture_root(n, tmp)[0]


def capture_peak(n, tracer, tmp):
    trace, kib = capture_root(n, tmp, tracer)
    os.remove(trace)
    return kib


def tracers():
    """The tracers capture can run with here: strace, and bpf where it loads."""
    with tempfile.TemporaryDirectory(prefix="memory-bpf.", dir=SCRATCH) as tmp:
        root = os.path.join(tmp, "root")
        os.mkdir(root)
        bpf = subprocess.run([FSBENCH, "capture", "--tracer", "bpf", "--root", root,
                              "-o", os.path.join(tmp, "t"), "--", "true"],
                             capture_output=True, timeout=600).returncode == 0
    return ["strace", "bpf"] if bpf else ["strace"]


def timed(measure):
    """measure()'s peak (KiB) and the seconds it took."""
    began = time.monotonic()
    kib = measure()
    return kib, time.monotonic() - began


def of_spec(spec):
    """A case measured by a run of `spec` (a function making it first, untimed: replay's
    trace), timed alone."""
    def measure(db):
        made = spec() if callable(spec) else spec
        return timed(lambda: run(made, db))
    return measure


def cases(tmp):
    """(workload, size's description, measure: db -> (peak KiB, seconds), whether the target
    judges it) in order of size."""
    out = []
    for files, spec in tree_sizes():
        out.append(("tree", f"{files:,} files", spec))
    for n in (16, 128, 1024):
        out.append(("ffsb", f"{n:,} files", f"ffsb:threads={n},size=1m,block=64k"))
    for n in (10 ** 3, 10 ** 4, 65_536):
        out.append(("io", *io_files(n)))
    for n in (n for n in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6) if n <= REPLAY_MAX):
        out.append(("replay", f"{n:,} entries", lambda n=n: f"replay:trace={replay_trace(n, tmp)}"))
    for preset in ("tiny", "small", "seed-1pct", "seed-10pct"):
        out.append(("archive", preset, f"archive:{preset}"))
    for n in (16, 64, 128):
        out.append(("copies", f"{n} workers", f"io:rw=randread,bs=4k,size=1m,numjobs={n},runtime=3s,time_based"))
    out = [(w, size, of_spec(spec), True) for w, size, spec in out]
    # Capture's own peak, its seconds with its root's making; bpf's floor is its ring buffer
    # (64 MiB, its pages mapped twice), so its rows are not judged.
    for tracer in tracers() if "capture" in WORKLOADS else []:
        for n in (n for n in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6) if n <= REPLAY_MAX):
            measure = lambda db, n=n, t=tracer: timed(lambda: capture_peak(n, t, tmp))
            out.append(("capture", f"{n:,} entries, {tracer}", measure, tracer != "bpf"))
    out = [c for c in out if c[0] in WORKLOADS]
    if SMALL:
        seen, small = set(), []
        for c in out:
            if c[0] not in seen:
                seen.add(c[0])
                small.append(c)
        out = small
    return out


def main():
    if "FSBENCH" not in os.environ and os.environ.get("PREBUILT") != "1":
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    worst = 0
    print(f"peak RSS of fsbench (and its workers), on {SCRATCH}; target < {LIMIT_MIB} MiB")
    if TREE_WORKERS > 1 and "tree" in WORKLOADS:
        print(f"tree: {TREE_WORKERS} worker processes, a tree each; its sizes count all their files")
    print(f"{'workload':10}{'size':>26}{'peak MiB':>11}{'seconds':>9}")
    with tempfile.TemporaryDirectory(prefix="memory-db.") as tmp:
        db = os.path.join(tmp, "results.db")
        for workload, size, measure, judged in cases(tmp):
            kib, seconds = measure(db)
            if judged:
                worst = max(worst, kib)
            print(f"{workload:10}{size:>26}{kib / 1024:>11.1f}{seconds:>9.0f}", flush=True)
    verdict = "met" if worst < LIMIT_MIB * 1024 else "MISSED"
    print(f"largest: {worst / 1024:.1f} MiB  (target < {LIMIT_MIB} MiB: {verdict})")


if __name__ == "__main__":
    main()
