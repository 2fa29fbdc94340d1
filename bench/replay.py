#!/usr/bin/env python3
"""Capture and replay of real programs nobody here wrote: `git clone` of a
local repository with history then a checkout of another branch, `tar -x` of the archive
workload's generated tar, `sqlite3` inserts and updates in WAL mode, and `make -j2` of a
small C project. For each, on tmpfs (/dev/shm):
  (a) the replay makes exactly as many calls of each kind as the capture recorded;
  (b) the tree the replay leaves equals the one the program left (names, types, sizes,
      link counts);
  (c) replay time (fast, `fsbench run --fs tmpfs` as root, else --dir on /dev/shm) over RUNS
      runs against the program's own wall time over RUNS runs: medians and spreads;
  (d) capture overhead: the program's wall time under capture / without (medians).
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
RUNS = int(os.environ.get("RUNS", "5"))
FSBENCH = os.path.join(ROOT, "target/release/fsbench")
IS_ROOT = os.geteuid() == 0
GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"]


def sh(cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, shell=isinstance(cmd, str))


def prepare_git(src):
    """A repository of 300 files over 20 commits, and a branch that changes a third of them."""
    repo = os.path.join(src, "repo")
    os.mkdir(repo)
    sh(GIT + ["init", "-q"], repo)
    for c in range(20):
        for i in range(300):
            d = os.path.join(repo, f"d{i % 10}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i}.txt"), "a") as f:
                f.write(f"commit {c} line of file {i}\n" * (1 + i % 7))
        sh(GIT + ["add", "-A"], repo)
        sh(GIT + ["commit", "-qm", f"c{c}"], repo)
    sh(GIT + ["checkout", "-qb", "other"], repo)
    for i in range(0, 300, 3):
        with open(os.path.join(repo, f"d{i % 10}", f"f{i}.txt"), "a") as f:
            f.write("other\n")
    sh(GIT + ["commit", "-qam", "other"], repo)
    sh(GIT + ["checkout", "-q", "main"], repo)
    return f"git clone -q --no-local {repo} c && git -C c checkout -q other"


def prepare_tar(src):
    tarball = os.path.join(src, "archive.tar")
    sh([FSBENCH, "archive", "generate", "small", "-o", tarball])
    return f"tar -xf {tarball}"


def prepare_sqlite(src):
    script = os.path.join(src, "script.sql")
    with open(script, "w") as f:
        f.write("PRAGMA journal_mode=WAL;\nCREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT, n INT);\n")
        for b in range(100):
            f.write("BEGIN;\n")
            for i in range(100):
                k = b * 100 + i
                f.write(f"INSERT INTO t VALUES({k}, hex(randomblob(64)), {k % 13});\n")
            f.write("COMMIT;\n")
        for b in range(20):
            f.write(f"UPDATE t SET v = 'u' || v, n = n + 1 WHERE k % 20 = {b};\n")
    return f"sqlite3 db.sqlite < {script} > /dev/null"


def prepare_make(src):
    proj = os.path.join(src, "proj")
    os.mkdir(proj)
    for i in range(24):
        with open(os.path.join(proj, f"m{i}.c"), "w") as f:
            f.write(f"#include <stdio.h>\nint f{i}(int x) {{ return x * {i} + {i}; }}\n")
    with open(os.path.join(proj, "main.c"), "w") as f:
        f.write("".join(f"int f{i}(int);\n" for i in range(24)))
        f.write("int main(void) { int s = 0;" + "".join(f" s += f{i}(s);" for i in range(24)) + " return s & 1; }\n")
    objs = " ".join(f"m{i}.o" for i in range(24))
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write(f"VPATH = {proj}\nprog: main.o {objs}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O1 -c -o $@ $<\n")
    return f"make -s -j2 -f {proj}/Makefile"


PROGRAMS = [("git", prepare_git), ("tar -x", prepare_tar), ("sqlite3", prepare_sqlite), ("make -j2", prepare_make)]


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            kind = "d" if os.path.isdir(p) and not os.path.islink(p) else "l" if os.path.islink(p) else "f"
            out[os.path.relpath(p, root)] = (kind, 0 if kind == "d" else st.st_size, st.st_nlink)
    return out


def fresh(work, name):
    path = os.path.join(work, name)
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path)
    return path


def original(cmd, root):
    start = time.monotonic()
    sh(cmd, root)
    return time.monotonic() - start


def captured(cmd, root, trace):
    out = subprocess.run([FSBENCH, "capture", "-o", trace, "--", "sh", "-c", cmd], cwd=root,
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"took ([0-9.]+) s under capture", out).group(1))


def replay_once(trace, target):
    """(a): calls per kind against the capture's."""
    out = subprocess.run([FSBENCH, "capture", "--replay", trace, "-C", target],
                         check=True, capture_output=True, text=True).stdout
    rows = re.findall(r"^  (\S+)\s+(\d[\d,]*)  captured\s+(\d[\d,]*)", out, re.M)
    same = all(a == b for _, a, b in rows)
    notes = [l for l in out.splitlines() if l.startswith("note:") and "otherwise" in l]
    total = sum(int(b.replace(",", "")) for _, _, b in rows)
    return same and not notes, total, notes


def replay_times(trace, work):
    db = os.path.join(work, "results.db")
    args = [FSBENCH, "--db", db, "run", "-q", "--output-format", "json", "--runs", str(RUNS),
            "-w", f"replay:trace={trace}"]
    if IS_ROOT:
        args += ["--fs", "tmpfs"]
    else:
        args += ["--dir", fresh(work, "rundir")]
    doc = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return [r["phases"][0]["elapsed_ns"] / 1e9 for r in doc["runs"]]


def spread(xs):
    return f"{statistics.median(xs):7.3f} s [{min(xs):.3f}–{max(xs):.3f}]"


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    where = "fsbench run --fs tmpfs" if IS_ROOT else "fsbench run --dir /dev/shm/..."
    print(f"{RUNS} runs each on tmpfs (/dev/shm); replay times from {where}; medians [min–max]")
    ok = True
    for name, prepare in PROGRAMS:
        tool = name.split()[0]
        if shutil.which(tool) is None:
            print(f"{name}: {tool} is not installed; skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="fsbench-replay.", dir="/dev/shm") as work:
            src = fresh(work, "src")
            cmd = prepare(src)
            plain, under = [], []
            trace = os.path.join(work, "program.trace")
            for r in range(RUNS):
                # Alternate which goes first, each in a fresh root.
                for who in (["plain", "capture"] if r % 2 == 0 else ["capture", "plain"]):
                    root = fresh(work, "root")
                    if who == "plain":
                        plain.append(original(cmd, root))
                    else:
                        under.append(captured(cmd, root, trace))
            # The last capture's root is the program's tree for (b).
            root = fresh(work, "root")
            under.append(captured(cmd, root, trace))
            target = fresh(work, "replayed")
            same_calls, calls, notes = replay_once(trace, target)
            same_tree = tree(root) == tree(target)
            times = replay_times(trace, work)
            ok &= same_calls and same_tree
            print(f"{name}: {calls:,} calls replayed; (a) calls per kind equal: {same_calls}; "
                  f"(b) same tree: {same_tree} ({len(tree(root)):,} entries)")
            for n in notes:
                print(f"    {n}")
            print(f"    (c) program {spread(plain)}, replay {spread(times)}: "
                  f"replay / program {statistics.median(times) / statistics.median(plain):.3f}")
            print(f"    (d) under capture {spread(under)}: overhead "
                  f"{statistics.median(under) / statistics.median(plain):.2f} ×")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
