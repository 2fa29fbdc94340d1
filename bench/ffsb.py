#!/usr/bin/env python3
"""FFSB's large sequential writes against fio: THREADS threads each create one SIZE file with
BLOCK-byte writes (the seed's shape: 128 threads, 1 GiB files, 64 KiB writes, scaled down so
that it fits), by fsbench's `ffsb-large-write` workload and by fio's equivalent job (threads,
psync, one file per thread created when the job starts, no preallocation). Every round gives
each tool a fresh filesystem of the same kind, in alternating order, in this one invocation:
a fresh tmpfs mount (only the tools' own costs differ; the target is judged there), then, as
root, a fresh ext4 loop image (the host's cache and disk add noise). Dirty data is written
back and caches dropped before each measurement. Medians of ROUNDS. Prints fsbench's write
throughput as a fraction of fio's. Target >= 0.98.

WORKERS=threads runs fsbench's workers as threads (default: processes, as fio's jobs without
`--thread`; fio here runs threads either way, as FFSB does). FSBENCH names the binary (a
debug build's will do for a smoke run: it is used as it is); without it
target/release/fsbench is built first. THREADS, SIZE, BLOCK, ROUNDS and TMPFS_ONLY=1 make a
smoke run small.
"""
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from common import fresh_ext4, settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
THREADS = int(os.environ.get("THREADS", "16"))
SIZE = os.environ.get("SIZE", "64m")
BLOCK = os.environ.get("BLOCK", "64k")
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
WORKERS = os.environ.get("WORKERS", "processes")


def bytes_of(text):
    return int(text[:-1]) << {"k": 10, "m": 20, "g": 30}[text[-1].lower()] if text[-1].isalpha() else int(text)


# Room for every thread's file and the filesystem's own overhead.
ROOM = THREADS * bytes_of(SIZE) * 3 // 2 + (1 << 30)


def fio(work):
    out = subprocess.run(
        ["fio", "--name=largewrite", f"--directory={work}", "--rw=write", f"--bs={BLOCK}",
         f"--size={SIZE}", f"--numjobs={THREADS}", "--thread", "--ioengine=psync",
         "--fallocate=none", "--create_on_open=1", "--group_reporting", "--output-format=json"],
        check=True, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return job["write"]["bw_bytes"] / (1 << 20)  # MiB/s


def fsbench(work, db):
    spec = f"ffsb-large-write:threads={THREADS},size={SIZE},block={BLOCK},workers={WORKERS}"
    out = subprocess.run([FSBENCH, "--db", db, "run", "-q", "--output-format", "json", "--runs", "1",
                          "--no-drop-caches", "--dir", work, "-w", spec],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return next(s["mean"] for s in doc["summaries"]
                if s["phase"] == "run" and s["metric"] == "write throughput")


@contextlib.contextmanager
def fresh_tmpfs(tmp):
    mnt = tempfile.mkdtemp(dir=tmp)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={ROOM}", "tmpfs", mnt], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", mnt], check=True)
        os.rmdir(mnt)


def compare(fresh, tmp, db, where):
    print(f"{THREADS} workers ({WORKERS} in fsbench) × one {SIZE} file, {BLOCK} writes, on {where}; "
          f"{ROUNDS} rounds, medians")
    res = {"fio": [], "fsbench": []}
    for rnd in range(ROUNDS):
        order = ["fio", "fsbench"] if rnd % 2 == 0 else ["fsbench", "fio"]
        for tool in order:
            sub = tempfile.mkdtemp(dir=tmp)
            with fresh(sub) as mnt:
                settle()
                res[tool].append(fio(mnt) if tool == "fio" else fsbench(mnt, db))
            shutil.rmtree(sub)
    a, b = statistics.median(res["fsbench"]), statistics.median(res["fio"])
    print(f"  fio {b:10,.1f} MiB/s  fsbench {a:10,.1f} MiB/s  ratio {a / b:.3f}")
    print(f"  (each round, fio: {', '.join(f'{v:,.0f}' for v in res['fio'])}; "
          f"fsbench: {', '.join(f'{v:,.0f}' for v in res['fsbench'])})")
    return a / b


def main():
    if "FSBENCH" not in os.environ:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    if not shutil.which("fio"):
        raise SystemExit("fio is not installed (apt-get install fio)")
    if os.geteuid() != 0:
        raise SystemExit("needs root: every round mounts a fresh filesystem")
    with tempfile.TemporaryDirectory(prefix="fsbench-ffsb.", dir="/var/tmp") as tmp:
        db = os.path.join(tmp, "results.db")
        ratio = compare(fresh_tmpfs, tmp, db, "a fresh tmpfs")
        if not os.environ.get("TMPFS_ONLY"):
            compare(lambda sub: fresh_ext4(sub, ROOM), tmp, db,
                    "a fresh ext4 loop image (the host's page cache and disk add noise)")
        print(f"ratio on tmpfs: {ratio:.3f} (target >= 0.98)")


if __name__ == "__main__":
    main()
