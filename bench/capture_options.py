#!/usr/bin/env python3
"""What each of capture's strace options costs, on the programs that pay most for it: `git
clone` of a local repository of loose objects then a checkout and `git status` (37,000
traced calls in about 0.1 s), `tar -x` of /usr/share/doc then `rm -rf` (71,000 calls), and a C
loop of `fstatat` (the floor: a program made of nothing but traced calls). Each run in a
fresh directory on tmpfs, as itself and under strace with each variant, the variants
interleaved round by round (A/B on a loaded machine: every variant sees the same load) and
the medians shown as multiples of the program's own median time, wall and CPU (strace's and
the program's, user and system), with the size of strace's output and, with COUNT=1, the
system calls strace made for each traced call (one run under `strace -c`). The variants
`capture-bpf` and `capture-strace` are the whole of `fsbench capture` with each tracer (the
trace parsed and written included).

  ROUNDS=5       rounds (each runs every variant once), the medians shown
  PROGRAMS=git,tar,statloop
  VARIANTS=...   a comma-separated subset of the variants' keys (default: all)
  SMALL=1        smaller inputs (a smoke run)
  COUNT=1        also count strace's own system calls per traced call
  FSBENCH=...    the fsbench binary for the capture variants (default: target/release/fsbench)

Run on a quiet machine for figures to keep; the load average is printed before and after.
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replay  # noqa: E402  (its programs)

ROUNDS = int(os.environ.get("ROUNDS", "5"))
SMALL = os.environ.get("SMALL") == "1"

# The calls capture records and those it follows processes by (strace.rs's trace list).
TRACE = ("?open,?openat,?openat2,?creat,?close,?read,?pread64,?readv,?preadv,?preadv2,"
         "?write,?pwrite64,?writev,?pwritev,?pwritev2,?copy_file_range,?sendfile,?sendfile64,"
         "?lseek,?fsync,?fdatasync,?sync_file_range,?truncate,?ftruncate,?fallocate,?mkdir,"
         "?mkdirat,?rmdir,?unlink,?unlinkat,?rename,?renameat,?renameat2,?link,?linkat,?symlink,"
         "?symlinkat,?readlink,?readlinkat,?stat,?lstat,?fstat,?newfstatat,?statx,?getdents64,"
         "?chmod,?fchmod,?fchmodat,?chown,?fchown,?lchown,?fchownat,?utimensat,?dup,?dup2,?dup3,"
         "?fcntl,?mmap,?chdir,?fchdir,?clone,?clone3,?fork,?vfork,?wait4")
# The calls whose structures the parser reads: openat2's open_how, clone3's clone_args,
# the offsets of copy_file_range and sendfile.
VERBOSE = "verbose=?openat2,?clone3,?copy_file_range,?sendfile,?sendfile64"
COMMON = ["-f", "-qq", "-ttt", "-T", "-X", "raw", "-s", "0", "--seccomp-bpf", "-e", "signal=none"]

# key: (what it is, strace's options before -o, where the output goes)
VARIANTS = {
    "plain": ("the program on its own", None, None),
    "before": ("-y, structures decoded (capture before)", COMMON + ["-y"], "file"),
    "verbose": ("-y, -e verbose= only what is read", COMMON + ["-y", "-e", VERBOSE], "file"),
    "no-y": ("no -y, structures decoded", COMMON, "file"),
    "now": ("no -y, -e verbose= only what is read", COMMON + ["-e", VERBOSE], "file"),
    "now-pipe": ("the same, -o to a pipe (cat, 1 MiB)", COMMON + ["-e", VERBOSE], "pipe"),
    "no-times": ("the same, no -ttt -T", [o for o in COMMON if o not in ("-ttt", "-T")]
                 + ["-e", VERBOSE], "file"),
    "no-seccomp": ("the same, no --seccomp-bpf", [o for o in COMMON if o != "--seccomp-bpf"]
                   + ["-e", VERBOSE], "file"),
    "count": ("strace -c: stops alone (the floor)", ["-f", "-qq", "--seccomp-bpf", "-c"], "null"),
    "capture-strace": ("fsbench capture --tracer strace", "strace", "fsbench"),
    "capture-bpf": ("fsbench capture --tracer bpf", "bpf", "fsbench"),
}
FSBENCH = os.environ.get("FSBENCH", os.path.join(replay.ROOT, "target/release/fsbench"))

STATLOOP = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    struct stat st;
    for (long i = 0; i < n; i++)
        fstatat(AT_FDCWD, "f", &st, 0);
    return 0;
}
"""


def sh(cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, shell=True, stdout=subprocess.DEVNULL)


def prepare(work):
    """Each program: (its setup in a fresh root, its command); git's and tar's as
    bench/replay.py makes them."""
    src = os.path.join(work, "src")
    os.mkdir(src)
    git_setup, git_cmd = replay.prepare_git(src)
    programs = {"git": (git_setup, git_cmd), "tar": replay.prepare_tar(src)}
    loop = os.path.join(src, "statloop")
    with open(loop + ".c", "w") as f:
        f.write(STATLOOP)
    sh(f"cc -O2 -o {loop} {loop}.c")
    programs["statloop"] = ("touch f", f"{loop} {2000 if SMALL else 20000}")
    return programs


def timed(argv, cwd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def strace_argv(opts, target, out):
    if target == "fsbench":
        return [FSBENCH, "capture", "--tracer", opts, "-o", out + ".trace", "--"]
    dest = {"file": out, "pipe": f"|dd of={out} bs=1M status=none", "null": "/dev/null"}[target]
    return ["strace", *opts, "-e", "trace=" + TRACE, "-o", dest, "--"]


def once(work, setup, cmd, prefix):
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.mkdir(root)
    if setup:
        sh(setup, root)
    # As fsbench runs strace: TZ set, so that glibc does not stat /etc/localtime per line.
    return timed(prefix + ["sh", "-c", cmd], root, dict(os.environ, TZ="UTC"))


def strace_calls_per_call(work, setup, cmd, opts, target):
    """strace's own system calls per call it traced: one run of strace under strace -c."""
    out = os.path.join(work, "strace.out")
    counted = os.path.join(work, "count.txt")
    inner = strace_argv(opts, target, out)
    once(work, setup, cmd, ["strace", "-c", "-o", counted, "--"] + inner)
    lines = open(counted).read().splitlines()
    total = next((int(l.split()[3 if len(l.split()) > 4 else 2]) for l in lines
                  if l.strip().endswith("total")), 0)
    traced = sum(1 for _ in open(out)) if target == "file" else 0
    return total / traced if traced else float("nan")


def main():
    for tool in ("strace", "git", "tar", "cc"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    chosen = os.environ.get("PROGRAMS", "git,tar,statloop").split(",")
    keys = os.environ.get("VARIANTS", ",".join(VARIANTS)).split(",")
    if "plain" not in keys:
        keys.insert(0, "plain")
    with tempfile.TemporaryDirectory(prefix="fsbench-strace.", dir="/dev/shm") as work:
        programs = prepare(work)
        out = os.path.join(work, "strace.out")
        print(f"load average before: {os.getloadavg()[0]:.1f}; {ROUNDS} rounds, medians")
        for name in chosen:
            setup, cmd = programs[name]
            runs = {k: [] for k in keys}
            size = {}
            for _ in range(ROUNDS):
                for k in keys:
                    _, opts, target = VARIANTS[k]
                    prefix = [] if opts is None else strace_argv(opts, target, out)
                    runs[k].append(once(work, setup, cmd, prefix))
                    if target in ("file", "pipe"):
                        size[k] = os.path.getsize(out)
            wall0 = statistics.median(w for w, _ in runs["plain"])
            cpu0 = statistics.median(c for _, c in runs["plain"])
            print(f"\n{name}: {wall0:.3f} s wall, {cpu0:.3f} s CPU on its own "
                  f"(load {os.getloadavg()[0]:.1f})")
            print(f"  {'variant':<42}{'wall ×':>8}{'CPU ×':>8}{'output':>10}"
                  + ("  calls/call" if os.environ.get("COUNT") == "1" else ""))
            for k in keys[1:]:
                what, opts, target = VARIANTS[k]
                wall = statistics.median(w for w, _ in runs[k]) / wall0
                cpu = statistics.median(c for _, c in runs[k]) / cpu0
                shown = f"{size[k] / 2**20:.1f} MiB" if k in size else "-"
                line = f"  {what:<42}{wall:>8.2f}{cpu:>8.2f}{shown:>10}"
                if os.environ.get("COUNT") == "1" and target == "file":
                    line += f"  {strace_calls_per_call(work, setup, cmd, opts, target):>10.1f}"
                print(line)
        print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
