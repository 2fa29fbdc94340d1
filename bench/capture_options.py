#!/usr/bin/env python3
"""What each of capture's strace options costs: `tar -x` of /usr/share/doc (about 6,000
entries, 65,000 traced calls) in a fresh directory on tmpfs, as itself and under strace with
fsbench's options, then with one option changed at a time. Per variant: the wall time and the
CPU time (strace's and the program's, user and system) as multiples of the program's own,
and the size of strace's output. CPU time moves far less with the machine's load than wall
time: read it first on a busy machine.

  RUNS=5        runs of each, the medians shown
  SMALL=1       doc/[a-c]* only (a smoke run)
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(os.environ.get("RUNS", "5"))
SMALL = os.environ.get("SMALL") == "1"
# fsbench's strace arguments (crates/workloads/src/replay/strace.rs), the trace list aside.
BASE = ["-f", "-qq", "-ttt", "-T", "-y", "-X", "raw", "-s", "0", "--seccomp-bpf", "-e", "signal=none"]
TRACE = ("trace=?open,?openat,?openat2,?creat,?close,?read,?pread64,?readv,?preadv,?preadv2,"
         "?write,?pwrite64,?writev,?pwritev,?pwritev2,?copy_file_range,?sendfile,?sendfile64,"
         "?lseek,?fsync,?fdatasync,?sync_file_range,?truncate,?ftruncate,?fallocate,?mkdir,"
         "?mkdirat,?rmdir,?unlink,?unlinkat,?rename,?renameat,?renameat2,?link,?linkat,?symlink,"
         "?symlinkat,?readlink,?readlinkat,?stat,?lstat,?fstat,?newfstatat,?statx,?getdents64,"
         "?chmod,?fchmod,?fchmodat,?chown,?fchown,?lchown,?fchownat,?utimensat,?dup,?dup2,?dup3,"
         "?fcntl,?mmap,?chdir,?fchdir,?clone,?clone3,?fork,?vfork,?wait4")


def without(*opts):
    out, skip = [], 0
    for i, o in enumerate(BASE):
        if skip:
            skip -= 1
            continue
        if o in opts:
            skip = 1 if o in ("-X", "-s") else 0
            continue
        out.append(o)
    return out


VARIANTS = [
    ("fsbench's options (TZ=UTC for strace)", BASE, None),
    ("TZ unset (2 stats of /etc/localtime a line)", BASE, None),
    ("-xx (every byte of a name hex)", BASE + ["-xx"], None),
    ("-yy (sockets, devices decoded too)", without("-y") + ["-yy"], None),
    ("no -y (no descriptor paths)", without("-y"), None),
    ("no -ttt -T (no times)", without("-ttt", "-T"), None),
    ("no --seccomp-bpf (every call stopped)", without("--seccomp-bpf"), None),
    ("output to /dev/null (no file written)", BASE, "/dev/null"),
]


def timed(argv, cwd, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    if shutil.which("strace") is None:
        sys.exit("strace is not installed")
    with tempfile.TemporaryDirectory(prefix="fsbench-strace.", dir="/dev/shm") as work:
        tarball = os.path.join(work, "doc.tar")
        pick = "doc/[a-c]*" if SMALL else "doc"
        subprocess.run(f"cd /usr/share && tar -cf {tarball} {pick}", shell=True, check=True)
        program = ["tar", "-xf", tarball]
        out = os.path.join(work, "strace.out")

        def once(prefix, env=None):
            root = os.path.join(work, "root")
            shutil.rmtree(root, ignore_errors=True)
            os.mkdir(root)
            return timed(prefix + program, root, env)

        # As fsbench runs strace: TZ set, so that glibc does not stat /etc/localtime for
        # each line strace prints.
        with_tz = dict(os.environ, TZ="UTC")
        without_tz = {k: v for k, v in os.environ.items() if k != "TZ"}

        plain = [once([]) for _ in range(RUNS)]
        wall0 = statistics.median(w for w, _ in plain)
        cpu0 = statistics.median(c for _, c in plain)
        print(f"tar -x of {'doc/[a-c]*' if SMALL else '/usr/share/doc'}: {wall0:.3f} s wall, "
              f"{cpu0:.3f} s CPU on its own; medians of {RUNS} runs")
        print(f"{'variant':<46}{'wall ×':>8}{'CPU ×':>8}{'output':>10}")
        for name, opts, target in VARIANTS:
            argv = ["strace", *opts, "-e", TRACE, "-o", target or out, "--"]
            env = without_tz if name.startswith("TZ unset") else with_tz
            runs = [once(argv, env) for _ in range(RUNS)]
            size = os.path.getsize(out) if target is None else 0
            wall = statistics.median(w for w, _ in runs) / wall0
            cpu = statistics.median(c for _, c in runs) / cpu0
            shown = f"{size / 2**20:.1f} MiB" if target is None else "-"
            print(f"{name:<46}{wall:>8.2f}{cpu:>8.2f}{shown:>10}")


if __name__ == "__main__":
    main()
