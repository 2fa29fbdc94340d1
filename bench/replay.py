#!/usr/bin/env python3
"""Capture and replay of five real programs from Debian packages, each run as itself and
replayed (fast and with its think times) in one suite on tmpfs, ext4, xfs and btrfs:

  git      `git clone` of a local repository with history (objects hard-linked), a checkout
           of another branch, `git status`
  sqlite3  20,000 inserts in WAL mode, 200 transactions
  tar      `tar -x` of /usr/share/doc (about 6,000 entries), then `rm -rf` of it
  python   4 threads each writing, fsyncing, renaming and unlinking files
  make     `make -j2` of a generated C project of 26 files

Per program it prints: calls captured and replayed, differing calls, whether the replay's tree
equals the program's (names, types, sizes, modes, link counts), each pair of filesystems
ranked as itself and replayed with both p-values (fsbench compare: Welch on log times, Holm
adjusted), the filesystem's share of the program, think ÷ program (on tmpfs) and capture ÷
program. Exit status 1 when a replay differs in a call or in its tree. The suite keeps the
page cache (`--no-drop-caches`): each run's filesystem is made fresh, and the program's own
executables stay cached, as they do for its replay.

  RUNS=5                 runs per configuration and workload
  FS=tmpfs,ext4,xfs,btrfs
  PROGRAMS=git,sqlite3,tar,python,make
  SMALL=1                smaller inputs, for a smoke run on a busy machine
  IMAGE_DIR=...          where fsbench makes its loop images (default: its own choice)
  FSBENCH=...            the fsbench binary (default: target/release/fsbench, built first)
  TRACER=bpf|strace      capture's tracer (default: capture's own choice, bpf where it runs)
  CHECK_ONLY=1           capture and one replay per program, no suite: the correctness
                         figures (they do not depend on the machine's load) and capture's cost

Run as root (fresh filesystems on loop images), on a quiet machine for the timings.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
RUNS = int(os.environ.get("RUNS", "5"))
FILESYSTEMS = os.environ.get("FS", "tmpfs,ext4,xfs,btrfs").split(",")
SMALL = os.environ.get("SMALL") == "1"
TRACER = os.environ.get("TRACER")
GIT = "git -c user.name=b -c user.email=b@b -c init.defaultBranch=main -c gc.auto=0"
PYTHON = "/usr/bin/python3"


def sh(cmd, cwd=None, shell="/bin/sh"):
    subprocess.run([shell, "-c", cmd], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def prepare_git(src):
    """A repository of 300 files over 20 commits and a branch changing a third of them;
    the setup copies it into the root, so that the clone hard-links its objects there."""
    files, commits = (60, 5) if SMALL else (300, 20)
    repo = os.path.join(src, "repo")
    os.mkdir(repo)
    sh(f"{GIT} init -q", repo)
    for c in range(commits):
        for i in range(files):
            d = os.path.join(repo, f"d{i % 10}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i}.txt"), "a") as f:
                f.write(f"commit {c} line of file {i}\n" * (1 + i % 7))
        sh(f"{GIT} add -A && {GIT} commit -qm c{c}", repo)
    sh(f"{GIT} checkout -qb other", repo)
    for i in range(0, files, 3):
        with open(os.path.join(repo, f"d{i % 10}", f"f{i}.txt"), "a") as f:
            f.write("other\n")
    sh(f"{GIT} commit -qam other && {GIT} checkout -q main", repo)
    setup = f"cp -a {repo} repo"
    return setup, "git clone -q repo c && git -C c checkout -q other && git -C c status --short"


def prepare_sqlite(src):
    batches = 20 if SMALL else 200
    script = os.path.join(src, "script.sql")
    with open(script, "w") as f:
        f.write("PRAGMA journal_mode=WAL;\nCREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT, n INT);\n")
        for b in range(batches):
            f.write("BEGIN;\n")
            for i in range(100):
                k = b * 100 + i
                f.write(f"INSERT INTO t VALUES({k}, hex(randomblob(64)), {k % 13});\n")
            f.write("COMMIT;\n")
    return None, f"sqlite3 db.sqlite < {script} > /dev/null"


def prepare_tar(src):
    tarball = os.path.join(src, "doc.tar")
    pick = "doc/[a-c]*" if SMALL else "doc"
    sh(f"cd /usr/share && tar -cf {tarball} {pick}")
    return None, f"tar -xf {tarball} && rm -rf doc"


THREADS = """
import os, sys, threading
N = int(sys.argv[1])
def work(t):
    data = os.urandom(8192)
    for i in range(N):
        tmp, name = f"tmp-{t}-{i}", f"f-{t}-{i}"
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, name)
        if i % 2:
            os.unlink(name)
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for t in threads: t.start()
for t in threads: t.join()
"""


def prepare_python(src):
    script = os.path.join(src, "threads.py")
    with open(script, "w") as f:
        f.write(THREADS)
    return None, f"{PYTHON} {script} {40 if SMALL else 250}"


def prepare_make(src):
    proj = os.path.join(src, "proj")
    os.mkdir(proj)
    modules = 25
    for i in range(modules):
        with open(os.path.join(proj, f"m{i}.c"), "w") as f:
            f.write(f"#include <stdio.h>\n#include <string.h>\nint f{i}(int x) {{ return x * {i} + {i}; }}\n")
    with open(os.path.join(proj, "main.c"), "w") as f:
        f.write("".join(f"int f{i}(int);\n" for i in range(modules)))
        f.write("int main(void) { int s = 0;" + "".join(f" s += f{i}(s);" for i in range(modules))
                + " return s & 1; }\n")
    objs = " ".join(f"m{i}.o" for i in range(modules))
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write(f"VPATH = {proj}\nprog: main.o {objs}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O1 -c -o $@ $<\n")
    return None, f"make -s -j2 -f {proj}/Makefile"


PROGRAMS = {
    "git": ("git clone+checkout+status", prepare_git),
    "sqlite3": (f"sqlite3 {2000 if SMALL else 20000:,} inserts, WAL", prepare_sqlite),
    "tar": ("tar -x of /usr/share/doc, rm -rf", prepare_tar),
    "python": ("python, 4 threads", prepare_python),
    "make": ("make -j2, 26 C files", prepare_make),
}


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path)
    return path


def fsbench(*args, **kw):
    done = subprocess.run([FSBENCH, *args], capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"fsbench {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def plain_times(setup, cmd, work, n):
    """The program on its own in a fresh directory on tmpfs, n times: timed by the shell that
    runs it, from its start to its end, as capture times it (timed from here, the spawning of
    a shell by this Python process added 10-20 ms: a third of a 50 ms program's time)."""
    times = []
    for _ in range(n):
        root = fresh(os.path.join(work, "plain"))
        if setup:
            sh(setup, root)
        took = os.path.join(work, "plain.took")
        sh(f"s=$EPOCHREALTIME; {cmd}\ne=$EPOCHREALTIME; echo \"$s $e\" > {took}", root,
           shell="/bin/bash")
        with open(took) as f:
            start, end = map(float, f.read().split())
        times.append(end - start)
    return times


def capture(setup, cmd, work):
    """The program under capture in a fresh root: the trace, its wall time, the root."""
    root = fresh(os.path.join(work, "root"))
    if setup:
        sh(setup, root)
    trace = os.path.join(work, "program.trace")
    tracer = ["--tracer", TRACER] if TRACER else []
    out = fsbench("capture", "-o", trace, *tracer, "--", "sh", "-c", cmd, cwd=root)
    took = float(re.search(r"took ([0-9.]+) s under capture", out).group(1))
    return trace, took, root


def check_replay(trace, work):
    """One replay into an empty directory: calls captured and replayed, differing calls,
    whether the tree is the program's, the notes."""
    target = fresh(os.path.join(work, "replayed"))
    out = fsbench("capture", "--replay", trace, "-C", target)
    rows = re.findall(r"^  (\S+)\s+(\d[\d,]*)  captured\s+(\d[\d,]*)", out, re.M)
    made = sum(int(a.replace(",", "")) for _, a, _ in rows)
    captured = sum(int(b.replace(",", "")) for _, _, b in rows)
    differing = re.search(r"note: ([\d,]+) of the replay's calls came out otherwise", out)
    differing = int(differing.group(1).replace(",", "")) if differing else 0
    notes = [line[6:] for line in out.splitlines() if line.startswith("note: ")]
    tree_equal = not any("tree differs" in n for n in notes)
    return captured, made, differing, tree_equal, notes


def suite_file(work, setup, cmd, trace):
    path = os.path.join(work, "suite.toml")
    q = json.dumps
    with open(path, "w") as f:
        f.write(f'name = "replay-bench"\nruns = {RUNS}\n')
        for fs in FILESYSTEMS:
            f.write(f'\n[[config]]\nfs = "{fs}"\n')
        f.write('\n[[workload]]\nkind = "command"\n')
        if setup:
            f.write(f"setup = {q(setup)}\n")
        f.write(f'phase = [{{ name = "program", run = {q(cmd)} }}]\nspace = "3G"\ntimeout = 3600\n')
        f.write(f'\n[[workload]]\nkind = "replay"\ntrace = {q(trace)}\n')
        f.write(f'\n[[workload]]\nkind = "replay"\ntrace = {q(trace)}\nmode = "think"\n')
    return path


def run_suite(path, db):
    # The page cache is kept: every run's filesystem is fresh anyway, and with the cache
    # dropped the program as itself also read its own executables and libraries from the
    # disk (git 0.138 s against 0.10 s warm, make 0.341 s against 0.255 s), which its replay
    # never does.
    args = ["--db", db, "run", path, "-q", "--output-format", "json", "--no-drop-caches"]
    if os.environ.get("IMAGE_DIR"):
        args += ["--image-dir", os.environ["IMAGE_DIR"]]
    doc = json.loads(fsbench(*args))
    times = {}
    for r in doc["runs"]:
        if r["status"] == "completed" or not r.get("error"):
            times.setdefault((r["workload"], r["config"]), []).append(r["phases"][0]["elapsed_ns"] / 1e9)
    return doc["id"], times


def pair_p(db, suite, workload, a, b):
    """fsbench compare of b against a: the ratio of means (b / a) and its p-value."""
    doc = json.loads(fsbench("--db", db, "compare", "--output-format", "json", "--baseline",
                             f"{suite}:{a}", f"{suite}:{a}", f"{suite}:{b}"))
    for row in doc["rows"]:
        if row["workload"] == workload and row["metric"] == "time":
            d = row["cells"][1]["difference"]
            return d["ratio"], d["p_value"]
    return None, None


def ranked(ratio, p, a, b):
    if ratio is None:
        return "-", None
    faster = a if ratio > 1 else b
    return f"{faster} {max(ratio, 1 / ratio):4.2f}× p={p:.2g}", faster


def main():
    if "FSBENCH" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    if os.geteuid() != 0:
        sys.exit("run as root: the suite makes fresh filesystems on loop images")
    chosen = os.environ.get("PROGRAMS", ",".join(PROGRAMS)).split(",")
    print(f"{RUNS} runs per configuration and workload on {', '.join(FILESYSTEMS)}; "
          f"tracer: {TRACER or 'the default'}; load average {os.getloadavg()[0]:.1f}; "
          f"{'small inputs' if SMALL else 'full inputs'}; medians unless said")
    ok = True
    for key in chosen:
        name, prepare = PROGRAMS[key]
        tool = {"python": PYTHON, "make": "make", "tar": "tar"}.get(key, key)
        if shutil.which(tool) is None:
            print(f"{name}: {tool} is not installed; skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="fsbench-replay.", dir="/dev/shm") as work:
            src = fresh(os.path.join(work, "src"))
            setup, cmd = prepare(src)
            trace, under, _ = capture(setup, cmd, work)
            own = statistics.median(plain_times(setup, cmd, work, max(RUNS, 3)))
            captured, made, differing, tree_equal, notes = check_replay(trace, work)
            ok &= differing == 0 and tree_equal and made == captured
            print(f"\n{name}: {captured:,} calls captured, {made:,} replayed, {differing} differing; "
                  f"trees equal (modes too): {'yes' if tree_equal else 'NO'}")
            for n in notes:
                if "otherwise than" in n or "tree differs" in n or "replay:" in n:
                    print(f"    {n}")
            if os.environ.get("CHECK_ONLY") == "1":
                print(f"    capture ÷ program: {under / own:.2f} ({under:.2f} s under capture, "
                      f"{own:.2f} s on its own)")
                continue
            suite, times = run_suite(suite_file(work, setup, cmd, trace), os.path.join(work, "r.db"))
            labels = sorted({w for w, _ in times})
            program = next(w for w in labels if w.startswith("command"))
            fast = next(w for w in labels if w.startswith("replay") and not w.endswith(",think"))
            think = next(w for w in labels if w.endswith(",think"))
            med = lambda w, fs: statistics.median(times.get((w, fs), [float("nan")]))
            print(f"    {'pair':<14}{'as itself':<28}{'replayed':<28}same order")
            for i, a in enumerate(FILESYSTEMS):
                for b in FILESYSTEMS[i + 1:]:
                    itself, who = ranked(*pair_p(os.path.join(work, "r.db"), suite, program, a, b), a, b)
                    replayed, who2 = ranked(*pair_p(os.path.join(work, "r.db"), suite, fast, a, b), a, b)
                    print(f"    {a + '-' + b:<14}{itself:<28}{replayed:<28}{'yes' if who == who2 else 'no'}")
            calls = [med(fast, fs) for fs in FILESYSTEMS]
            progs = [med(program, fs) for fs in FILESYSTEMS]
            whole = med(program, FILESYSTEMS[0])
            print(f"    filesystem's share: the calls take {min(calls):.3g}–{max(calls):.3g} s of the "
                  f"program's {whole:.3g} s; the filesystems differ by {max(calls) - min(calls):.2g} s "
                  f"replayed ({(max(calls) - min(calls)) / whole * 100:.1f}%), "
                  f"{max(progs) - min(progs):.2g} s as itself")
            print(f"    think ÷ program ({FILESYSTEMS[0]}): {med(think, FILESYSTEMS[0]) / whole:.2f}; "
                  f"capture ÷ program: {under / own:.2f} ({under:.2f} s under capture, "
                  f"{own:.2f} s on its own)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
