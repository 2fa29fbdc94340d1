#!/usr/bin/env python3
"""fio 3.33's examples/pmemblk.fio in fio and in `fsbench fio`, scaled the same way for both:
`runtime=RUNTIME` (default 2), `numjobs=NUMJOBS` (default 2) and its pool
`filename=DIR/fio-test,4096,POOL_MIB` (default 64; fio's example makes 1024 MiB pools on
two NVDIMMs). Its two groups (random 1 MiB writes, then random 1 MiB reads of the same
pool, which the second group unlinks) run through PMDK's libpmemblk in both tools. Per
filesystem (FSES, default tmpfs,ext4: a tmpfs, or an ext4 on a fresh 2 GiB sparse loop
image, made in the bench's own directory and removed after) and round (ROUNDS, default 3,
each tool first in every other round), each tool's write and read IOPS (fio's JSON: fsbench
prints fio's with `--output-format json`), then their medians side by side.

Then libpmem.fio (`runtime=RUNTIME`, `size=POOL_MIB` MiB, its directory the bench's) under
`PMEM_IS_PMEM_FORCE=1`, with which libpmem takes any file for persistent memory and both
tools run it (without it both refuse it here): its write and read IOPS alike, figures of
memory copies, nothing made durable.

Then the pool each tool makes, as `ls -l` and `pmempool info` (Debian's pmdk-tools) show
it: fio's is left by a write-only run (`unlink=0`); fsbench removes its run's directory at
the end, so its pool is copied while a write-only job of 4 s runs, 3 s after it appears
(its header then says `Last shutdown: dirty`: it is open).

No persistent memory is needed: libpmemblk works on any file, flushing with msync where the
file is not on persistent memory (each 4 KiB block written is msynced: writes are slow on a
disk). Root only (the loop image). FIO_EXAMPLES is a fio checkout's examples/ directory;
FSBENCH (default target/release/fsbench) and FIO (default fio) as in the other benches.
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

from common import fio_against_fsbench, fresh_ext4

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FSBENCH = os.environ.get("FSBENCH", os.path.join(ROOT, "target/release/fsbench"))
FIO = os.environ.get("FIO", "fio")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RUNTIME = os.environ.get("RUNTIME", "2")
NUMJOBS = os.environ.get("NUMJOBS", "2")
POOL_MIB = os.environ.get("POOL_MIB", "64")
FSES = os.environ.get("FSES", "tmpfs,ext4").split(",")


def scaled(text, dir):
    """pmemblk.fio with its runtime, jobs and pool scaled, the pool in `dir`."""
    text = re.sub(r"^runtime=\d+", f"runtime={RUNTIME}", text, flags=re.M)
    text = re.sub(r"^numjobs=\d+", f"numjobs={NUMJOBS}", text, flags=re.M)
    return re.sub(r"^filename=\S+", f"filename={dir}/fio-test,4096,{POOL_MIB}", text, flags=re.M)


def run_tool(tool, jobfile, dir, tmp, env=None):
    """One run of `jobfile` (with `env` added to the environment): {direction: IOPS} from
    fio's JSON, or the tool's error."""
    if tool == "fio":
        args, cwd = [FIO, "--output-format=json", jobfile], dir
    else:
        db = os.path.join(tmp, "results.db")
        args = [FSBENCH, "--db", db, "fio", "-q", "--runs", "1", "--output-format", "json",
                "--dir", dir, jobfile]
        cwd = tmp
    out = subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=600,
                         env={**os.environ, **(env or {})})
    if out.returncode != 0:
        return f"exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}"
    doc = json.loads(out.stdout[out.stdout.index("{"):])
    iops = {}
    for job in doc["jobs"]:
        for d in ("read", "write"):
            if job[d]["total_ios"] > 0:
                iops[d] = iops.get(d, 0) + job[d]["iops"]
    return iops


def pool_info(path):
    """`ls -l` and `pmempool info` of a pool file, its lines that differ by run (UUIDs,
    times, checksums) left out."""
    ls = subprocess.run(["ls", "-l", path], capture_output=True, text=True).stdout.split()
    lines = [f"ls -l: {ls[0]} {ls[4]} bytes"]
    if shutil.which("pmempool"):
        info = subprocess.run(["pmempool", "info", path], capture_output=True, text=True)
        skip = re.compile(r"UUID|time|Checksum|Path|Flog|Map", re.I)
        lines += [l for l in info.stdout.splitlines() if l.strip() and not skip.search(l)]
    return lines


def pools(text, dir, tmp):
    """The pool each tool makes for the write group alone (kept): its `pool_info`."""
    write_only = text.split("[pmemblk-read]")[0]
    jobfile = os.path.join(tmp, "write-only.fio")
    with open(jobfile, "w") as f:
        f.write(write_only.replace("runtime=" + RUNTIME, "runtime=4"))
    theirs = run_tool("fio", jobfile, dir, tmp)
    pool = os.path.join(dir, "fio-test")
    fio_pool = pool_info(pool) if os.path.exists(pool) else [f"no pool ({theirs})"]
    if os.path.exists(pool):
        os.remove(pool)
    # fsbench's run directory is DIR/fsbench.PID/run1: its pool is copied while it runs.
    child = subprocess.Popen([FSBENCH, "--db", os.path.join(tmp, "results.db"), "fio", "-q",
                              "--runs", "1", "--dir", dir, jobfile], cwd=tmp,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    copy, deadline = os.path.join(tmp, "fsbench-pool"), time.monotonic() + 30
    while time.monotonic() < deadline and child.poll() is None:
        found = [os.path.join(r, "fio-test") for r, _, fs in os.walk(dir) if "fio-test" in fs]
        if found:
            # Past the first writes: libpmemblk lays out its BTT at the first (on a disk,
            # a 1 MiB write takes a second or more).
            time.sleep(3)
            shutil.copyfile(found[0], copy)
            break
        time.sleep(0.05)
    child.communicate(timeout=120)
    ours = pool_info(copy) if os.path.exists(copy) else ["no pool seen"]
    return fio_pool, ours


def libpmem_scaled(text, dir):
    """libpmem.fio with its runtime and size scaled, its directory `dir`."""
    text = re.sub(r"^runtime=\d+", f"runtime={RUNTIME}", text, flags=re.M)
    text = re.sub(r"^size=\S+", f"size={POOL_MIB}m", text, flags=re.M)
    return re.sub(r"^directory=\S+", f"directory={dir}", text, flags=re.M)


def one_fs(fs, job, tmp, mnt, env=None):
    """Every round of `job` (its text for a directory) on filesystem `fs` mounted at `mnt`:
    each tool's IOPS."""
    results = {"fio": [], "fsbench": []}
    for r in range(ROUNDS):
        for tool in (["fio", "fsbench"] if r % 2 == 0 else ["fsbench", "fio"]):
            run_dir = tempfile.mkdtemp(prefix=f"{tool}.", dir=mnt)
            jobfile = os.path.join(tmp, f"job-{tool}.fio")
            with open(jobfile, "w") as f:
                f.write(job(run_dir))
            got = run_tool(tool, jobfile, run_dir, tmp, env)
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"  {fs} round {r + 1} {tool:8} {got}", flush=True)
            if isinstance(got, dict):
                results[tool].append(got)
    return results


def both(fs, text, libpmem, tmp, mnt):
    """pmemblk.fio's rounds and pools, then libpmem.fio's rounds under PMEM_IS_PMEM_FORCE=1,
    on `fs` at `mnt`."""
    results = one_fs(fs, lambda d: scaled(text, d), tmp, mnt)
    layout = pools(scaled(text, mnt), mnt, tmp)
    forced = one_fs(fs, lambda d: libpmem_scaled(libpmem, d), tmp, mnt,
                    {"PMEM_IS_PMEM_FORCE": "1"})
    return results, layout, forced


def main():
    skipped = fio_against_fsbench("fio_pmem", FIO, FSBENCH)
    if skipped is not None:
        return skipped
    examples = os.environ.get("FIO_EXAMPLES", "")
    source = os.path.join(examples, "pmemblk.fio")
    if not os.path.isfile(source) or os.geteuid() != 0:
        print("fio_pmem: run as root with FIO_EXAMPLES set to a fio checkout's examples/")
        return 1
    with open(source) as f:
        text = f.read()
    with open(os.path.join(examples, "libpmem.fio")) as f:
        libpmem = f.read()
    summary = []
    for fs in FSES:
        with tempfile.TemporaryDirectory(prefix="fio-pmem.", dir="/var/tmp") as tmp:
            mnt = os.path.join(tmp, "mnt")
            if fs == "tmpfs":
                os.mkdir(mnt)
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "pmem", mnt], check=True)
                try:
                    results, layout, forced = both(fs, text, libpmem, tmp, mnt)
                finally:
                    subprocess.run(["umount", mnt], check=True)
            else:
                # fresh_ext4 mounts it at tmp/mnt.
                with fresh_ext4(tmp, size=2 << 30) as mnt:
                    results, layout, forced = both(fs, text, libpmem, tmp, mnt)
        summary.append((fs, results, layout, forced))
    print(f"\nmedian IOPS over {ROUNDS} round(s), runtime={RUNTIME}: pmemblk.fio (numjobs="
          f"{NUMJOBS}, pool {POOL_MIB} MiB, bs=1m), libpmem.fio (size={POOL_MIB}m, bs=4k, "
          f"PMEM_IS_PMEM_FORCE=1):")
    print(f"{'fs':6} {'job':8} {'direction':9} {'fio':>10} {'fsbench':>10} {'ratio':>6}")
    for fs, results, _, forced in summary:
        for job, rounds in (("pmemblk", results), ("libpmem", forced)):
            for d in ("write", "read"):
                med = {t: statistics.median([r.get(d, 0) for r in rs]) if rs else 0
                       for t, rs in rounds.items()}
                ratio = med["fsbench"] / med["fio"] if med["fio"] else float("nan")
                print(f"{fs:6} {job:8} {d:9} {med['fio']:10.1f} {med['fsbench']:10.1f} "
                      f"{ratio:6.2f}")
    for fs, _, (theirs, ours), _ in summary:
        print(f"\npool on {fs}, fio's:\n  " + "\n  ".join(theirs))
        print(f"pool on {fs}, fsbench's:\n  " + "\n  ".join(ours))
    return 0


if __name__ == "__main__":
    sys.exit(main())
