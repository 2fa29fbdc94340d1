#!/usr/bin/env python3
"""The personalities of today modelled on programs that run here (git, sqlite3, tar) against
those programs: each program is captured once with `fsbench capture` doing its work (a git
clone and status of a generated tree, SQLite transactions in WAL mode, a tar extraction of
a layer of small files), and the capture is replayed beside the personality, on tmpfs, ext4
and xfs (fresh filesystems, fsbench interleaving the runs), ROUNDS runs each. It prints each
one's order of the filesystems, fastest first (the replay's calls/s, the personality's
ops/s), and whether the two agree: a personality that ranks the filesystems as its program
does answers the question the program would.

Root is needed (loop images). Environment: ROUNDS (3), FILES (5000: the git tree's and the
layer's files), FILESYSTEMS (tmpfs,ext4,xfs), FSBENCH (target/release/fsbench), WORK (/var/tmp),
APPS (git,sqlite,tar). The figures need a quiet machine; the orders are what is compared.

    python3 bench/personality_apps.py
"""
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
ROUNDS = os.environ.get("ROUNDS", "3")
FILES = int(os.environ.get("FILES", "5000"))
FILESYSTEMS = os.environ.get("FILESYSTEMS", "tmpfs,ext4,xfs")
WORK = os.environ.get("WORK", "/var/tmp")
APPS = os.environ.get("APPS", "git,sqlite,tar").split(",")


def tree(root, files, mean):
    """`files` files of gamma-distributed sizes (shape 1.5) in directories of about 16."""
    rng = random.Random(1)
    for i in range(files):
        d = os.path.join(root, f"d{i // 256:03}", f"e{i // 16 % 16:02}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:06}.c"), "wb") as f:
            f.write(rng.randbytes(max(1, int(rng.gammavariate(1.5, mean / 1.5)))))


def inputs(tmp):
    """Each app's command (run in the captured directory) and the personality modelled on it."""
    src = os.path.join(tmp, "src")
    tree(src, FILES, 12 << 10)
    repo = os.path.join(tmp, "repo.git")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"]
    subprocess.run(git + ["-C", src, "init", "-q"], check=True)
    subprocess.run(git + ["-C", src, "add", "-A"], check=True)
    subprocess.run(git + ["-C", src, "commit", "-qm", "tree"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", src, repo], check=True)
    layer = os.path.join(tmp, "layer.tar")
    tree_l = os.path.join(tmp, "layer")
    tree(tree_l, FILES, 8 << 10)
    subprocess.run(["tar", "-cf", layer, "-C", tree_l, "."], check=True)
    sql = os.path.join(tmp, "oltp.sql")
    with open(sql, "w") as f:
        f.write("PRAGMA journal_mode=WAL;\nCREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);\n")
        rng = random.Random(2)
        for _ in range(400):
            f.write("BEGIN;\n")
            for _ in range(20):
                f.write(f"INSERT INTO t(v) VALUES (randomblob({rng.randint(100, 2000)}));\n")
            f.write(f"SELECT count(*) FROM t WHERE id % 97 = {rng.randint(0, 96)};\nCOMMIT;\n")
    return {
        "git": (f"git clone -q {repo} wt && git -C wt status --porcelain >/dev/null",
                f"git,nfiles={FILES},filesize=12k"),
        "sqlite": (f"sqlite3 db.sqlite < {sql} >/dev/null", "sqlite-wal,filesize=16m,nthreads=1,runtime=10"),
        "tar": (f"tar -xpf {layer}", f"layer-unpack,nfiles={FILES},filesize=8k"),
    }


def capture(tmp, app, command):
    root = os.path.join(tmp, f"root-{app}")
    os.makedirs(root)
    trace = os.path.join(tmp, f"{app}.trace")
    subprocess.run([FSBENCH, "capture", "--root", root, "-o", trace, "--", "sh", "-c", f"cd {root} && {command}"],
                   check=True, capture_output=True)
    return trace


def order(doc, workload, phase, metric):
    rates = {}
    for s in doc["summaries"]:
        if s["workload"] == workload and s["phase"] == phase and s["metric"] == metric and not s.get("dims"):
            rates[s["config"]] = s["mean"]
    return sorted(rates, key=rates.get, reverse=True), rates


def main():
    if os.geteuid() != 0:
        print("needs root (loop images)")
        return 1
    ok = True
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        apps = inputs(tmp)
        for app in APPS:
            command, personality = apps[app]
            trace = capture(tmp, app, command)
            out = subprocess.run(
                [FSBENCH, "--db", os.path.join(tmp, "results.db"), "run", "-q", "--output-format", "json",
                 "--fs", FILESYSTEMS, "--runs", ROUNDS, "--image-dir", tmp,
                 "-w", f"replay:trace={trace}", "-w", f"personality:{personality}"],
                capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{app}: fsbench failed: {out.stderr.strip().splitlines()[-1:]}")
                ok = False
                continue
            doc = json.loads(out.stdout)
            labels = [w["label"] for w in doc["workload_records"]]
            replay = next(l for l in labels if l.startswith("replay"))
            model = next(l for l in labels if l.startswith("personality"))
            got_app, rates_app = order(doc, replay, "replay", "rate")
            got_model, rates_model = order(doc, model, "run", "ops/s")
            same = got_app == got_model
            ok &= same
            print(f"{app}: the program {' > '.join(got_app)}; personality:{personality} {' > '.join(got_model)}"
                  f" {'SAME' if same else 'DIFFERENT'}")
            for fs in got_app:
                print(f"    {fs}: program {rates_app[fs]:.0f} calls/s, personality {rates_model.get(fs, 0):.0f} ops/s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
